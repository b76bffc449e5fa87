//! A registry's bounds: at most `max_dependencies` breakers (names with their own configuration
//! aside), the overflow breaker and `RegistryFull` past them, and the eviction of idle, healthy,
//! unheld breakers, on a mock clock.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolbreaker::registry::OVERFLOW_DEPENDENCY;
use toolbreaker::{
    BlockedReason, Config, FailureKind, Fleet, Outcome, Registry, RegistryConfig, RegistryFull,
    State,
};

/// Threshold 2; a cooldown and a probe lease of an hour, longer than any test's clock moves
/// after a trip, so an open breaker stays open and a probe stays in flight.
fn config() -> Config {
    Config::new(2, Duration::from_secs(3600), Duration::from_secs(3600)).unwrap()
}

fn fail(registry: &Registry, name: &str) {
    registry
        .get(name)
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
}

fn names(registry: &Registry) -> BTreeSet<String> {
    registry.dependencies().into_iter().collect()
}

const BOUND: usize = 10_000;
const PERIOD: Duration = Duration::from_secs(1);

#[test]
fn a_million_invented_names_never_grow_the_registry_past_its_bound() {
    let started = Instant::now();
    let (clock, mock) = quanta::Clock::mock();
    let registry = Registry::builder()
        .default_config(config())
        .dependency("search", config())
        .dependency("weather", config())
        .max_dependencies(BOUND)
        .idle_eviction(PERIOD)
        .clock(clock)
        .build();
    // Configured names are admitted and count toward the bound.
    registry.get("search");
    registry.get("weather");

    // Half-open with a probe in flight, held by no handle: its caller is still out (forgotten
    // here, so the slot stays taken for the probe's hour-long lease).
    fail(&registry, "probing");
    fail(&registry, "probing");
    mock.increment(Duration::from_secs(3600));
    registry.with("probing", |breaker| {
        let probe = breaker.try_acquire().unwrap();
        assert!(probe.is_probe());
        std::mem::forget(probe);
    });
    // Tripped open, isolated, counting one failure: no handle holds them.
    for i in 0..5 {
        fail(&registry, &format!("open-{i}"));
        fail(&registry, &format!("open-{i}"));
    }
    assert!(registry.get("isolated").force_open().is_some());
    fail(&registry, "failing");
    // Closed and clear, but held.
    let held = registry.get("held");
    let kept = registry.len();
    assert_eq!(kept, 11);

    let mut name = String::new();
    let mut overflowed = 0;
    let batches = 100;
    let per_batch = 1_000_000 / batches;
    for batch in 0..batches {
        // The last batch's names have been idle a whole period: the first insertion that finds
        // the registry full evicts them.
        mock.increment(PERIOD);
        let mut admitted = 0;
        for i in 0..per_batch {
            name.clear();
            write!(name, "tool-{batch}-{i}").unwrap();
            let breaker = registry.get(&name);
            if breaker.name() == name {
                admitted += 1;
            } else {
                assert_eq!(breaker.name(), OVERFLOW_DEPENDENCY);
                overflowed += 1;
            }
            if i % 1000 == 0 {
                assert!(registry.len() <= BOUND, "{} at {batch}/{i}", registry.len());
            }
        }
        assert_eq!(registry.len(), BOUND, "batch {batch}");
        assert_eq!(
            admitted,
            BOUND - kept,
            "batch {batch}: every idle one made room"
        );
    }
    assert_eq!(overflowed, batches * (per_batch - (BOUND - kept)));

    let present = names(&registry);
    for name in [
        "search", "weather", "probing", "open-0", "open-4", "isolated", "failing", "held",
    ] {
        assert!(present.contains(name), "{name} was evicted");
    }
    assert!(!present.contains("tool-0-0"), "the first batch was evicted");
    assert!(present.contains(&format!("tool-{}-0", batches - 1)));
    assert!(
        Arc::ptr_eq(&held, &registry.get("held")),
        "the held handle is the registry's"
    );
    for i in 0..5 {
        assert_eq!(registry.get(&format!("open-{i}")).state(), State::Open);
    }
    let isolated = registry.get("isolated").try_acquire().unwrap_err();
    assert_eq!(isolated.reason(), BlockedReason::Isolated);
    let probing = registry.get("probing");
    assert_eq!(probing.state(), State::HalfOpen);
    assert_eq!(
        probing.try_acquire().unwrap_err().reason(),
        BlockedReason::ProbeInFlight
    );
    let failing = registry.get("failing");
    fail(&registry, "failing");
    assert_eq!(failing.state(), State::Open, "its first failure was kept");
    eprintln!(
        "1,000,000 names through a registry bounded at {BOUND}: {:?}",
        started.elapsed()
    );
}

#[test]
fn without_eviction_the_first_names_stay_and_the_rest_share_the_overflow_breaker() {
    let registry = Registry::builder().max_dependencies(100).build();
    for i in 0..1_000 {
        registry.get(&format!("tool-{i}"));
    }
    assert_eq!(registry.len(), 100);
    assert_eq!(
        registry.evict_idle(),
        0,
        "no idle eviction: nothing is evicted"
    );
    assert_eq!(registry.get("tool-99").name(), "tool-99");
    assert_eq!(registry.get("tool-100").name(), OVERFLOW_DEPENDENCY);
}

#[test]
fn try_get_refuses_past_the_bound_and_get_shares_the_overflow_breaker() {
    let registry = Registry::builder()
        .default_config(config())
        .dependency("search", config())
        .max_dependencies(2)
        .build();
    let a = registry.try_get("a").unwrap();
    registry.try_get("b").unwrap();

    let full: RegistryFull = registry.try_get("c").unwrap_err();
    assert_eq!(full.dependency(), "c");
    assert_eq!(full.max_dependencies(), 2);
    let text = full.to_string();
    assert!(
        text.contains("\"c\"") && text.contains("max_dependencies = 2"),
        "{text}"
    );
    let error: &dyn std::error::Error = &full;
    assert!(error.source().is_none());
    assert_eq!(full.clone(), full);

    assert!(
        Arc::ptr_eq(&registry.try_get("a").unwrap(), &a),
        "a name it holds"
    );
    let search = registry
        .try_get("search")
        .expect("configured: admitted past the bound");
    assert_eq!(search.name(), "search");
    assert_eq!(registry.len(), 3);

    let c = registry.get("c");
    let d = registry.get("d");
    assert!(Arc::ptr_eq(&c, &d));
    assert_eq!(c.name(), OVERFLOW_DEPENDENCY);
    assert_eq!(c.config(), config(), "built from the default");
    assert_eq!(
        registry.with("e", |breaker| breaker.name().to_owned()),
        OVERFLOW_DEPENDENCY
    );
    assert_eq!(registry.len(), 3);
    assert!(!names(&registry).contains(OVERFLOW_DEPENDENCY));
    assert_eq!(
        registry.try_get("c").unwrap_err().dependency(),
        "c",
        "still refused"
    );

    // Names past the bound share its fate.
    fail(&registry, "c");
    fail(&registry, "d");
    let zzz = registry.get("zzz");
    assert!(zzz.try_acquire().is_err());
    assert_eq!(zzz.name(), OVERFLOW_DEPENDENCY);
    assert_eq!(registry.get("a").state(), State::Closed);
}

#[test]
fn a_dependency_called_overflow_has_its_own_breaker() {
    let registry = Registry::builder().max_dependencies(1).build();
    let own = registry.get(OVERFLOW_DEPENDENCY);
    let shared = registry.get("past-the-bound");
    assert_eq!(shared.name(), OVERFLOW_DEPENDENCY);
    assert!(!Arc::ptr_eq(&own, &shared));
}

#[test]
fn the_overflow_breaker_follows_a_reload_of_the_default() {
    let registry = Registry::builder().max_dependencies(0).build();
    let overflow = registry.get("x");
    assert_eq!(overflow.config(), Config::default());
    let reload = registry.reload(RegistryConfig::new(config()));
    assert_eq!(
        reload.changes().len(),
        1,
        "the default's change: {reload:?}"
    );
    assert_eq!(overflow.config(), config());
}

#[test]
fn eviction_at_the_edge_of_the_idle_period() {
    let (clock, mock) = quanta::Clock::mock();
    let registry = Registry::builder()
        .default_config(config())
        .idle_eviction(Duration::from_millis(1600)) // granule 100 ms
        .clock(clock)
        .build();
    registry.get("a");
    mock.increment(Duration::from_millis(1599));
    assert_eq!(registry.evict_idle(), 0, "idle 1599 ms of 1600");
    mock.increment(Duration::from_millis(1));
    assert_eq!(registry.evict_idle(), 1, "idle 1600 ms");
    assert!(registry.is_empty());

    // A lookup a granule after the last recorded one records its own time.
    registry.get("b");
    mock.increment(Duration::from_millis(100));
    registry.get("b");
    mock.increment(Duration::from_millis(1599));
    assert_eq!(registry.evict_idle(), 0);
    mock.increment(Duration::from_millis(1));
    assert_eq!(registry.evict_idle(), 1);

    // A lookup within the granule is not lost: the entry counts as looked up until the
    // granule's end, so it is kept a whole period after that lookup, and at most a granule more.
    registry.get("c");
    mock.increment(Duration::from_millis(10));
    registry.get("c");
    mock.increment(Duration::from_millis(1599));
    assert_eq!(registry.evict_idle(), 0, "1599 ms since the last lookup");
    mock.increment(Duration::from_millis(89));
    assert_eq!(
        registry.evict_idle(),
        0,
        "until the granule's end plus the period"
    );
    mock.increment(Duration::from_millis(1));
    assert_eq!(registry.evict_idle(), 1);

    // `with` and `try_get` are lookups too.
    registry.get("d");
    mock.increment(Duration::from_millis(1000));
    registry.with("d", |_| ());
    mock.increment(Duration::from_millis(1000));
    registry.try_get("d").unwrap();
    mock.increment(Duration::from_millis(1000));
    assert_eq!(registry.evict_idle(), 0);
    mock.increment(Duration::from_millis(600));
    assert_eq!(registry.evict_idle(), 1);
}

#[test]
fn only_closed_clear_unheld_default_breakers_are_evicted() {
    let (clock, mock) = quanta::Clock::mock();
    let registry = Registry::builder()
        .default_config(config())
        .dependency("search", config())
        .idle_eviction(PERIOD)
        .clock(clock)
        .build();
    registry.get("search");
    fail(&registry, "failing");
    fail(&registry, "open");
    fail(&registry, "open");
    registry.get("isolated").force_open();
    let held = registry.get("held");
    let permit = registry.get("permit").try_acquire_owned().unwrap();
    registry.get("idle");
    mock.increment(PERIOD);
    assert_eq!(registry.evict_idle(), 1);
    assert_eq!(
        names(&registry),
        ["failing", "held", "isolated", "open", "permit", "search"]
            .map(String::from)
            .into()
    );

    // Once clear, unheld and idle again, they go.
    registry
        .get("failing")
        .try_acquire()
        .unwrap()
        .record(Outcome::Success);
    registry.get("isolated").force_closed();
    drop(held);
    permit.record(Outcome::Success);
    mock.increment(PERIOD);
    assert_eq!(registry.evict_idle(), 4);
    assert_eq!(
        names(&registry),
        ["open", "search"].map(String::from).into(),
        "open for an hour; configured"
    );
    // The next lookup of an evicted name makes a new closed breaker.
    assert_eq!(registry.get("failing").state(), State::Closed);
}

#[test]
fn a_full_registry_sweeps_at_most_once_a_granule() {
    let (clock, mock) = quanta::Clock::mock();
    let registry = Registry::builder()
        .max_dependencies(1)
        .idle_eviction(Duration::from_millis(1600)) // granule 100 ms
        .clock(clock)
        .build();
    registry.get("a");
    assert!(
        registry.try_get("b").is_err(),
        "the sweep found nothing idle"
    );
    mock.increment(Duration::from_millis(1600));
    assert!(registry.try_get("b").is_ok(), "the sweep evicted `a`");
    mock.increment(Duration::from_millis(1599));
    assert!(registry.try_get("c").is_err(), "`b` idle for 1599 ms");
    mock.increment(Duration::from_millis(1));
    assert!(
        registry.try_get("c").is_err(),
        "`b` is idle now, but the last sweep was a millisecond ago"
    );
    assert_eq!(registry.evict_idle(), 1, "a timer's sweep is not held back");
    assert!(registry.try_get("c").is_ok());
}

#[test]
fn racing_insertions_never_pass_the_bound() {
    let registry = Registry::builder().max_dependencies(1_000).build();
    std::thread::scope(|s| {
        for t in 0..8 {
            let registry = &registry;
            s.spawn(move || {
                for i in 0..5_000 {
                    let name = format!("tool-{t}-{i}");
                    let breaker = registry.get(&name);
                    assert!(breaker.name() == name || breaker.name() == OVERFLOW_DEPENDENCY);
                    assert!(registry.len() <= 1_000);
                }
            });
        }
    });
    assert_eq!(registry.len(), 1_000);
    assert_eq!(registry.dependencies().len(), 1_000);
}

#[test]
fn a_fleet_registry_evicts_nothing_but_keeps_its_bound() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let fleet = Fleet::builder("redis://127.0.0.1:1/").build().unwrap();
    let (clock, mock) = quanta::Clock::mock();
    let registry = Registry::builder()
        .fleet(fleet)
        .max_dependencies(2)
        .idle_eviction(PERIOD)
        .clock(clock)
        .build();
    registry.get("a");
    registry.get("b");
    mock.increment(PERIOD * 10);
    assert_eq!(registry.evict_idle(), 0);
    assert!(registry.try_get("c").is_err());
    assert_eq!(registry.get("c").name(), OVERFLOW_DEPENDENCY);
    assert_eq!(registry.len(), 2);
}
