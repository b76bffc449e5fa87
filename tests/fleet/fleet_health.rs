//! The fleet's probe at the cooldown's end (feature `redis`): claimed by the workers when the
//! cooldown ends, so the first call after it is admitted as the probe on the instance that won
//! it, or told truthfully that another instance probes; and a health check
//! (`CircuitBreaker::start_health_check`) run once per fleet per cooldown, on the instance
//! holding the fleet's probe lease. Against a real redis-server started and stopped here; the
//! server's clock decides the cooldown, so real time passes (short settings), waited for by
//! polling with a deadline.

#![cfg(feature = "redis")]

use super::redis_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Fleet, Outcome, Registry, State,
};

const COOLDOWN: Duration = Duration::from_millis(300);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Long, so a granted probe slot is still granted when a loaded machine's test calls.
const PROBE_WINDOW: Duration = Duration::from_secs(10);
/// Generous: the machine running these may be loaded.
const LIMIT: Duration = Duration::from_secs(20);

fn instance(server: &RedisServer, name: &str) -> Registry {
    let fleet = Fleet::builder(server.url())
        .prefix("health")
        .instance(name)
        .sync_interval(Duration::from_millis(100))
        .command_timeout(Duration::from_millis(500))
        .probe_window(PROBE_WINDOW)
        .build()
        .unwrap();
    Registry::builder()
        .default_config(Config::new(1, COOLDOWN, PROBE_TIMEOUT).unwrap())
        .fleet(fleet)
        .build()
}

/// `names`' registries, connected, with the `search` record written, and their `search` breakers.
async fn fleet(server: &RedisServer, names: &[&str]) -> (Vec<Registry>, Vec<Arc<CircuitBreaker>>) {
    let registries: Vec<_> = names.iter().map(|name| instance(server, name)).collect();
    let breakers: Vec<_> = registries.iter().map(|r| r.get("search")).collect();
    for registry in &registries {
        let fleet = registry.fleet().unwrap();
        until("connected", || fleet.is_connected()).await;
    }
    until("synced", || {
        server
            .cmd::<std::collections::HashMap<String, String>>(&["HGETALL", "health:breaker:search"])
            .contains_key("gen")
    })
    .await;
    (registries, breakers)
}

/// Poll `condition` every millisecond until it holds; panic with `what` after `LIMIT`.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn claimed(registry: &Registry) -> u64 {
    registry.fleet().unwrap().stats().probes_claimed
}

fn trip(breaker: &CircuitBreaker) {
    let permit = breaker.try_acquire().expect("closed");
    permit.record(Outcome::Failure(FailureKind::Unavailable));
}

/// Before: the first call after every cooldown was refused with `probe_in_flight` while no probe
/// was out anywhere, because the instance only then asked Redis for the lease. Now the worker
/// claims the lease when the cooldown ends, with no call made, and the call that arrives after it
/// is admitted as the probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_after_the_cooldown_is_the_probe_with_no_other_instance_probing() {
    let server = RedisServer::start();
    let (registries, breakers) = fleet(&server, &["a"]).await;
    let (a, search) = (&registries[0], &breakers[0]);
    trip(search);
    until(
        "the lease is claimed at the cooldown's end, with no call",
        || claimed(a) == 1,
    )
    .await;
    let probe = search
        .try_acquire()
        .expect("the first call after the cooldown");
    assert!(probe.is_probe());
    probe.record(Outcome::Success);
    until("closed in the fleet", || {
        server.cmd::<String>(&["HGET", "health:breaker:search", "state"]) == "closed"
    })
    .await;
    assert_eq!(search.state(), State::Closed);
}

/// Two instances: both claim at the cooldown's end and one wins. The first call on the winner is
/// the probe; the first on the other is told `probe_in_flight` for the time left on the winner's
/// lease (probe timeout and probe window), not the short wait of an instance still choosing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_after_the_cooldown_is_the_probe_or_told_where_it_is() {
    let server = RedisServer::start();
    let (registries, breakers) = fleet(&server, &["a", "b"]).await;
    trip(&breakers[0]);
    until("b opens", || breakers[1].state() == State::Open).await;
    until("one instance claims at the cooldown's end", || {
        registries.iter().map(claimed).sum::<u64>() == 1
    })
    .await;
    let winner = usize::from(claimed(&registries[1]) == 1);
    let (won, lost) = (&breakers[winner], &breakers[1 - winner]);
    until("the other instance hears of the lease", || {
        lost.try_acquire().is_err_and(|blocked| {
            blocked.reason() == BlockedReason::ProbeInFlight
                && blocked.retry_after() > PROBE_WINDOW / 2
        })
    })
    .await;
    let probe = won.try_acquire().expect("the winner's first call");
    assert!(probe.is_probe());
    probe.record(Outcome::Success);
    for breaker in &breakers {
        until("closed everywhere", || breaker.state() == State::Closed).await;
    }
    assert_eq!(
        registries.iter().map(claimed).sum::<u64>(),
        1,
        "one claim won"
    );
}

/// A health check on every instance runs once per cooldown in the whole fleet: on the instance
/// the fleet gives its probe to. A failed check reopens every instance; the next cooldown's check
/// (a success) closes them all; no call is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_runs_once_per_fleet_per_cooldown() {
    let server = RedisServer::start();
    let (registries, breakers) = fleet(&server, &["a", "b", "c"]).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let healthy = Arc::new(AtomicBool::new(false));
    for breaker in &breakers {
        let (runs, healthy) = (Arc::clone(&runs), Arc::clone(&healthy));
        breaker
            .start_health_check(move || {
                runs.fetch_add(1, Ordering::SeqCst);
                let healthy = healthy.load(Ordering::SeqCst);
                async move {
                    if healthy {
                        Outcome::Success
                    } else {
                        Outcome::Failure(FailureKind::Unavailable)
                    }
                }
            })
            .unwrap();
    }
    trip(&breakers[0]);
    until("the first check ran", || runs.load(Ordering::SeqCst) == 1).await;
    healthy.store(true, Ordering::SeqCst);
    for breaker in &breakers {
        until("closed everywhere by the second check", || {
            breaker.state() == State::Closed
        })
        .await;
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "once per cooldown in the fleet"
    );
    assert_eq!(
        registries.iter().map(claimed).sum::<u64>(),
        2,
        "one lease per cooldown"
    );
}
