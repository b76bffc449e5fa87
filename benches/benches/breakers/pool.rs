//! A pool of eight healthy members (`toolbreaker::Pool`): the choice of a member, its permit and
//! its record, against one breaker's `call`, on one thread and on two.
//!
//! Each case is an opaque closure as in `outside.rs` (`Box<dyn Fn(u64) + Sync>`, made behind
//! `black_box`), called with a fresh input, with its whole result taken by `black_box`, so the
//! figures are what an outside crate pays for the public API.

use std::hint::black_box;

use criterion::Criterion;
use toolbreaker::{FailureKind, Outcome, Pool, Registry};

use crate::peers::on_two_threads;

/// An opaque case: one call of the public API for input `i`.
type Case = Box<dyn Fn(u64) + Sync>;

/// Eight members in one group, all closed.
fn pool(registry: &Registry) -> Pool {
    let members: Vec<String> = (0..8).map(|i| format!("upstream-{i}")).collect();
    Pool::builder("search")
        .group(members)
        .build(registry)
        .unwrap()
}

/// One breaker's `call`, closed and healthy: the reference.
fn breaker_call(registry: &Registry) -> Case {
    let breaker = registry.get("single");
    Box::new(move |i| {
        let _ = black_box(breaker.call(
            || Ok::<u64, u64>(black_box(i)),
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure(FailureKind::Unavailable),
            },
        ));
    })
}

/// The pool's `try_acquire`, then `record` of a success.
fn pool_acquire_record(registry: &Registry) -> Case {
    let pool = pool(registry);
    Box::new(move |i| match pool.try_acquire() {
        Ok(permit) => {
            black_box(permit.member());
            let outcome = if black_box(i) == u64::MAX {
                Outcome::Ignored
            } else {
                Outcome::Success
            };
            black_box(permit.record(outcome));
        }
        Err(blocked) => {
            black_box(blocked);
        }
    })
}

/// The pool's `call`, the operation given the member's name.
fn pool_call(registry: &Registry) -> Case {
    let pool = pool(registry);
    Box::new(move |i| {
        let _ = black_box(pool.call(
            |member| Ok::<u64, u64>(black_box(i) ^ member.len() as u64),
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure(FailureKind::Unavailable),
            },
        ));
    })
}

fn cases(registry: &Registry) -> [(&'static str, Case); 3] {
    [
        ("breaker_call", breaker_call(registry)),
        ("pool8_acquire_record", pool_acquire_record(registry)),
        ("pool8_call", pool_call(registry)),
    ]
}

/// Group 9: a pool of eight healthy members beside one breaker, one thread.
pub fn healthy(c: &mut Criterion) {
    let registry = Registry::default();
    let mut g = c.benchmark_group("pool_healthy");
    for (name, case) in cases(&registry) {
        let case = black_box(case);
        let mut i = 0_u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                case(i);
            })
        });
    }
    g.finish();
    assert!(
        registry.metrics().is_empty(),
        "no counting: the healthy path as users run it"
    );
    assert!(
        pool(&registry)
            .members()
            .all(|m| m.state() == toolbreaker::State::Closed)
    );
}

/// Group 10: the same on two threads sharing the pool (or the breaker): time per call per
/// thread.
pub fn two_threads(c: &mut Criterion) {
    let registry = Registry::default();
    let mut g = c.benchmark_group("pool_healthy_2_threads");
    for (name, case) in cases(&registry) {
        let case = black_box(case);
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                on_two_threads(n, || {
                    case(black_box(7));
                    true
                })
            })
        });
    }
    g.finish();
}
