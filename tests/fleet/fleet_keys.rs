//! Fleets that share one Redis server keep apart whatever their prefixes and dependency names
//! (feature `redis`), against a real redis-server started and stopped by each test. The encoding
//! of the names (and its test over many prefixes and names) is in `src/fleet/keys.rs`; here the
//! scenario that once collided runs end to end.

#![cfg(feature = "redis")]

use super::redis_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::fleet::FleetEvent;
use toolbreaker::{CircuitBreaker, Config, FailureKind, Fleet, Outcome, Registry, State};

/// Generous: the machine running these may be loaded.
const LIMIT: Duration = Duration::from_secs(10);

struct Instance {
    registry: Registry,
    events: Arc<Mutex<Vec<FleetEvent>>>,
}

fn instance(server: &RedisServer, prefix: &str, name: &str) -> Instance {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let fleet = Fleet::builder(server.url())
        .prefix(prefix)
        .instance(name)
        .sync_interval(Duration::from_millis(50))
        .command_timeout(Duration::from_millis(500))
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let config = Config::new(1, Duration::from_secs(60), Duration::from_secs(10)).unwrap();
    Instance {
        registry: Registry::builder()
            .default_config(config)
            .fleet(fleet)
            .build(),
        events,
    }
}

impl Instance {
    fn get(&self, dependency: &str) -> Arc<CircuitBreaker> {
        self.registry.get(dependency)
    }

    fn bad_records(&self) -> Vec<FleetEvent> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter(|e| matches!(e, FleetEvent::BadRecord { .. }))
            .cloned()
            .collect()
    }
}

/// Poll `condition` every millisecond until it holds; panic with `what` after `limit`.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The scenario of the report: prefix `gw:breaker`'s epoch key was prefix `gw`'s record of a
/// dependency named `epoch`, so both read a bad record, every dependency of `gw:breaker` fell
/// back to local mode and a trip on one of its instances never reached the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_with_the_separator_never_meets_another_fleet_s_keys() {
    let server = RedisServer::start();
    let gw = instance(&server, "gw", "gw-1");
    let one = instance(&server, "gw:breaker", "one");
    let two = instance(&server, "gw:breaker", "two");
    let epoch = gw.get("epoch");
    let (s1, s2) = (one.get("search"), two.get("search"));
    for (what, i) in [
        ("gw", &gw),
        ("gw:breaker one", &one),
        ("gw:breaker two", &two),
    ] {
        let fleet = i.registry.fleet().unwrap().clone();
        until(&format!("{what} connects"), || fleet.is_connected()).await;
    }
    // A trip on one reaches the other, and nobody meets a bad record on the way.
    let permit = s1.try_acquire().unwrap();
    permit.record(Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(s1.state(), State::Open);
    let all = [
        ("gw", &gw),
        ("gw:breaker one", &one),
        ("gw:breaker two", &two),
    ];
    until(
        "the trip reaches the other instance, or a bad record",
        || s2.state() == State::Open || all.iter().any(|(_, i)| !i.bad_records().is_empty()),
    )
    .await;
    for (what, i) in all {
        assert_eq!(i.bad_records(), Vec::new(), "{what} met a bad record");
    }
    assert_eq!(
        s2.state(),
        State::Open,
        "the trip reached the other instance"
    );
    // And `gw`'s dependency `epoch` is a fleet dependency of its own, untouched.
    assert_eq!(epoch.state(), State::Closed);
    // The keys as `docs::fleet` names them: the prefix's `:` is written `%3A`.
    let state = |key: &str| -> Option<String> { server.cmd(&["HGET", key, "state"]) };
    assert_eq!(state("gw:breaker:epoch").as_deref(), Some("closed"));
    assert_eq!(
        state("gw%3Abreaker:breaker:search").as_deref(),
        Some("open")
    );
    let epoch: i64 = server.cmd(&["GET", "gw%3Abreaker:epoch"]);
    assert!(epoch > 0);
}
