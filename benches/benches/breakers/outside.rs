//! What an outside crate pays for the public API, case by case, side by side in one group.
//!
//! Each case is an opaque closure (`Box<dyn Fn(u64)>`, made behind `black_box`), so the
//! compiler cannot fold the call into the loop or specialise it for the loop's constant input,
//! and `black_box` takes the whole result the call returns (a `Result` with its `CallError` or
//! `Blocked`), so writing that result is paid as a caller pays it. The packed-word sketch is the
//! floor: one `AtomicU64` load and a compare, through the same kind of closure.
//!
//! The same cases run in a fixed-count loop, without criterion, when `TOOLBREAKER_OUTSIDE_LOOP`
//! is set (`run_fixed`), for exact instruction counts under `valgrind --tool=callgrind` (see
//! `benches/README.md`).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use toolbreaker::{CircuitBreaker, FailureKind, Outcome};

/// An opaque case: one call of the public API for input `i`.
type Case = Box<dyn Fn(u64)>;

/// `call`, closed and healthy.
fn call_closed() -> Case {
    let breaker = CircuitBreaker::builder().name("search").build().unwrap();
    Box::new(move |i| {
        // The classification written in place, as a user writes it.
        let _ = black_box(breaker.call(
            || Ok::<u64, u64>(black_box(i)),
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure(FailureKind::Unavailable),
            },
        ));
    })
}

/// `call`, closed and healthy, of a breaker with a health check (`probe_with`): its prober's
/// task waits on a runtime of its own, kept as long as the case.
fn call_closed_health_check() -> Case {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let breaker = {
        let _entered = runtime.enter();
        CircuitBreaker::builder()
            .name("search")
            .probe_with(|| async { Outcome::Success })
            .build_arc()
            .unwrap()
    };
    Box::new(move |i| {
        let _ = &runtime;
        let _ = black_box(breaker.call(
            || Ok::<u64, u64>(black_box(i)),
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure(FailureKind::Unavailable),
            },
        ));
    })
}

/// `call`, closed and healthy, of a breaker built by `admission` from the group's plain builder.
fn call_closed_with(
    admission: impl FnOnce(toolbreaker::breaker::Builder) -> toolbreaker::breaker::Builder,
) -> Case {
    let breaker = admission(CircuitBreaker::builder().name("search"))
        .build()
        .unwrap();
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

/// `try_acquire`, then `record` of a success.
fn acquire_record() -> Case {
    let breaker = CircuitBreaker::builder().name("search").build().unwrap();
    Box::new(move |i| match breaker.try_acquire() {
        Ok(permit) => {
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

/// A breaker tripped with an hour of cooldown left.
fn tripped() -> CircuitBreaker {
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(1)
        .cooldown(Duration::from_secs(3_600))
        .build()
        .unwrap();
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    assert!(breaker.try_acquire().is_err(), "open before the group");
    breaker
}

/// `call` on an open breaker, with an hour of cooldown left: the rejection.
fn open_rejection() -> Case {
    let breaker = tripped();
    Box::new(move |i| {
        // The classification written in place, as a user writes it.
        let _ = black_box(breaker.call(
            || Ok::<u64, u64>(black_box(i)),
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure(FailureKind::Unavailable),
            },
        ));
    })
}

/// `try_acquire` on the same open breaker: the rejection asked directly, the `Blocked` kept.
fn open_rejection_try_acquire() -> Case {
    let breaker = tripped();
    Box::new(move |_| {
        let _ = black_box(breaker.try_acquire());
    })
}

/// The floor: a packed word's admission, one load and a compare, with the value kept.
fn sketch() -> Case {
    let word = AtomicU64::new(0);
    Box::new(move |i| {
        // Acquire, as a breaker's admission load is.
        let w = word.load(Ordering::Acquire);
        let _ = black_box(if w >> 62 == 0 {
            Ok(black_box(i))
        } else {
            Err(w)
        });
    })
}

/// The cases by name, in the group's order.
pub fn cases() -> [(&'static str, Case); 8] {
    [
        ("call_closed_healthy", call_closed()),
        (
            "call_closed_healthy_max_in_flight",
            call_closed_with(|b| b.max_in_flight(64)),
        ),
        (
            "call_closed_healthy_throttling",
            call_closed_with(|b| b.adaptive_throttling(2.0, Duration::from_secs(10))),
        ),
        (
            "call_closed_healthy_health_check",
            call_closed_health_check(),
        ),
        ("try_acquire_record", acquire_record()),
        ("open_rejection", open_rejection()),
        ("open_rejection_try_acquire", open_rejection_try_acquire()),
        ("packed_word_sketch", sketch()),
    ]
}

/// Group 8: the public API as an outside crate calls it, each case behind an opaque closure.
pub fn public_api(c: &mut Criterion) {
    let mut g = c.benchmark_group("outside_crate");
    for (name, case) in cases() {
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
}

/// `spec` is `CASE N`: run that case `N` times (inputs 1 to `N`) and nothing else.
///
/// # Panics
///
/// On a spec that is not a case's name and a count.
pub fn run_fixed(spec: &str) {
    let (name, count) = spec
        .split_once(' ')
        .and_then(|(name, count)| Some((name, count.parse::<u64>().ok()?)))
        .unwrap_or_else(|| panic!("TOOLBREAKER_OUTSIDE_LOOP must be `CASE N`, got {spec:?}"));
    let (_, case) = cases()
        .into_iter()
        .find(|(case, _)| *case == name)
        .unwrap_or_else(|| panic!("no case {name:?} in the outside_crate group"));
    fixed_loop(black_box(&*case), count);
}

/// The loop `run_fixed` measures, a function of its own so that callgrind can count it alone
/// (`--toggle-collect=*fixed_loop*`): the case's setup is left out.
#[inline(never)]
fn fixed_loop(case: &dyn Fn(u64), count: u64) {
    for i in 1..=count {
        case(i);
    }
}
