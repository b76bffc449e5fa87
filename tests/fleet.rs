//! Fleet mode against a real redis-server (feature `redis`): each behaviour of the fleet is a
//! test here. Every test starts its own server on a free loopback port and stops it.
//!
//! Times in the shared records are the server's, so these tests wait on real time where the
//! server's clock decides (a cooldown judged by Redis); they wait for events by polling with a
//! deadline, never by sleeping a fixed time and hoping.

#[path = "common/redis.rs"]
mod redis_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::fleet::{FleetBuilder, FleetEvent};
use toolbreaker::{
    BlockedReason, Config, FailureKind, Fleet, Outcome, Registry, State, TransitionReason,
};

const COOLDOWN: Duration = Duration::from_millis(300);
const PROBE_TIMEOUT: Duration = Duration::from_millis(1_000);

fn config(threshold: u32) -> Config {
    Config::new(threshold, COOLDOWN, PROBE_TIMEOUT).unwrap()
}

fn fleet(server: &RedisServer, instance: &str) -> FleetBuilder {
    Fleet::builder(server.url())
        .prefix("test")
        .instance(instance)
        .sync_interval(Duration::from_millis(100))
        .command_timeout(Duration::from_millis(200))
}

/// Heard transitions, with the instant each was heard.
type Heard = Arc<Mutex<Vec<(String, State, State, TransitionReason, Instant)>>>;

struct Instance {
    registry: Registry,
    heard: Heard,
    #[allow(dead_code)]
    events: Arc<Mutex<Vec<FleetEvent>>>,
}

fn instance(builder: FleetBuilder, threshold: u32) -> Instance {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let fleet = builder
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let heard: Heard = Arc::default();
    let log = Arc::clone(&heard);
    let registry = Registry::builder()
        .default_config(config(threshold))
        .fleet(fleet)
        .on_transition(move |e| {
            let t = e.transition();
            log.lock().unwrap().push((
                e.dependency().to_owned(),
                t.from(),
                t.to(),
                t.reason(),
                Instant::now(),
            ));
        })
        .build();
    Instance {
        registry,
        heard,
        events,
    }
}

/// Poll `condition` every millisecond until it holds; panic with `what` after `limit`.
async fn until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn connected(instance: &Instance) {
    let fleet = instance.registry.fleet().unwrap();
    until("the agent connects", Duration::from_secs(5), || {
        fleet.is_connected()
    })
    .await;
}

fn fail(registry: &Registry, dependency: &str) {
    let breaker = registry.get(dependency);
    if let Ok(permit) = breaker.try_acquire() {
        permit.record(Outcome::Failure(FailureKind::Unavailable));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_on_one_instance_blocks_the_next_call_on_another() {
    let server = RedisServer::start();
    let a = instance(fleet(&server, "a"), 2);
    let b = instance(fleet(&server, "b"), 2);
    let (sa, sb) = (a.registry.get("search"), b.registry.get("search"));
    connected(&a).await;
    connected(&b).await;
    fail(&a.registry, "search");
    fail(&a.registry, "search");
    assert_eq!(sa.state(), State::Open);
    until("b blocks", Duration::from_secs(2), || {
        sb.try_acquire().is_err()
    })
    .await;
    let blocked = sb.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
    assert!(blocked.retry_after() <= COOLDOWN);
    let heard = b.heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 1);
    assert_eq!(
        (heard[0].1, heard[0].2, heard[0].3),
        (State::Closed, State::Open, TransitionReason::Fleet)
    );
}
