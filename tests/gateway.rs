//! The gateway example's tool servers and guarded client, end to end over loopback sockets.
//!
//! The servers run in this process; the test switches their modes itself (never by wall time),
//! and the breakers read a mock clock that the test advances past each cooldown, so nothing here
//! sleeps.

#[path = "../examples/gateway/tools.rs"]
#[allow(dead_code)]
mod tools;

use std::sync::Arc;
use std::time::Duration;

use toolbreaker::{BlockedReason, CircuitBreaker, Config, FailureKind, Registry, State};
use tools::{CallOutcome, CallRecord, Mode, Tool, ToolServer, call_tool};

const THRESHOLD: u32 = 3;
const COOLDOWN: Duration = Duration::from_millis(500);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Generous: on loopback every answer arrives long before it, so it never decides an outcome.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const GRACE: Duration = Duration::from_secs(5);

fn registry() -> (Registry, Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let config = Config::new(THRESHOLD, COOLDOWN, PROBE_TIMEOUT).unwrap();
    let registry = Registry::builder()
        .default_config(config)
        .clock(clock)
        .build();
    (registry, mock)
}

async fn call(
    client: &reqwest::Client,
    breaker: &CircuitBreaker,
    server: &ToolServer,
) -> CallRecord {
    call_tool(client, breaker, &server.valid_url, CALL_TIMEOUT).await
}

fn transition(record: &CallRecord) -> Option<(State, State)> {
    record.transition.map(|t| (t.from(), t.to()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_503_trips_blocks_probes_once_and_recovers() {
    let server = ToolServer::spawn(Tool::Search).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, mock) = registry();
    let search = registry.get("search");

    let healthy = call(&client, &search, &server).await;
    assert!(matches!(healthy.outcome, CallOutcome::Success { body_bytes } if body_bytes > 0));
    assert_eq!(server.control.hits(), 1);

    // 1. 503: the breaker trips after `THRESHOLD` counted failures ...
    server.control.set_mode(Mode::Unavailable);
    for n in 1..=THRESHOLD {
        let failed = call(&client, &search, &server).await;
        assert_eq!(
            failed.outcome,
            CallOutcome::Failure(FailureKind::Unavailable)
        );
        assert_eq!(failed.status, Some(503));
        assert!(!failed.probe);
        let expected = (n == THRESHOLD).then_some((State::Closed, State::Open));
        assert_eq!(transition(&failed), expected, "failure {n}");
    }
    assert_eq!(search.state(), State::Open);
    let hits_at_trip = server.control.hits();
    assert_eq!(hits_at_trip, 1 + u64::from(THRESHOLD));

    // ... and while open nothing reaches the server.
    for _ in 0..50 {
        let blocked = call(&client, &search, &server).await;
        let blocked = blocked.blocked().expect("an open breaker blocks");
        assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
        assert_eq!(blocked.state(), State::Open);
        assert_eq!(
            blocked.retry_after(),
            COOLDOWN,
            "the mock clock has not moved"
        );
    }
    assert_eq!(
        server.control.hits(),
        hits_at_trip,
        "blocked calls are never sent"
    );

    // 2. The cooldown passes: of many racing callers exactly one probe reaches the server; it
    // still gets a 503, so the breaker reopens.
    mock.increment(COOLDOWN);
    assert_eq!(search.state(), State::HalfOpen);
    let racers: Vec<_> = (0..16)
        .map(|_| {
            let (client, search, url) = (
                client.clone(),
                Arc::clone(&search),
                server.valid_url.clone(),
            );
            tokio::spawn(async move { call_tool(&client, &search, &url, CALL_TIMEOUT).await })
        })
        .collect();
    let mut admitted = Vec::new();
    for racer in racers {
        let record = racer.await.unwrap();
        match record.blocked() {
            Some(blocked) => assert!(matches!(
                blocked.reason(),
                BlockedReason::ProbeInFlight | BlockedReason::DependencyOpen
            )),
            None => admitted.push(record),
        }
    }
    assert_eq!(admitted.len(), 1, "exactly one probe: {admitted:?}");
    let probe = admitted[0];
    assert!(probe.probe);
    assert_eq!(
        probe.outcome,
        CallOutcome::Failure(FailureKind::Unavailable)
    );
    assert_eq!(transition(&probe), Some((State::HalfOpen, State::Open)));
    assert_eq!(server.control.hits(), hits_at_trip + 1);
    assert_eq!(search.state(), State::Open);
    assert!(call(&client, &search, &server).await.blocked().is_some());
    assert_eq!(server.control.hits(), hits_at_trip + 1);

    // The dependency recovers; after the next cooldown the probe succeeds and closes the breaker.
    server.control.set_mode(Mode::Healthy);
    mock.increment(COOLDOWN);
    let probe = call(&client, &search, &server).await;
    assert!(probe.probe);
    assert!(matches!(probe.outcome, CallOutcome::Success { .. }));
    assert_eq!(transition(&probe), Some((State::HalfOpen, State::Closed)));
    assert_eq!(search.state(), State::Closed);
    assert_eq!(server.control.hits(), hits_at_trip + 2);

    // Later calls reach the server again.
    for _ in 0..10 {
        let record = call(&client, &search, &server).await;
        assert!(matches!(record.outcome, CallOutcome::Success { .. }));
        assert!(!record.probe);
        assert_eq!(record.transition, None);
    }
    assert_eq!(server.control.hits(), hits_at_trip + 12);

    server.shutdown(GRACE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_400s_for_bad_arguments_never_trip() {
    let server = ToolServer::spawn(Tool::Files).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, _mock) = registry();
    let files = registry.get("files");

    // Ten invalid calls in a row (far past the threshold), then a mix.
    let invalid = (0..10).map(|_| false).chain((0..30).map(|i| i % 3 != 0));
    let mut calls = 0;
    for valid in invalid {
        let url = if valid {
            &server.valid_url
        } else {
            &server.invalid_url
        };
        let record = call_tool(&client, &files, url, CALL_TIMEOUT).await;
        calls += 1;
        assert!(record.admitted(), "call {calls} was blocked");
        if valid {
            assert!(matches!(record.outcome, CallOutcome::Success { .. }));
            assert_eq!(record.status, Some(200));
        } else {
            assert_eq!(
                record.outcome,
                CallOutcome::Ignored,
                "a 400 is the caller's fault"
            );
            assert_eq!(record.status, Some(400));
        }
        assert_eq!(record.transition, None);
        assert_eq!(files.state(), State::Closed, "after call {calls}");
    }
    assert_eq!(
        server.control.hits(),
        calls,
        "every call reached the server"
    );

    server.shutdown(GRACE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_429_is_rate_limited_with_retry_after_and_trips() {
    let quotes_server = ToolServer::spawn(Tool::Quotes).await.unwrap();
    let files_server = ToolServer::spawn(Tool::Files).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, _mock) = registry();
    let quotes = registry.get("quotes");
    let files = registry.get("files");

    quotes_server.control.set_mode(Mode::RateLimited {
        retry_after_secs: 1,
    });
    for n in 1..=THRESHOLD {
        let record = call(&client, &quotes, &quotes_server).await;
        assert_eq!(
            record.outcome,
            CallOutcome::Failure(FailureKind::RateLimited {
                retry_after: Some(Duration::from_secs(1)),
            })
        );
        assert_eq!(record.status, Some(429));
        let expected = (n == THRESHOLD).then_some((State::Closed, State::Open));
        assert_eq!(transition(&record), expected, "failure {n}");
    }
    assert_eq!(quotes.state(), State::Open);
    let blocked = call(&client, &quotes, &quotes_server).await;
    assert!(blocked.blocked().is_some());
    assert_eq!(quotes_server.control.hits(), u64::from(THRESHOLD));

    // One outage never blocks another dependency.
    let record = call(&client, &files, &files_server).await;
    assert!(matches!(record.outcome, CallOutcome::Success { .. }));
    assert_eq!(files.state(), State::Closed);

    quotes_server.shutdown(GRACE).await.unwrap();
    files_server.shutdown(GRACE).await.unwrap();
}
