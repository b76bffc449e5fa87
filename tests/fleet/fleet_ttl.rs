//! A fleet's records expire once idle (feature `redis`), so the keys of dependency names that
//! come and go leave Redis; a record in use is kept. Against a real redis-server started and
//! stopped here, with a record TTL of three seconds (read again every second while in use),
//! waited for by polling with a deadline.

#![cfg(feature = "redis")]

use super::redis_server;

use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::config::Problem;
use toolbreaker::{Config, FailureKind, Fleet, FleetError, Outcome, Registry, State};

const TTL: Duration = Duration::from_secs(3);
/// Generous: the machine running these may be loaded.
const LIMIT: Duration = Duration::from_secs(20);

fn registry(server: &RedisServer, name: &str) -> Registry {
    let fleet = Fleet::builder(server.url())
        .prefix("ttl")
        .instance(name)
        .sync_interval(Duration::from_millis(20))
        .record_ttl(TTL)
        .build()
        .unwrap();
    let config = Config::new(1, Duration::from_secs(60), Duration::from_secs(10)).unwrap();
    Registry::builder()
        .default_config(config)
        .fleet(fleet)
        .build()
}

/// Poll `condition` every millisecond until it holds; panic with `what` after `LIMIT`.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn pttl(server: &RedisServer, dependency: &str) -> i64 {
    server.cmd(&["PTTL", &format!("ttl:breaker:{dependency}")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_records_expire_and_records_in_use_are_kept() {
    let server = RedisServer::start();
    let a = registry(&server, "a");
    let b = registry(&server, "b");
    let (search, weather) = (a.get("search"), b.get("weather"));
    let _ = b.get("search");
    until("both connect", || {
        a.fleet().unwrap().is_connected() && b.fleet().unwrap().is_connected()
    })
    .await;
    // Written with the TTL (PTTL: -2 no key, -1 no expiry).
    until("both records are written", || {
        pttl(&server, "search") > 0 && pttl(&server, "weather") > 0
    })
    .await;
    for dependency in ["search", "weather"] {
        let left = pttl(&server, dependency);
        assert!(left > 0 && left <= 3_000, "{dependency}: {left} ms");
    }
    // A write sets it again.
    search
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(search.state(), State::Open);
    let open = |server: &RedisServer| -> Option<String> {
        server.cmd(&["HGET", "ttl:breaker:search", "state"])
    };
    until("the trip is written", || {
        open(&server).as_deref() == Some("open")
    })
    .await;
    assert!(pttl(&server, "search") > 0);
    // In use, a record is read again before it expires: its expiry goes up, never to nothing.
    let low = pttl(&server, "weather");
    until("weather's expiry is set again while in use", || {
        let left = pttl(&server, "weather");
        assert!(left > 0, "weather's record expired while in use");
        left > low
    })
    .await;
    // B stops: `weather` is used by nobody and leaves Redis; `search`, still used by A, stays.
    drop(weather);
    drop(b);
    until("weather's record expires", || {
        pttl(&server, "weather") == -2
    })
    .await;
    assert!(pttl(&server, "search") > 0, "search is still in use");
    assert_eq!(open(&server).as_deref(), Some("open"));
}

#[test]
fn a_record_ttl_shorter_than_three_sync_intervals_is_an_error_naming_it() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _inside = runtime.enter();
    let error = Fleet::builder("redis://127.0.0.1:1/")
        .sync_interval(Duration::from_millis(500))
        .record_ttl(Duration::from_millis(1_499))
        .build()
        .unwrap_err();
    let FleetError::Config(error) = error else {
        panic!("{error:?}");
    };
    assert_eq!(
        (error.field(), error.problem()),
        ("record_ttl", Problem::TooShort)
    );
}
