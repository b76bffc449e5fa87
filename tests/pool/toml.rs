//! Pools in the registry's TOML file (`[pools.NAME]`) and their live reload: a reload that
//! changes a pool's groups gives a new pool over the same breakers, whose state it keeps.

use std::time::Duration;

use toolbreaker::{FailureKind, Outcome, Registry, RegistryConfig, State};

const FILE: &str = r#"
[default]
failure_threshold = 1
cooldown_ms = 10000

[pools.search]
groups = [["eu", "us"], ["backup"]]
max_ejected = 0.5

[pools."api.example.com"]
groups = [["api-1"]]
fail_closed = true
"#;

#[test]
fn a_file_with_pools_builds_them_over_the_breakers() {
    let config = RegistryConfig::from_toml(FILE).unwrap();
    assert_eq!(
        config.pools().collect::<Vec<_>>(),
        ["api.example.com", "search"]
    );
    let registry = Registry::builder().config(config).build();
    let search = registry.pool("search").unwrap();
    let groups: Vec<Vec<&str>> = search
        .groups()
        .map(|g| g.iter().map(|m| m.name()).collect())
        .collect();
    assert_eq!(groups, [vec!["eu", "us"], vec!["backup"]]);
    assert_eq!(search.panic_share(), Some(0.5));
    assert_eq!(
        registry.pool("api.example.com").unwrap().panic_share(),
        None,
        "fails closed"
    );
    assert_eq!(
        registry.get("eu").config().failure_threshold(),
        Some(1),
        "members are dependencies"
    );
    assert!(registry.pool("weather").is_none());
    // A file of pools alone sets something.
    assert!(RegistryConfig::from_toml("[pools.p]\ngroups = [[\"a\"]]\n").is_ok());
}

#[test]
fn a_bad_pool_table_is_refused_naming_the_pool_and_the_key() {
    let cases = [
        (
            "groups = [[\"a\"]]\nweight = 2",
            "weight",
            "unknown key; expected `groups`, `max_ejected`, `fail_closed`",
        ),
        ("max_ejected = 0.5", "groups", "is missing"),
        ("groups = []", "groups", "at least one group"),
        ("groups = [[\"a\"], []]", "groups", "at least one group"),
        (
            "groups = [\"a\", \"b\"]",
            "groups",
            "must be an array of groups",
        ),
        ("groups = [[1]]", "groups", "must be an array of groups"),
        (
            "groups = [[\"a\", \"b\"], [\"a\"]]",
            "groups",
            "names a member twice",
        ),
        (
            "groups = [[\"a\"]]\nmax_ejected = 1.5",
            "max_ejected",
            "fraction from 0 to 1",
        ),
        (
            "groups = [[\"a\"]]\nmax_ejected = \"half\"",
            "max_ejected",
            "must be a number",
        ),
        (
            "groups = [[\"a\"]]\nfail_closed = 1",
            "fail_closed",
            "true or false",
        ),
    ];
    for (settings, key, words) in cases {
        let text = format!("[pools.search]\n{settings}\n");
        let err = RegistryConfig::from_toml(&text).expect_err(&text);
        assert_eq!(
            (err.pool(), err.field(), err.dependency()),
            (Some("search"), Some(key), None),
            "{text}"
        );
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!(
                "invalid breaker configuration file, [pools.\"search\"] `{key}`: "
            )),
            "{shown}"
        );
        assert!(shown.contains(words), "{text}: {shown}");
    }
    let err = RegistryConfig::from_toml("pools = 3\n").unwrap_err();
    assert_eq!(err.field(), Some("pools"));
    let err = RegistryConfig::from_toml("[pool.search]\ngroups = [[\"a\"]]\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("`default`, `dependencies` and `pools`"),
        "{err}"
    );
}

#[test]
fn a_reload_changes_a_pools_groups_and_keeps_its_members_state() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let registry = Registry::builder()
        .config(RegistryConfig::from_toml(FILE).unwrap())
        .clock(clock)
        .build();
    let before = registry.pool("search").unwrap();
    let eu = registry.get("eu");
    eu.try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(eu.state(), State::Open);
    mock.increment(Duration::from_secs(4));

    let reload = registry
        .reload_toml(
            "[default]\nfailure_threshold = 1\ncooldown_ms = 10000\n\
             [pools.search]\ngroups = [[\"backup\"], [\"eu\", \"asia\"]]\n",
        )
        .unwrap();
    assert!(
        reload.changes().is_empty(),
        "no breaker's configuration changed"
    );
    let after = registry.pool("search").unwrap();
    let groups: Vec<Vec<&str>> = after
        .groups()
        .map(|g| g.iter().map(|m| m.name()).collect())
        .collect();
    assert_eq!(groups, [vec!["backup"], vec!["eu", "asia"]]);
    assert_eq!(after.panic_share(), None, "the share was taken out");
    assert!(
        std::sync::Arc::ptr_eq(after.member("eu").unwrap(), &eu),
        "the same breaker"
    );
    assert_eq!(eu.state(), State::Open, "its state survived the reload");
    assert!(
        registry.pool("api.example.com").is_none(),
        "a pool taken out of the file is gone"
    );
    assert_eq!(after.try_acquire().unwrap().member(), "backup");
    // The handle from before keeps its groups, over the same breakers.
    assert_eq!(before.groups().len(), 2);
    assert_eq!(before.try_acquire().unwrap().member(), "us");

    // backup trips too: eu is still open (6 s left), so asia serves.
    let backup = registry.get("backup");
    backup
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(after.try_acquire().unwrap().member(), "asia");

    // A reload that leaves the pool as it was keeps the same pool.
    assert!(
        registry
            .reload(registry.configuration())
            .pools_changed()
            .is_empty()
    );
    assert!(std::sync::Arc::ptr_eq(
        registry.pool("search").unwrap().member("eu").unwrap(),
        after.member("eu").unwrap()
    ));
}
