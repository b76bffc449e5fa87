//! `Registry`: one breaker per dependency, created on first use, isolated from each other; and
//! the sections of a configuration that match no dependency (a misspelt name, most often).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use toolbreaker::registry::closest_name;
use toolbreaker::{Config, FailureKind, Outcome, Registry, RegistryConfig, State};

fn config(threshold: u32) -> Config {
    Config::new(
        threshold,
        Duration::from_millis(100),
        Duration::from_secs(1),
    )
    .unwrap()
}

#[test]
fn one_dependency_open_never_blocks_another() {
    let (clock, _mock) = quanta::Clock::mock();
    let registry = Registry::builder()
        .default_config(config(2))
        .clock(clock)
        .build();
    let search = registry.get("search");
    for _ in 0..2 {
        search
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Unavailable));
    }
    assert_eq!(registry.get("search").state(), State::Open);
    for other in ["weather", "quotes", "files"] {
        let breaker = registry.get(other);
        assert_eq!(breaker.state(), State::Closed, "{other}");
        assert!(breaker.try_acquire().is_ok(), "{other}");
    }
}

#[test]
fn the_same_name_is_the_same_breaker_and_handles_see_each_others_changes() {
    let registry = Registry::new(config(1));
    let a = registry.get("search");
    let b = registry.get("search");
    assert!(Arc::ptr_eq(&a, &b));
    a.try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));
    assert_eq!(b.state(), State::Open);
    assert_eq!(registry.len(), 1);
}

#[test]
fn per_dependency_configuration_overrides_the_default() {
    let registry = Registry::builder()
        .default_config(config(5))
        .dependency("search", config(1))
        .dependency("search", config(2)) // a later one replaces an earlier one
        .build();
    assert_eq!(registry.get("search").config().failure_threshold(), Some(2));
    assert_eq!(
        registry.get("weather").config().failure_threshold(),
        Some(5)
    );
    assert_eq!(
        registry.config_for("never-called").failure_threshold(),
        Some(5)
    );
    assert_eq!(registry.len(), 2, "config_for creates nothing");
    let mut names = registry.dependencies();
    names.sort();
    assert_eq!(names, ["search", "weather"]);
}

#[test]
fn racing_first_uses_of_one_name_all_get_the_same_breaker() {
    for _ in 0..20 {
        let registry = Registry::default();
        let barrier = Barrier::new(8);
        let handles: Vec<_> = std::thread::scope(|s| {
            let spawned: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        registry.get("search")
                    })
                })
                .collect();
            spawned.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(handles.iter().all(|h| Arc::ptr_eq(h, &handles[0])));
        assert_eq!(registry.len(), 1);
    }
}

#[test]
fn an_empty_registry_has_no_breakers() {
    let registry = Registry::default();
    assert!(registry.is_empty());
    assert_eq!(registry.get("x").config(), Config::default());
    assert!(!registry.is_empty());
}

const TOOLS: [&str; 4] = ["search", "weather", "quotes", "files"];

#[test]
fn unknown_dependencies_are_the_sections_outside_the_known_names_in_name_order() {
    let sections = RegistryConfig::new(config(5))
        .dependency("weather", config(2))
        .dependency("serch", config(3))
        .dependency("Files", config(4))
        .dependency("search", config(1));
    assert_eq!(sections.unknown_dependencies(TOOLS), ["Files", "serch"]);
    assert_eq!(
        sections.unknown_dependencies(["weather", "serch"]),
        ["Files", "search"]
    );
    assert_eq!(
        sections.unknown_dependencies([]),
        ["Files", "search", "serch", "weather"],
        "nothing known: every section"
    );
    assert!(
        RegistryConfig::new(config(5))
            .unknown_dependencies(TOOLS)
            .is_empty(),
        "a default alone names no dependency"
    );
    let known: Vec<String> = TOOLS.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        sections.unknown_dependencies(known.iter().map(String::as_str)),
        ["Files", "serch"],
        "names borrowed from owned strings"
    );
}

#[test]
fn closest_name_suggests_a_likely_misspelling_and_nothing_else() {
    for (name, want) in [
        ("search", Some("search")),
        ("serch", Some("search")),
        ("Search", Some("search")),
        ("searchh", Some("search")),
        ("saerch", Some("search")),
        ("wether", Some("weather")),
        ("waether", Some("weather")),
        ("qoutes", Some("quotes")),
        ("flies", Some("files")),
        ("file", Some("files")),
        ("api", None),
        ("calendar", None),
        ("sear", None),
        ("", None),
    ] {
        assert_eq!(closest_name(name, TOOLS), want, "{name:?}");
    }
    // One edit per three characters: two for a name of six to eight, three from nine.
    assert_eq!(
        closest_name("wthr", TOOLS),
        None,
        "3 edits from weather, 1 allowed"
    );
    assert_eq!(closest_name("sarchh", TOOLS), Some("search"));
    assert_eq!(closest_name("a.exmple.co", ["api.example.com"]), None);
    assert_eq!(
        closest_name("api.exmaple.cm", ["api.example.com"]),
        Some("api.example.com")
    );
    // Characters, not bytes: `é` for `e` is one edit.
    assert_eq!(closest_name("météo", ["meteo"]), None, "two edits in five");
    assert_eq!(closest_name("metéo", ["meteo"]), Some("meteo"));
    // The nearest wins; of equally near ones, the first.
    assert_eq!(closest_name("bat", ["cart", "bad", "bag"]), Some("bad"));
    assert_eq!(closest_name("files", ["filed", "files"]), Some("files"));
    assert_eq!(closest_name("x", std::iter::empty()), None);
}

#[test]
fn a_reload_lists_the_sections_no_breaker_uses_and_keeps_them_for_later() {
    let registry = Registry::builder().default_config(config(5)).build();
    let search = registry.get("search");
    let weather = registry.get("weather");
    let file = RegistryConfig::new(config(5))
        .dependency("serch", config(1))
        .dependency("weather", config(2))
        .dependency("later", config(3));
    let reload = registry.reload(file.clone());
    assert_eq!(reload.unmatched(), ["later", "serch"]);
    let changed: Vec<_> = reload.changes().iter().map(|c| c.dependency()).collect();
    assert_eq!(changed, [Some("later"), Some("serch"), Some("weather")]);
    assert_eq!(
        (&reload).into_iter().count(),
        3,
        "iterating a reload goes over its changes"
    );
    assert_eq!(
        search.config(),
        config(5),
        "the misspelt section is not search's"
    );
    assert_eq!(weather.config(), config(2));
    assert_eq!(registry.len(), 2, "a reload creates no breaker");

    // A dependency first used later takes its section, and is no longer unmatched.
    assert_eq!(registry.get("later").config(), config(3));
    let again = registry.reload(file);
    assert!(again.changes().is_empty(), "{again:?}");
    assert_eq!(again.unmatched(), ["serch"]);

    // Every section used: nothing unmatched; a default alone: nothing either.
    let used = registry.reload(RegistryConfig::new(config(5)).dependency("search", config(1)));
    assert!(used.unmatched().is_empty(), "{used:?}");
    assert_eq!(search.config(), config(1));
    assert!(
        registry
            .reload(RegistryConfig::new(config(4)))
            .unmatched()
            .is_empty()
    );
}
