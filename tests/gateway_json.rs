//! Checks the JSON report of a real run of the gateway example. CI runs the example with
//! `--json`, writes its output to a file, and runs this test with `GATEWAY_JSON=<that file>`:
//!
//! ```sh
//! cargo run --release --example gateway -- --duration 4 --json > target/gateway.json
//! GATEWAY_JSON=target/gateway.json cargo test --all-features --test gateway_json -- --ignored
//! ```
//!
//! Ignored by default because it needs that file; it fails, rather than passes, without it.

use serde_json::Value;

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
fn search_opened_and_files_never_did() {
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
        ] {
            assert!(dep[key].is_u64(), "{name}.{key} in {text}");
        }
        assert_eq!(
            dep["attempted"].as_u64(),
            Some(dep["sent"].as_u64().unwrap() + dep["blocked"].as_u64().unwrap()),
            "{name}: every attempt was either sent or blocked"
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
    assert!(
        deps["search"]["blocked"].as_u64().unwrap() > 0,
        "search blocked nothing"
    );
}
