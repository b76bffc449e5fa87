//! Half-open contention: threads racing for the probe at the end of each cooldown.

use std::time::Duration;

use criterion::Criterion;

use crate::peers::*;

/// A 1 ms cooldown and an operation that always fails: each thread calls in a loop, so calls are
/// rejected while open, and at the end of every cooldown the two threads race for the one probe,
/// whose failure reopens the breaker. Per-call time per thread, as in the two-thread group. Almost
/// every call is a rejection (one probe a millisecond against millions of calls a second): the
/// figure is the open path under two threads with a probe race every millisecond, not the cost of
/// a race alone.
const COOLDOWN: Duration = Duration::from_millis(1);

/// Group 5: Two threads racing through open → half-open → open cycles.
pub fn half_open(c: &mut Criterion) {
    let mut g = c.benchmark_group("half_open_contention_2_threads");
    let tb = toolbreaker(1, COOLDOWN);
    let fc = failsafe_consecutive(1, COOLDOWN);
    let rc = recloser(0.5, 2, COOLDOWN);
    g.bench_function("toolbreaker", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_toolbreaker(&tb, true)))
    });
    g.bench_function("failsafe_consecutive", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_failsafe(&fc, true)))
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|n| on_two_threads(n, || call_recloser(&rc, true)))
    });
    g.finish();
}
