//! The export of breaker counters through the `metrics` facade, captured by a debugging recorder.

use std::collections::HashMap;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::{CompositeKey, MetricKind};
use toolbreaker::{FailureKind, Outcome, Registry};

/// Every exported value, keyed by (name, sorted labels).
fn capture(registry: &Registry) -> HashMap<(String, Vec<(String, String)>), DebugValue> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || registry.export_metrics());
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value): (CompositeKey, _, _, _)| {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<_> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            let name = key.name().to_owned();
            match kind {
                MetricKind::Counter | MetricKind::Gauge => {}
                MetricKind::Histogram => panic!("no histogram is exported: {name}"),
            }
            ((name, labels), value)
        })
        .collect()
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_counter_is_exported_with_its_labels_and_absolute_value() {
    let _turn = crate::turn();
    let registry = Registry::builder()
        .default_config(
            toolbreaker::Config::new(
                2,
                std::time::Duration::from_secs(60),
                std::time::Duration::from_secs(60),
            )
            .unwrap(),
        )
        .metrics(true)
        .build();
    let search = registry.get("search");
    search.try_acquire().unwrap().record(Outcome::Success);
    search.try_acquire().unwrap().record(Outcome::Ignored);
    for _ in 0..2 {
        search
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Timeout));
    }
    assert!(search.try_acquire().is_err());
    registry
        .get("weather")
        .try_acquire()
        .unwrap()
        .record(Outcome::Success);

    let got = capture(&registry);
    let value = |name: &str, l: &[(&str, &str)]| {
        got.get(&(name.to_owned(), labels(l)))
            .unwrap_or_else(|| panic!("{name} {l:?} not exported: {:?}", got.keys()))
    };
    let s = [("dependency", "search")];
    assert_eq!(
        value("toolbreaker_calls_admitted_total", &s),
        &DebugValue::Counter(4)
    );
    assert_eq!(
        value("toolbreaker_calls_blocked_total", &s),
        &DebugValue::Counter(1)
    );
    assert_eq!(
        value("toolbreaker_call_successes_total", &s),
        &DebugValue::Counter(1)
    );
    assert_eq!(
        value("toolbreaker_calls_ignored_total", &s),
        &DebugValue::Counter(1)
    );
    assert_eq!(
        value("toolbreaker_calls_dropped_total", &s),
        &DebugValue::Counter(0)
    );
    assert_eq!(
        value("toolbreaker_calls_throttled_total", &s),
        &DebugValue::Counter(0),
        "no adaptive throttling: exported as 0"
    );
    let failures = |kind| {
        value(
            "toolbreaker_call_failures_total",
            &[("dependency", "search"), ("kind", kind)],
        )
    };
    assert_eq!(failures("timeout"), &DebugValue::Counter(2));
    assert_eq!(failures("unavailable"), &DebugValue::Counter(0));
    let transitions = |reason| {
        value(
            "toolbreaker_transitions_total",
            &[("dependency", "search"), ("reason", reason)],
        )
    };
    assert_eq!(transitions("failure_threshold"), &DebugValue::Counter(1));
    assert_eq!(transitions("probe_failed"), &DebugValue::Counter(0));
    let state = |state| {
        value(
            "toolbreaker_state",
            &[("dependency", "search"), ("state", state)],
        )
    };
    assert_eq!(state("open"), &DebugValue::Gauge(1.0.into()));
    assert_eq!(state("closed"), &DebugValue::Gauge(0.0.into()));
    assert_eq!(state("half_open"), &DebugValue::Gauge(0.0.into()));
    assert_eq!(
        value(
            "toolbreaker_calls_admitted_total",
            &[("dependency", "weather")]
        ),
        &DebugValue::Counter(1),
        "every dependency, each under its own label"
    );
    assert!(
        got.keys().all(|(name, _)| name.starts_with("toolbreaker_")),
        "every name is prefixed"
    );
}

#[test]
fn the_cap_on_calls_in_flight_is_exported() {
    let _turn = crate::turn();
    let capped = toolbreaker::CircuitBreaker::builder()
        .max_in_flight(2)
        .build_config()
        .unwrap();
    let registry = Registry::builder()
        .dependency("search", capped)
        .metrics(true)
        .build();
    let search = registry.get("search");
    let _held = (search.try_acquire().unwrap(), search.try_acquire().unwrap());
    assert!(search.try_acquire().is_err());
    registry
        .get("weather")
        .try_acquire()
        .unwrap()
        .record(Outcome::Success);
    let got = capture(&registry);
    let value = |name: &str, dependency: &str| {
        got.get(&(name.to_owned(), labels(&[("dependency", dependency)])))
    };
    assert_eq!(
        value("toolbreaker_calls_saturated_total", "search"),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        value("toolbreaker_calls_blocked_total", "search"),
        Some(&DebugValue::Counter(0)),
        "a saturated call is not a blocked one"
    );
    assert_eq!(
        value("toolbreaker_calls_in_flight", "search"),
        Some(&DebugValue::Gauge(2.0.into()))
    );
    assert_eq!(
        value("toolbreaker_concurrency_limit", "search"),
        Some(&DebugValue::Gauge(2.0.into()))
    );
    assert_eq!(
        value("toolbreaker_concurrency_limit", "weather"),
        None,
        "no cap, no limit exported"
    );
    assert_eq!(
        value("toolbreaker_calls_in_flight", "weather"),
        Some(&DebugValue::Gauge(0.0.into()))
    );
}

#[test]
fn a_registry_without_counting_exports_nothing() {
    let _turn = crate::turn();
    let registry = Registry::default();
    registry
        .get("search")
        .try_acquire()
        .unwrap()
        .record(Outcome::Success);
    assert!(capture(&registry).is_empty());
}

#[test]
fn the_retries_a_budget_refused_are_exported_per_dependency() {
    let _turn = crate::turn();
    let none =
        toolbreaker::breaker::RetryBudget::new(0.0, 0, std::time::Duration::from_secs(10)).unwrap();
    let registry = Registry::builder()
        .metrics(true)
        .retry_budget(&none)
        .build();
    let budget = registry.retry_budget("search").unwrap();
    assert!(!budget.try_withdraw() && !budget.try_withdraw());
    registry.get("weather");
    let all = capture(&registry);
    let refused = |dependency| {
        all.get(&(
            "toolbreaker_retries_refused_total".to_owned(),
            labels(&[("dependency", dependency)]),
        ))
    };
    assert_eq!(refused("search"), Some(&DebugValue::Counter(2)));
    assert_eq!(refused("weather"), Some(&DebugValue::Counter(0)));
}
