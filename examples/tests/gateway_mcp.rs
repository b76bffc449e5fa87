//! The MCP gateway example (`examples/mcp_gateway.rs`): its main scenario, run here in-process on
//! real sockets for 4 s (the example's own code, through `#[path]`, and so the gateway binary's
//! relay and server), and the JSON report of a real
//! run of the example. Both are checked by [`check_report`], against the figures themselves rather
//! than the example's own verdicts: what the agents were told, what reached each upstream, and what
//! each breaker counted must agree, `notes` must never trip, and each failing upstream must trip,
//! block, and be closed again by the end.
//!
//! CI also runs the example with `--json`, writes its output to a file, and runs the ignored test
//! with `MCP_GATEWAY_JSON=<that file>`:
//!
//! ```sh
//! cargo run --release --example mcp_gateway --features mcp_gateway -- --duration 4 --json > target/mcp_gateway.json
//! MCP_GATEWAY_JSON=target/mcp_gateway.json cargo test --all-features --test examples -- --ignored gateway_mcp::
//! ```
//!
//! Nothing checked depends on how fast the machine is: only on what the schedule did (4 s leave
//! each failing upstream more than a second, two cooldowns, to be probed and closed after it
//! recovers) and on what the breakers are for.

use crate::scenario;

use std::time::Duration;

use serde_json::Value;

const FAILING: [&str; 2] = ["search", "weather"];
const ALL: [&str; 3] = ["search", "weather", "notes"];

fn count(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is a count in {value}"))
}

/// Every property a run of the example must have, read from its JSON report.
fn check_report(report: &Value) {
    let text = report.to_string();
    assert!(count(report, "duration_ms") > 0, "{text}");
    let clients = count(report, "clients");
    assert!(clients >= 1);
    let settings = &report["settings"];
    assert_eq!(count(settings, "failure_threshold"), 5);
    assert_eq!(count(settings, "cooldown_ms"), 500);
    assert_eq!(count(settings, "per_call_timeout_ms"), 250);
    // The gateway binary's relay forwards each call once (the old library gateway retried twice).
    assert_eq!(count(&settings["retry"], "max_retries"), 0);
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools is an array")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        tools,
        ["search.query", "weather.forecast", "notes.get", "notes.put"],
        "the gateway lists each upstream's tools under its name"
    );

    let upstreams = &report["upstreams"];
    let mut calls = 0;
    for name in ALL {
        let u = &upstreams[name];
        assert!(u.is_object(), "upstreams.{name} in {text}");
        let metrics = &u["metrics"];
        assert!(metrics.is_object(), "{name}.metrics in {text}");
        // What the agents were told: one reading per call, and the gateway answered each.
        assert_eq!(count(u, "gateway_errors"), 0, "{name}: unanswered calls");
        assert_eq!(
            count(u, "answered")
                + count(u, "tool_errors")
                + count(u, "blocked")
                + count(u, "failed")
                + count(u, "stopped"),
            count(u, "calls"),
            "{name}: every call is read one way"
        );
        assert!(count(u, "calls") > 0, "{name} was never called");
        calls += count(u, "calls");
        // The breaker blocked exactly the calls answered `blocked`, and every call that reached
        // the upstream (its own count) was admitted by the breaker.
        assert_eq!(
            count(metrics, "blocked"),
            count(u, "blocked"),
            "{name}: blocked"
        );
        assert!(
            count(u, "reached") <= count(metrics, "admitted"),
            "{name}: reached {} > admitted {}",
            count(u, "reached"),
            count(metrics, "admitted")
        );
        assert!(count(u, "retries_refused") <= count(u, "blocked"));
        // The listener heard what the breaker counted.
        let transitions = &metrics["transitions"];
        assert_eq!(
            count(u, "trips"),
            count(transitions, "failure_threshold"),
            "{name}: trips"
        );
        assert_eq!(
            count(u, "probes"),
            count(transitions, "cooldown_elapsed"),
            "{name}: probes"
        );
        assert_eq!(
            count(u, "closes"),
            count(transitions, "probe_succeeded"),
            "{name}: closes"
        );
        assert_eq!(
            u["transitions"].as_array().map(Vec::len),
            Some(
                count(transitions, "failure_threshold") as usize
                    + count(transitions, "cooldown_elapsed") as usize
                    + count(transitions, "probe_succeeded") as usize
                    + count(transitions, "probe_failed") as usize
                    + count(transitions, "probe_timed_out") as usize
            ),
            "{name}: every transition heard is one counted"
        );
        // While the breaker was open nothing was sent: what arrived then was already on its
        // way when it opened, at most one call per agent per trip.
        assert!(
            count(u, "reached_while_open") <= clients * count(u, "trips"),
            "{name}: {} reached while open, after {} trips by {clients} agents",
            count(u, "reached_while_open"),
            count(u, "trips")
        );
    }
    assert_eq!(count(report, "calls"), calls);

    // `notes`: always up; its isError answers are the tool's word, never a failure.
    let notes = &upstreams["notes"];
    assert!(notes["outage"].is_null());
    assert_eq!(count(notes, "trips"), 0, "notes tripped: {text}");
    assert_eq!(count(notes, "blocked"), 0, "notes blocked calls: {text}");
    assert!(
        count(notes, "tool_errors") > 0,
        "notes gave no isError answer"
    );
    assert_eq!(
        count(&notes["metrics"], "ignored"),
        count(notes, "tool_errors"),
        "each isError answer of notes was recorded as ignored"
    );
    assert_eq!(notes["final_state"], "closed");

    // Each failing upstream: tripped, blocked most calls of its outage, sent probes, and was
    // closed again by a probe once it had recovered.
    for name in FAILING {
        let u = &upstreams[name];
        let outage = &u["outage"];
        assert!(
            count(outage, "from_ms") < count(outage, "to_ms"),
            "{name}: {outage}"
        );
        assert!(count(u, "trips") >= 1, "{name} never tripped: {text}");
        assert!(count(u, "probes") >= 1, "{name} was never probed: {text}");
        assert!(
            count(u, "closes") >= 1,
            "{name} was never closed again: {text}"
        );
        assert_eq!(u["final_state"], "closed", "{name} at the end: {text}");
        assert!(count(u, "blocked") > 0, "{name} blocked nothing");
        assert!(
            count(u, "outage_blocked") * 2 > count(u, "outage_calls"),
            "{name}: {} of {} calls blocked during its outage",
            count(u, "outage_blocked"),
            count(u, "outage_calls")
        );
        // Its counted failures opened it: at least the threshold's worth reached it while failing.
        assert!(count(u, "reached_while_failing") >= 5, "{name}: {text}");
        assert!(
            count(u, "reached_while_failing") < count(u, "outage_calls"),
            "{name}: the outage's calls were not sent"
        );
        let transitions = u["transitions"].as_array().expect("transitions");
        assert_eq!(
            transitions.last().map(|t| &t["to"]),
            Some(&Value::from("closed")),
            "{name}: the last transition closed it"
        );
    }
    let search = &upstreams["search"]["metrics"]["failures"];
    assert!(count(search, "unavailable") >= 5, "search's 503s: {search}");
    let weather = &upstreams["weather"];
    assert!(
        count(&weather["metrics"]["failures"], "timeout") >= 5,
        "weather's timeouts: {weather}"
    );
    assert!(
        count(weather, "cancelled_upstream") >= 1
            && count(weather, "cancelled_upstream") <= count(weather, "reached_while_failing"),
        "the gateway cancels the calls it gave up on upstream: {weather}"
    );

    // A blocked call, as the model reads it.
    let example = &report["blocked_example"];
    let structured = &example["structuredContent"];
    assert_eq!(example["isError"], true, "{example}");
    assert_eq!(structured["status"], "blocked");
    assert_eq!(structured["reason"], "dependency_open");
    assert_eq!(count(structured, "attempts"), 0, "nothing was sent");
    assert!(count(structured, "retry_after_ms") > 0);
    assert!(FAILING.contains(&structured["dependency"].as_str().unwrap_or("")));
    let content = example["content"].as_array().expect("content");
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["text"], structured["message"]);

    // And the example's own verdicts agree.
    let invariants = report["invariants"].as_object().expect("invariants");
    assert!(invariants.len() >= 8, "{text}");
    for (name, invariant) in invariants {
        assert_eq!(
            invariant["verdict"], "holds",
            "invariant {name}: {invariant}"
        );
    }
    assert_eq!(report["ok"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_four_second_run_holds_every_invariant() {
    let settings = scenario::Settings {
        duration: Duration::from_secs(4),
        clients: 8,
        // Longer than the example's: an unoptimised build on a busy machine still answers each
        // call far within the per-call timeout.
        think_time: Duration::from_millis(20),
    };
    let report = scenario::run(settings, scenario::Log::new(true))
        .await
        .expect("the demo runs");
    let json = report.json();
    check_report(&json);
    // The table says the same.
    let table = report.table();
    assert!(!table.contains("FAILED"), "{table}");
    for name in ALL {
        assert!(table.contains(name), "{table}");
    }
}

#[test]
#[ignore = "needs MCP_GATEWAY_JSON: the path of an `mcp_gateway --json` report"]
fn the_examples_json_report_holds_every_invariant() {
    let given = std::env::var("MCP_GATEWAY_JSON").expect("MCP_GATEWAY_JSON names the report");
    // A relative path is the workspace root's, where the example was run (a test runs in its
    // package's folder, `examples/`).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(&given);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let report: Value = serde_json::from_str(&text).expect("the report is one JSON object");
    check_report(&report);
}
