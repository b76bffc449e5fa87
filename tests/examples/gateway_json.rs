//! Checks the JSON report of a real run of the gateway example. CI runs the example with
//! `--json`, writes its output to a file, and runs this test with `GATEWAY_JSON=<that file>`:
//!
//! ```sh
//! cargo run --release --example gateway -- --duration 4 --json > target/gateway.json
//! GATEWAY_JSON=target/gateway.json cargo test --all-features --test examples -- --ignored gateway_json::
//! ```
//!
//! Ignored by default because it needs that file; it fails, rather than passes, without it.

use serde_json::Value;

fn count(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is a count in {value}"))
}

fn transitions(dep: &Value, from: &str, to: &str) -> u64 {
    dep["transitions"]
        .as_array()
        .expect("transitions is an array")
        .iter()
        .filter(|t| t["from"] == from && t["to"] == to)
        .count() as u64
}

/// The trips (closed → open) the gateway logged with `reason`.
fn trips_by(dep: &Value, reason: &str) -> u64 {
    dep["transitions"]
        .as_array()
        .expect("transitions is an array")
        .iter()
        .filter(|t| t["from"] == "closed" && t["to"] == "open" && t["reason"] == reason)
        .count() as u64
}

fn transitions_to(dep: &Value, to: &str) -> usize {
    dep["transitions"]
        .as_array()
        .expect("transitions is an array")
        .iter()
        .filter(|t| t["to"] == to)
        .count()
}

#[test]
#[ignore = "needs GATEWAY_JSON: the path of a `gateway --json` report"]
fn search_opened_quotes_opened_by_its_failure_rate_and_files_never_did() {
    let path = std::env::var("GATEWAY_JSON").expect("GATEWAY_JSON names the report to check");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let report: Value = serde_json::from_str(&text).expect("the report is one JSON object");
    assert!(report["duration_ms"].as_u64().expect("duration_ms") > 0);
    let deps = &report["dependencies"];
    for name in ["search", "weather", "quotes", "files"] {
        let dep = &deps[name];
        for key in [
            "attempted",
            "sent",
            "blocked",
            "successes",
            "failures",
            "ignored",
            "retries",
            "retries_refused",
            "probes",
            "cut_by_deadline",
        ] {
            assert!(dep[key].is_u64(), "{name}.{key} in {text}");
        }
        // The breaker's own counters (`Registry::metrics`) agree with the gateway's: every
        // attempt sent took a permit; every outcome the gateway saw was recorded; every call
        // answered blocked was one rejection.
        let metrics = &dep["metrics"];
        assert!(metrics.is_object(), "{name}.metrics in {text}");
        assert_eq!(
            count(metrics, "admitted"),
            count(dep, "sent"),
            "{name}: admitted == sent"
        );
        for key in ["successes", "ignored"] {
            assert_eq!(count(metrics, key), count(dep, key), "{name}: {key}");
        }
        // A call refused for load (saturated, throttled) is answered blocked; the breaker counts
        // it apart from its blocked calls.
        assert_eq!(
            count(metrics, "blocked") + count(metrics, "saturated") + count(metrics, "throttled"),
            count(dep, "blocked"),
            "{name}: blocked"
        );
        for kind in ["timeout", "connect", "rate_limited", "unavailable", "other"] {
            assert_eq!(
                count(&metrics["failures"], kind),
                count(&dep["failures_by_kind"], kind),
                "{name}: failures of kind {kind}"
            );
        }
        // Every trip the gateway logged is one the breaker counted, with the same reason.
        let rules = ["failure_threshold", "failure_rate", "slow_call_rate"];
        assert_eq!(
            rules
                .iter()
                .map(|rule| count(&metrics["transitions"], rule))
                .sum::<u64>(),
            transitions(dep, "closed", "open"),
            "{name}: trips"
        );
        for rule in rules {
            assert_eq!(
                count(&metrics["transitions"], rule),
                trips_by(dep, rule),
                "{name}: trips by {rule}"
            );
        }
        // A call asked of the breaker sends its first attempt or is blocked; every further
        // attempt is a retry; a retry the opened breaker refused ends the call blocked.
        assert_eq!(
            count(dep, "sent") + count(dep, "blocked"),
            count(dep, "attempted") + count(dep, "retries") + count(dep, "retries_refused"),
            "{name}: sent + blocked == attempted + retries + retries_refused"
        );
        assert_eq!(
            count(dep, "successes")
                + count(dep, "failures")
                + count(dep, "ignored")
                + count(dep, "cut_by_deadline"),
            count(dep, "sent"),
            "{name}: every attempt sent has one outcome, unless the run's deadline cut it short"
        );
    }
    assert!(
        transitions_to(&deps["search"], "open") >= 1,
        "search never opened: {text}"
    );
    assert_eq!(
        transitions_to(&deps["files"], "open"),
        0,
        "files opened: {text}"
    );
    assert!(
        deps["files"]["ignored"].as_u64().unwrap() > 0,
        "files saw no 400s"
    );
    assert_eq!(
        count(&deps["files"], "retries"),
        0,
        "files retried a call, though its {} ignored 400s are never retried",
        count(&deps["files"], "ignored")
    );
    assert!(
        deps["search"]["blocked"].as_u64().unwrap() > 0,
        "search blocked nothing"
    );
    // What the breaker's counters say about `search`: the service failed, the breaker opened,
    // and the agents kept calling after it did (blocked, never sent).
    let search = &deps["search"]["metrics"];
    assert!(count(&search["failures"], "unavailable") >= 5, "{search}");
    assert!(
        count(&search["transitions"], "failure_threshold") >= 1,
        "{search}"
    );
    assert!(count(search, "blocked") > 0, "{search}");
    // `quotes`' partial outage (one request in three answered 429, never two in a row): its
    // breaker, which has a failure-rate rule besides the consecutive one, opened by its failure
    // rate and never by 5 failures in a row; it blocked calls, and was closed again by the end.
    let settings = &report["settings"]["breakers"];
    assert_eq!(settings["quotes"]["failure_rate"], 0.3, "{settings}");
    assert_eq!(settings["quotes"]["window_calls"], 20, "{settings}");
    assert_eq!(settings["quotes"]["minimum_calls"], 10, "{settings}");
    assert!(settings["quotes"]["window_ms"].is_null(), "{settings}");
    assert_eq!(settings["quotes"]["failure_threshold"], 5, "{settings}");
    for name in ["search", "weather", "files"] {
        for key in ["failure_rate", "window_calls", "window_ms", "minimum_calls"] {
            assert!(settings[name][key].is_null(), "{name}.{key} in {settings}");
        }
    }
    let quotes = &deps["quotes"];
    assert!(
        quotes["outage"]["mode"]
            .as_str()
            .is_some_and(|mode| mode.contains("1 request in 3")),
        "{quotes}"
    );
    let quotes_metrics = &quotes["metrics"];
    assert!(
        count(&quotes_metrics["failures"], "rate_limited") >= 3,
        "{quotes_metrics}"
    );
    assert!(
        count(&quotes_metrics["transitions"], "failure_rate") >= 1,
        "quotes never tripped by its failure rate: {quotes_metrics}"
    );
    assert_eq!(
        count(&quotes_metrics["transitions"], "failure_threshold"),
        0,
        "quotes tripped on 5 failures in a row: {quotes_metrics}"
    );
    assert!(
        count(quotes, "blocked") > 0,
        "quotes blocked nothing: {quotes}"
    );
    assert!(count(&quotes["outage"], "never_sent") > 0, "{quotes}");
    assert_eq!(quotes_metrics["state"], "closed", "{quotes_metrics}");
    let last = quotes["transitions"]
        .as_array()
        .and_then(|t| t.last())
        .unwrap_or_else(|| panic!("quotes has no transition: {quotes}"));
    assert_eq!(last["to"], "closed", "quotes recovered: {quotes}");
    assert_eq!(last["reason"], "probe_succeeded", "{quotes}");
    // And about `files`: its 400s were the caller's fault, never a counted failure.
    let files = &deps["files"]["metrics"];
    for kind in ["timeout", "connect", "rate_limited", "unavailable", "other"] {
        assert_eq!(
            count(&files["failures"], kind),
            0,
            "files: {kind} in {files}"
        );
    }
    assert!(count(files, "ignored") > 0, "{files}");
    assert_eq!(count(&files["transitions"], "failure_threshold"), 0);
    assert_eq!(count(files, "blocked"), 0);

    let runs = &report["runs"];
    let started = count(runs, "started");
    assert!(started >= 1, "no agent run was started: {text}");
    let stopped = &runs["stopped"];
    assert_eq!(
        count(stopped, "tool_call_budget")
            + count(stopped, "deadline")
            + count(stopped, "token_budget"),
        started,
        "every run ends on a stopped call: {text}"
    );
    assert_eq!(count(&report, "calls_stopped"), started, "{text}");
}

/// Admission control in the demo. `weather`, capped at 8 calls in flight, answered the calls past
/// its cap `saturated` while it hung, at once: none of them waited out a per-call timeout, as the
/// calls holding its slots did. `search`, throttled adaptively while its 503s grew, shed calls
/// before its breaker first tripped. Neither refusal was counted as a failure or a success by the
/// breakers, and no other tool refused a call for load: their entries have no cap, no throttle
/// and nothing saturated or throttled.
#[test]
#[ignore = "needs GATEWAY_JSON: the path of a `gateway --json` report"]
fn weather_answered_saturated_at_once_search_shed_before_its_trip_and_the_others_refused_none() {
    let path = std::env::var("GATEWAY_JSON").expect("GATEWAY_JSON names the report to check");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let report: Value = serde_json::from_str(&text).expect("the report is one JSON object");
    let settings = &report["settings"]["breakers"];
    assert_eq!(settings["weather"]["max_in_flight"], 8, "{settings}");
    assert_eq!(
        settings["search"]["adaptive_throttling"],
        serde_json::json!({"k": 1.5, "window_ms": 100}),
        "{settings}"
    );
    let deps = &report["dependencies"];
    for name in ["search", "weather", "quotes", "files"] {
        let dep = &deps[name];
        for key in [
            "saturated",
            "saturated_at_once",
            "throttled",
            "throttled_before_trip",
            "outage_attempted_before_trip",
        ] {
            assert!(dep[key].is_u64(), "{name}.{key} in {dep}");
        }
        // The breaker's own counters agree with the gateway's (a call refused for load is no
        // outcome: the other test checks that the breaker's outcomes are the attempts sent).
        let metrics = &dep["metrics"];
        assert_eq!(
            count(metrics, "saturated"),
            count(dep, "saturated"),
            "{name}"
        );
        assert_eq!(
            count(metrics, "throttled"),
            count(dep, "throttled"),
            "{name}"
        );
        assert!(
            count(dep, "saturated") + count(dep, "throttled") <= count(dep, "blocked"),
            "{name}: refusals for load are answered blocked: {dep}"
        );
        if name != "weather" {
            assert!(settings[name]["max_in_flight"].is_null(), "{name}");
            assert!(dep["concurrency_limit"].is_null(), "{name}: {dep}");
            assert_eq!(count(dep, "saturated"), 0, "{name} had no cap: {dep}");
        }
        if name != "search" {
            assert!(settings[name]["adaptive_throttling"].is_null(), "{name}");
            assert_eq!(count(dep, "throttled"), 0, "{name} had no throttle: {dep}");
        }
    }

    // `weather`: the calls past its cap were answered at once. The cap is the one in force at
    // the end; while it hung, calls were saturated, each answered before any attempt was sent,
    // in far less than the per-call timeout every attempt that held a slot waited out.
    let weather = &deps["weather"];
    assert_eq!(weather["concurrency_limit"], 8, "{weather}");
    assert!(
        count(weather, "saturated_at_once") > 0,
        "no call to weather was saturated while it hung: {weather}"
    );
    let timeout_ms = count(&report["settings"], "per_call_timeout_ms") as f64;
    let answer = &weather["saturated_answer_ms"];
    let mean = answer["mean"].as_f64().expect("a mean answer time");
    let max = answer["max"].as_f64().expect("a slowest answer time");
    assert!(
        mean <= max && max < timeout_ms,
        "a saturated call waited as long as an attempt's timeout ({timeout_ms} ms): {answer}"
    );
    assert!(
        mean * 10.0 < timeout_ms,
        "saturated calls took {mean} ms on average, not a small part of the {timeout_ms} ms \
         timeout: {answer}"
    );
    assert!(
        count(&weather["failures_by_kind"], "timeout") >= 5,
        "the slots' attempts timed out and tripped weather's breaker: {weather}"
    );
    assert!(
        count(&weather["metrics"]["transitions"], "failure_threshold") >= 1,
        "{weather}"
    );

    // `search`: its throttle shed calls while it degraded, before its breaker first tripped.
    let search = &deps["search"];
    assert!(
        search["outage"]["degrading_from_ms"]
            .as_u64()
            .expect("a degradation")
            < count(&search["outage"], "from_ms"),
        "{search}"
    );
    assert!(
        count(search, "throttled_before_trip") > 0,
        "search shed nothing before its breaker tripped: {search}"
    );
    assert!(
        count(search, "throttled_before_trip") <= count(search, "outage_attempted_before_trip"),
        "{search}"
    );
    let share = search["shed_before_trip_share"]
        .as_f64()
        .expect("a share shed");
    assert!(share > 0.0 && share < 1.0, "{search}");
    assert!(
        count(&search["metrics"]["transitions"], "failure_threshold") >= 1,
        "search's breaker tripped all the same, at its outage: {search}"
    );
}

/// A phase's calls served by `member`.
fn served_in(phase: &Value, member: &str) -> u64 {
    count(&phase["served"], member)
}

/// The pool `llm` of three model providers behind the `chat` tool: `llm-a` rate limited (429
/// with `x-ratelimit-reset-requests`), then `llm-b` unavailable (503) while `llm-a` still is,
/// then each healthy again. Traffic moved to the backup `llm-c` while both preferred members
/// were out and back to them after; `llm-a`'s open period came from the header, longer than the
/// cooldown; every member was probed by its health check alone, which closed it.
#[test]
#[ignore = "needs GATEWAY_JSON: the path of a `gateway --json` report"]
fn the_pool_moved_to_llm_c_and_back_its_open_times_from_the_headers_its_probes_health_checks() {
    let path = std::env::var("GATEWAY_JSON").expect("GATEWAY_JSON names the report to check");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let report: Value = serde_json::from_str(&text).expect("the report is one JSON object");
    let llm = &report["pools"]["llm"];
    assert!(llm.is_object(), "no pools.llm in {text}");
    assert_eq!(
        llm["groups"],
        serde_json::json!([["llm-a", "llm-b"], ["llm-c"]]),
        "{llm}"
    );
    assert_eq!(
        report["settings"]["pools"]["llm"]["groups"], llm["groups"],
        "{text}"
    );
    // Every chat call ended one way; the pool had a member for every call (never exhausted).
    assert_eq!(
        count(llm, "ok") + count(llm, "failed") + count(llm, "blocked") + count(llm, "stopped"),
        count(llm, "calls"),
        "{llm}"
    );
    assert!(count(llm, "ok") > 0, "{llm}");
    assert!(
        count(llm, "pool_exhausted") <= count(llm, "blocked"),
        "{llm}"
    );

    let members = &llm["members"];
    for name in ["llm-a", "llm-b", "llm-c"] {
        let member = &members[name];
        let metrics = &member["metrics"];
        let health = &member["health_checks"];
        assert!(metrics.is_object(), "{name}: {member}");
        // The breaker admitted each attempt an agent sent and each health check, nothing else;
        // and each check's answer was a probe's verdict: no agent's call was ever a probe.
        assert_eq!(count(member, "call_probes"), 0, "{name}: {member}");
        assert_eq!(
            count(metrics, "admitted"),
            count(member, "sent") + count(health, "run"),
            "{name}: admitted == sent + health checks: {member}"
        );
        assert_eq!(
            count(metrics, "successes"),
            count(member, "served") + count(health, "success"),
            "{name}: {member}"
        );
        let t = &metrics["transitions"];
        assert_eq!(
            count(t, "probe_succeeded") + count(t, "probe_failed") + count(t, "probe_timed_out"),
            count(health, "run"),
            "{name}: every probe was a health check: {member}"
        );
        assert_eq!(
            count(health, "success"),
            count(t, "probe_succeeded"),
            "{name}"
        );
        assert_eq!(metrics["state"], "closed", "{name} ended closed: {member}");
        assert!(
            count(member, "served") + count(member, "failures") <= count(member, "sent"),
            "{name}: {member}"
        );
    }
    // The two that failed tripped, were probed by their health checks, and a check closed each.
    for name in ["llm-a", "llm-b"] {
        let member = &members[name];
        assert!(
            count(&member["metrics"]["transitions"], "failure_threshold") >= 1,
            "{name} never tripped: {member}"
        );
        assert!(
            count(&member["health_checks"], "success") >= 1,
            "{name}: {member}"
        );
        let last = member["transitions"]
            .as_array()
            .and_then(|t| t.last())
            .unwrap_or_else(|| panic!("{name} has no transition: {member}"));
        assert_eq!(
            (&last["from"], &last["to"], &last["reason"]),
            (
                &Value::from("half_open"),
                &Value::from("closed"),
                &Value::from("probe_succeeded")
            ),
            "{name} was closed by its health check: {member}"
        );
    }
    // llm-a's 429s said how long: longer than the cooldown, and its open period lasted that long.
    let a = &members["llm-a"];
    assert!(count(&a["failures_by_kind"], "rate_limited") >= 1, "{a}");
    let cooldown = count(a, "cooldown_ms");
    let hint = count(a, "largest_hint_ms");
    assert!(
        hint > cooldown,
        "llm-a's hint {hint} ms vs cooldown {cooldown} ms: {a}"
    );
    assert!(
        count(a, "longest_open_ms") > cooldown,
        "llm-a's open period came from its header, longer than its cooldown: {a}"
    );
    // llm-b's 503s carry no hint: its open periods are its cooldown's.
    let b = &members["llm-b"];
    assert!(count(&b["failures_by_kind"], "unavailable") >= 1, "{b}");
    assert!(b["largest_hint_ms"].is_null(), "{b}");
    // llm-c never failed, and served only when the preferred members could not.
    let c = &members["llm-c"];
    assert_eq!(count(c, "failures"), 0, "{c}");
    assert!(count(c, "served") > 0, "llm-c never served: {c}");

    // The traffic, phase by phase: both preferred members share it while healthy; while both
    // are out, llm-c serves most of it; once both are healthy again it is back on them.
    let phases = llm["phases"].as_array().expect("phases is an array");
    assert!(phases.len() >= 3, "{llm}");
    let first = &phases[0];
    assert_eq!(first["failing"], "all healthy", "{first}");
    assert!(
        served_in(first, "llm-a") > 0 && served_in(first, "llm-b") > 0,
        "{first}"
    );
    assert!(
        served_in(first, "llm-c") < served_in(first, "llm-a") + served_in(first, "llm-b"),
        "{first}"
    );
    let overlap = phases
        .iter()
        .find(|p| p["failing"] == "llm-a 429, llm-b 503")
        .unwrap_or_else(|| panic!("no phase with both preferred members out: {llm}"));
    assert!(
        served_in(overlap, "llm-c") > served_in(overlap, "llm-a") + served_in(overlap, "llm-b"),
        "the traffic moved to llm-c while llm-a and llm-b were out: {overlap}"
    );
    let last = phases.last().expect("a last phase");
    assert_eq!(last["failing"], "all healthy", "{last}");
    assert!(
        served_in(last, "llm-a") + served_in(last, "llm-b") > served_in(last, "llm-c"),
        "the traffic moved back to llm-a and llm-b: {last}"
    );
    assert!(
        served_in(last, "llm-a") > 0 && served_in(last, "llm-b") > 0,
        "{last}"
    );
}
