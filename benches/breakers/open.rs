//! Open breakers: the cost of a rejection, the path that runs thousands of times a second during
//! an outage.

use std::time::Duration;

use criterion::Criterion;

use crate::peers::*;

const LONG: Duration = Duration::from_secs(3600);

/// Group 4: A rejected call: each breaker tripped, with an hour of cooldown left.
pub fn rejection(c: &mut Criterion) {
    let mut g = c.benchmark_group("open_rejection");
    let tb = toolbreaker(1, LONG);
    let fc = failsafe_consecutive(1, LONG);
    let fd = failsafe_default();
    let rc = recloser(0.5, 2, LONG);
    // Trip every breaker; failsafe's default needs a run of consecutive failures.
    for _ in 0..10 {
        call_toolbreaker(&tb, true);
        call_failsafe(&fc, true);
        call_failsafe(&fd, true);
        call_recloser(&rc, true);
    }
    assert!(!call_toolbreaker(&tb, false), "toolbreaker is open");
    assert!(
        !call_failsafe(&fc, false) && !call_failsafe(&fd, false),
        "failsafe is open"
    );
    assert!(!call_recloser(&rc, false), "recloser is open");
    g.bench_function("toolbreaker", |b| b.iter(|| call_toolbreaker(&tb, false)));
    g.bench_function("failsafe_consecutive", |b| {
        b.iter(|| call_failsafe(&fc, false))
    });
    g.bench_function("failsafe_default", |b| b.iter(|| call_failsafe(&fd, false)));
    g.bench_function("recloser", |b| b.iter(|| call_recloser(&rc, false)));
    g.finish();
}
