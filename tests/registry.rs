//! `Registry`: one breaker per dependency, created on first use, isolated from each other.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use toolbreaker::{Config, FailureKind, Outcome, Registry, State};

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
    assert_eq!(registry.get("search").config().failure_threshold(), 2);
    assert_eq!(registry.get("weather").config().failure_threshold(), 5);
    assert_eq!(registry.config_for("never-called").failure_threshold(), 5);
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
