//! Closed breakers: the healthy path, on one thread and two, and a failure count to clear.

use std::hint::black_box;

use criterion::Criterion;
use toolbreaker::Window;

use crate::peers::*;
use crate::sketch::Sketch;

/// Group 1: Admit and record the success of a trivial operation, single thread: no breaker, the
/// packed-word sketch (the floor), toolbreaker through `call`, through the permit API and with
/// counting on, then the peers.
pub fn healthy(c: &mut Criterion) {
    let mut g = c.benchmark_group("closed_healthy");
    let sk = Sketch::new();
    let tb = toolbreaker(5, LONG);
    let tm = toolbreaker_counting(5, LONG);
    let rate = toolbreaker_rate(Window::Calls(100));
    let rate_time = toolbreaker_rate(Window::Time(LONG));
    let slow = toolbreaker_slow();
    let capped = toolbreaker_capped(64, false);
    let adaptive = toolbreaker_capped(64, true);
    let throttled = toolbreaker_throttled(5, LONG);
    let fc = failsafe_consecutive(5, LONG);
    let fd = failsafe_default();
    let rc = recloser(0.5, 100, LONG);
    g.bench_function("bare", |b| b.iter(|| call_bare(false)));
    g.bench_function("sketch", |b| b.iter(|| call_sketch(&sk, false)));
    g.bench_function("toolbreaker_call", |b| {
        b.iter(|| call_toolbreaker(&tb, false))
    });
    g.bench_function("toolbreaker_acquire_record", |b| {
        b.iter(|| acquire_record_toolbreaker(&tb))
    });
    g.bench_function("toolbreaker_counting", |b| {
        b.iter(|| call_toolbreaker(&tm, false))
    });
    g.bench_function("toolbreaker_failure_rate", |b| {
        b.iter(|| call_toolbreaker(&rate, false))
    });
    g.bench_function("toolbreaker_failure_rate_time", |b| {
        b.iter(|| call_toolbreaker(&rate_time, false))
    });
    g.bench_function("toolbreaker_slow_calls", |b| {
        b.iter(|| call_toolbreaker(&slow, false))
    });
    g.bench_function("toolbreaker_max_in_flight", |b| {
        b.iter(|| call_toolbreaker(&capped, false))
    });
    g.bench_function("toolbreaker_adaptive_concurrency", |b| {
        b.iter(|| call_toolbreaker(&adaptive, false))
    });
    g.bench_function("toolbreaker_throttled", |b| {
        b.iter(|| call_toolbreaker(&throttled, false))
    });
    g.bench_function("failsafe_consecutive", |b| {
        b.iter(|| call_failsafe(&fc, false))
    });
    g.bench_function("failsafe_default", |b| b.iter(|| call_failsafe(&fd, false)));
    g.bench_function("recloser", |b| b.iter(|| call_recloser(&rc, false)));
    g.finish();
    // Every breaker must still be closed, or the group measured rejections instead.
    assert!(call_sketch(&sk, false) && call_toolbreaker(&tb, false));
    assert!(call_toolbreaker(&capped, false) && call_toolbreaker(&adaptive, false));
    assert_eq!((capped.in_flight(), adaptive.in_flight()), (0, 0));
    assert_eq!(throttled.throttle_probability(), 0.0, "nothing shed");
    for rated in [&rate, &rate_time, &slow, &throttled] {
        assert_eq!(rated.state(), toolbreaker::State::Closed);
    }
}

/// Group 2: The healthy path with two threads sharing one breaker: per-call time per thread.
pub fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("closed_healthy_2_threads");
    let tb = toolbreaker(5, LONG);
    let tm = toolbreaker_counting(5, LONG);
    let rate = toolbreaker_rate(Window::Calls(100));
    let rate_time = toolbreaker_rate(Window::Time(LONG));
    let fc = failsafe_consecutive(5, LONG);
    let fd = failsafe_default();
    let rc = recloser(0.5, 100, LONG);
    g.bench_function("baseline", |b| {
        b.iter_custom(|n| on_two_threads(n, || black_box(op(false)).is_ok()))
    });
    g.bench_function("toolbreaker", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_toolbreaker(&tb, false)))
    });
    g.bench_function("toolbreaker_counting", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_toolbreaker(&tm, false)))
    });
    g.bench_function("toolbreaker_failure_rate", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_toolbreaker(&rate, false)))
    });
    g.bench_function("toolbreaker_failure_rate_time", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_toolbreaker(&rate_time, false)))
    });
    g.bench_function("failsafe_consecutive", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_failsafe(&fc, false)))
    });
    g.bench_function("failsafe_default", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_failsafe(&fd, false)))
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_recloser(&rc, false)))
    });
    g.finish();
}

/// Group 3: Closed with a failure count to clear: one failure then one success per iteration (two
/// calls), never reaching the threshold.
pub fn failures_to_clear(c: &mut Criterion) {
    let mut g = c.benchmark_group("closed_failure_then_success");
    let tb = toolbreaker(5, LONG);
    let fc = failsafe_consecutive(5, LONG);
    let fd = failsafe_default();
    // 50 % errors over the window must not trip it: set its error-rate threshold above that.
    let rc = recloser(0.9, 100, LONG);
    g.bench_function("baseline", |b| {
        b.iter(|| (black_box(op(true)).is_ok(), black_box(op(false)).is_ok()))
    });
    g.bench_function("toolbreaker", |b| {
        b.iter(|| (call_toolbreaker(&tb, true), call_toolbreaker(&tb, false)))
    });
    g.bench_function("failsafe_consecutive", |b| {
        b.iter(|| (call_failsafe(&fc, true), call_failsafe(&fc, false)))
    });
    g.bench_function("failsafe_default", |b| {
        b.iter(|| (call_failsafe(&fd, true), call_failsafe(&fd, false)))
    });
    g.bench_function("recloser", |b| {
        b.iter(|| (call_recloser(&rc, true), call_recloser(&rc, false)))
    });
    g.finish();
    // Every breaker must still be closed, or the group measured rejections instead.
    assert!(call_toolbreaker(&tb, false) && call_failsafe(&fc, false));
    assert!(call_failsafe(&fd, false) && call_recloser(&rc, false));
}
