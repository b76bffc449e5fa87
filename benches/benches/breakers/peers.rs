//! The breakers under test, built the same way in every group.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use toolbreaker::{CircuitBreaker, FailureKind, Outcome};

use crate::sketch::Sketch;

/// A cooldown no benchmark outlasts: an open breaker stays open for the whole group.
pub const LONG: Duration = Duration::from_secs(3600);

/// The operation every breaker guards: trivially cheap, so only the breaker is measured.
#[inline]
pub fn op(fail: bool) -> Result<u64, ()> {
    if black_box(fail) {
        Err(())
    } else {
        Ok(black_box(1))
    }
}

#[inline]
pub fn classify(result: &Result<u64, ()>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(()) => Outcome::Failure(FailureKind::Other),
    }
}

/// failsafe's consecutive-failures policy, `threshold` in a row, constant `backoff`.
pub type FailsafeConsecutive = failsafe::StateMachine<
    failsafe::failure_policy::ConsecutiveFailures<failsafe::backoff::Constant>,
    (),
>;

pub fn toolbreaker(threshold: u32, cooldown: Duration) -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(cooldown)
        .probe_timeout(cooldown)
        .build()
        .expect("valid")
}

/// The same with counting on (`Builder::metrics`): a thread-striped atomic add per admission and
/// per outcome.
pub fn toolbreaker_counting(threshold: u32, cooldown: Duration) -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(cooldown)
        .probe_timeout(cooldown)
        .metrics(true)
        .build()
        .expect("valid")
}

/// The consecutive rule with a cap on calls in flight: `max_in_flight(n)` (a slot taken by
/// compare-and-swap and given back by one subtraction per call), or with `adaptive` an AIMD limit
/// up to `n` (its calls also timed and sampled).
pub fn toolbreaker_capped(n: u32, adaptive: bool) -> CircuitBreaker {
    let builder = CircuitBreaker::builder()
        .failure_threshold(5)
        .cooldown(LONG)
        .probe_timeout(LONG);
    let builder = if adaptive {
        builder.adaptive_concurrency(toolbreaker::Limit::aimd(1, n))
    } else {
        builder.max_in_flight(n)
    };
    builder.build().expect("valid")
}

/// A rate rule alone (`Builder::failure_rate`, 50 %) over `window`, minimum 10: a healthy call is
/// counted into its thread's stripe of the window.
pub fn toolbreaker_rate(window: toolbreaker::Window) -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_rate(0.5)
        .window(window)
        .cooldown(LONG)
        .probe_timeout(LONG)
        .build()
        .expect("valid")
}

/// `toolbreaker(threshold, cooldown)` with adaptive throttling (`k` = 2 over 10 s): a healthy
/// admission loads its probability (0), a healthy outcome adds to this thread's own stripe.
pub fn toolbreaker_throttled(threshold: u32, cooldown: Duration) -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(cooldown)
        .probe_timeout(cooldown)
        .adaptive_throttling(2.0, Duration::from_secs(10))
        .build()
        .expect("valid")
}

/// A slow-call rule (1 s, 50 %) over the default count window: `call` times each call on the
/// breaker's clock.
pub fn toolbreaker_slow() -> CircuitBreaker {
    CircuitBreaker::builder()
        .slow_calls(Duration::from_secs(1), 0.5)
        .cooldown(LONG)
        .probe_timeout(LONG)
        .build()
        .expect("valid")
}

pub fn failsafe_consecutive(threshold: u32, cooldown: Duration) -> FailsafeConsecutive {
    let policy = failsafe::failure_policy::consecutive_failures(
        threshold,
        failsafe::backoff::constant(cooldown),
    );
    failsafe::Config::new().failure_policy(policy).build()
}

/// failsafe's default: success rate over a time window, or else consecutive failures.
pub fn failsafe_default() -> impl failsafe::CircuitBreaker {
    failsafe::Config::new().build()
}

/// recloser with an error-rate window of `len` calls.
pub fn recloser(error_rate: f32, len: usize, cooldown: Duration) -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(error_rate)
        .closed_len(len)
        .half_open_len(1)
        .open_wait(cooldown)
        .build()
}

/// One guarded call through each breaker; `true` when the operation ran and succeeded. Each row
/// of a group runs the same `op` and hands its `bool` to criterion, which passes it through
/// `black_box`.
#[inline]
pub fn call_bare(fail: bool) -> bool {
    op(fail).is_ok()
}

#[inline]
pub fn call_sketch(b: &Sketch, fail: bool) -> bool {
    b.call(|| op(fail)).is_ok()
}

#[inline]
pub fn call_toolbreaker(b: &CircuitBreaker, fail: bool) -> bool {
    b.call(|| op(fail), classify).is_ok()
}

/// The same through the permit API: `try_acquire`, the operation, `Permit::record`. For the
/// healthy groups only: it records a success whatever the operation returned.
#[inline]
pub fn acquire_record_toolbreaker(b: &CircuitBreaker) -> bool {
    let Ok(permit) = b.try_acquire() else {
        return false;
    };
    let ok = op(false).is_ok();
    permit.record(Outcome::Success);
    ok
}

#[inline]
pub fn call_failsafe(b: &impl failsafe::CircuitBreaker, fail: bool) -> bool {
    b.call(|| op(fail)).is_ok()
}

#[inline]
pub fn call_recloser(b: &recloser::Recloser, fail: bool) -> bool {
    b.call(|| op(fail)).is_ok()
}

/// Run `call` `iters` times on each of two threads sharing one breaker; the time per call per
/// thread is the mean of the two threads' elapsed times.
pub fn on_two_threads(iters: u64, call: impl Fn() -> bool + Sync) -> Duration {
    on_two_threads_each(iters, || || call())
}

/// [`on_two_threads`] for calls that need state of their own on each thread (a tower service's
/// clone, a runtime's context): `make` runs on each thread, before the barrier, and gives that
/// thread's call. Time per call per thread, as there.
pub fn on_two_threads_each<F>(iters: u64, make: impl Fn() -> F + Sync) -> Duration
where
    F: FnMut() -> bool,
{
    let barrier = Barrier::new(2);
    let elapsed: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut call = make();
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(call());
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    elapsed.iter().sum::<Duration>() / 2
}
