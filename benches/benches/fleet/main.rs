//! Fleet mode (toolbreaker's feature `redis`) against a real redis-server, in one criterion run:
//!
//! - `fleet_closed_healthy`: the healthy call path of a registry's breaker with fleet mode on and
//!   off, side by side (then the same pair timed in alternating rounds, printed);
//! - `fleet_propagation`: how long a trip on instance `a` takes to open the breaker of instance
//!   `b` (criterion's mean; p50 and p99 of the raw samples printed, with those of the close);
//! - `fleet_trip_cycle`: a whole cycle between two instances (trip on `a`, the cooldown, one
//!   probe, the close), and the Redis commands each cycle costs, from the server's
//!   `INFO commandstats` with the idle background measured and subtracted (printed).
//!
//! ```sh
//! cargo bench -p toolbreaker-benches --bench fleet
//! ```
//!
//! The benchmark starts its own `redis-server` on a free loopback port (no persistence) and kills
//! it at the end; without one installed it panics and says how to install it. The fleets' workers
//! run on a multi-thread Tokio runtime that lives as long as the process. What each group
//! measures, and the figures of one run, are in `benches/README.md`.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use criterion::Criterion;
use toolbreaker::{
    CircuitBreaker, Config, FailureKind, Fleet, Outcome, Registry, State, TransitionReason,
};

mod cycle;
mod healthy;
mod propagation;
mod server;

/// The one dependency every benchmark calls.
pub const DEPENDENCY: &str = "search";
/// Consecutive failures that trip a breaker (and, by default, the fleet).
pub const THRESHOLD: u32 = 5;
/// A cooldown no benchmark outlasts.
pub const LONG: Duration = Duration::from_secs(3600);
/// The limit on any wait for the fleet: past it the fleet is broken, and the benchmark panics.
pub const LIMIT: Duration = Duration::from_secs(5);

static URL: OnceLock<String> = OnceLock::new();
static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The URL of the benchmark's redis-server.
pub fn url() -> &'static str {
    URL.get().expect("main started the server")
}

/// The runtime the fleet workers run on: two workers, kept for the whole process.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a Tokio runtime")
    })
}

/// A fleet transition one instance heard: from, to, and when its listener was told.
pub type Heard = (State, State, Instant);

/// Fleet transitions heard besides the ones a benchmark waits for: how many of each, by
/// `instance: from -> to`.
pub type Others = BTreeMap<String, u64>;

/// `others` as one line.
pub fn others_line(others: &Others) -> String {
    if others.is_empty() {
        return "none".to_owned();
    }
    others
        .iter()
        .map(|(what, n)| format!("{what} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One gateway instance: a registry in fleet mode, its breaker for [`DEPENDENCY`], and the
/// transitions it adopted from the fleet (reason `Fleet`), as its listener was told them.
pub struct Instance {
    pub registry: Registry,
    pub breaker: Arc<CircuitBreaker>,
    pub heard: Receiver<Heard>,
}

impl Instance {
    /// An instance named `name` of the fleet under `prefix`, with the fleet's defaults (sync
    /// interval 1 s among them), connected and with its record read before it is returned.
    pub fn new(prefix: &str, name: &str, config: Config) -> Instance {
        let fleet = {
            let _runtime = runtime().enter();
            Fleet::builder(url())
                .prefix(prefix)
                .instance(name)
                .build()
                .expect("a valid fleet")
        };
        let (tell, heard): (Sender<Heard>, _) = channel();
        let registry = Registry::builder()
            .default_config(config)
            .fleet(fleet)
            .on_transition(move |event| {
                let t = event.transition();
                if t.reason() == TransitionReason::Fleet {
                    let _ = tell.send((t.from(), t.to(), Instant::now()));
                }
            })
            .build();
        let breaker = registry.get(DEPENDENCY);
        let handle = registry.fleet().expect("fleet mode").clone();
        // Connected (the subscription), then one more command: the read of the new breaker's
        // record. Then a moment for its reply to be applied.
        wait_until("the fleet worker connects and reads its record", || {
            handle.is_connected() && handle.stats().commands >= 2
        });
        std::thread::sleep(Duration::from_millis(50));
        let _ = heard.try_iter().count();
        Instance {
            registry,
            breaker,
            heard,
        }
    }

    fn name(&self) -> &str {
        self.registry.fleet().expect("fleet mode").instance()
    }

    fn other(&self, others: &mut Others, from: State, to: State) {
        *others
            .entry(format!("{}: {from:?} -> {to:?}", self.name()))
            .or_default() += 1;
    }

    /// Wait for the next fleet transition to `to` this instance hears; the others heard on the
    /// way are counted in `others`.
    pub fn hear(&self, to: State, others: &mut Others) -> Instant {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.heard.recv_timeout(left) {
                Ok((_, got, at)) if got == to => return at,
                Ok((from, got, _)) => self.other(others, from, got),
                Err(_) => panic!(
                    "instance {} heard no fleet transition to {to:?} within {LIMIT:?} (its breaker \
                     is {:?}, fleet connected: {})",
                    self.name(),
                    self.breaker.state(),
                    self.registry.fleet().unwrap().is_connected(),
                ),
            }
        }
    }

    /// Messages this instance's worker has taken from the fleet's channel (its own echoed).
    pub fn messages(&self) -> u64 {
        self.registry.fleet().expect("fleet mode").stats().messages
    }

    /// Count the transitions heard and not waited for in `others`.
    pub fn drain(&self, others: &mut Others) {
        for (from, to, _) in self.heard.try_iter() {
            self.other(others, from, to);
        }
    }
}

/// Two instances of one fleet, and the count of messages each had taken when both were quiet.
pub struct Pair {
    pub a: Instance,
    pub b: Instance,
    quiet: (u64, u64),
}

impl Pair {
    pub fn new(prefix: &str, config: Config) -> Pair {
        let a = Instance::new(prefix, "a", config);
        let b = Instance::new(prefix, "b", config);
        let quiet = (a.messages(), b.messages());
        Pair { a, b, quiet }
    }

    /// Wait until both workers have taken the same messages since they were quiet. Called once
    /// the instance that did not write has heard the last change: the writer then has its own
    /// message too, which its worker takes only after it applied its script's reply. So nothing
    /// of a cycle is left in flight when the next one starts, and each figure is of one cycle.
    pub fn settle(&self) {
        let (a0, b0) = self.quiet;
        wait_until("both instances take every message of the cycle", || {
            self.a.messages() - a0 == self.b.messages() - b0
        });
    }

    /// [`settle`](Self::settle), then count in `others` what either instance heard and no one
    /// waited for.
    pub fn settle_and_drain(&self, others: &mut Others) {
        self.settle();
        self.a.drain(others);
        self.b.drain(others);
    }
}

/// Poll `condition` every 100 µs until it holds; panic naming `what` after [`LIMIT`].
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "timed out after {LIMIT:?}: {what}"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Record [`THRESHOLD`] failures on `breaker`: it trips.
pub fn trip(breaker: &CircuitBreaker) {
    for _ in 0..THRESHOLD {
        if let Ok(permit) = breaker.try_acquire() {
            permit.record(Outcome::Failure(FailureKind::Unavailable));
        }
    }
    assert_eq!(
        breaker.state(),
        State::Open,
        "the failures trip the breaker"
    );
}

/// The nearest-rank `q` quantile of sorted samples.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `n`, p50, p99, mean and max of `samples`, in µs, as one line.
pub fn summary(samples: &mut [Duration]) -> String {
    samples.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    format!(
        "n={} p50={:.1} µs p99={:.1} µs mean={:.1} µs max={:.1} µs",
        samples.len(),
        us(quantile(samples, 0.50)),
        us(quantile(samples, 0.99)),
        us(mean),
        us(samples[samples.len() - 1]),
    )
}

fn benches() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
        .configure_from_args();
    healthy::on_off(&mut c);
    propagation::trip_a_to_b(&mut c);
    cycle::trip_probe_close(&mut c);
}

fn main() {
    // Dropped at the end of `main`, or while a panic unwinds through it: the server stops.
    let server = server::RedisServer::start();
    URL.set(server.url()).expect("set once");
    benches();
    Criterion::default().configure_from_args().final_summary();
    drop(server);
}
