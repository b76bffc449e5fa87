//! The healthy path with fleet mode on and off: the rows of `breakers`' `closed_healthy` that
//! call toolbreaker (`call`, and `try_acquire` + `Permit::record`), on a registry's breaker.

use std::hint::black_box;
use std::time::Instant;

use criterion::Criterion;
use toolbreaker::{CircuitBreaker, Config, FailureKind, Outcome, Registry, State};

use crate::{DEPENDENCY, Instance, LONG, THRESHOLD};

/// The operation every row guards, as in `breakers` (`peers.rs`): trivially cheap.
#[inline]
fn op(fail: bool) -> Result<u64, ()> {
    if black_box(fail) {
        Err(())
    } else {
        Ok(black_box(1))
    }
}

#[inline]
fn classify(result: &Result<u64, ()>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(()) => Outcome::Failure(FailureKind::Other),
    }
}

/// `breakers`' `call_toolbreaker`: one guarded call, `true` when it ran and succeeded.
#[inline]
fn call(b: &CircuitBreaker) -> bool {
    b.call(|| op(false), classify).is_ok()
}

/// `breakers`' `acquire_record_toolbreaker`: `try_acquire`, the operation, `Permit::record`.
#[inline]
fn acquire_record(b: &CircuitBreaker) -> bool {
    let Ok(permit) = b.try_acquire() else {
        return false;
    };
    let ok = op(false).is_ok();
    permit.record(Outcome::Success);
    ok
}

/// Group `fleet_closed_healthy`: the same breaker (threshold 5, an hour's cooldown) from a registry
/// without a fleet (`off_*`) and from one in fleet mode, connected, with a second instance in the
/// fleet (`on_*`).
pub fn on_off(c: &mut Criterion) {
    let config = Config::new(THRESHOLD, LONG, LONG).expect("valid");
    let plain = Registry::builder().default_config(config).build();
    let off = plain.get(DEPENDENCY);
    let a = Instance::new("bench-healthy", "a", config);
    let _b = Instance::new("bench-healthy", "b", config);
    let on = &a.breaker;
    let mut ran = false;
    let mut g = c.benchmark_group("fleet_closed_healthy");
    g.bench_function("off_call", |b| {
        ran = true;
        b.iter(|| call(&off))
    });
    g.bench_function("on_call", |b| b.iter(|| call(on)));
    g.bench_function("off_acquire_record", |b| b.iter(|| acquire_record(&off)));
    g.bench_function("on_acquire_record", |b| b.iter(|| acquire_record(on)));
    g.finish();
    // Both breakers must still be closed and the fleet connected, or the group measured
    // something else.
    assert!(call(&off) && call(on));
    assert_eq!(on.state(), State::Closed);
    assert!(
        a.registry.fleet().unwrap().is_connected(),
        "still connected"
    );
    if ran {
        rounds(&off, on);
    }
}

/// The pairs again, in alternating rounds: the machines these run on change speed while they
/// run, so a pair timed a second apart compares better than two criterion rows minutes apart.
fn rounds(off: &CircuitBreaker, on: &CircuitBreaker) {
    paired("call", off, on, call);
    paired("acquire_record", off, on, acquire_record);
}

/// Time `f` on `on` and on `off` in [`ROUNDS`] rounds of [`CALLS`] calls each, alternating which
/// goes first, and print the medians and the ratio per round. `f` is a type parameter, so each
/// loop is compiled with its call inlined, as in criterion's `iter`.
fn paired(
    name: &str,
    off: &CircuitBreaker,
    on: &CircuitBreaker,
    f: impl Fn(&CircuitBreaker) -> bool,
) {
    const ROUNDS: usize = 21;
    const CALLS: u32 = 4_000_000;
    let time = |b: &CircuitBreaker| {
        let start = Instant::now();
        for _ in 0..CALLS {
            black_box(f(black_box(b)));
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
    };
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mut ons, mut offs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (t_on, t_off) = if round % 2 == 0 {
            let t_on = time(on);
            (t_on, time(off))
        } else {
            let t_off = time(off);
            (time(on), t_off)
        };
        ons.push(t_on);
        offs.push(t_off);
        ratios.push(t_on / t_off);
    }
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(0.0, f64::max);
    println!(
        "fleet_closed_healthy rounds, {name}: {ROUNDS} rounds of {CALLS} calls, on and off \
         alternating: on {:.2} ns, off {:.2} ns (medians of the rounds); on/off per round: \
         median {:.3}, min {min:.3}, max {max:.3}",
        median(&mut ons),
        median(&mut offs),
        median(&mut ratios),
    );
}
