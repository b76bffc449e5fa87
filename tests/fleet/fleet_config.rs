//! Fleet misconfiguration is told, not silent (feature `redis`): a refused login is a
//! configuration error from a documented call and an event, never retried; the first connection
//! can be awaited; a server that never answers reads as a timeout; no password is printed. Each
//! test starts its own redis-server (or loopback listener) and stops it.

#![cfg(feature = "redis")]

use super::redis_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::fleet::{FleetEvent, redact};
use toolbreaker::{Fleet, FleetError, Registry};

/// Generous: the machine running these may be loaded.
const LIMIT: Duration = Duration::from_secs(20);

struct Instance {
    registry: Registry,
    events: Arc<Mutex<Vec<FleetEvent>>>,
}

fn instance(url: String, name: &str) -> Instance {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let fleet = Fleet::builder(url)
        .prefix("config")
        .instance(name)
        .sync_interval(Duration::from_millis(20))
        .command_timeout(Duration::from_millis(300))
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let registry = Registry::builder().fleet(fleet).build();
    let _ = registry.get("search");
    Instance { registry, events }
}

impl Instance {
    fn events(&self) -> Vec<FleetEvent> {
        self.events.lock().unwrap().clone()
    }

    async fn connected(&self) -> Result<(), FleetError> {
        self.registry.fleet().unwrap().connected(LIMIT).await
    }

    fn commands(&self) -> u64 {
        self.registry.fleet().unwrap().stats().commands
    }
}

/// Poll `condition` every millisecond until it holds; panic with `what` after `LIMIT`.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A wrong password (`WRONGPASS`) and none at all (`NOAUTH`) are refusals: `connected` returns
/// `FleetError::Refused` with the server's answer, one `Refused` event is told, and the worker
/// sends nothing more (while a well-configured instance makes several backstop reads), where it
/// once retried every sync interval forever, each time reading as "Redis unreachable".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_is_a_configuration_error_told_once_and_not_retried() {
    let server = RedisServer::start_with(&["--requirepass", "hunter2"]);
    let port = server.port;
    let good = instance(format!("redis://:hunter2@127.0.0.1:{port}/"), "good");
    good.connected().await.expect("the right password connects");
    for (url, code) in [
        (format!("redis://:wrong@127.0.0.1:{port}/"), "WRONGPASS"),
        (format!("redis://127.0.0.1:{port}/"), "NOAUTH"),
        (
            format!("redis://nobody:hunter2@127.0.0.1:{port}/"),
            "WRONGPASS",
        ),
    ] {
        let bad = instance(url.clone(), "bad");
        let error = bad.connected().await.unwrap_err();
        let FleetError::Refused(answer) = &error else {
            panic!("{url}: not a refusal: {error:?}");
        };
        assert!(answer.contains(code), "{url}: {answer}");
        assert!(error.to_string().contains("refused"), "{error}");
        let sent = bad.commands();
        let reads = good.commands();
        until("the good instance makes five more backstop reads", || {
            good.commands() >= reads + 5
        })
        .await;
        assert_eq!(
            bad.commands(),
            sent,
            "{url}: the refused worker tried again"
        );
        let events = bad.events();
        assert_eq!(events.len(), 1, "{url}: {events:?}");
        assert!(
            matches!(&events[0], FleetEvent::Refused { error } if error.contains(code)),
            "{url}: {events:?}"
        );
        // Asked again, the same answer at once.
        assert_eq!(bad.connected().await.unwrap_err(), error);
    }
}

/// Nothing listening: `connected` waits its timeout and says so, with the last error, and the
/// worker goes on trying (it connects once a server listens there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_a_timeout_of_connected_with_the_last_error() {
    let mut server = RedisServer::start();
    server.kill();
    let a = instance(server.url(), "a");
    let fleet = a.registry.fleet().unwrap().clone();
    until("the first attempt fails", || {
        a.events()
            .iter()
            .any(|e| matches!(e, FleetEvent::Unreachable { .. }))
    })
    .await;
    let error = fleet
        .connected(Duration::from_millis(50))
        .await
        .unwrap_err();
    match &error {
        FleetError::Timeout {
            waited_ms: 50,
            last: Some(_),
        } => {}
        other => panic!("not a timeout with the last error: {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("no connection to Redis within 50 ms; the last error: "),
        "{error}"
    );
    server.restart();
    fleet
        .connected(LIMIT)
        .await
        .expect("connects once it listens");
}

/// A server that accepts the connection and never answers: the event says it timed out (it
/// once said `Resource temporarily unavailable`, the socket's word for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_reads_as_a_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket); // kept open, never answered
        }
    });
    let a = instance(format!("redis://127.0.0.1:{port}/"), "a");
    until("the outage is told", || !a.events().is_empty()).await;
    let events = a.events();
    let FleetEvent::Unreachable { error } = &events[0] else {
        panic!("{events:?}");
    };
    assert!(
        error.starts_with("no answer within the command timeout (300 ms)"),
        "{error}"
    );
    held.abort();
}

/// No password in what the crate prints: the errors of a URL that does not parse, and of a
/// refusal, through `Display` and `Debug`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_is_printed() {
    for url in [
        "redis://:hunter2@[::1/",
        "redis://user:hunter2@host:notaport/",
    ] {
        let error = Fleet::builder(url).build().unwrap_err();
        for printed in [error.to_string(), format!("{error:?}")] {
            assert!(!printed.contains("hunter2"), "{printed}");
        }
    }
    let error = FleetError::Refused("redis://:hunter2@cache/ said WRONGPASS".into());
    for printed in [error.to_string(), format!("{error:?}")] {
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(printed.contains("redis://:***@cache/"), "{printed}");
    }
    let error = FleetError::Timeout {
        waited_ms: 5,
        last: Some("redis://u:hunter2@cache/".into()),
    };
    for printed in [error.to_string(), format!("{error:?}")] {
        assert!(!printed.contains("hunter2"), "{printed}");
    }
    assert_eq!(redact("redis://:hunter2@h/"), "redis://:***@h/");
}
