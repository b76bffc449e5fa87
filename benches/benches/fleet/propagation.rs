//! Trip propagation: instance `a` trips, and instance `b`'s breaker opens (its listener hears the
//! transition, reason `Fleet`); then `a`'s `force_closed` closes `b` again, and the next cycle
//! starts.

use std::time::Duration;

use criterion::Criterion;
use toolbreaker::{BlockedReason, Config, State};

use crate::{LONG, Others, Pair, THRESHOLD, others_line, summary, trip};

/// Group `fleet_propagation`, benchmark `trip_a_to_b`: from just before `a`'s first failure to
/// the moment `b`'s listener is told of its breaker's change (a block on `b` is then asserted).
/// Only the trip is timed; the close that ends each cycle is timed too but kept out of criterion's
/// figure, and printed with the trip's p50 and p99.
pub fn trip_a_to_b(c: &mut Criterion) {
    // An hour's cooldown: nothing probes, only a change by hand closes.
    let config = Config::new(THRESHOLD, LONG, LONG).expect("valid");
    let pair = Pair::new("bench-propagation", config);
    let (a, b) = (&pair.a, &pair.b);
    let mut trips: Vec<Duration> = Vec::new();
    let mut closes: Vec<Duration> = Vec::new();
    let mut others = Others::new();
    let cycle = |trips: &mut Vec<Duration>, closes: &mut Vec<Duration>, others: &mut Others| {
        let start = std::time::Instant::now();
        trip(&a.breaker);
        let heard = b.hear(State::Open, others);
        let opened = heard - start;
        let blocked = b.breaker.try_acquire().expect_err("b blocks once it heard");
        assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
        pair.settle();
        let start = std::time::Instant::now();
        a.breaker.force_closed().expect("a was open");
        let heard = b.hear(State::Closed, others);
        closes.push(heard - start);
        assert_eq!(b.breaker.state(), State::Closed);
        pair.settle_and_drain(others);
        trips.push(opened);
        opened
    };
    // One cycle, untimed, before any is timed.
    cycle(&mut Vec::new(), &mut Vec::new(), &mut others);
    let untimed = others.clone();
    let mut g = c.benchmark_group("fleet_propagation");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(20);
    g.bench_function("trip_a_to_b", |bencher| {
        bencher.iter_custom(|iters| {
            (0..iters)
                .map(|_| cycle(&mut trips, &mut closes, &mut others))
                .sum::<Duration>()
        })
    });
    g.finish();
    if !trips.is_empty() {
        println!(
            "fleet_propagation/trip_a_to_b raw samples (warm-up included): {}",
            summary(&mut trips)
        );
        println!(
            "fleet_propagation/close_a_to_b (force_closed on a until b's listener hears it), same \
             cycles: {}",
            summary(&mut closes)
        );
        println!(
            "fleet_propagation: fleet transitions heard besides b's open and close, every cycle \
             (the untimed first one included): {}; in the untimed first cycle: {}",
            others_line(&others),
            others_line(&untimed),
        );
    }
}
