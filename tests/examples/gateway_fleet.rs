//! The gateway example's fleet figures (`examples/gateway/figures.rs`) on reports written here:
//! how probes are grouped into cooldowns, how trips and closes are paired into propagation
//! delays, the percentiles, and the `fleet` object built from the instances' reports. No process,
//! socket or Redis: the figures are pure functions of the reports.

#[path = "../../examples/gateway/figures.rs"]
mod figures;

use figures::{DependencyInput, Heard, cooldowns, percentile, propagation, spread};
use serde_json::{Value, json};

const COOLDOWN_US: u64 = 500_000;

#[test]
fn one_instance_probing_per_cooldown_is_one_cooldown_per_probe() {
    // The fleet: each probe comes a whole cooldown (and the failed probe's answer) after the last,
    // whichever instance sends it.
    let fleet = [1_000_000, 1_500_400, 2_000_900, 2_501_300];
    assert_eq!(cooldowns(&fleet, COOLDOWN_US), 4);
    // A probe exactly one cooldown after the first of a cooldown starts the next.
    assert_eq!(cooldowns(&[0, 500_000], COOLDOWN_US), 2);
    assert_eq!(cooldowns(&[], COOLDOWN_US), 0);
}

#[test]
fn independent_instances_probing_in_the_same_cooldown_share_it() {
    // Three instances, each probing once a cooldown, a few ms apart: 3 cooldowns of 3 probes.
    let mut starts = Vec::new();
    for round in 0..3u64 {
        for instance in 0..3u64 {
            starts.push(1_000_000 + round * 501_000 + instance * 3_000);
        }
    }
    starts.reverse(); // any order
    assert_eq!(cooldowns(&starts, COOLDOWN_US), 3);
    // Spread out by a third of a cooldown, they still never put one instance's two probes in one
    // cooldown: at most one probe per instance per cooldown, so at least 9 / 3 cooldowns.
    let spread_out: Vec<u64> = (0..3u64)
        .flat_map(|round| (0..3u64).map(move |i| round * 501_000 + i * 170_000))
        .collect();
    let n = cooldowns(&spread_out, COOLDOWN_US);
    assert!((3..=4).contains(&n), "{n}");
}

#[test]
fn an_adoption_is_timed_from_the_first_trip_of_its_outbreak() {
    // Instance 0 trips at 1 s; 1 adopts 300 µs later; 2 trips on its own 100 µs after 0 (it had
    // not heard yet), so it adopts nothing.
    let events = [
        (1, 1_000_300, true),
        (0, 1_000_000, false),
        (2, 1_000_100, false),
    ];
    assert_eq!(propagation(&events, COOLDOWN_US as i64), vec![(1, 300)]);
    // The summed failures tripped the fleet: the reporting instance adopted first; the others
    // are timed from it.
    let summed = [
        (2, 5_000_000, true),
        (0, 5_000_450, true),
        (1, 5_000_200, true),
    ];
    assert_eq!(
        propagation(&summed, COOLDOWN_US as i64),
        vec![(1, 200), (0, 450)]
    );
    // Two outbreaks more than a cooldown apart are paired separately, and a second change of one
    // instance in one outbreak is not counted again.
    let two = [
        (0, 0, false),
        (1, 400, true),
        (1, 900, true),
        (0, 2_000_000, false),
        (1, 2_000_250, true),
    ];
    assert_eq!(
        propagation(&two, COOLDOWN_US as i64),
        vec![(1, 400), (1, 250)]
    );
}

#[test]
fn percentiles_are_nearest_rank() {
    let sorted: Vec<i64> = (1..=100).collect();
    assert_eq!(percentile(&sorted, 50.0), Some(50));
    assert_eq!(percentile(&sorted, 99.0), Some(99));
    assert_eq!(percentile(&[7], 99.0), Some(7));
    assert_eq!(percentile(&[3, 9], 50.0), Some(3));
    assert_eq!(percentile(&[], 50.0), None);
    let s = spread(&[900, 300, 600]);
    assert_eq!(s["count"], 3);
    assert_eq!(s["p50_ms"], 0.6);
    assert_eq!(s["p99_ms"], 0.9);
    assert_eq!(spread(&[])["p50_ms"], Value::Null);
}

fn heard(dependency: &str, at_us: i64, from: &str, to: &str, reason: &str) -> Value {
    Heard {
        instance: 0,
        dependency: dependency.to_owned(),
        at_us,
        from: from.to_owned(),
        to: to.to_owned(),
        reason: reason.to_owned(),
    }
    .json()
}

/// An instance's report, as `fleet.rs` writes it, with only what the figures read.
fn report(name: &str, probes: &[u64], heard: Vec<Value>) -> Value {
    json!({
        "instance": name,
        "pid": 1,
        "concurrency": 2,
        "calls": 100,
        "redis": {"connected": true, "commands": 10, "messages": 5, "adopted": 1, "outages": 0,
                  "bad_records": 0, "probes_claimed": probes.len()},
        "dependencies": {
            "search": {
                "probes": probes.len(),
                "probe_starts_us": probes,
                "outage": {"attempted": 1_000, "never_sent": 990},
            },
        },
        "heard": heard,
    })
}

#[test]
fn the_fleet_object_sums_the_instances_and_pairs_their_transitions() {
    let reports = [
        report(
            "gw-1",
            &[1_500_000, 2_600_000],
            vec![
                heard("search", 1_000_000, "closed", "open", "failure_threshold"),
                heard(
                    "search",
                    2_600_400,
                    "half_open",
                    "closed",
                    "probe_succeeded",
                ),
            ],
        ),
        report(
            "gw-2",
            &[2_050_000],
            vec![
                heard("search", 1_000_500, "closed", "open", "fleet"),
                heard("search", 2_600_700, "open", "closed", "fleet"),
            ],
        ),
    ];
    let dependencies = [DependencyInput {
        name: "search".to_owned(),
        cooldown_us: COOLDOWN_US,
        outage: Some(json!({"mode": "503 unavailable", "from_ms": 900, "to_ms": 2500})),
        server_hits: 5_000,
        server_failing_hits: 9,
        server_failing_hits_from: vec![7, 2],
    }];
    let fleet = figures::fleet(&reports, &dependencies, true);
    let search = &fleet["dependencies"]["search"];
    assert_eq!(fleet["mode"], "fleet");
    // Counted by the server, per instance.
    assert_eq!(search["sent_during_outage"], 9);
    assert_eq!(search["attempted_during_outage"], 2_000);
    assert_eq!(search["server_hits_during_outage"], 9);
    assert_eq!(search["probes"], 3);
    assert_eq!(search["cooldowns"], 3);
    assert_eq!(search["probes_per_cooldown"], 1.0);
    assert_eq!(search["trips"], json!({"own": 1, "adopted": 1}));
    assert_eq!(search["propagation_ms"]["trip"]["p50_ms"], 0.5);
    assert_eq!(search["propagation_ms"]["close"]["p99_ms"], 0.3);
    assert_eq!(fleet["propagation_ms"]["all"]["count"], 2);
    let gw1 = &fleet["per_instance"][0];
    assert_eq!(gw1["instance"], "gw-1");
    assert_eq!(gw1["dependencies"]["search"]["sent_during_outage"], 7);
    assert_eq!(gw1["dependencies"]["search"]["probes_per_cooldown"], 0.67);
    assert_eq!(
        gw1["dependencies"]["search"]["propagation_ms"]["trip"]["count"],
        0
    );
    let gw2 = &fleet["per_instance"][1];
    assert_eq!(gw2["dependencies"]["search"]["trips"]["adopted"], 1);
    assert_eq!(gw2["propagation_ms"]["trip"]["max_ms"], 0.5);

    // The same reports, not shared: nothing to propagate.
    let independent = figures::fleet(&reports, &dependencies, false);
    assert_eq!(independent["mode"], "independent");
    assert_eq!(
        independent["dependencies"]["search"]["propagation_ms"],
        Value::Null
    );
    let table = figures::table(&fleet, &["search"]);
    assert!(
        table.contains("probes per cooldown (3 cooldowns)"),
        "{table}"
    );
    assert!(table.contains("gw-2 (pid 1): 2 agent tasks"), "{table}");
    let summary = figures::summary(&fleet, &["search"]);
    assert_eq!(
        summary[0],
        "search: 9 requests reached it during its outage; 1.00 probes per cooldown; a trip reached \
         the other instances in 0.50 ms (p50), 0.50 ms (p99)"
    );
    assert!(
        summary[1].starts_with("every dependency: a trip reached another instance in 0.50 ms"),
        "{summary:?}"
    );
}

/// Every count the fleet run prints agrees in number with its noun: "1 agent task", never
/// "1 agent tasks" (the instance lines and the summary share this one helper).
#[test]
fn counts_agree_in_number_with_their_noun() {
    assert_eq!(figures::counted(1, "agent task"), "1 agent task");
    assert_eq!(figures::counted(0, "tool call"), "0 tool calls");
    assert_eq!(figures::counted(64, "agent task"), "64 agent tasks");
    assert_eq!(figures::counted(1, "instance"), "1 instance");
}
