//! Fleet mode against a real redis-server under adversity (feature `redis`): foreign and lost
//! keys, an epoch that goes back, forged messages, storms of callers, chaos on the server, odd
//! names, hundreds of dependencies. Each test names the claim it checks. Run one with
//! `--test-threads 1 --nocapture` to see the figures it prints.

use super::redis_server;
use super::sched;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use toolbreaker::fleet::{FleetBuilder, FleetEvent};
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Fleet, Outcome, Registry, State,
};

const COOLDOWN: Duration = Duration::from_millis(300);
const PROBE_TIMEOUT: Duration = Duration::from_millis(1_000);
const LIMIT: Duration = Duration::from_secs(5);

fn config(threshold: u32) -> Config {
    Config::new(threshold, COOLDOWN, PROBE_TIMEOUT).unwrap()
}

fn fleet(url: &str, instance: &str) -> FleetBuilder {
    Fleet::builder(url)
        .prefix("rv")
        .instance(instance)
        .sync_interval(Duration::from_millis(100))
        .command_timeout(Duration::from_millis(200))
        .probe_window(Duration::from_millis(500))
}

struct Instance {
    registry: Registry,
    events: Arc<Mutex<Vec<FleetEvent>>>,
}

impl Instance {
    fn new(url: &str, name: &str, threshold: u32) -> Instance {
        Instance::with(fleet(url, name), threshold, None)
    }

    fn with(builder: FleetBuilder, threshold: u32, clock: Option<quanta::Clock>) -> Instance {
        let events = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&events);
        let fleet = builder
            .on_event(move |e| log.lock().unwrap().push(e.clone()))
            .build()
            .unwrap();
        let mut registry = Registry::builder()
            .default_config(config(threshold))
            .fleet(fleet);
        if let Some(clock) = clock {
            registry = registry.clock(clock);
        }
        Instance {
            registry: registry.build(),
            events,
        }
    }

    fn get(&self, dependency: &str) -> Arc<CircuitBreaker> {
        self.registry.get(dependency)
    }

    fn events(&self) -> Vec<FleetEvent> {
        self.events.lock().unwrap().clone()
    }

    async fn connected(&self) {
        let fleet = self.registry.fleet().unwrap();
        until("the agent connects", LIMIT, || fleet.is_connected()).await;
    }
}

async fn until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Like `until`, but says whether it held instead of panicking.
async fn within(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !condition() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    true
}

fn fail(breaker: &CircuitBreaker) {
    if let Ok(permit) = breaker.try_acquire() {
        permit.record(Outcome::Failure(FailureKind::Unavailable));
    }
}

fn record(server: &RedisServer, dependency: &str) -> std::collections::HashMap<String, String> {
    server.cmd(&["HGETALL", &format!("rv:breaker:{dependency}")])
}

fn evalsha(server: &RedisServer) -> u64 {
    let counts = server.command_counts();
    counts.get("evalsha").copied().unwrap_or(0) + counts.get("eval").copied().unwrap_or(0)
}

async fn synced(server: &RedisServer, dependency: &str) {
    until("synced", LIMIT, || {
        record(server, dependency).contains_key("gen")
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Step 1: the README's fleet example, as a new user would write it, with three instances.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_fleet_example_with_three_instances() {
    let server = RedisServer::start();
    let url = server.url();
    let registries: Vec<Registry> = ["gw-1", "gw-2", "gw-3"]
        .iter()
        .map(|name| {
            let fleet = Fleet::builder(url.as_str())
                .prefix("gateway")
                .instance(*name)
                .build()
                .unwrap();
            Registry::builder().fleet(fleet).build()
        })
        .collect();
    let search: Vec<_> = registries.iter().map(|r| r.get("search")).collect();
    assert!(search[0].try_acquire().is_ok());
    for r in &registries {
        let fleet = r.fleet().unwrap();
        until("connected", LIMIT, || fleet.is_connected()).await;
    }
    // The default threshold is 5 (Config::default); trip gw-1.
    for _ in 0..5 {
        fail(&search[0]);
    }
    assert_eq!(search[0].state(), State::Open);
    for b in &search[1..] {
        until("the trip reaches the others", LIMIT, || {
            b.state() == State::Open
        })
        .await;
    }
}

// ---------------------------------------------------------------------------------------------
// Finding: a lowered epoch (a foreign `SET P:epoch`, or Redis restarted from an older snapshot,
// whose incarnation key is unchanged) makes every instance ignore every record older than the
// last one it applied: a trip on one instance no longer reaches the others (contract 13).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_reaches_the_fleet_after_the_epoch_went_back() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 2);
    let b = Instance::new(&url, "b", 2);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    synced(&server, "search").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let epoch: u64 = server.cmd(&["GET", "rv:epoch"]);
    println!("epoch before: {epoch}");
    let _: String = server.cmd(&["SET", "rv:epoch", "1"]);
    fail(&sa);
    fail(&sa);
    assert_eq!(sa.state(), State::Open);
    until("the fleet's record opens", LIMIT, || {
        record(&server, "search")["state"] == "open"
    })
    .await;
    let reached = within(LIMIT, || sb.state() == State::Open).await;
    println!(
        "record: {:?}; b: {:?}; b events: {:?}",
        record(&server, "search"),
        sb.state(),
        b.events()
    );
    assert!(
        reached,
        "a trip on a never reached b after the epoch went down"
    );
}

/// The same, the way it happens in production: Redis with RDB persistence restarts from a
/// snapshot taken before the last few writes. The incarnation key comes back unchanged, so no
/// instance treats it as a wipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Each server started here is killed and waited for below; clippy cannot follow it through the
// closure.
#[allow(clippy::zombie_processes)]
async fn a_trip_reaches_the_fleet_after_redis_restarts_from_an_older_snapshot() {
    let dir = std::env::temp_dir().join(format!("rv-snapshot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let start = || {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--dbfilename",
                "dump.rdb",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut c) = client.get_connection_with_timeout(Duration::from_secs(1))
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                break (child, c);
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let (mut child, mut conn) = start();
    let url = format!("redis://127.0.0.1:{port}/");
    let a = Instance::new(&url, "a", 2);
    let b = Instance::new(&url, "b", 2);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _: String = redis::cmd("SAVE").query(&mut conn).unwrap(); // the last snapshot
    // Some ordinary activity after the snapshot: an operator toggles the dependency by hand.
    for _ in 0..5 {
        sa.force_open().unwrap();
        until("b isolated", LIMIT, || {
            sb.try_acquire()
                .is_err_and(|e| e.reason() == BlockedReason::Isolated)
        })
        .await;
        sa.force_closed().unwrap();
        until("b closed", LIMIT, || sb.state() == State::Closed).await;
    }
    // Redis crashes and comes back from the snapshot.
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, _conn) = start();
    for i in [&a, &b] {
        until("reconnected", LIMIT, || {
            i.events().contains(&FleetEvent::Reconnected)
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    fail(&sa);
    fail(&sa);
    let reached = within(LIMIT, || sb.state() == State::Open).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        reached,
        "after a restart from a snapshot a's trip never reached b"
    );
}

// ---------------------------------------------------------------------------------------------
// Finding: one well-formed message on the channel with a huge epoch poisons every instance:
// its forged state is adopted, then every real record of that dependency is ignored.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_message_with_a_huge_epoch_does_not_cut_a_dependency_off() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 2);
    let b = Instance::new(&url, "b", 2);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    synced(&server, "search").await;
    let generation = record(&server, "search")["gen"].clone();
    // A closed record, same generation, epoch far ahead: nothing visible changes.
    let message = format!("1\t18446744073709551000\t{generation}\tclosed\t1\t1\t\t0\t0\tsearch");
    let _: i64 = server.cmd(&["PUBLISH", "rv:transitions", &message]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    fail(&sa);
    fail(&sa);
    let reached = within(LIMIT, || sb.state() == State::Open).await;
    println!("b events: {:?}", b.events());
    assert!(
        reached,
        "after one forged message, a's trip never reached b"
    );
}

// ---------------------------------------------------------------------------------------------
// Command rates.

/// A flapping dependency (failures and successes interleaved, never reaching the threshold):
/// its count is reported at most once per 5 ms, however fast it changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn report_rate_of_a_flapping_dependency() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1_000);
    let sa = a.get("search");
    a.connected().await;
    synced(&server, "search").await;
    for (label, pause) in [
        ("no pause", None),
        ("1 call / 100 us", Some(Duration::from_micros(100))),
    ] {
        let before = evalsha(&server);
        let calls = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (sa, calls, stop) = (Arc::clone(&sa), Arc::clone(&calls), Arc::clone(&stop));
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(p) = sa.try_acquire() {
                            p.record(if i.is_multiple_of(2) {
                                Outcome::Failure(FailureKind::Unavailable)
                            } else {
                                Outcome::Success
                            });
                        }
                        i += 1;
                        calls.fetch_add(1, Ordering::Relaxed);
                        if let Some(pause) = pause {
                            std::thread::sleep(pause);
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        let scripts = evalsha(&server) - before;
        let calls = calls.load(Ordering::Relaxed);
        println!("{label}: {calls} calls, {scripts} scripts (reports) in 1 s from one instance");
        // Batched: at most one report of the count per 5 ms (200 in the second), never one per
        // change.
        assert!(scripts <= 220, "{scripts} reports for {calls} calls");
        assert!(calls > 2 * scripts, "{scripts} reports for {calls} calls");
    }
}

/// A missing incarnation key (deleted, or evicted under an `allkeys-*` maxmemory policy) is read
/// as a wipe on every tick, but nothing writes it back unless a record is written: every
/// instance re-syncs every dependency every sync interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_incarnation_is_read_once_then_rewritten() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 2);
    let deps: Vec<_> = (0..300).map(|i| a.get(&format!("dep-{i}"))).collect();
    a.connected().await;
    until("all synced", LIMIT, || {
        record(&server, "dep-299").contains_key("gen")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = evalsha(&server);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let quiet = evalsha(&server) - before;
    let _: i64 = server.cmd(&["DEL", "rv:incarnation"]);
    // One read of every record is the answer to an apparent wipe; then nothing more.
    until("the incarnation is written back", LIMIT, || {
        server.cmd::<i64>(&["EXISTS", "rv:incarnation"]) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = evalsha(&server);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after_del = evalsha(&server) - before;
    println!("scripts per second: quiet {quiet}, incarnation deleted {after_del}");
    let exists: i64 = server.cmd(&["EXISTS", "rv:incarnation"]);
    println!("incarnation rewritten: {exists}");
    drop(deps);
    assert!(
        after_del < 50,
        "{after_del} scripts a second with nothing happening"
    );
}

/// A lowered epoch (see above) also makes every tick re-sync every dependency: the read epoch
/// never equals the agent's remembered maximum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_epoch_that_went_back_is_read_once() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 2);
    let deps: Vec<_> = (0..300).map(|i| a.get(&format!("dep-{i}"))).collect();
    a.connected().await;
    until("all synced", LIMIT, || {
        record(&server, "dep-299").contains_key("gen")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _: String = server.cmd(&["SET", "rv:epoch", "5"]);
    // One read of every record answers an epoch that went back; then nothing more.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = evalsha(&server);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let n = evalsha(&server) - before;
    println!("scripts in 1 s after SET epoch 5: {n}");
    drop(deps);
    assert!(n < 50, "{n} scripts a second with nothing happening");
}

// ---------------------------------------------------------------------------------------------
// Contract 16: one probe for the whole fleet, with many threads on every instance hammering
// `try_acquire` through several trip cycles. Every probe is held 30 ms and then fails, so the
// fleet reopens and the next cooldown starts; the test counts probes in flight at once across
// the fleet, and the time between one probe's verdict and the next probe.

struct Storm {
    probes: u64,
    max_in_flight: usize,
    min_gap: Duration,
    admitted_non_probe: u64,
}

async fn probe_storm(names: &[&str], threads_per_instance: usize, run_for: Duration) -> Storm {
    let server = RedisServer::start();
    let url = server.url();
    // A storm of callers, not a slow Redis: a command limit far above any scheduling delay of a
    // loaded machine, so no instance takes Redis for gone and probes on its own (checked below).
    let instances: Vec<Instance> = names
        .iter()
        .map(|n| {
            Instance::with(
                fleet(&url, n).command_timeout(Duration::from_secs(5)),
                2,
                None,
            )
        })
        .collect();
    let breakers: Vec<Arc<CircuitBreaker>> = instances.iter().map(|i| i.get("search")).collect();
    for i in &instances {
        i.connected().await;
    }
    synced(&server, "search").await;
    fail(&breakers[0]);
    fail(&breakers[0]);
    for b in &breakers {
        until("open everywhere", LIMIT, || b.state() == State::Open).await;
    }
    let in_flight = Arc::new(AtomicU64::new(0));
    let max_in_flight = Arc::new(AtomicU64::new(0));
    let probes = Arc::new(AtomicU64::new(0));
    let non_probe = Arc::new(AtomicU64::new(0));
    let last_verdict = Arc::new(Mutex::new(None::<Instant>));
    let min_gap = Arc::new(Mutex::new(Duration::MAX));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for b in &breakers {
        for _ in 0..threads_per_instance {
            let b = Arc::clone(b);
            let (in_flight, max_in_flight, probes, non_probe, last_verdict, min_gap, stop) = (
                Arc::clone(&in_flight),
                Arc::clone(&max_in_flight),
                Arc::clone(&probes),
                Arc::clone(&non_probe),
                Arc::clone(&last_verdict),
                Arc::clone(&min_gap),
                Arc::clone(&stop),
            );
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match b.try_acquire() {
                        Ok(permit) if permit.is_probe() => {
                            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                            max_in_flight.fetch_max(now, Ordering::SeqCst);
                            probes.fetch_add(1, Ordering::SeqCst);
                            if let Some(v) = *last_verdict.lock().unwrap() {
                                let gap = v.elapsed();
                                let mut m = min_gap.lock().unwrap();
                                *m = (*m).min(gap);
                            }
                            std::thread::sleep(Duration::from_millis(30));
                            in_flight.fetch_sub(1, Ordering::SeqCst);
                            *last_verdict.lock().unwrap() = Some(Instant::now());
                            permit.record(Outcome::Failure(FailureKind::Timeout));
                        }
                        Ok(permit) => {
                            // A non-probe admission while the fleet is open: a closed word.
                            non_probe.fetch_add(1, Ordering::SeqCst);
                            permit.record(Outcome::Failure(FailureKind::Timeout));
                        }
                        Err(_) => {}
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
            }));
        }
    }
    tokio::time::sleep(run_for).await;
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let storm = Storm {
        probes: probes.load(Ordering::SeqCst),
        max_in_flight: max_in_flight.load(Ordering::SeqCst) as usize,
        min_gap: *min_gap.lock().unwrap(),
        admitted_non_probe: non_probe.load(Ordering::SeqCst),
    };
    println!(
        "{names:?} x {threads_per_instance} threads, {run_for:?}: {} probes, at most {} at once, \
         shortest verdict-to-next-probe {:?}, non-probe admissions {}; claims won {:?}",
        storm.probes,
        storm.max_in_flight,
        storm.min_gap,
        storm.admitted_non_probe,
        instances
            .iter()
            .map(|i| i.registry.fleet().unwrap().stats().probes_claimed)
            .collect::<Vec<_>>()
    );
    let outages: Vec<u64> = instances
        .iter()
        .map(|i| i.registry.fleet().unwrap().stats().outages)
        .collect();
    assert!(
        outages.iter().all(|&n| n == 0),
        "an instance took Redis for unreachable during the storm (outages {outages:?}), so it \
         probed on its own: the storm measures nothing then"
    );
    storm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_per_fleet_per_cooldown_under_a_storm() {
    let storm = probe_storm(&["a", "b", "c"], 3, Duration::from_secs(4)).await;
    // ~ 4 s / (300 ms cooldown + 30 ms probe) cycles.
    assert!(storm.probes >= 5, "the fleet probes at all");
    assert_eq!(storm.max_in_flight, 1, "never two probes at once");
    assert!(
        storm.min_gap >= COOLDOWN - Duration::from_millis(30),
        "{:?}",
        storm.min_gap
    );
    assert_eq!(storm.admitted_non_probe, 0);
}

/// Two registries given the same instance name by mistake: the claim script answers `won` to
/// both (it compares the holder's name only), so each grants its own probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_instance_name_twice_still_gives_one_probe() {
    let storm = probe_storm(&["same", "same", "other"], 3, Duration::from_secs(4)).await;
    assert_eq!(
        storm.max_in_flight, 1,
        "two probes at once (the same name on two instances)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_per_fleet_per_cooldown_under_a_storm_five_instances() {
    let storm = probe_storm(&["a", "b", "c", "d", "e"], 2, Duration::from_secs(4)).await;
    assert!(storm.probes >= 5, "the fleet probes at all");
    assert_eq!(storm.max_in_flight, 1, "never two probes at once");
    assert!(
        storm.min_gap >= COOLDOWN - Duration::from_millis(30),
        "{:?}",
        storm.min_gap
    );
    assert_eq!(storm.admitted_non_probe, 0);
}

// ---------------------------------------------------------------------------------------------
// Chaos: three instances with callers, Redis killed, restarted, paused and flushed mid-cycle.
// Afterwards, with Redis healthy and the dependency healthy, every instance must close (nothing
// stuck open or blocked for good), and no call may have waited on Redis meanwhile.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_then_the_fleet_recovers() {
    let mut server = RedisServer::start();
    let url = server.url();
    let instances: Vec<Instance> = ["a", "b", "c"]
        .iter()
        .map(|n| Instance::new(&url, n, 2))
        .collect();
    let breakers: Vec<Arc<CircuitBreaker>> = instances.iter().map(|i| i.get("search")).collect();
    for i in &instances {
        i.connected().await;
    }
    synced(&server, "search").await;
    let healthy = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let slowest = Arc::new(AtomicU64::new(0));
    let probes_in_flight = Arc::new(AtomicU64::new(0));
    let max_probes = Arc::new(AtomicU64::new(0));
    let measuring = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for b in &breakers {
        for _ in 0..2 {
            let (b, healthy, stop, slowest) = (
                Arc::clone(b),
                Arc::clone(&healthy),
                Arc::clone(&stop),
                Arc::clone(&slowest),
            );
            let (pif, maxp) = (Arc::clone(&probes_in_flight), Arc::clone(&max_probes));
            let measuring = Arc::clone(&measuring);
            threads.push(std::thread::spawn(move || {
                let queue = sched::RunQueue::this_thread();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // What the call waited for, not counting this thread's run-queue time.
                    let watch = queue.stopwatch();
                    let got = b.try_acquire();
                    let waited = watch.unqueued();
                    slowest.fetch_max(waited.as_micros() as u64, Ordering::Relaxed);
                    if let Ok(permit) = got {
                        let probe = permit.is_probe();
                        if probe {
                            let now = pif.fetch_add(1, Ordering::SeqCst) + 1;
                            if measuring.load(Ordering::Relaxed) {
                                maxp.fetch_max(now, Ordering::SeqCst);
                            }
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        n += 1;
                        let outcome = if healthy.load(Ordering::Relaxed) || n.is_multiple_of(3) {
                            Outcome::Success
                        } else {
                            Outcome::Failure(FailureKind::Unavailable)
                        };
                        if probe {
                            pif.fetch_sub(1, Ordering::SeqCst);
                        }
                        permit.record(outcome);
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }));
        }
    }
    for round in 0..3 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        server.kill();
        tokio::time::sleep(Duration::from_millis(400)).await;
        server.restart();
        tokio::time::sleep(Duration::from_millis(700)).await;
        let _: String = server.cmd(&["CLIENT", "PAUSE", "500", "ALL"]);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let _: String = server.cmd(&["FLUSHALL"]);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let _: String = server.cmd(&["CLIENT", "PAUSE", "400", "WRITE"]);
        println!(
            "round {round}: states {:?}",
            breakers.iter().map(|b| b.state()).collect::<Vec<_>>()
        );
    }
    // Redis healthy from here: let every agent reconnect, then count probes at once while the
    // dependency still fails, then let it recover.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        instances
            .iter()
            .all(|i| i.registry.fleet().unwrap().is_connected())
    );
    measuring.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(3)).await;
    measuring.store(false, Ordering::Relaxed);
    healthy.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let recovered = within(Duration::from_secs(10), || {
        breakers.iter().all(|b| b.state() == State::Closed)
    })
    .await;
    let states: Vec<_> = breakers.iter().map(|b| b.state()).collect();
    let rec = record(&server, "search");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    println!(
        "recovered {recovered}: {states:?}, record {rec:?}, slowest try_acquire {} us (not \
         counting run-queue time), probes at once after healthy {}",
        slowest.load(Ordering::Relaxed),
        max_probes.load(Ordering::Relaxed)
    );
    for i in &instances {
        println!("{:?}", i.events());
    }
    assert!(recovered, "stuck: {states:?}, record {rec:?}");
    // The chaos holds Redis for at most 500 ms (`CLIENT PAUSE`) and a command for 200 ms, so a
    // call that waited on Redis would wait that long; `no_call_waits_on_a_paused_redis` makes
    // that wait seconds long. Here the bound is a second: no call is held up by the chaos.
    assert!(
        slowest.load(Ordering::Relaxed) < 1_000_000,
        "a call waited {} us on something other than a CPU",
        slowest.load(Ordering::Relaxed)
    );
    assert_eq!(
        max_probes.load(Ordering::Relaxed),
        1,
        "one probe at once, Redis healthy"
    );
}

// ---------------------------------------------------------------------------------------------
// Odd dependency names and many dependencies: a trip on a reaches b for each.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_dependency_names_trip_across_the_fleet() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1);
    let b = Instance::new(&url, "b", 1);
    a.connected().await;
    b.connected().await;
    let long = "x".repeat(100_000);
    let names: Vec<String> = vec![
        "with space".into(),
        "tab\there\t".into(),
        "new\nline\r\n".into(),
        "ünïcødé 🚀 名前".into(),
        String::new(),
        "a:b:c".into(),
        "search\t1\t2\topen".into(),
        "\u{0}nul".into(),
        long,
    ];
    for name in &names {
        let (da, db) = (a.get(name), b.get(name));
        let shown: String = name.chars().take(20).collect();
        until(&format!("{shown:?} synced"), LIMIT, || {
            !record(&server, name).is_empty()
        })
        .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        fail(&da);
        let reached = within(LIMIT, || db.state() == State::Open).await;
        println!("{shown:?}: reached {reached}, record {:?}", {
            let mut r = record(&server, name);
            r.remove("at");
            r
        });
        assert!(reached, "{shown:?}");
    }
    println!("a events {:?}\nb events {:?}", a.events(), b.events());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_dependencies() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1);
    let b = Instance::new(&url, "b", 1);
    let n = 500;
    let started = Instant::now();
    let da: Vec<_> = (0..n).map(|i| a.get(&format!("dep-{i}"))).collect();
    let db: Vec<_> = (0..n).map(|i| b.get(&format!("dep-{i}"))).collect();
    a.connected().await;
    b.connected().await;
    until("all synced", Duration::from_secs(20), || {
        record(&server, &format!("dep-{}", n - 1)).contains_key("gen")
    })
    .await;
    println!("{n} dependencies synced in {:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = evalsha(&server);
    let mut delays = Vec::new();
    for i in (0..n).step_by(25) {
        let t = Instant::now();
        fail(&da[i]);
        until("reached", LIMIT, || db[i].state() == State::Open).await;
        delays.push(t.elapsed());
    }
    delays.sort();
    println!(
        "20 trips: median {:?}, max {:?}; scripts {}",
        delays[delays.len() / 2],
        delays.last().unwrap(),
        evalsha(&server) - before
    );
    // Trip them all at once on a: every one must reach b.
    for d in &da {
        fail(d);
    }
    let t = Instant::now();
    until("all reached", Duration::from_secs(20), || {
        db.iter().all(|d| d.state() != State::Closed)
    })
    .await;
    println!("all {n} tripped at once reached b in {:?}", t.elapsed());
}

/// A script that replaces key `KEYS[1]` with a hash in one step: as two commands, an agent's
/// write between them (an epoch or incarnation written back) makes the second fail.
const REPLACE_WITH_HASH: &str =
    "redis.call('DEL', KEYS[1]) return redis.call('HSET', KEYS[1], 'x', '1')";

// ---------------------------------------------------------------------------------------------
// Foreign or malformed values under every key: no panic, an event, a bounded command rate while
// it lasts, and the dependency back in the fleet once the key is deleted.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_values_under_every_key() {
    let cases: &[(&str, &[&[&str]], &str)] = &[
        (
            "probe: garbage string",
            &[&["SET", "rv:probe:search", "garbage"]],
            "rv:probe:search",
        ),
        (
            "probe: a hash",
            &[&["HSET", "rv:probe:search", "x", "1"]],
            "rv:probe:search",
        ),
        (
            "votes: a string",
            &[&["SET", "rv:votes:search", "x"]],
            "rv:votes:search",
        ),
        (
            "votes: bad field",
            &[&["HSET", "rv:votes:search", "zz", "nonsense"]],
            "rv:votes:search",
        ),
        (
            "epoch: not a number",
            &[&["SET", "rv:epoch", "abc"]],
            "rv:epoch",
        ),
        (
            "epoch: a hash",
            &[&["EVAL", REPLACE_WITH_HASH, "1", "rv:epoch"]],
            "rv:epoch",
        ),
        (
            "incarnation: a hash",
            &[&["EVAL", REPLACE_WITH_HASH, "1", "rv:incarnation"]],
            "rv:incarnation",
        ),
        (
            "record: gen not an integer",
            &[&["HSET", "rv:breaker:search", "gen", "5.5"]],
            "rv:breaker:search",
        ),
        (
            "record: gen negative",
            &[&["HSET", "rv:breaker:search", "gen", "-3"]],
            "rv:breaker:search",
        ),
        (
            "record: at far in the future, open",
            &[&[
                "HSET",
                "rv:breaker:search",
                "state",
                "open",
                "at",
                "99999999999999",
            ]],
            "rv:breaker:search",
        ),
    ];
    for (label, commands, key) in cases {
        let server = RedisServer::start();
        let url = server.url();
        let a = Instance::new(&url, "a", 1);
        let b = Instance::new(&url, "b", 1);
        let (sa, sb) = (a.get("search"), b.get("search"));
        let _others: Vec<_> = (0..50)
            .map(|i| (a.get(&format!("o{i}")), b.get(&format!("o{i}"))))
            .collect();
        a.connected().await;
        b.connected().await;
        synced(&server, "search").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        for command in *commands {
            let _: redis::Value = server.cmd(command);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = evalsha(&server);
        fail(&sa);
        let reached = within(Duration::from_millis(700), || sb.state() == State::Open).await;
        let scripts = evalsha(&server) - before;
        let _: i64 = server.cmd(&["DEL", key]);
        sa.force_closed();
        sb.force_closed();
        tokio::time::sleep(Duration::from_millis(400)).await;
        fail(&sa);
        let rejoined = within(LIMIT, || sb.state() == State::Open).await;
        println!(
            "{label}: trip reached b: {reached}; scripts in 0.7 s: {scripts}; rejoined after DEL: \
             {rejoined}; a connected {}; a events {:?}",
            a.registry.fleet().unwrap().is_connected(),
            a.events()
        );
    }
}

/// A lease with no TTL (or one whose generation the record left) blocks every claim: the claim
/// script answers `held` whatever the lease's generation, so the fleet never probes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_lease_without_expiry_does_not_block_the_fleet() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1);
    let b = Instance::new(&url, "b", 1);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    synced(&server, "search").await;
    fail(&sa);
    until("b open", LIMIT, || sb.state() == State::Open).await;
    // A lease of an old generation, left with no expiry, while the fleet is open.
    let _: String = server.cmd(&["SET", "rv:probe:search", "1 ghost"]);
    let before = evalsha(&server);
    let mut probes = 0;
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        for b in [&sa, &sb] {
            if let Ok(p) = b.try_acquire() {
                probes += u32::from(p.is_probe());
                p.record(Outcome::Success);
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let scripts = evalsha(&server) - before;
    println!(
        "probes in 3 s: {probes}; scripts {scripts}; state a {:?} b {:?}; record {:?}; events {:?}",
        sa.state(),
        sb.state(),
        record(&server, "search"),
        a.events()
    );
    assert!(
        probes > 0,
        "the fleet never probes while a stale lease without TTL sits there"
    );
}

/// Contract 20 says a dependency joins the fleet again once the bad key is readable or deleted.
/// A foreign value under `P:epoch` makes every dependency bad; once the operator deletes it,
/// every sync answers epoch 0 (the key is missing until a write), which `apply` drops as older
/// than the record it knows before clearing the bad mark, and nothing writes while every
/// dependency is bad: the fleet stays local for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_epoch_is_a_bad_record_until_deleted() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1);
    let b = Instance::new(&url, "b", 1);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    synced(&server, "search").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _: i64 = server.cmd(&["EVAL", REPLACE_WITH_HASH, "1", "rv:epoch"]);
    until("a bad record", LIMIT, || {
        a.events()
            .iter()
            .any(|e| matches!(e, FleetEvent::BadRecord { .. }))
    })
    .await;
    let _: i64 = server.cmd(&["DEL", "rv:epoch"]); // the operator cleans up
    tokio::time::sleep(Duration::from_millis(500)).await; // five sync intervals
    fail(&sa);
    let reached = within(LIMIT, || sb.state() == State::Open).await;
    println!(
        "record {:?}; epoch exists {}",
        record(&server, "search"),
        server.cmd::<i64>(&["EXISTS", "rv:epoch"])
    );
    assert!(
        reached,
        "the fleet never came back after the foreign epoch was deleted"
    );
}

/// A non-numeric `P:epoch` is reported as Redis being unreachable, once per sync interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_numeric_epoch_is_a_bad_record_not_an_outage() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1);
    let _sa = a.get("search");
    a.connected().await;
    synced(&server, "search").await;
    let _: String = server.cmd(&["SET", "rv:epoch", "abc"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let outages = a
        .events()
        .iter()
        .filter(|e| matches!(e, FleetEvent::Unreachable { .. }))
        .count();
    println!(
        "outages told in 1 s: {outages}; stats {:?}",
        a.registry.fleet().unwrap().stats()
    );
    assert!(outages <= 1, "{:?}", a.events());
}

// ---------------------------------------------------------------------------------------------
// Registry dropped while its agent waits on a paused Redis (a report and a claim in flight):
// the handle works locally afterwards, and nothing panics.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_dropped_mid_command_leaves_a_local_breaker() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::with(
        fleet(&url, "a").command_timeout(Duration::from_secs(5)),
        2,
        None,
    );
    let b = Instance::new(&url, "b", 2);
    let (sa, sb) = (a.get("search"), b.get("search"));
    a.connected().await;
    b.connected().await;
    synced(&server, "search").await;
    fail(&sb);
    fail(&sb);
    until("a open", LIMIT, || sa.state() == State::Open).await;
    // Paused before the cooldown ends: a's agent claims the fleet's probe at the cooldown's end
    // (and waits: its command timeout is 5 s), so the claim is in flight when a caller comes.
    let _: String = server.cmd(&["CLIENT", "PAUSE", "3000", "ALL"]);
    until("a half-open", LIMIT, || sa.state() == State::HalfOpen).await;
    match sa.try_acquire() {
        Err(blocked) => assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight),
        // A machine slow enough to see a open only after its cooldown saw the claim land
        // before the pause: the fleet's grant, given back as the permit drops.
        Ok(permit) => assert!(permit.is_probe()),
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(a);
    let t = Instant::now();
    let local = within(LIMIT, || sa.try_acquire().is_ok_and(|p| p.is_probe())).await;
    println!("local probe after drop: {local} in {:?}", t.elapsed());
    assert!(local);
}

/// Calls never wait on Redis: the slowest of up to 200 000 calls (half failing, so the slow paths
/// and the tap run) while Redis is paused. The agent's command timeout outlasts the pause, and
/// the calls stop two seconds before the pause ends, so a call that waited on Redis would wait
/// two seconds or more; what each call waited is counted without its run-queue time, so a busy
/// machine does not lengthen it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_waits_on_a_paused_redis() {
    const PAUSE: Duration = Duration::from_secs(4);
    const CALLS_FOR: Duration = Duration::from_secs(2);
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::with(
        fleet(&url, "a").command_timeout(Duration::from_secs(10)),
        1_000_000,
        None,
    );
    let sa = a.get("search");
    a.connected().await;
    synced(&server, "search").await;
    let run = |sa2: Arc<CircuitBreaker>| {
        tokio::task::spawn_blocking(move || {
            let queue = sched::RunQueue::this_thread();
            let started = Instant::now();
            let mut slowest = Duration::ZERO;
            let mut calls = 0u32;
            // At least 1 000 calls, so the tap runs however starved this thread is.
            while calls < 1_000 || (calls < 200_000 && started.elapsed() < CALLS_FOR) {
                let watch = queue.stopwatch();
                if let Ok(p) = sa2.try_acquire() {
                    p.record(if calls.is_multiple_of(2) {
                        Outcome::Failure(FailureKind::Unavailable)
                    } else {
                        Outcome::Success
                    });
                }
                slowest = slowest.max(watch.unqueued());
                calls += 1;
            }
            (calls, slowest)
        })
    };
    let (_, baseline) = run(Arc::clone(&sa)).await.unwrap();
    let pause = PAUSE.as_millis().to_string();
    let _: String = server.cmd(&["CLIENT", "PAUSE", &pause, "ALL"]);
    let (calls, slowest) = run(Arc::clone(&sa)).await.unwrap();
    println!(
        "slowest of {calls} calls while paused: {slowest:?}; Redis answering: {baseline:?} (not \
         counting run-queue time)"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "a call waited {slowest:?} on something other than a CPU"
    );
}

/// A breaker first asked for on an instance after the fleet opened admits calls only until its
/// first sync lands (one round trip; contract 13 says so), then blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_first_used_after_a_trip_admits_calls_only_until_it_syncs() {
    let server = RedisServer::start();
    let url = server.url();
    let a = Instance::new(&url, "a", 1);
    let b = Instance::new(&url, "b", 1);
    let sa = a.get("search");
    a.connected().await;
    b.connected().await;
    synced(&server, "search").await;
    fail(&sa);
    until("the fleet is open", LIMIT, || {
        record(&server, "search")["state"] == "open"
    })
    .await;
    let sb = b.get("search"); // first use on b
    let mut admitted = 0;
    let t = Instant::now();
    while sb.state() != State::Open && t.elapsed() < LIMIT {
        if let Ok(p) = sb.try_acquire() {
            admitted += 1;
            drop(p);
        }
    }
    println!(
        "b admitted {admitted} calls in {:?} before adopting the open fleet",
        t.elapsed()
    );
    assert_eq!(
        sb.state(),
        State::Open,
        "b adopts the open fleet at its first sync"
    );
    assert!(sb.try_acquire().is_err());
}
