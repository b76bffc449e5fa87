//! A partitioned instance never holds two probes (feature `redis`), against a real redis-server,
//! with one instance's link to it through a loopback proxy (in this test) that can stall one
//! direction. Each instance's breakers run on a manual clock; the server's clock (which decides
//! the fleet's cooldown) is let run, with short settings, and every wait polls with a deadline.

#![cfg(feature = "redis")]

use super::redis_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use toolbreaker::fleet::FleetEvent;
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Fleet, Outcome, Registry, State,
};

const COOLDOWN: Duration = Duration::from_millis(100);
/// Long, on the manual clocks: a probe taken in the test stays within its lease.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Generous: the machine running these may be loaded.
const LIMIT: Duration = Duration::from_secs(20);

/// A loopback TCP proxy to one port. Every connection through it is forwarded both ways; while
/// `stall_up` is set, bytes from the client to the server are held (the server's bytes to the
/// client still flow), as on a link that has lost one direction.
struct Proxy {
    port: u16,
    stall: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stall, stalled) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut pumps = tokio::task::JoinSet::new();
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                pumps.spawn(pump(client_read, server_write, Some(stalled.clone())));
                pumps.spawn(pump(server_read, client_write, None));
            }
        });
        Proxy { port, stall, task }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn stall_up(&self, stalled: bool) {
        self.stall.send_replace(stalled);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its `JoinSet`, which aborts every pump.
        self.task.abort();
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut stall: Option<watch::Receiver<bool>>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(stall) = &mut stall
            && stall.wait_for(|stalled| !*stalled).await.is_err()
        {
            return;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}

struct Instance {
    registry: Registry,
    mock: Arc<Mock>,
    events: Arc<Mutex<Vec<FleetEvent>>>,
}

fn instance(url: String, name: &str) -> Instance {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let fleet = Fleet::builder(url)
        .prefix("partition")
        .instance(name)
        .sync_interval(Duration::from_millis(50))
        .command_timeout(Duration::from_millis(300))
        .probe_window(Duration::from_secs(30))
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let (clock, mock) = Clock::mock();
    let config = Config::new(1, COOLDOWN, PROBE_TIMEOUT).unwrap();
    Instance {
        registry: Registry::builder()
            .default_config(config)
            .clock(clock)
            .fleet(fleet)
            .build(),
        mock,
        events,
    }
}

impl Instance {
    fn get(&self) -> Arc<CircuitBreaker> {
        self.registry.get("search")
    }

    fn connected(&self) -> bool {
        self.registry.fleet().unwrap().is_connected()
    }

    fn heard(&self, what: impl Fn(&FleetEvent) -> bool) -> bool {
        self.events.lock().unwrap().iter().any(what)
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

/// The scenario of the report. B's link stalls from B to Redis only: its claim of the fleet's
/// probe times out, Redis reads as unreachable and B takes a local probe, as it may then. A takes
/// the fleet's probe. B still hears A's message (the other direction flows) and applies it: the
/// fleet's opening is long past its cooldown, and adopting it used to open a new generation from
/// that time, which made B's probe stale, freed its slot, and gave B's next call a second probe
/// (three in flight for the fleet). B's probe is kept until it reports or its lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_instance_that_hears_the_fleet_s_probe_never_probes_twice() {
    let server = RedisServer::start();
    let proxy = Proxy::start(server.port).await;
    let a = instance(server.url(), "a");
    let b = instance(proxy.url(), "b");
    let (sa, sb) = (a.get(), b.get());
    until("a connects", || a.connected()).await;
    until("b connects", || b.connected()).await;
    until("the record is written", || {
        let record: std::collections::HashMap<String, String> =
            server.cmd(&["HGETALL", "partition:breaker:search"]);
        record.contains_key("gen")
    })
    .await;

    // A trips; the fleet opens; B adopts it.
    sa.try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    until("b adopts the trip", || sb.state() == State::Open).await;

    // B's link stalls from B to Redis. B's cooldown ends; its call asks the fleet for the
    // probe, the claim times out, and B works locally.
    proxy.stall_up(true);
    b.mock.increment(COOLDOWN);
    // Still connected, the fleet chooses (blocked); once its command times out, B probes locally.
    let early = match sb.try_acquire() {
        Ok(permit) => Some(permit),
        Err(blocked) => {
            assert_eq!(
                blocked.reason(),
                BlockedReason::ProbeInFlight,
                "the fleet chooses"
            );
            None
        }
    };
    until("b reads Redis as unreachable", || !b.connected()).await;
    let b_probe = match early {
        Some(permit) => permit,
        None => sb
            .try_acquire()
            .expect("b probes locally while Redis is unreachable"),
    };
    assert!(b_probe.is_probe());

    // A's cooldown ends (the server's too: polled) and A takes the fleet's probe.
    a.mock.increment(COOLDOWN);
    let deadline = Instant::now() + LIMIT;
    let a_probe = loop {
        match sa.try_acquire() {
            Ok(permit) => break permit,
            Err(blocked) => assert!(
                Instant::now() < deadline,
                "timed out waiting: a takes the fleet's probe ({blocked})"
            ),
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    assert!(a_probe.is_probe());
    assert_eq!(a.registry.fleet().unwrap().stats().probes_claimed, 1);

    // B hears A's claim: a message published after it reaches B after it, on the same link.
    let _: i64 = server.cmd(&["PUBLISH", "partition:transitions", "a marker"]);
    until("b hears the messages after a's claim", || {
        b.heard(|e| matches!(e, FleetEvent::BadMessage { .. }))
    })
    .await;
    assert!(!b.connected(), "b's link still stalls from b to Redis");

    // B holds one probe, and its next calls are blocked while it runs.
    for _ in 0..3 {
        let second = sb.try_acquire();
        assert!(
            second.is_err(),
            "b took a second probe while its first runs: {:?}",
            second.map(|p| p.generation())
        );
        b.mock.increment(COOLDOWN);
    }
    assert!(b_probe.is_current(), "b's probe is still its one probe");
    assert_eq!(sb.state(), State::HalfOpen);

    // The link heals; B's probe reports; B joins the fleet again, which A's verdict decides.
    proxy.stall_up(false);
    b_probe.record(Outcome::Success);
    a_probe.record(Outcome::Success);
    until("b reconnects", || b.connected()).await;
    until("the fleet closes on both", || {
        sa.state() == State::Closed && sb.state() == State::Closed
    })
    .await;
}
