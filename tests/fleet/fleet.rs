//! Fleet mode against a real redis-server (feature `redis`): each behaviour of issue "fleet mode"
//! is a test here. Every test starts its own server on a free loopback port and stops it.
//!
//! Times in the shared records are the server's (`TIME`), which no test can set by hand: where the
//! server's clock decides (a cooldown, a lease, the failure window), these tests let real time
//! pass, with short settings. They wait for events by polling with a deadline, never by sleeping
//! a fixed time and hoping.

use super::redis_server;
use super::sched;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::fleet::{FleetBuilder, FleetEvent};
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Fleet, FleetError, Outcome, Registry,
    State, TransitionReason,
};

pub(super) const COOLDOWN: Duration = Duration::from_millis(300);
const PROBE_TIMEOUT: Duration = Duration::from_millis(1_000);
/// Generous: the machine running these may be loaded.
pub(super) const LIMIT: Duration = Duration::from_secs(5);

fn config(threshold: u32) -> Config {
    Config::new(threshold, COOLDOWN, PROBE_TIMEOUT).unwrap()
}

fn fleet(server: &RedisServer, instance: &str) -> FleetBuilder {
    Fleet::builder(server.url())
        .prefix("test")
        .instance(instance)
        .sync_interval(Duration::from_millis(100))
        .command_timeout(Duration::from_millis(200))
        .probe_window(Duration::from_millis(500))
}

/// Heard transitions: dependency, from, to, reason, when.
type Heard = Arc<Mutex<Vec<(String, State, State, TransitionReason, Instant)>>>;

pub(super) struct Instance {
    registry: Registry,
    heard: Heard,
    events: Arc<Mutex<Vec<FleetEvent>>>,
}

impl Instance {
    fn get(&self, dependency: &str) -> Arc<CircuitBreaker> {
        self.registry.get(dependency)
    }

    fn heard(&self, reason: TransitionReason, to: State) -> usize {
        let heard = self.heard.lock().unwrap();
        heard.iter().filter(|h| h.3 == reason && h.2 == to).count()
    }

    fn events(&self) -> Vec<FleetEvent> {
        self.events.lock().unwrap().clone()
    }

    async fn connected(&self) {
        let fleet = self.registry.fleet().unwrap();
        until("the agent connects", LIMIT, || fleet.is_connected()).await;
    }
}

fn instance_with(builder: FleetBuilder, threshold: u32, clock: Option<quanta::Clock>) -> Instance {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let fleet = builder
        .on_event(move |e| log.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let heard: Heard = Arc::default();
    let log = Arc::clone(&heard);
    let mut registry = Registry::builder()
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
        });
    if let Some(clock) = clock {
        registry = registry.clock(clock);
    }
    Instance {
        registry: registry.build(),
        heard,
        events,
    }
}

pub(super) fn instance(server: &RedisServer, name: &str, threshold: u32) -> Instance {
    instance_with(fleet(server, name), threshold, None)
}

/// Instances `a` and `b` of one fleet, each with the default threshold `threshold`, both
/// connected, the `search` record written, and each one's `search` breaker.
async fn pair(
    server: &RedisServer,
    threshold: u32,
) -> (Instance, Instance, Arc<CircuitBreaker>, Arc<CircuitBreaker>) {
    let (a, b) = (
        instance(server, "a", threshold),
        instance(server, "b", threshold),
    );
    connect(server, a, b).await
}

/// Instances `a` and `b` connected, the `search` record written, and each one's `search` breaker.
pub(super) async fn connect(
    server: &RedisServer,
    a: Instance,
    b: Instance,
) -> (Instance, Instance, Arc<CircuitBreaker>, Arc<CircuitBreaker>) {
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    until("synced", LIMIT, || {
        record(server, "search").contains_key("gen")
    })
    .await;
    (a, b, sa, sb)
}

/// Poll `condition` every millisecond until it holds; panic with `what` after `limit`.
pub(super) async fn until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn fail(breaker: &CircuitBreaker) {
    if let Ok(permit) = breaker.try_acquire() {
        permit.record(Outcome::Failure(FailureKind::Unavailable));
    }
}

fn succeed(breaker: &CircuitBreaker) {
    if let Ok(permit) = breaker.try_acquire() {
        permit.record(Outcome::Success);
    }
}

pub(super) fn record(
    server: &RedisServer,
    dependency: &str,
) -> std::collections::HashMap<String, String> {
    server.cmd(&["HGETALL", &format!("test:breaker:{dependency}")])
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

/// Behaviour 1: no Redis command per call on the healthy path. The only commands in a stretch of
/// 100 000 healthy calls are the background ones: one `MGET` of the epoch and incarnation per
/// sync interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_calls_send_no_redis_command() {
    let server = RedisServer::start();
    let a = instance(&server, "a", 5);
    let search = a.get("search");
    a.connected().await;
    until("search is synced", LIMIT, || {
        record(&server, "search").contains_key("gen")
    })
    .await;
    // One failure and its clearing success are one report each, not per call.
    fail(&search);
    succeed(&search);
    tokio::time::sleep(Duration::from_millis(50)).await; // let the agent report them
    let before = server.command_counts();
    let started = Instant::now();
    for _ in 0..100_000 {
        let permit = search.try_acquire().unwrap();
        permit.record(Outcome::Success);
    }
    let _ = search.call(|| Ok::<_, ()>(()), |_: &_| Outcome::Success);
    let elapsed = started.elapsed();
    let after = server.command_counts();
    let mut grown: Vec<(String, u64)> = after
        .iter()
        .map(|(name, &n)| (name.clone(), n - before.get(name).copied().unwrap_or(0)))
        .filter(|(name, n)| *n > 0 && name != "info")
        .collect();
    grown.sort();
    // Background reads (one MGET of the epoch and incarnation): at most one per 100 ms sync
    // interval elapsed, plus one in flight.
    let background = elapsed.as_millis() as u64 / 100 + 2;
    for (name, n) in &grown {
        assert_eq!(
            name, "mget",
            "only the epoch and incarnation read runs in the background: {grown:?}"
        );
        assert!(*n <= background, "{n} GETs in {elapsed:?}: {grown:?}");
    }
}

/// Behaviour 2: a trip on instance A blocks instance B's next call, B having seen no failure.
/// B's backstop read runs once a minute, so B hears each trip from A's message. The delay from
/// A's trip to B's adoption over 30 trips is printed (the figure the issue targets, 20 ms, is
/// measured in the benchmark; a wall-clock bound here would fail on a busy machine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_on_one_instance_blocks_the_next_call_on_another() {
    let server = RedisServer::start();
    let a = instance(&server, "a", 2);
    let b = instance_with(
        fleet(&server, "b").sync_interval(Duration::from_secs(60)),
        2,
        None,
    );
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    until("both synced", LIMIT, || {
        record(&server, "search").contains_key("gen")
    })
    .await;
    let mut delays = Vec::new();
    for round in 0..30 {
        let tripped = Instant::now();
        fail(&sa);
        fail(&sa);
        assert_eq!(
            sa.state(),
            State::Open,
            "round {round}: a heard {:?}, a's events {:?}, b heard {:?}",
            a.heard.lock().unwrap(),
            a.events(),
            b.heard.lock().unwrap()
        );
        until("b blocks", LIMIT, || sb.try_acquire().is_err()).await;
        let heard_at = b.heard.lock().unwrap().last().unwrap().4;
        delays.push(heard_at.saturating_duration_since(tripped));
        let blocked = sb.try_acquire().unwrap_err();
        assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
        assert!(blocked.retry_after() <= COOLDOWN && !blocked.retry_after().is_zero());
        assert_eq!(b.heard(TransitionReason::Fleet, State::Open), round + 1);
        assert_eq!(
            b.heard(TransitionReason::FailureThreshold, State::Open),
            0,
            "b saw no failure"
        );
        // Closed by hand on A, which reaches B too.
        sa.force_closed().unwrap();
        until("b closes", LIMIT, || sb.state() == State::Closed).await;
    }
    delays.sort();
    let (p50, p99) = (percentile(&delays, 0.5), percentile(&delays, 0.99));
    eprintln!(
        "trip propagation over {} trips: p50 {p50:?}, p99 {p99:?}",
        delays.len()
    );
}

/// The child process of the tests below: an instance in its own OS process, driven by
/// environment variables. Ignored in a plain run; the tests run it by name.
#[test]
#[ignore = "run as a child process by the fleet tests"]
fn child_instance() {
    let Ok(url) = std::env::var("FLEET_CHILD_URL") else {
        return;
    };
    let mode = std::env::var("FLEET_CHILD_MODE").unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let builder = Fleet::builder(url)
            .prefix("test")
            .instance(format!("child-{}", std::process::id()))
            .sync_interval(Duration::from_millis(100))
            .command_timeout(Duration::from_millis(200))
            .probe_window(Duration::from_millis(500));
        let child = instance_with(builder, 2, None);
        child.connected().await;
        let search = child.get("search");
        until("synced", LIMIT, || {
            child.registry.fleet().unwrap().stats().commands > 1
        })
        .await;
        println!("fleet-child: ready");
        match mode.as_str() {
            "observe" => {
                until("the child blocks", Duration::from_secs(30), || {
                    search.try_acquire().is_err()
                })
                .await;
                println!(
                    "fleet-child: blocked {}",
                    search.try_acquire().unwrap_err().reason().as_str()
                );
            }
            "probe-and-hang" => {
                let deadline = Instant::now() + Duration::from_secs(30);
                let probe = loop {
                    match search.try_acquire() {
                        Ok(permit) if permit.is_probe() => break permit,
                        _ => {}
                    }
                    assert!(Instant::now() < deadline, "the child never got the probe");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                };
                println!("fleet-child: probe");
                tokio::time::sleep(Duration::from_secs(60)).await; // killed here
                drop(probe);
            }
            other => panic!("unknown mode {other}"),
        }
    });
}

fn spawn_child(
    server: &RedisServer,
    mode: &str,
) -> (std::process::Child, Box<dyn Iterator<Item = String> + Send>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fleet::child_instance",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FLEET_CHILD_URL", server.url())
        .env("FLEET_CHILD_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok);
    (child, Box::new(lines))
}

/// Behaviour 2, across processes: an instance in its own OS process blocks once A trips.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_reaches_an_instance_in_another_process() {
    let server = RedisServer::start();
    let a = instance(&server, "a", 2);
    let sa = a.get("search");
    a.connected().await;
    let (mut child, mut lines) = spawn_child(&server, "observe");
    let ready = tokio::task::spawn_blocking(move || {
        let first = lines.by_ref().find(|l| l.ends_with("fleet-child: ready"));
        (first, lines)
    });
    let (first, mut lines) = ready.await.unwrap();
    assert!(first.is_some(), "the child connects");
    fail(&sa);
    fail(&sa);
    let answer =
        tokio::task::spawn_blocking(move || lines.find(|l| l.contains("fleet-child: blocked")));
    let answer = tokio::time::timeout(LIMIT, answer)
        .await
        .expect("the child blocks")
        .unwrap();
    assert!(
        answer
            .unwrap()
            .ends_with("fleet-child: blocked dependency_open")
    );
    let _ = child.wait();
}

/// Behaviour 3: failures seen by all instances trip the fleet when their sum reaches the fleet
/// threshold, though no instance reaches its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_across_instances_trip_the_fleet_at_the_fleet_threshold() {
    let server = RedisServer::start();
    let all: Vec<Instance> = ["a", "b", "c"]
        .iter()
        .map(|name| instance_with(fleet(&server, name).failure_threshold(6), 5, None))
        .collect();
    for instance in &all {
        instance.get("search");
        instance.connected().await;
    }
    until("synced", LIMIT, || {
        record(&server, "search").contains_key("gen")
    })
    .await;
    // Two each on a and b: 4 of 6. A success on b clears b's own two: 2 of 6.
    for instance in &all[..2] {
        let search = instance.get("search");
        fail(&search);
        fail(&search);
    }
    let votes = || -> usize {
        server
            .cmd::<std::collections::HashMap<String, String>>(&["HGETALL", "test:votes:search"])
            .len()
    };
    until("a and b have reported", LIMIT, || votes() == 2).await;
    succeed(&all[1].get("search"));
    until("b's success cleared its count", LIMIT, || votes() == 1).await;
    // c's two: 4 of 6, still closed everywhere.
    let c = all[2].get("search");
    fail(&c);
    fail(&c);
    until("c has reported", LIMIT, || votes() == 2).await;
    assert_eq!(record(&server, "search")["state"], "closed");
    // b's two again: 6 of 6, the fleet trips; no instance reached its own threshold of 5.
    let b = all[1].get("search");
    fail(&b);
    fail(&b);
    for instance in &all {
        let search = instance.get("search");
        until("every instance opens", LIMIT, || {
            search.state() == State::Open
        })
        .await;
        assert_eq!(
            instance.heard(TransitionReason::FailureThreshold, State::Open),
            0
        );
    }
    assert_eq!(votes(), 0, "the trip clears the votes");
}

/// Behaviour 3: an instance's failures count only within the window after its last report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_older_than_the_window_do_not_count() {
    let server = RedisServer::start();
    let window = Duration::from_millis(400);
    let a = instance_with(
        fleet(&server, "a").failure_threshold(4).window(window),
        5,
        None,
    );
    let b = instance_with(
        fleet(&server, "b").failure_threshold(4).window(window),
        5,
        None,
    );
    let (_a, _b, sa, sb) = connect(&server, a, b).await;
    fail(&sa);
    fail(&sa);
    fail(&sa);
    let reported = Instant::now();
    let votes = || -> Vec<String> { server.cmd(&["HVALS", "test:votes:search"]) };
    until("a reported", LIMIT, || {
        votes().iter().any(|v| v.starts_with("3 "))
    })
    .await;
    // The server's clock decides the window: let it pass.
    tokio::time::sleep(window.saturating_sub(reported.elapsed()) + Duration::from_millis(50)).await;
    fail(&sb); // 3 + 1 would reach 4, but a's 3 are out of the window
    until("b reported", LIMIT, || {
        votes().iter().any(|v| v.starts_with("1 "))
    })
    .await;
    assert_eq!(record(&server, "search")["state"], "closed");
    assert_eq!(sb.state(), State::Closed);
    // a's next failure is counted afresh with its whole run (4 in a row): now 4 + 1 trips.
    fail(&sa);
    until("the fleet trips", LIMIT, || sb.state() == State::Open).await;
}

/// Behaviour 4: with `min_instances(2)`, an instance whose own network is broken opens its own
/// breaker at once but not the fleet's; a second instance's failures then open the fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_instance_does_not_open_the_fleet() {
    let server = RedisServer::start();
    let a = instance_with(fleet(&server, "a").min_instances(2), 2, None);
    let b = instance_with(fleet(&server, "b").min_instances(2), 2, None);
    let (_a, _b, sa, sb) = connect(&server, a, b).await;
    fail(&sa);
    fail(&sa);
    assert_eq!(sa.state(), State::Open, "a opens locally at once");
    let votes = || -> usize {
        server
            .cmd::<std::collections::HashMap<String, String>>(&["HGETALL", "test:votes:search"])
            .len()
    };
    until("a's trip is a vote", LIMIT, || votes() == 1).await;
    tokio::time::sleep(Duration::from_millis(150)).await; // a sync interval: nothing propagates
    assert_eq!(record(&server, "search")["state"], "closed");
    assert_eq!(sb.state(), State::Closed);
    assert!(sb.try_acquire().is_ok());
    // a's own breaker probes for itself after its cooldown: the fleet does not govern it.
    until("a half-open", LIMIT, || sa.state() == State::HalfOpen).await;
    let probe = sa.try_acquire().expect("a probes on its own");
    assert!(probe.is_probe());
    probe.record(Outcome::Failure(FailureKind::Connect));
    // b's failure makes two instances: the fleet opens.
    fail(&sb);
    until("the fleet opens", LIMIT, || {
        record(&server, "search")["state"] == "open"
    })
    .await;
    until("b opens", LIMIT, || sb.state() == State::Open).await;
}

/// Behaviour 5: after the cooldown exactly one instance of the fleet sends the probe; the
/// others are blocked with `probe_in_flight` and a retry-after; a success closes everywhere, a
/// failure reopens everywhere with a fresh cooldown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_for_the_whole_fleet() {
    let server = RedisServer::start();
    let all: Vec<Instance> = ["a", "b", "c"]
        .iter()
        .map(|n| instance(&server, n, 2))
        .collect();
    let breakers: Vec<Arc<CircuitBreaker>> = all.iter().map(|i| i.get("search")).collect();
    for instance in &all {
        instance.connected().await;
    }
    until("synced", LIMIT, || {
        record(&server, "search").contains_key("gen")
    })
    .await;
    for verdict in [Outcome::Failure(FailureKind::Timeout), Outcome::Success] {
        // Before the trip, so however late this thread sees the probe, the time since is at
        // least the cooldown.
        let opened = Instant::now();
        fail(&breakers[0]);
        fail(&breakers[0]);
        for b in &breakers {
            until("all open", LIMIT, || b.state() == State::Open).await;
        }
        // Every instance asks until one holds the probe.
        let mut probe = None;
        let mut in_flight = 0;
        let deadline = Instant::now() + LIMIT;
        while probe.is_none() {
            for (i, b) in breakers.iter().enumerate() {
                match b.try_acquire() {
                    Ok(permit) => {
                        assert!(permit.is_probe());
                        assert!(probe.is_none(), "a second probe");
                        probe = Some((i, permit));
                    }
                    Err(blocked) if blocked.reason() == BlockedReason::ProbeInFlight => {
                        assert!(!blocked.retry_after().is_zero());
                        in_flight += 1;
                    }
                    Err(_) => {}
                }
            }
            assert!(Instant::now() < deadline, "no probe");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(
            opened.elapsed() >= COOLDOWN - Duration::from_millis(20),
            "not before the cooldown"
        );
        let (holder, permit) = probe.unwrap();
        // While it is out, every other instance is blocked with probe_in_flight.
        for (i, b) in breakers.iter().enumerate().filter(|(i, _)| *i != holder) {
            until("the others hear of the lease", LIMIT, || {
                b.try_acquire()
                    .is_err_and(|e| e.reason() == BlockedReason::ProbeInFlight)
            })
            .await;
            let blocked = b.try_acquire().unwrap_err();
            assert!(blocked.retry_after() > Duration::ZERO, "instance {i}");
            assert_eq!(b.state(), State::HalfOpen);
        }
        assert!(in_flight > 0 || breakers.len() == 1);
        let failed = verdict != Outcome::Success;
        let verdict_at = Instant::now();
        permit.record(verdict);
        for b in &breakers {
            if failed {
                // A fresh cooldown: what is left of it, and the time since the verdict (read
                // after it, so a late look only adds), make up the whole cooldown.
                until("reopened everywhere", LIMIT, || {
                    b.try_acquire().is_err_and(|e| {
                        e.reason() == BlockedReason::DependencyOpen
                            && e.retry_after() + verdict_at.elapsed()
                                > COOLDOWN - Duration::from_millis(100)
                    })
                })
                .await;
            } else {
                until("closed everywhere", LIMIT, || b.state() == State::Closed).await;
            }
        }
        if failed {
            // Closed by hand from the probe's instance, for the second round (a success).
            breakers[holder].force_closed().unwrap();
            for b in &breakers {
                until("closed by hand everywhere", LIMIT, || {
                    b.state() == State::Closed
                })
                .await;
            }
        }
    }
}

/// Behaviour 5: a probe holder killed with SIGKILL frees the lease when it expires, and another
/// instance probes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_probe_holder_frees_the_lease_when_it_expires() {
    let server = RedisServer::start();
    let a = instance(&server, "a", 2);
    let sa = a.get("search");
    a.connected().await;
    let (mut child, lines) = spawn_child(&server, "probe-and-hang");
    let mut lines = tokio::task::spawn_blocking(move || {
        let mut lines = lines;
        assert!(lines.by_ref().any(|l| l.ends_with("fleet-child: ready")));
        lines
    })
    .await
    .unwrap();
    fail(&sa);
    fail(&sa);
    // Only the child asks after the cooldown, so the child wins the lease.
    let probed =
        tokio::task::spawn_blocking(move || lines.find(|l| l.ends_with("fleet-child: probe")));
    let probed = tokio::time::timeout(LIMIT, probed)
        .await
        .expect("the child probes")
        .unwrap();
    assert!(probed.is_some());
    let killed = Instant::now();
    child.kill().unwrap();
    let _ = child.wait();
    // What is left of the child's lease, read after `killed`: it ends no sooner than this after
    // `killed`, however late this thread ran.
    let lease_left: i64 = server.cmd(&["PTTL", "test:probe:search"]);
    let lease_left = Duration::from_millis(u64::try_from(lease_left).unwrap_or(0));
    let blocked = sa.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
    // The lease (probe timeout + probe window = 1.5 s) runs out, then a cooldown passes, and a
    // asks until it is given the probe.
    let deadline = Instant::now() + LIMIT;
    let probe = loop {
        if let Ok(permit) = sa.try_acquire() {
            break permit;
        }
        assert!(Instant::now() < deadline, "a never got the probe");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    assert!(probe.is_probe());
    // Redis keeps expiry to the millisecond.
    assert!(
        killed.elapsed() + Duration::from_millis(5) >= lease_left,
        "only after the lease ends: {:?} after the kill, {lease_left:?} of the lease left then",
        killed.elapsed()
    );
    probe.record(Outcome::Success);
    until("closed", LIMIT, || {
        record(&server, "search")["state"] == "closed"
    })
    .await;
}

/// Behaviour 6: two instances tripping at once make one fleet generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_tripping_at_once_make_one_generation() {
    let server = RedisServer::start();
    let (a, b, sa, sb) = pair(&server, 1).await;
    let start: u64 = record(&server, "search")["gen"].parse().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| fail(&sa));
        s.spawn(|| fail(&sb));
    });
    until("both reported", LIMIT, || {
        a.registry.fleet().unwrap().stats().commands > 2
            && b.registry.fleet().unwrap().stats().commands > 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = record(&server, "search");
    assert_eq!(after["state"], "open");
    assert_eq!(
        after["gen"].parse::<u64>().unwrap(),
        start + 1,
        "one trip, one generation"
    );
}

/// Behaviour 6: a verdict from an older generation changes nothing: a probe whose generation
/// the fleet left (changed by hand on another instance) reports into the void.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_from_an_older_generation_changes_nothing() {
    let server = RedisServer::start();
    let (_a, _b, sa, sb) = pair(&server, 1).await;
    fail(&sa);
    until("b opens", LIMIT, || sb.state() == State::Open).await;
    // a takes the fleet's probe; b then isolates the dependency for the fleet.
    let deadline = Instant::now() + LIMIT;
    let probe = loop {
        if let Ok(permit) = sa.try_acquire() {
            break permit;
        }
        assert!(Instant::now() < deadline, "no probe");
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    sb.force_open().unwrap();
    until("a is isolated", LIMIT, || {
        sa.try_acquire()
            .is_err_and(|e| e.reason() == BlockedReason::Isolated)
    })
    .await;
    let generation = record(&server, "search")["gen"].clone();
    probe.record(Outcome::Success); // stale: changes nothing, locally or in the fleet
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = record(&server, "search");
    assert_eq!(
        (after["state"].as_str(), &after["gen"]),
        ("isolated", &generation)
    );
    assert_eq!(
        sa.try_acquire().unwrap_err().reason(),
        BlockedReason::Isolated
    );
}

/// Behaviour 6: times in the record are the server's, so instances whose clocks are seconds
/// apart agree on when the cooldown ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_with_clocks_seconds_apart_agree_on_the_cooldown() {
    let server = RedisServer::start();
    let (clock_a, mock_a) = quanta::Clock::mock();
    let (clock_b, mock_b) = quanta::Clock::mock();
    mock_a.increment(Duration::from_secs(3_600));
    mock_b.increment(Duration::from_secs(3_600 + 7)); // seven seconds ahead of a
    let a = instance_with(fleet(&server, "a"), 1, Some(clock_a));
    let b = instance_with(fleet(&server, "b"), 1, Some(clock_b));
    let (_a, _b, sa, sb) = connect(&server, a, b).await;
    fail(&sa);
    until("b opens", LIMIT, || sb.state() == State::Open).await;
    let tripped = Instant::now();
    for breaker in [&sa, &sb] {
        let retry = breaker.try_acquire().unwrap_err().retry_after();
        // The same end, whatever the clock: one cooldown from the trip, less the time a message
        // took (the mock clocks stand still, so only what the server's clock says moved).
        assert!(
            retry <= COOLDOWN && retry >= COOLDOWN - Duration::from_millis(100),
            "{retry:?}"
        );
    }
    // Real time (the server's) passes the cooldown, and the mock clocks are moved by the same.
    tokio::time::sleep(COOLDOWN.saturating_sub(tripped.elapsed())).await;
    mock_a.increment(COOLDOWN);
    mock_b.increment(COOLDOWN);
    let deadline = Instant::now() + LIMIT;
    let mut probes = 0;
    loop {
        for breaker in [&sa, &sb] {
            if let Ok(permit) = breaker.try_acquire() {
                probes += 1;
                std::mem::forget(permit); // held to the end
            }
        }
        if probes > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no probe");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    for breaker in [&sa, &sb] {
        let _ = breaker
            .try_acquire()
            .map(std::mem::forget)
            .map(|()| probes += 1);
    }
    assert_eq!(probes, 1, "one probe, for both instances");
}

/// Behaviour 7: changes by hand on one instance apply to all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_by_hand_reach_the_fleet() {
    let server = RedisServer::start();
    let (a, b, sa, sb) = pair(&server, 3).await;
    sa.force_open().unwrap();
    until("b isolated", LIMIT, || {
        sb.try_acquire()
            .is_err_and(|e| e.reason() == BlockedReason::Isolated)
    })
    .await;
    sb.force_closed().unwrap();
    until("a closed", LIMIT, || sa.state() == State::Closed).await;
    // A reset clears the fleet's count: two failures on each, reset on a, two more on b: 2 < 3.
    let votes = || -> usize {
        server
            .cmd::<std::collections::HashMap<String, String>>(&["HGETALL", "test:votes:search"])
            .len()
    };
    fail(&sa);
    fail(&sa);
    until("a reported", LIMIT, || votes() == 1).await;
    assert_eq!(sa.reset(), None, "closed stays closed");
    until("the reset cleared the fleet's votes", LIMIT, || {
        votes() == 0
    })
    .await;
    assert_eq!(record(&server, "search")["state"], "closed");
    assert!(
        a.heard(TransitionReason::Fleet, State::Open) == 0,
        "{:?}",
        a.heard.lock().unwrap()
    );
    assert_eq!(b.heard(TransitionReason::Fleet, State::Open), 1);
    assert_eq!(a.heard(TransitionReason::Fleet, State::Closed), 1);
}

/// Behaviour 8: Redis killed with SIGKILL and restarted on the same port (empty): meanwhile
/// every instance works as a local breaker, one warning event says so, and on reconnect the
/// fleet converges on the trip made during the outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_and_restarted_the_fleet_converges() {
    let mut server = RedisServer::start();
    let (a, b, sa, sb) = pair(&server, 2).await;
    server.kill();
    // Calls go on with no wait on Redis, and a trips on its own. What they waited is counted
    // without this thread's run-queue time, so a busy machine does not lengthen it.
    let queue = sched::RunQueue::this_thread();
    let started = queue.stopwatch();
    for _ in 0..1_000 {
        succeed(&sb);
    }
    fail(&sa);
    fail(&sa);
    let waited = started.unqueued();
    assert!(
        waited < Duration::from_secs(1),
        "no call waited on Redis: {waited:?}"
    );
    assert_eq!(sa.state(), State::Open);
    for instance in [&a, &b] {
        until("the outage is noticed", LIMIT, || {
            !instance.registry.fleet().unwrap().is_connected()
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // several failed reconnections
    assert_eq!(sb.state(), State::Closed, "b is on its own");
    // a's own breaker runs its own cycle meanwhile: its cooldown ends and it probes locally.
    until("a half-open", LIMIT, || sa.state() == State::HalfOpen).await;
    let probe = sa
        .try_acquire()
        .expect("a probes on its own while Redis is down");
    probe.record(Outcome::Failure(FailureKind::Unavailable));
    server.restart();
    for instance in [&a, &b] {
        until("reconnected", LIMIT, || {
            instance.events().contains(&FleetEvent::Reconnected)
        })
        .await;
        let unreachable = instance
            .events()
            .iter()
            .filter(|e| matches!(e, FleetEvent::Unreachable { .. }))
            .count();
        assert_eq!(
            unreachable,
            1,
            "one warning for the outage: {:?}",
            instance.events()
        );
    }
    until("b converges on a's trip", LIMIT, || {
        sb.state() == State::Open
    })
    .await;
    assert_eq!(record(&server, "search")["state"], "open");
}

/// Behaviour 8: `CLIENT PAUSE` for 2 s while a trip happens: the trip holds locally at once and
/// reaches the fleet when Redis answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_during_client_pause_reaches_the_fleet_after_it() {
    let server = RedisServer::start();
    // a's commands outlast the pause, so a trip that waited on Redis would wait for its end.
    let a = instance_with(
        fleet(&server, "a").command_timeout(Duration::from_secs(5)),
        2,
        None,
    );
    let (a, b, sa, sb) = connect(&server, a, instance(&server, "b", 2)).await;
    let paused = Instant::now();
    let _: String = server.cmd(&["CLIENT", "PAUSE", "2000", "ALL"]);
    // Counted without this thread's run-queue time, so a busy machine does not lengthen it.
    let queue = sched::RunQueue::this_thread();
    let started = queue.stopwatch();
    fail(&sa);
    fail(&sa);
    let waited = started.unqueued();
    assert!(
        waited < Duration::from_secs(1),
        "the trip waited on nothing: {waited:?}"
    );
    assert_eq!(sa.state(), State::Open);
    until("b opens", Duration::from_secs(10), || {
        sb.state() == State::Open
    })
    .await;
    assert!(
        paused.elapsed() >= Duration::from_millis(1_900),
        "not before the pause ends"
    );
    for instance in [&a, &b] {
        let unreachable = instance
            .events()
            .iter()
            .filter(|e| matches!(e, FleetEvent::Unreachable { .. }))
            .count();
        assert!(unreachable <= 1, "{:?}", instance.events());
    }
}

/// Behaviour 8: `FLUSHALL` loses the shared state; the fleet rebuilds it from the instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_flushall_the_fleet_rebuilds_its_state() {
    let server = RedisServer::start();
    let a = instance(&server, "a", 2);
    let b = instance(&server, "b", 2);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.get("weather");
    a.connected().await;
    b.connected().await;
    until("synced", LIMIT, || {
        record(&server, "search").contains_key("gen")
    })
    .await;
    fail(&sa);
    fail(&sa);
    until("b opens", LIMIT, || sb.state() == State::Open).await;
    let _: String = server.cmd(&["FLUSHALL"]);
    until("rebuilt", LIMIT, || {
        let r = record(&server, "search");
        r.get("state").map(String::as_str) == Some("open")
    })
    .await;
    until("weather rebuilt", LIMIT, || {
        record(&server, "weather").get("state").map(String::as_str) == Some("closed")
    })
    .await;
    // A newcomer learns the open state from the rebuilt record.
    let c = instance(&server, "c", 2);
    let sc = c.get("search");
    c.connected().await;
    until("c opens", LIMIT, || sc.state() == State::Open).await;
    assert_eq!(sb.state(), State::Open);
}

/// Behaviour 9: a foreign value under the crate's key, a truncated record, or another format
/// version gives one clear error event and local mode for that dependency; never a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_records_give_an_error_event_and_local_mode() {
    let server = RedisServer::start();
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "foreign",
            &["SET", "test:breaker:foreign", "hello"],
            "holds a string",
        ),
        (
            "truncated",
            &["HSET", "test:breaker:truncated", "v", "1", "gen", "4"],
            "truncated",
        ),
        (
            "future",
            &[
                "HSET",
                "test:breaker:future",
                "v",
                "2",
                "gen",
                "4",
                "state",
                "open",
                "at",
                "1",
            ],
            "format version 2",
        ),
    ];
    for (dependency, command, _) in &cases {
        let _: redis::Value = server.cmd(command);
        let _ = dependency;
    }
    let a = instance(&server, "a", 1);
    let b = instance(&server, "b", 1);
    a.connected().await;
    b.connected().await;
    for (dependency, _, problem) in &cases {
        let (da, db) = (a.get(dependency), b.get(dependency));
        until("a bad record event", LIMIT, || {
            a.events().iter().any(|e| matches!(e, FleetEvent::BadRecord { dependency: d, problem: p } if d == dependency && p.contains(problem)))
        })
        .await;
        // Local mode: a's trip stays on a.
        fail(&da);
        assert_eq!(da.state(), State::Open);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(db.state(), State::Closed, "{dependency}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // several syncs: still one event each
    for (dependency, _, _) in &cases {
        let told = a
            .events()
            .iter()
            .filter(|e| matches!(e, FleetEvent::BadRecord { dependency: d, .. } if d == dependency))
            .count();
        assert_eq!(told, 1, "{dependency}: {:?}", a.events());
    }
    // The key cleared by the operator: the record is rebuilt and the fleet works again.
    let _: i64 = server.cmd(&["DEL", "test:breaker:foreign"]);
    let db = b.get("foreign");
    until("rebuilt", LIMIT, || {
        record(&server, "foreign").contains_key("gen")
    })
    .await;
    let da = a.get("foreign");
    // a's worker leaves local mode for this dependency at its next look at the rebuilt record,
    // which a loaded machine can delay past a's first trip (then a trip that stayed local): trip
    // again until one reaches b, within the limit. A fleet that never works again still fails.
    let deadline = Instant::now() + LIMIT;
    loop {
        da.force_closed();
        until("a closed", LIMIT, || da.state() == State::Closed).await;
        fail(&da);
        let heard = Instant::now() + Duration::from_secs(1);
        while db.state() != State::Open && Instant::now() < heard {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if db.state() == State::Open {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting: b follows again"
        );
    }
    // A malformed message on the channel is an event too, not a panic.
    let _: i64 = server.cmd(&["PUBLISH", "test:transitions", "garbage"]);
    until("a bad message event", LIMIT, || {
        a.events()
            .iter()
            .any(|e| matches!(e, FleetEvent::BadMessage { .. }))
    })
    .await;
}

/// Bad settings are a `ConfigError` naming the field; a bad URL and a missing runtime are errors.
#[test]
fn bad_fleet_settings_are_errors_naming_the_field() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let url = "redis://127.0.0.1:1/";
    let field = |builder: FleetBuilder| match builder.build() {
        Err(FleetError::Config(error)) => error.field(),
        other => panic!("{other:?}"),
    };
    assert_eq!(field(Fleet::builder(url).prefix("")), "prefix");
    assert_eq!(field(Fleet::builder(url).prefix("a b")), "prefix");
    assert_eq!(field(Fleet::builder(url).instance("")), "instance");
    assert_eq!(
        field(Fleet::builder(url).failure_threshold(0)),
        "fleet_failure_threshold"
    );
    assert_eq!(field(Fleet::builder(url).min_instances(0)), "min_instances");
    assert_eq!(field(Fleet::builder(url).window(Duration::ZERO)), "window");
    assert_eq!(
        field(Fleet::builder(url).sync_interval(Duration::ZERO)),
        "sync_interval"
    );
    assert_eq!(
        field(Fleet::builder(url).command_timeout(Duration::ZERO)),
        "command_timeout"
    );
    assert_eq!(
        field(Fleet::builder(url).probe_window(Duration::ZERO)),
        "probe_window"
    );
    assert!(matches!(
        Fleet::builder("http://x/").build(),
        Err(FleetError::Url(_))
    ));
    drop(_guard);
    assert_eq!(
        Fleet::builder(url).build().unwrap_err(),
        FleetError::NoRuntime
    );
}

/// Every shared change survives being sent twice: a change by hand whose first sending timed out
/// on the client (Redis paused) but ran on the server is sent again on reconnect and recognised,
/// so it does not undo a later change made elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_by_hand_sent_again_after_a_timeout_applies_once() {
    let server = RedisServer::start();
    let (a, _b, sa, sb) = pair(&server, 3).await;
    let _: String = server.cmd(&["CLIENT", "PAUSE", "800", "WRITE"]);
    sa.force_open().unwrap();
    until("a's agent gives up on Redis", LIMIT, || {
        !a.registry.fleet().unwrap().is_connected()
    })
    .await;
    until("b isolated once Redis runs again", LIMIT, || {
        sb.try_acquire()
            .is_err_and(|e| e.reason() == BlockedReason::Isolated)
    })
    .await;
    until("a reconnected", LIMIT, || {
        a.events().contains(&FleetEvent::Reconnected)
    })
    .await;
    sb.force_closed().unwrap();
    until("a closed", LIMIT, || sa.state() == State::Closed).await;
    tokio::time::sleep(Duration::from_millis(300)).await; // several sync intervals
    assert_eq!(record(&server, "search")["state"], "closed");
    assert_eq!(sa.state(), State::Closed);
    assert_eq!(
        a.heard(TransitionReason::Fleet, State::Open),
        0,
        "{:?}",
        a.heard.lock().unwrap()
    );
}

/// Nothing stays blocked on an agent that is gone: a breaker handle that outlives its registry
/// (whose agent stops with it) works as a local breaker, and probes after its cooldown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_that_outlives_its_agent_works_locally() {
    let server = RedisServer::start();
    let (_a, b, sa, sb) = pair(&server, 2).await;
    fail(&sa);
    fail(&sa);
    until("b opens", LIMIT, || sb.state() == State::Open).await;
    until("b half-open", LIMIT, || sb.state() == State::HalfOpen).await;
    // The fleet chose its probe at the cooldown's end: b's call is it, or is told another
    // instance probes (a probe admitted here is dropped unused, giving its slot back).
    match sb.try_acquire() {
        Ok(permit) => assert!(permit.is_probe(), "the fleet's probe, granted to b"),
        Err(blocked) => assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight),
    }
    drop(b); // the registry and its agent
    until("b probes on its own", LIMIT, || {
        sb.try_acquire().is_ok_and(|permit| permit.is_probe())
    })
    .await;
}

/// Behaviour 9, the other keys: a foreign value under a dependency's votes or lease key is a bad
/// record of that dependency (local mode, one event), not an outage of the fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_values_under_the_votes_or_lease_key_are_bad_records() {
    let server = RedisServer::start();
    let _: redis::Value = server.cmd(&["SET", "test:votes:search", "not a hash"]);
    let _: redis::Value = server.cmd(&["HSET", "test:probe:weather", "not", "a string"]);
    let a = instance(&server, "a", 2);
    let b = instance(&server, "b", 2);
    let (search, weather, files) = (a.get("search"), a.get("weather"), a.get("files"));
    let b_files = b.get("files");
    a.connected().await;
    b.connected().await;
    for dependency in ["search", "weather"] {
        until("a bad record event", LIMIT, || {
            a.events().iter().any(
                |e| matches!(e, FleetEvent::BadRecord { dependency: d, .. } if d == dependency),
            )
        })
        .await;
    }
    fail(&search);
    fail(&search);
    fail(&weather);
    fail(&weather);
    assert_eq!(
        (search.state(), weather.state()),
        (State::Open, State::Open),
        "local breakers"
    );
    assert!(a.registry.fleet().unwrap().is_connected(), "not an outage");
    assert!(
        !a.events()
            .iter()
            .any(|e| matches!(e, FleetEvent::Unreachable { .. }))
    );
    // Another dependency of the same instance is still shared.
    fail(&files);
    fail(&files);
    until("files reaches b", LIMIT, || b_files.state() == State::Open).await;
}

/// A server that refuses the login is a configuration error (one `Refused` event naming the
/// error, every breaker local), not a bad record of each dependency.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_is_told_not_a_bad_record() {
    let server = RedisServer::start_with(&["--requirepass", "secret"]);
    let a = instance(&server, "a", 2);
    let search = a.get("search");
    until("the refusal is told", LIMIT, || {
        a.events()
            .iter()
            .any(|e| matches!(e, FleetEvent::Refused { .. }))
    })
    .await;
    fail(&search);
    fail(&search);
    assert_eq!(search.state(), State::Open, "a local breaker");
    tokio::time::sleep(Duration::from_millis(300)).await; // several reconnection attempts
    let events = a.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        format!("{}", events[0]).contains("refused"),
        "{}",
        events[0]
    );
}

/// A record whose opening lies after the server's clock (written by something else, or the
/// server's clock stepped back) opens the breaker from now: never for longer than a cooldown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opening_after_the_servers_clock_counts_from_now() {
    let server = RedisServer::start();
    let time: Vec<String> = server.cmd(&["TIME"]);
    let hour_ahead = time[0].parse::<u64>().unwrap() * 1_000 + 3_600_000;
    let _: redis::Value = server.cmd(&[
        "HSET",
        "test:breaker:search",
        "v",
        "1",
        "gen",
        "3",
        "state",
        "open",
        "at",
        &hour_ahead.to_string(),
        "lu",
        "0",
    ]);
    let a = instance(&server, "a", 2);
    let search = a.get("search");
    a.connected().await;
    until("a opens", LIMIT, || search.state() == State::Open).await;
    let blocked = search.try_acquire().unwrap_err();
    assert!(
        blocked.retry_after() <= COOLDOWN,
        "{:?}",
        blocked.retry_after()
    );
}

/// Behaviour 5, the loser of a claim: two instances ask for the probe at once; the one whose
/// claim is answered `held` probes soon after the winner gives its unused lease back (after the
/// probe window), not at the lease's end (probe window + probe timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loser_of_a_claim_probes_soon_after_an_unused_lease_is_given_back() {
    let server = RedisServer::start();
    let (_a, _b, sa, sb) = pair(&server, 2).await;
    // A lease of 10.5 s (probe timeout 10 s + probe window 500 ms): the loser asks for LIMIT, so
    // it probes only if the winner gives its unused lease back, not at the lease's end.
    let long_lease = Config::new(2, COOLDOWN, Duration::from_secs(10)).unwrap();
    assert_eq!(sa.reconfigure(long_lease), None);
    assert_eq!(sb.reconfigure(long_lease), None);
    fail(&sa);
    fail(&sa);
    until("b opens", LIMIT, || sb.state() == State::Open).await;
    until("the cooldown ends", LIMIT, || {
        sa.state() == State::HalfOpen && sb.state() == State::HalfOpen
    })
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await; // the server's clock passes it too
    // One call on each, at once: the agents claimed the fleet's probe when the cooldown ended,
    // so at most one is admitted (the winner's, dropped unused here: its lease stays unused).
    let (ca, cb) = (sa.try_acquire(), sb.try_acquire());
    assert!(ca.is_err() || cb.is_err(), "one probe for the fleet");
    drop((ca, cb));
    until("a lease", LIMIT, || {
        server
            .cmd::<Option<String>>(&["GET", "test:probe:search"])
            .is_some()
    })
    .await;
    let claimed = Instant::now();
    let holder: String = server.cmd(&["GET", "test:probe:search"]);
    let loser = if holder.contains(" a#") { &sb } else { &sa };
    // The winner is never called again; the loser calls every 10 ms.
    let deadline = Instant::now() + LIMIT;
    let probe = loop {
        if let Ok(permit) = loser.try_acquire() {
            break permit;
        }
        assert!(Instant::now() < deadline, "the loser never probed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(probe.is_probe());
    // The probe window is 500 ms; the lease would last 10.5 s.
    println!("the loser probed {:?} after the claim", claimed.elapsed());
}
