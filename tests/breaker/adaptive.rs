//! The adaptive cap on calls in flight, driven on the mock clock by a simulated dependency whose
//! latency is flat up to a concurrency `C` and grows past it: both algorithms settle in a band
//! around `C`, from below and from above. No sleeping: every call's end is an event, and the
//! clock jumps to the next one.

use std::time::Duration;

use toolbreaker::quanta::Clock;
use toolbreaker::{CircuitBreaker, FailureKind, Limit, Outcome, Permit};

/// The dependency's concurrency: calls up to it take `FLAT`.
const C: u32 = 16;
/// The latency at or below `C` in flight, in µs.
const FLAT: u64 = 10_000;
/// Calls that take this long or more time out (a counted failure), in µs: 12 ms is reached at
/// 20 in flight (`FLAT × n / C`).
const TIMEOUT: u64 = 12_000;
/// Callers that always want to call: more than any limit the test allows, so the limit, not
/// the callers, decides how many are in flight.
const CALLERS: usize = 128;

/// The dependency's latency with `n` calls in flight (itself included), in µs: flat up to
/// `C`, then growing in proportion (a queue in front of `C` workers).
fn latency(n: u32) -> u64 {
    if n <= C {
        FLAT
    } else {
        FLAT * u64::from(n) / u64::from(C)
    }
}

/// Run `calls` calls through a breaker with `limit` and return the limit in force after each
/// of the last `tail` of them.
fn simulate(limit: Limit, calls: usize, tail: usize) -> Vec<u32> {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .adaptive_concurrency(limit)
        // The simulated timeouts must not trip it: the test is about the limit.
        .failure_threshold(u32::MAX)
        .clock(clock)
        .build()
        .expect("valid");
    let mut now = 0u64;
    // Calls in flight: (end in µs, latency in µs, permit).
    let mut flying: Vec<(u64, u64, Permit<'_>)> = Vec::new();
    let mut seen = Vec::new();
    for done in 0..calls {
        // Every idle caller asks; those the cap refuses wait for the next call to end.
        while flying.len() < CALLERS {
            let Ok(permit) = breaker.try_acquire() else {
                break;
            };
            let took = latency(breaker.in_flight());
            flying.push((now + took, took, permit));
        }
        assert!(breaker.in_flight() <= breaker.concurrency_limit().unwrap().max(C * 8));
        let next = (0..flying.len())
            .min_by_key(|&i| flying[i].0)
            .expect("at least one call in flight");
        let (end, took, permit) = flying.swap_remove(next);
        mock.increment(Duration::from_micros(end - now));
        now = end;
        let outcome = if took >= TIMEOUT {
            Outcome::Failure(FailureKind::Timeout)
        } else {
            Outcome::Success
        };
        permit.record_elapsed(outcome, Duration::from_micros(took));
        if done >= calls - tail {
            seen.push(breaker.concurrency_limit().expect("capped"));
        }
    }
    seen
}

fn assert_within(seen: &[u32], low: u32, high: u32, what: &str) {
    let (min, max) = (*seen.iter().min().unwrap(), *seen.iter().max().unwrap());
    assert!(
        low <= min && max <= high,
        "{what}: the limit ranged over [{min}, {max}], outside [{low}, {high}]"
    );
}

/// AIMD finds the concurrency at which calls start to time out (20 in flight here: 12 ms) and
/// saw-tooths just under it: up by one per call while in use, down by 10 % at a timeout. So it
/// settles within [C, 1.5 C]: at most the timeout's 20, at least 90 % of it less one.
#[test]
fn aimd_settles_around_the_dependencys_concurrency_from_below_and_above() {
    for initial in [1, 100] {
        let limit = Limit::Aimd {
            initial,
            min: 1,
            max: 100,
            backoff_ratio: 0.9,
            latency_threshold: Duration::from_micros(TIMEOUT),
        };
        let seen = simulate(limit, 20_000, 2_000);
        assert_within(&seen, C, C * 3 / 2, &format!("AIMD from {initial}"));
    }
}

/// The gradient lets latency reach its tolerance (1.5 ×) over the baseline (10 ms, the latency
/// at or below `C`) before the limit falls, and adds `queue_size` (4) of headroom per round: its
/// fixed point is where `1.5 × C / n = 1 − 4 / n`, 28 in flight. The baseline stays at 10 ms
/// (samples over the tolerance are the queue's and leave it), so the limit does not drift. So
/// it settles within [C, 2 C]: past the flat region by the tolerance and the headroom, and far
/// under the max of 100 it starts from.
#[test]
fn the_gradient_settles_around_the_dependencys_concurrency_from_below_and_above() {
    for initial in [1, 100] {
        let limit = Limit::Gradient {
            initial,
            min: 1,
            max: 100,
            tolerance: 1.5,
            smoothing: 0.2,
            queue_size: 4,
            long_window: 600,
        };
        let seen = simulate(limit, 20_000, 2_000);
        assert_within(&seen, C, C * 2, &format!("gradient from {initial}"));
    }
}

/// A reconfiguration racing the adaptive limit's samples is in force once it returns: a sample
/// that published from the old settings while it landed never has the last word (the limit in
/// force, and the calls it admits, follow the new settings, whatever the interleaving).
#[test]
fn a_reconfiguration_racing_samples_is_in_force_once_it_returns() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    for round in 0..60 {
        let breaker = Arc::new(
            CircuitBreaker::builder()
                .failure_threshold(u32::MAX)
                .max_in_flight(500)
                .adaptive_concurrency(Limit::aimd(1, 1000))
                .build()
                .unwrap(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU64::new(0));
        let callers: Vec<_> = (0..2)
            .map(|t| {
                let (breaker, stop) = (Arc::clone(&breaker), Arc::clone(&stop));
                let calls = Arc::clone(&calls);
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(permit) = breaker.try_acquire() {
                            let outcome = if (i + t).is_multiple_of(3) {
                                Outcome::Failure(FailureKind::Timeout)
                            } else {
                                Outcome::Success
                            };
                            permit.record_elapsed(outcome, Duration::from_millis(1));
                        }
                        i += 1;
                        calls.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // Let the callers sample for a while (an event: their calls recorded), then change the
        // settings under them.
        while calls.load(Ordering::Relaxed) < 2_000 {
            std::thread::yield_now();
        }
        let (new, expected) = if round % 2 == 0 {
            (
                CircuitBreaker::builder()
                    .failure_threshold(u32::MAX)
                    .max_in_flight(2)
                    .adaptive_concurrency(Limit::aimd(1, 1000)),
                Some(2),
            )
        } else {
            (CircuitBreaker::builder().failure_threshold(u32::MAX), None)
        };
        breaker.reconfigure(new.build_config().unwrap());
        stop.store(true, Ordering::Relaxed);
        for caller in callers {
            caller.join().unwrap();
        }
        let limit = breaker.concurrency_limit();
        assert!(
            match expected {
                Some(cap) => limit.is_some_and(|l| l <= cap),
                None => limit.is_none(),
            },
            "round {round}: the limit in force is {limit:?}, the settings say {expected:?}"
        );
        let held: Vec<Permit<'_>> = (0..50).filter_map(|_| breaker.try_acquire().ok()).collect();
        let most = expected.map_or(50, |cap| cap as usize);
        assert!(held.len() <= most, "round {round}: {} held", held.len());
        if expected.is_none() {
            assert_eq!(held.len(), 50, "round {round}: no cap refuses nothing");
        }
    }
}
