//! The `retry_budget` key of a configuration file: its rules per dependency, the errors naming
//! `retry_budget.KEY`, and a live reload that keeps each dependency's budget and its counts.

use std::time::Duration;

use toolbreaker::quanta::Clock;
use toolbreaker::{Registry, RegistryConfig};

#[test]
fn the_key_sets_each_dependencys_rules_over_the_default() {
    let config = RegistryConfig::from_toml(
        r#"
        [default]
        retry_budget = { ratio = 0.2, min_per_second = 10, window_ms = 10000 }

        [dependencies.search]
        retry_budget = { ratio = 0.5, window_ms = 2000 }

        [dependencies.billing]
        retry_budget = false

        [dependencies.weather]
        failure_threshold = 3
        "#,
    )
    .unwrap();
    let secs = Duration::from_secs;
    assert_eq!(config.retry_budget_for("quotes"), Some((0.2, 10, secs(10))));
    assert_eq!(
        config.retry_budget_for("weather"),
        Some((0.2, 10, secs(10))),
        "inherited"
    );
    assert_eq!(
        config.retry_budget_for("search"),
        Some((0.5, 10, secs(2))),
        "a table of its own: the keys it leaves out are the defaults, not [default]'s"
    );
    assert_eq!(config.retry_budget_for("billing"), None, "false: none");
    let bare = RegistryConfig::from_toml("[default]\nretry_budget = {}\n").unwrap();
    assert_eq!(bare.retry_budget_for("any"), Some((0.2, 10, secs(10))));
    let none = RegistryConfig::from_toml("[default]\ncooldown_ms = 5000\n").unwrap();
    assert_eq!(none.retry_budget_for("any"), None);
}

#[test]
fn every_error_names_the_budgets_key() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "retry_budget = 0.2",
            "retry_budget",
            "must be a table such as",
        ),
        ("retry_budget = true", "retry_budget", "or false for none"),
        (
            "retry_budget = { ratio = -0.5 }",
            "retry_budget.ratio",
            "from 0 to 1000",
        ),
        (
            "retry_budget = { ratio = 1001 }",
            "retry_budget.ratio",
            "from 0 to 1000",
        ),
        (
            "retry_budget = { ratio = nan }",
            "retry_budget.ratio",
            "from 0 to 1000",
        ),
        (
            "retry_budget = { ratio = \"a fifth\" }",
            "retry_budget.ratio",
            "must be a number",
        ),
        (
            "retry_budget = { min_per_second = -1 }",
            "retry_budget.min_per_second",
            "from 0 to",
        ),
        (
            "retry_budget = { min_per_second = 4294967296 }",
            "retry_budget.min_per_second",
            "from 0 to",
        ),
        (
            "retry_budget = { window_ms = 0 }",
            "retry_budget.window_ms",
            "at least 1 ms",
        ),
        (
            "retry_budget = { window_ms = 1.5 }",
            "retry_budget.window_ms",
            "whole number of ms",
        ),
        (
            "retry_budget = { window_ms = 99999999999999 }",
            "retry_budget.window_ms",
            "from 1 to",
        ),
        (
            "retry_budget = { burst = 3 }",
            "retry_budget.burst",
            "expected `ratio`, `min_per_second`, `window_ms`",
        ),
    ];
    for section in ["[default]", "[dependencies.search]"] {
        for (settings, field, words) in cases {
            let text = format!("{section}\n{settings}\n");
            let err = RegistryConfig::from_toml(&text).expect_err(&text);
            assert_eq!(err.field(), Some(*field), "{text}: {err}");
            let shown = err.to_string();
            assert!(shown.contains(words), "{text}: {shown}");
            assert!(shown.contains(&format!("`{field}`")), "{text}: {shown}");
        }
    }
}

/// A reload from the file changes the budget's rules in place: handles taken before it see the
/// new ratio, and the counts made before it still count.
#[test]
fn a_reload_keeps_each_budget_and_its_counts() {
    let (clock, _mock) = Clock::mock();
    let registry = Registry::builder()
        .clock(clock)
        .config(
            RegistryConfig::from_toml(
                "[default]\nretry_budget = { ratio = 0.1, min_per_second = 0, window_ms = 10000 }\n",
            )
            .unwrap(),
        )
        .build();
    let search = registry.retry_budget("search").unwrap();
    for _ in 0..10 {
        search.deposit();
    }
    assert!(search.try_withdraw());
    assert_eq!(search.retries_left(), 0);
    registry
        .reload_toml(
            "[default]\nretry_budget = { ratio = 0.5, min_per_second = 0, window_ms = 10000 }\n",
        )
        .unwrap();
    assert_eq!(search.ratio(), 0.5);
    assert_eq!(
        search.retries_left(),
        4,
        "0.5 × the 10 deposits made before, less 1"
    );
    registry
        .reload_toml(
            "[default]\nretry_budget = { ratio = 0.5, min_per_second = 0, window_ms = 20000 }\n",
        )
        .unwrap();
    assert_eq!(search.window(), Duration::from_secs(20));
    assert_eq!(search.retries_left(), 4, "carried into the longer window");
    registry
        .reload_toml("[dependencies.search]\nretry_budget = false\n")
        .unwrap();
    assert!(registry.retry_budget("search").is_none());
    assert!(
        registry
            .reload_toml("[default]\nretry_budget = { ratio = 2000 }\n")
            .is_err()
    );
    assert!(
        registry.retry_budget("search").is_none(),
        "a bad file changes nothing"
    );
}
