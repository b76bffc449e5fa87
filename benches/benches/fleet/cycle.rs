//! A whole trip cycle between two instances, and what it costs Redis: `a` trips, `b` hears it,
//! the cooldown passes, both instances call until one of them is admitted (the fleet's one
//! probe), the other keeps calling for 1 ms and is not admitted, the probe succeeds, and the
//! other instance hears the close.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use criterion::Criterion;
use toolbreaker::fleet::FleetStats;
use toolbreaker::{Config, Outcome, State};

use crate::server::{command_counts, connect};
use crate::{Instance, Others, Pair, THRESHOLD, others_line, trip, url};

/// The cooldown of the cycle's breakers (the server's clock decides when it ends).
const COOLDOWN: Duration = Duration::from_millis(20);
/// How long the probe is held before its success is recorded.
const HELD: Duration = Duration::from_millis(1);
/// How long the idle background is measured, after the cycles.
const IDLE: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Tally {
    cycles: u64,
    /// Cycles whose probe ran on `a`, on `b`.
    probes: [u64; 2],
    /// Polls that admitted a call on both instances at once (the fleet gave two probes).
    both_admitted: u64,
    /// Calls the other instance admitted while the probe was out.
    admitted_during_probe: u64,
    /// Fleet transitions heard besides the expected open (on `b`) and close (on the other one).
    others: Others,
}

fn cycle(pair: &Pair, tally: &mut Tally) -> Duration {
    let (a, b) = (&pair.a, &pair.b);
    let start = Instant::now();
    trip(&a.breaker);
    b.hear(State::Open, &mut tally.others);
    pair.settle();
    std::thread::sleep(COOLDOWN);
    // Both instances have traffic: each poll calls both, until one is admitted.
    let deadline = Instant::now() + crate::LIMIT;
    let (probe, other, on) = loop {
        let on_a = a.breaker.try_acquire().ok();
        let on_b = b.breaker.try_acquire().ok();
        match (on_a, on_b) {
            (Some(probe), None) => break (probe, b, 0),
            (None, Some(probe)) => break (probe, a, 1),
            (Some(probe), Some(second)) => {
                tally.both_admitted += 1;
                drop(second);
                break (probe, b, 0);
            }
            (None, None) => {
                assert!(
                    Instant::now() < deadline,
                    "no instance was given the probe within {:?} after the cooldown (a: {:?}, \
                     b: {:?})",
                    crate::LIMIT,
                    a.breaker.state(),
                    b.breaker.state()
                );
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    };
    // The other instance keeps calling for 1 ms while the probe is out: none is admitted.
    let held = Instant::now();
    while held.elapsed() < HELD {
        if other.breaker.try_acquire().is_ok() {
            tally.admitted_during_probe += 1;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    probe.record(Outcome::Success);
    other.hear(State::Closed, &mut tally.others);
    pair.settle_and_drain(&mut tally.others);
    tally.cycles += 1;
    tally.probes[on] += 1;
    start.elapsed()
}

fn stats(instance: &Instance) -> FleetStats {
    instance.registry.fleet().expect("fleet mode").stats()
}

/// `after - before` per name (names in neither count 0).
fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(name, &n)| (name.clone(), n - before.get(name).copied().unwrap_or(0)))
        .filter(|(name, n)| *n > 0 && name != "info")
        .collect()
}

/// Group `fleet_trip_cycle`, benchmark `trip_probe_close`: the time of a whole cycle (the 20 ms
/// cooldown and the 1 ms the probe is held included); around the group, the server's command counts, printed per cycle by name
/// with the idle background (measured for 5 s after the group, the same two instances connected
/// and quiet) subtracted.
pub fn trip_probe_close(c: &mut Criterion) {
    let config = Config::new(THRESHOLD, COOLDOWN, Duration::from_secs(1)).expect("valid");
    let pair = Pair::new("bench-cycle", config);
    let (a, b) = (&pair.a, &pair.b);
    let mut monitor = connect(url()).expect("a connection to the benchmark's server");
    // One cycle, uncounted, before the count starts.
    cycle(&pair, &mut Tally::default());
    let mut tally = Tally::default();
    let before = command_counts(&mut monitor);
    let (a0, b0) = (stats(a), stats(b));
    let window = Instant::now();
    let mut g = c.benchmark_group("fleet_trip_cycle");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10);
    g.bench_function("trip_probe_close", |bencher| {
        bencher.iter_custom(|iters| (0..iters).map(|_| cycle(&pair, &mut tally)).sum())
    });
    g.finish();
    let after = command_counts(&mut monitor);
    let (a1, b1) = (stats(a), stats(b));
    let window = window.elapsed();
    if tally.cycles == 0 {
        return;
    }
    // The background: the same instances, connected and idle.
    let idle_before = command_counts(&mut monitor);
    let (ai0, bi0) = (stats(a), stats(b));
    let idle = Instant::now();
    std::thread::sleep(IDLE);
    let idle_after = command_counts(&mut monitor);
    let (ai1, bi1) = (stats(a), stats(b));
    let idle = idle.elapsed();

    let n = tally.cycles as f64;
    let scale = window.as_secs_f64() / idle.as_secs_f64();
    let busy = delta(&before, &after);
    let quiet = delta(&idle_before, &idle_after);
    println!(
        "fleet_trip_cycle: {} cycles (trip on a, cooldown {COOLDOWN:?}, one probe, close) in \
         {:.2} s; probes run on a: {}, on b: {}; polls that admitted both: {}; calls the other \
         instance admitted while the probe was out: {}; other fleet transitions heard: {}",
        tally.cycles,
        window.as_secs_f64(),
        tally.probes[0],
        tally.probes[1],
        tally.both_admitted,
        tally.admitted_during_probe,
        others_line(&tally.others),
    );
    println!(
        "fleet_trip_cycle idle background, both instances ({:.2} s): {}",
        idle.as_secs_f64(),
        quiet
            .iter()
            .map(|(name, n)| format!("{name} {:.2}/s", *n as f64 / idle.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "fleet_trip_cycle server commands per cycle (INFO commandstats; the benchmark's own INFO \
         left out; the commands the scripts run are counted by the server under their own \
         names), gross - idle background = net:"
    );
    let names: BTreeSet<&String> = busy.keys().chain(quiet.keys()).collect();
    let mut rows: Vec<(String, f64, f64)> = names
        .into_iter()
        .map(|name| {
            let gross = busy.get(name).copied().unwrap_or(0) as f64 / n;
            let background = quiet.get(name).copied().unwrap_or(0) as f64 * scale / n;
            (name.clone(), gross, background)
        })
        .collect();
    rows.sort_by(|x, y| (y.1 - y.2).total_cmp(&(x.1 - x.2)).then(x.0.cmp(&y.0)));
    let (mut gross_total, mut background_total) = (0.0, 0.0);
    for (name, gross, background) in &rows {
        gross_total += gross;
        background_total += background;
        println!(
            "  {name:<16} {gross:>7.2} - {background:>5.2} = {:>7.2}",
            gross - background
        );
    }
    println!(
        "  {:<16} {gross_total:>7.2} - {background_total:>5.2} = {:>7.2}",
        "(all)",
        gross_total - background_total
    );
    for (name, s0, s1, i0, i1) in [("a", a0, a1, ai0, ai1), ("b", b0, b1, bi0, bi1)] {
        let background = (i1.commands - i0.commands) as f64 * scale / n;
        let commands = (s1.commands - s0.commands) as f64 / n;
        println!(
            "fleet_trip_cycle worker {name} per cycle (FleetStats): commands {commands:.2} - \
             {background:.2} idle = {:.2}; messages {:.2}; adopted {:.2}; probes claimed {:.2}",
            commands - background,
            (s1.messages - s0.messages) as f64 / n,
            (s1.adopted - s0.adopted) as f64 / n,
            (s1.probes_claimed - s0.probes_claimed) as f64 / n,
        );
    }
}
