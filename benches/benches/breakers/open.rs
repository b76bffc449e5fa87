//! Open breakers: the cost of a rejection, the path that runs thousands of times a second during
//! an outage.

use std::hint::black_box;

use criterion::Criterion;

use crate::peers::*;

/// Group 4: A rejected call: each breaker tripped, with an hour of cooldown left.
///
/// failsafe's default policy is left out: its backoff (5–10 s, jittered) cannot be set to an hour
/// through `Config::new()`, so it would close again in the middle of the group.
pub fn rejection(c: &mut Criterion) {
    let mut g = c.benchmark_group("open_rejection");
    let tb = toolbreaker(1, LONG);
    let fc = failsafe_consecutive(1, LONG);
    let rc = recloser(0.5, 2, LONG);
    let all_open = || {
        !call_toolbreaker(&tb, false) && !call_failsafe(&fc, false) && !call_recloser(&rc, false)
    };
    for _ in 0..10 {
        call_toolbreaker(&tb, true);
        call_failsafe(&fc, true);
        call_recloser(&rc, true);
    }
    assert!(all_open(), "every breaker is open before the group");
    g.bench_function("toolbreaker", |b| b.iter(|| call_toolbreaker(&tb, false)));
    // The same rejection asked for directly: `try_acquire`, no `CallError` around the `Blocked`.
    g.bench_function("toolbreaker_try_acquire", |b| {
        b.iter(|| black_box(tb.try_acquire()).is_ok())
    });
    g.bench_function("failsafe_consecutive", |b| {
        b.iter(|| call_failsafe(&fc, false))
    });
    g.bench_function("recloser", |b| b.iter(|| call_recloser(&rc, false)));
    g.finish();
    assert!(
        all_open(),
        "and still open after it: every figure is a rejection"
    );
}
