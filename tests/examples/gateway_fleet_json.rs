//! Checks the JSON reports of two real runs of the gateway example in fleet mode: three instances
//! whose breakers are shared through Redis, and the same three on their own. CI runs both, writes
//! their output to files, and runs this test with their paths:
//!
//! ```sh
//! cargo run --release --example gateway -- --fleet 3 --json > target/gateway-fleet.json
//! cargo run --release --example gateway -- --fleet 3 --independent --json > target/gateway-independent.json
//! GATEWAY_FLEET_JSON=target/gateway-fleet.json GATEWAY_INDEPENDENT_JSON=target/gateway-independent.json \
//!   cargo test --all-features --test examples -- --ignored gateway_fleet_json::
//! ```
//!
//! Ignored by default because it needs those files; it fails, rather than passes, without them.
//!
//! What is checked must hold on a loaded machine too: counts that add up, one probe per cooldown
//! for the fleet (a breaker of its own probes once per cooldown, so three on their own probe
//! about three times as often), and fewer requests reaching the failing servers from the fleet.
//! No timing is checked but that a delay is not negative: how fast a trip travels, and whether an
//! instance trips on its own before the fleet's open reaches it, depend on the machine's load.

use serde_json::Value;

const FAILING: [&str; 3] = ["search", "weather", "quotes"];
const ALL: [&str; 4] = ["search", "weather", "quotes", "files"];

fn load(variable: &str) -> Value {
    let path = std::env::var(variable)
        .unwrap_or_else(|_| panic!("{variable} names a `gateway --fleet 3 --json` report"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not one JSON object: {e}"))
}

fn count(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is a count in {value}"))
}

fn ratio(value: &Value) -> f64 {
    value["probes_per_cooldown"]
        .as_f64()
        .unwrap_or_else(|| panic!("probes_per_cooldown is a number in {value}"))
}

/// What both reports must show, shared or not.
fn check<'a>(report: &'a Value, mode: &str) -> &'a Value {
    let fleet = &report["fleet"];
    assert_eq!(fleet["mode"], mode, "the report's mode");
    assert_eq!(fleet["shared"], mode == "fleet");
    let instances = fleet["per_instance"]
        .as_array()
        .expect("per_instance is an array");
    assert_eq!(instances.len() as u64, count(report, "instances"));
    assert_eq!(instances.len(), 3, "--fleet 3");
    let mut names: Vec<&str> = instances
        .iter()
        .map(|i| i["instance"].as_str().expect("an instance's name"))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 3, "three distinct instances: {names:?}");
    for instance in instances {
        let who = instance["instance"].as_str().unwrap();
        assert!(count(instance, "calls") > 0, "{who} made no call");
        let redis = &instance["redis"];
        if mode == "fleet" {
            // Every instance reached Redis and kept it: the figures are the fleet's.
            assert_eq!(redis["connected"], true, "{who}: {redis}");
            assert_eq!(count(redis, "outages"), 0, "{who} lost Redis: {redis}");
            assert_eq!(count(redis, "bad_records"), 0, "{who}: {redis}");
        } else {
            assert!(redis.is_null(), "{who} used Redis in independent mode");
        }
        for name in ALL {
            let dep = &instance["dependencies"][name];
            let metrics = &dep["metrics"];
            assert_eq!(
                count(metrics, "admitted"),
                count(dep, "sent"),
                "{who} {name}: admitted == sent"
            );
            assert_eq!(
                count(dep, "sent") + count(dep, "blocked"),
                count(dep, "attempted") + count(dep, "retries") + count(dep, "retries_refused"),
                "{who} {name}: sent + blocked == attempted + retries + retries_refused"
            );
            assert_eq!(
                count(dep, "successes")
                    + count(dep, "failures")
                    + count(dep, "ignored")
                    + count(dep, "cut_by_deadline"),
                count(dep, "sent"),
                "{who} {name}: every attempt sent has one outcome, unless cut short"
            );
            assert!(
                count(dep, "sent_during_outage") <= count(dep, "sent"),
                "{who} {name}"
            );
            // Every breaker is closed again by the end: the outages end well before it.
            assert_eq!(metrics["state"], "closed", "{who} {name}: {metrics}");
        }
        // `files` never fails: nothing trips, nothing is sent to it while failing.
        let files = &instance["dependencies"]["files"];
        assert_eq!(count(files, "sent_during_outage"), 0, "{who}");
        assert_eq!(files["trips"]["own"], 0, "{who}");
        assert_eq!(files["trips"]["adopted"], 0, "{who}");
    }
    for name in ALL {
        let dep = &fleet["dependencies"][name];
        let per_instance = |key: &str| -> u64 {
            instances
                .iter()
                .map(|i| count(&i["dependencies"][name], key))
                .sum()
        };
        assert_eq!(
            count(dep, "sent_during_outage"),
            per_instance("sent_during_outage"),
            "{name}: the fleet's requests are the instances'"
        );
        assert_eq!(
            count(dep, "sent_during_outage"),
            count(dep, "server_hits_during_outage"),
            "{name}: every request the failing server had came from an instance"
        );
        assert_eq!(count(dep, "probes"), per_instance("probes"), "{name}");
    }
    for name in FAILING {
        let dep = &fleet["dependencies"][name];
        assert!(dep["outage"].is_object(), "{name} has an outage");
        assert!(count(dep, "sent_during_outage") > 0, "{name}: {dep}");
        assert!(count(dep, "probes") >= 1, "{name} was never probed: {dep}");
        assert!(count(dep, "cooldowns") >= 1, "{name}: {dep}");
        let trips = count(&dep["trips"], "own") + count(&dep["trips"], "adopted");
        assert!(trips >= 3, "{name}: every instance's breaker opened: {dep}");
    }
    fleet
}

fn check_spread(spread: &Value, what: &str) {
    let (p50, p99, max) = (
        spread["p50_ms"].as_f64(),
        spread["p99_ms"].as_f64(),
        spread["max_ms"].as_f64(),
    );
    if count(spread, "count") == 0 {
        assert!(p50.is_none() && p99.is_none() && max.is_none(), "{what}");
        return;
    }
    let (p50, p99, max) = (p50.unwrap(), p99.unwrap(), max.unwrap());
    assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{what}: {spread}");
}

#[test]
#[ignore = "needs GATEWAY_FLEET_JSON and GATEWAY_INDEPENDENT_JSON: two `gateway --fleet 3 --json` reports"]
fn the_fleet_probes_once_per_cooldown_and_sends_less_than_instances_on_their_own() {
    let shared_report = load("GATEWAY_FLEET_JSON");
    let independent_report = load("GATEWAY_INDEPENDENT_JSON");
    let shared = check(&shared_report, "fleet");
    let independent = check(&independent_report, "independent");

    for name in FAILING {
        let (s, i) = (
            &shared["dependencies"][name],
            &independent["dependencies"][name],
        );
        // One probe per cooldown for the whole fleet; about one per instance per cooldown for
        // instances on their own.
        assert!(ratio(s) <= 1.5, "{name}: fleet {s}");
        assert!(ratio(i) > ratio(s), "{name}: independent {i}, fleet {s}");
        assert!(
            count(s, "probes") < count(i, "probes"),
            "{name}: fleet {s}, independent {i}"
        );
        // The fleet's breakers share their transitions; nothing is shared on their own.
        check_spread(&s["propagation_ms"]["trip"], name);
        check_spread(&s["propagation_ms"]["close"], name);
        assert!(i["propagation_ms"].is_null(), "{name}: {i}");
        assert_eq!(count(&i["trips"], "adopted"), 0, "{name}: {i}");
    }
    // Each probe's verdict reached the other instances: at least one close was adopted.
    let all = &shared["propagation_ms"]["all"];
    check_spread(all, "all");
    assert!(
        count(&shared["propagation_ms"]["close"], "count") >= 1,
        "no close was adopted: {all}"
    );
    // The failing servers had fewer requests from the fleet than from instances on their own.
    let sent = |fleet: &Value| -> u64 {
        FAILING
            .iter()
            .map(|name| count(&fleet["dependencies"][name], "sent_during_outage"))
            .sum()
    };
    assert!(
        sent(shared) < sent(independent),
        "fleet sent {} during the outages, independent instances {}",
        sent(shared),
        sent(independent)
    );
}
