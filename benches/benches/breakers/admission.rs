//! Admission control beside the breaker, healthy and under the cap: what a cap on calls in flight
//! (`Builder::max_in_flight`, fixed, or `Builder::adaptive_concurrency`) and client-side adaptive
//! throttling (`Builder::adaptive_throttling`) add to a closed breaker's `call`, side by side with
//! tower's `ConcurrencyLimit` and tower-resilience's bulkhead, on one thread and on two.
//!
//! Every breaker here is closed and healthy and every cap is far above what the threads hold (64
//! slots, one or two in flight), so each row is the admission's bookkeeping on the healthy path:
//! a slot taken and given back (one shared counter: the two-thread group shows what it costs under
//! contention), the throttle's count of requests and accepts. Nothing is ever refused; the group
//! checks that at its end.
//!
//! The tower peers are services over a ready no-op service (`service_fn`), each call one
//! `poll_ready`, one `call` and the response future polled once by hand with a no-op waker, as
//! `async_ready_future` polls `run`: no runtime drives them. tower's `ConcurrencyLimit` needs
//! none. tower-resilience's bulkhead, set to reject when full (`reject_when_full`: a zero wait, as
//! toolbreaker's cap refuses at once), waits for its slot under `tokio::time::timeout`, which
//! needs a tokio runtime's timer to exist even when the slot is free: its rows run inside a
//! current-thread runtime entered for the group (`Runtime::enter`), still polled by hand, the
//! runtime never driving a task. Beside them, `toolbreaker_run_max_in_flight` is the capped
//! breaker's `run` around a ready future, polled the same way: the async shape the peers have.

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::Criterion;
use toolbreaker::{CircuitBreaker, Limit};
use tower::Service;

use crate::peers::*;

/// The cap of every capped row: far above the one or two calls the threads hold at once.
const CAP: u32 = 64;

/// The throttle's settings: the SRE book's `K` (requests may reach `K` times the accepted ones
/// before anything is shed) and its window.
const K: f64 = 2.0;
const THROTTLE_WINDOW: Duration = Duration::from_secs(10);

/// A closed breaker of the group's shape (the consecutive rule, an hour of cooldown) with
/// `admission` applied to its builder.
fn breaker(
    admission: impl FnOnce(toolbreaker::breaker::Builder) -> toolbreaker::breaker::Builder,
) -> CircuitBreaker {
    admission(
        CircuitBreaker::builder()
            .failure_threshold(5)
            .cooldown(LONG)
            .probe_timeout(LONG),
    )
    .build()
    .expect("valid")
}

/// The breakers of the group, by row name, in the group's order.
fn breakers() -> [(&'static str, CircuitBreaker); 5] {
    [
        ("toolbreaker_call", breaker(|b| b)),
        (
            "toolbreaker_max_in_flight",
            breaker(|b| b.max_in_flight(CAP)),
        ),
        (
            "toolbreaker_throttling",
            breaker(|b| b.adaptive_throttling(K, THROTTLE_WINDOW)),
        ),
        (
            "toolbreaker_max_in_flight_throttling",
            breaker(|b| b.max_in_flight(CAP).adaptive_throttling(K, THROTTLE_WINDOW)),
        ),
        (
            "toolbreaker_adaptive_aimd",
            breaker(|b| {
                b.adaptive_concurrency(Limit::Aimd {
                    initial: CAP,
                    min: 1,
                    max: CAP,
                    backoff_ratio: 0.9,
                    latency_threshold: Duration::from_secs(5),
                })
            }),
        ),
    ]
}

/// Poll a future once with a no-op waker; the futures here are always ready.
fn poll_ready<F: Future>(fut: F) -> F::Output {
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the future is ready"),
    }
}

/// The no-op service every tower peer wraps: ready at once, its answer ready at once.
fn noop_service() -> impl Service<u64, Response = u64, Error = Infallible, Future: Send> + Clone {
    tower::service_fn(|i: u64| std::future::ready(Ok::<u64, Infallible>(black_box(i))))
}

/// One call through a tower service: `poll_ready`, `call`, the response future polled once; `true`
/// when it answered.
#[inline]
fn call_tower<S: Service<u64, Response = u64>>(service: &mut S) -> bool {
    match service.poll_ready(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(_)) | Poll::Pending => return false,
    }
    poll_ready(service.call(black_box(1))).is_ok()
}

/// tower's `ConcurrencyLimit` of [`CAP`] over the no-op service.
fn tower_limit() -> impl Service<u64, Response = u64> + Clone + Send {
    tower::limit::ConcurrencyLimit::new(noop_service(), CAP as usize)
}

/// tower-resilience's bulkhead of [`CAP`], rejecting when full, over the no-op service; built
/// (and called) inside a runtime's context, for its timer.
fn bulkhead() -> impl Service<u64, Response = u64> + Clone + Send {
    let layer = tower_resilience_bulkhead::BulkheadLayer::builder()
        .max_concurrent_calls(CAP as usize)
        .reject_when_full()
        .build()
        .expect("a valid bulkhead");
    tower::Layer::layer(&layer, noop_service())
}

/// The context the bulkhead needs: a current-thread runtime with its timer, never driven.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

/// `call` through the capped breaker's `run`, polled once by hand.
#[inline]
fn run_toolbreaker(b: &CircuitBreaker) -> bool {
    poll_ready(b.run(async { op(false) }, classify)).is_ok()
}

/// Group 11: admission control on the healthy path, one thread.
pub fn healthy(c: &mut Criterion) {
    let mut g = c.benchmark_group("admission");
    let breakers = breakers();
    g.bench_function("bare", |b| b.iter(|| call_bare(false)));
    for (name, breaker) in &breakers {
        g.bench_function(*name, |b| b.iter(|| call_toolbreaker(breaker, false)));
    }
    let capped = &breakers[1].1;
    g.bench_function("toolbreaker_run_max_in_flight", |b| {
        b.iter(|| run_toolbreaker(capped))
    });
    let mut limit = tower_limit();
    g.bench_function("tower_concurrency_limit", |b| {
        b.iter(|| call_tower(&mut limit))
    });
    let runtime = runtime();
    let entered = runtime.enter();
    let mut bulkhead = bulkhead();
    g.bench_function("tower_resilience_bulkhead", |b| {
        b.iter(|| call_tower(&mut bulkhead))
    });
    g.finish();
    // Nothing was ever refused: every row measured admissions, and every slot was given back.
    assert!(call_tower(&mut limit) && call_tower(&mut bulkhead));
    drop(entered);
    check_untouched(&breakers);
}

/// Group 12: the same on two threads sharing each breaker (or the peer's semaphore, each thread
/// with its clone of the service, as tower services are shared): time per call per thread.
pub fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("admission_2_threads");
    let breakers = breakers();
    g.bench_function("bare", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_bare(false)))
    });
    for (name, breaker) in &breakers {
        g.bench_function(*name, |b| {
            b.iter_custom(|n| on_two_threads(n, || call_toolbreaker(breaker, false)))
        });
    }
    let capped = &breakers[1].1;
    g.bench_function("toolbreaker_run_max_in_flight", |b| {
        b.iter_custom(|n| on_two_threads(n, || run_toolbreaker(capped)))
    });
    // Each thread clones the service (the clones share one semaphore), through a lock that is
    // taken once per thread before the timing, since a service need not be `Sync`.
    let limit = Mutex::new(tower_limit());
    g.bench_function("tower_concurrency_limit", |b| {
        b.iter_custom(|n| {
            on_two_threads_each(n, || {
                let mut service = limit.lock().unwrap().clone();
                move || call_tower(&mut service)
            })
        })
    });
    let runtime = runtime();
    let handle = runtime.handle();
    let bulkhead = Mutex::new({
        let _entered = runtime.enter();
        bulkhead()
    });
    g.bench_function("tower_resilience_bulkhead", |b| {
        b.iter_custom(|n| {
            on_two_threads_each(n, || {
                let entered = handle.enter();
                let mut service = bulkhead.lock().unwrap().clone();
                move || {
                    let _ = &entered;
                    call_tower(&mut service)
                }
            })
        })
    });
    g.finish();
    check_untouched(&breakers);
}

/// Every breaker is still closed with no call in flight, and the capped ones kept their cap: the
/// group measured admissions, never a refusal.
fn check_untouched(breakers: &[(&'static str, CircuitBreaker)]) {
    for (name, breaker) in breakers {
        assert_eq!(breaker.state(), toolbreaker::State::Closed, "{name}");
        assert_eq!(
            breaker.in_flight(),
            0,
            "{name}: a slot was never given back"
        );
        assert_eq!(breaker.throttle_probability(), 0.0, "{name} shed load");
        assert!(call_toolbreaker(breaker, false), "{name} refused a call");
    }
    assert_eq!(breakers[1].1.concurrency_limit(), Some(CAP));
}
