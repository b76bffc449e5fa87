//! MCP (toolbreaker's feature `mcp`): what `GuardedClient::call_tool` adds to a bare rmcp
//! `Peer::call_tool`, side by side in one criterion group (`mcp_call_tool`).
//!
//! Every row calls the one tool of a trivial rmcp server ([`Echo`]: it answers a short text)
//! through an rmcp client connected to it over an in-memory pipe (`tokio::io::duplex`: the client
//! on one half, the server on the other), on a Tokio runtime that drives both ends:
//!
//! - `bare_*`: rmcp's `Peer::call_tool`;
//! - `guarded_*`: `toolbreaker::mcp::GuardedClient::call_tool` with a guard of 10 s per
//!   attempt and the default retry policy (retries on: the request is copied per attempt) and a healthy, closed breaker, over a pipe and a server of
//!   its own, built the same way;
//! - `*_current_thread`: a current-thread runtime, the calls made from `block_on` (the headline:
//!   one thread runs client, server and caller, so nothing waits on another core);
//! - `*_multi_thread`: a two-worker runtime, the calls made from a task spawned on it.
//!
//! Then, printed: the overhead, measured so that a few percent can be resolved on a noisy
//! machine. [`REPEATS`] fresh processes of this benchmark, one after the other, each make, on
//! each runtime whose rows criterion ran, [`PAIRS`] pairs of a block of [`BLOCK`] bare calls and
//! a block of [`BLOCK`] guarded calls, back to back in one task, the order switching every pair.
//! A block lasts about a tenth of a millisecond, so the two blocks of a pair see the same machine;
//! the median of the pairs' differences is the overhead of that process (with a 95 % interval
//! from the order statistics), and the median over the processes is the figure, set against the
//! budget of the issue (at most 1 µs and at most 2 % of the bare call).
//!
//! ```sh
//! cargo bench -p toolbreaker-benches --bench mcp                     # about 30 s
//! cargo bench -p toolbreaker-benches --bench mcp -- current_thread   # one runtime's rows, pairs
//! MCP_REPEATS=9 cargo bench -p toolbreaker-benches --bench mcp       # more processes of pairs
//! MCP_CALLS=guarded_current_thread:2000 cargo bench -p toolbreaker-benches --bench mcp
//! ```
//!
//! The last form makes exactly that many calls of one row and exits, without criterion: for an
//! instruction-counting profiler, run with two counts, so that the difference is the calls' own
//! (connection set-up cancels out). `MCP_PAIRS=current_thread,multi_thread` is what each fresh
//! process is started with: the pairs alone, one line of figures a runtime. What is measured, and
//! the figures, are in `benches/README.md`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use tokio::runtime::Runtime;
use toolbreaker::mcp::GuardedClient;
use toolbreaker::{AgentRun, Registry, RetryPolicy, State, ToolGuard};

/// The server's name (and so its breaker's).
const SERVER: &str = "search";
/// The tool every row calls.
const TOOL: &str = "query";
/// Pairs of blocks printed after criterion's rows, per runtime.
const PAIRS: usize = 4_001;
/// Calls in each block of a pair: about a tenth of a millisecond, shorter than a time slice, so
/// most pairs run both blocks without the thread being switched out.
const BLOCK: u64 = 8;
/// Calls each caller makes, unrecorded, before the pairs.
const WARM_UP_CALLS: u64 = 1_000;
/// Fresh processes that make the pairs, one after the other (`MCP_REPEATS` to change it).
const REPEATS: usize = 5;
/// Bytes the pipe buffers each way: far more than one message.
const PIPE: usize = 64 * 1024;

/// A trivial MCP server: its one tool answers one short text, whatever it is asked.
#[derive(Clone, Copy, Debug)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(
            CallToolResult::success(vec![ContentBlock::text("3 results for circuit breakers")])
                .into(),
        )
    }
}

/// The request every call sends: the tool's name and one short argument, built anew for each
/// call by both sides alike (a call takes its parameters by value).
fn params() -> CallToolRequestParams {
    let mut arguments = serde_json::Map::new();
    arguments.insert("q".to_owned(), "circuit breakers".into());
    CallToolRequestParams::new(TOOL).with_arguments(arguments)
}

/// An rmcp client connected to its own [`Echo`] over its own pipe; both services run as tasks
/// of the runtime it was made on, as long as this lives.
struct Connection {
    client: RunningService<RoleClient, ()>,
    _server: RunningService<RoleServer, Echo>,
}

impl Connection {
    async fn open() -> Connection {
        let (client_end, server_end) = tokio::io::duplex(PIPE);
        let server = tokio::spawn(async move { Echo.serve(server_end).await });
        let client = ().serve(client_end).await.expect("the client connects");
        let server = server
            .await
            .expect("the server task")
            .expect("the server starts");
        Connection {
            client,
            _server: server,
        }
    }

    fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }
}

/// Who makes the calls: rmcp's peer as it is, or a [`GuardedClient`] around one, for one run.
#[derive(Clone)]
enum Caller {
    Bare(Peer<RoleClient>),
    Guarded(GuardedClient, Arc<AgentRun>),
}

impl Caller {
    /// Make `n` calls one after another; the time they took. Every answer must be the server's
    /// success, or the row measured something else.
    async fn calls(&self, n: u64) -> Duration {
        match self {
            Caller::Bare(peer) => {
                let start = Instant::now();
                for _ in 0..n {
                    let answer = peer.call_tool(params()).await.expect("the server answers");
                    assert_ne!(answer.is_error, Some(true));
                    black_box(answer);
                }
                start.elapsed()
            }
            Caller::Guarded(client, run) => {
                let start = Instant::now();
                for _ in 0..n {
                    let answer = client.call_tool(run, params()).await;
                    assert_ne!(answer.is_error, Some(true), "{answer:?}");
                    black_box(answer);
                }
                start.elapsed()
            }
        }
    }
}

/// How the runtime is built, and where the calls are made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    /// One thread: `block_on` makes the calls and runs both services' tasks.
    CurrentThread,
    /// Two workers: a spawned task makes the calls, the services' tasks run beside it.
    MultiThread,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current_thread",
            Flavor::MultiThread => "multi_thread",
        }
    }
}

/// One runtime with a bare and a guarded caller, each over a connection of its own.
struct Bench {
    flavor: Flavor,
    bare: Caller,
    guarded: Caller,
    registry: Registry,
    /// The bare caller's connection; the guarded caller's client is owned by its
    /// `GuardedClient`, its server end kept here.
    _connections: (Connection, RunningService<RoleServer, Echo>),
    // Last: dropped after the connections and the callers, whose services are its tasks.
    runtime: Runtime,
}

impl Bench {
    fn new(flavor: Flavor) -> Bench {
        let runtime = match flavor {
            Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
            Flavor::MultiThread => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(2);
                builder
            }
        }
        .enable_all()
        .build()
        .expect("a Tokio runtime");
        let (bare, guarded) =
            runtime.block_on(async { (Connection::open().await, Connection::open().await) });
        let registry = Registry::builder().build();
        // The guard the figures were first measured with: 10 s a call and the default retry
        // policy, so each attempt copies the request for a retry that may follow (the client's
        // own default makes no retries and moves it: cheaper).
        let Connection {
            client: guarded,
            _server: guarded_server,
        } = guarded;
        let client = GuardedClient::builder(SERVER, guarded, &registry)
            .guard(ToolGuard::new(
                Duration::from_secs(10),
                RetryPolicy::default(),
            ))
            .build()
            .expect("a valid server name");
        // One run for every call of the process: a day's deadline and a budget no run here uses up.
        let run = Arc::new(AgentRun::new(
            format!("bench-{}", flavor.name()),
            Duration::from_secs(86_400),
            u32::MAX,
        ));
        Bench {
            flavor,
            bare: Caller::Bare(bare.peer()),
            guarded: Caller::Guarded(client, run),
            registry,
            _connections: (bare, guarded_server),
            runtime,
        }
    }

    /// `n` calls by `caller`, made as this flavor makes them; the time they took.
    fn time(&self, caller: &Caller, n: u64) -> Duration {
        match self.flavor {
            Flavor::CurrentThread => self.runtime.block_on(caller.calls(n)),
            Flavor::MultiThread => {
                let caller = caller.clone();
                self.runtime
                    .block_on(self.runtime.spawn(async move { caller.calls(n).await }))
                    .expect("the calling task")
            }
        }
    }

    /// The guarded caller's breaker must still be closed, or its rows measured something else.
    fn check(&self) {
        assert_eq!(self.registry.get(SERVER).state(), State::Closed);
    }
}

/// Group `mcp_call_tool`: the four rows; then, when benchmarking, for each runtime whose rows
/// criterion ran, the pairs in fresh processes ([`repeats`]).
fn call_tool(c: &mut Criterion, benches: &[Bench]) {
    let mut ran = vec![false; benches.len()];
    let mut g = c.benchmark_group("mcp_call_tool");
    for (bench, ran) in benches.iter().zip(&mut ran) {
        let flavor = bench.flavor.name();
        g.bench_function(format!("bare_{flavor}"), |b| {
            *ran = true;
            b.iter_custom(|n| bench.time(&bench.bare, n))
        });
        g.bench_function(format!("guarded_{flavor}"), |b| {
            *ran = true;
            b.iter_custom(|n| bench.time(&bench.guarded, n))
        });
    }
    g.finish();
    for bench in benches {
        bench.check();
    }
    let flavors: Vec<Flavor> = benches
        .iter()
        .zip(ran)
        .filter_map(|(bench, ran)| ran.then_some(bench.flavor))
        .collect();
    // Only when benchmarking (`cargo bench` passes `--bench`): not in criterion's test mode.
    if !flavors.is_empty() && std::env::args().any(|arg| arg == "--bench") {
        repeats(&flavors);
    }
}

/// The median of `v` (sorted in place); the mean of the middle two for an even count.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `v`'s median (sorted in place) with a distribution-free 95 % confidence interval: the order
/// statistics at ranks n/2 ± 0.98·√n.
fn median_ci(v: &mut [f64]) -> (f64, f64, f64) {
    let m = median(v);
    let n = v.len() as f64;
    let half = 0.98 * n.sqrt();
    let lo = (n / 2.0 - half).floor().max(0.0) as usize;
    let hi = ((n / 2.0 + half).ceil() as usize).min(v.len() - 1);
    (m, v[lo], v[hi])
}

impl Caller {
    /// [`PAIRS`] pairs of a block of [`BLOCK`] calls by `bare` and one by `guarded`, one right
    /// after the other and the order switching every pair, all in one task; each block's time
    /// per call, in µs, as (bare, guarded).
    async fn paired(bare: &Caller, guarded: &Caller) -> Vec<(f64, f64)> {
        let per_call = |d: Duration| d.as_secs_f64() * 1e6 / BLOCK as f64;
        bare.calls(WARM_UP_CALLS).await;
        guarded.calls(WARM_UP_CALLS).await;
        let mut pairs = Vec::with_capacity(PAIRS);
        for pair in 0..PAIRS {
            let (b, g) = if pair % 2 == 0 {
                let b = bare.calls(BLOCK).await;
                (b, guarded.calls(BLOCK).await)
            } else {
                let g = guarded.calls(BLOCK).await;
                (bare.calls(BLOCK).await, g)
            };
            pairs.push((per_call(b), per_call(g)));
        }
        pairs
    }
}

/// One process's pairs of one runtime, summed up.
#[derive(Clone, Copy, Debug)]
struct Paired {
    /// Median of the bare blocks' time per call, µs.
    bare: f64,
    /// Median of the guarded blocks' time per call, µs.
    guarded: f64,
    /// Median of the pairs' differences (guarded − bare), ns a call, and its 95 % interval.
    diff: (f64, f64, f64),
    /// Median of the pairs' ratios (guarded / bare).
    ratio: f64,
}

impl Paired {
    /// The difference as a share of the bare call, in %.
    fn share(&self, ns: f64) -> f64 {
        ns / (self.bare * 1e3) * 100.0
    }

    /// As one line of `MCP_PAIRS`' output: `pairs FLAVOR BARE GUARDED DIFF LO HI RATIO`.
    fn line(&self, flavor: Flavor) -> String {
        let (diff, lo, hi) = self.diff;
        format!(
            "pairs {} {} {} {diff} {lo} {hi} {}",
            flavor.name(),
            self.bare,
            self.guarded,
            self.ratio
        )
    }

    /// Back from [`line`](Self::line).
    fn parse(line: &str) -> Option<(String, Paired)> {
        let mut words = line.strip_prefix("pairs ")?.split(' ');
        let flavor = words.next()?.to_owned();
        let mut next = || words.next()?.parse::<f64>().ok();
        let (bare, guarded) = (next()?, next()?);
        let diff = (next()?, next()?, next()?);
        let ratio = next()?;
        Some((
            flavor,
            Paired {
                bare,
                guarded,
                diff,
                ratio,
            },
        ))
    }
}

/// The pairs of [`Caller::paired`], made as this flavor makes its calls.
fn paired(bench: &Bench) -> Paired {
    let pairs = match bench.flavor {
        Flavor::CurrentThread => bench
            .runtime
            .block_on(Caller::paired(&bench.bare, &bench.guarded)),
        Flavor::MultiThread => {
            let (bare, guarded) = (bench.bare.clone(), bench.guarded.clone());
            let task = bench
                .runtime
                .spawn(async move { Caller::paired(&bare, &guarded).await });
            bench.runtime.block_on(task).expect("the calling task")
        }
    };
    bench.check();
    let mut bares: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let mut guardeds: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let mut diffs: Vec<f64> = pairs.iter().map(|p| (p.1 - p.0) * 1e3).collect();
    let mut ratios: Vec<f64> = pairs.iter().map(|p| p.1 / p.0).collect();
    Paired {
        bare: median(&mut bares),
        guarded: median(&mut guardeds),
        diff: median_ci(&mut diffs),
        ratio: median(&mut ratios),
    }
}

/// [`REPEATS`] fresh processes of this benchmark (`MCP_REPEATS` to change it), one after the
/// other, each making the pairs of every runtime in `flavors`; each process's figures, then, per
/// runtime, their medians against the budget, printed.
///
/// A process of its own each time: the paired difference is steady within a process but moves
/// by tens of nanoseconds between processes (where the allocator put each connection's buffers),
/// so a figure from one process is one sample.
fn repeats(flavors: &[Flavor]) {
    let repeats: usize = std::env::var("MCP_REPEATS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(REPEATS);
    let names: Vec<&str> = flavors.iter().map(|f| f.name()).collect();
    let exe = std::env::current_exe().expect("this benchmark's executable");
    let mut runs: Vec<(String, Paired)> = Vec::new();
    for run in 1..=repeats {
        let out = std::process::Command::new(&exe)
            .env("MCP_PAIRS", names.join(","))
            .env_remove("MCP_CALLS")
            .output()
            .expect("a process of this benchmark");
        assert!(
            out.status.success(),
            "the pairs' process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (flavor, p) in String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(Paired::parse)
        {
            let (diff, lo, hi) = p.diff;
            println!(
                "mcp_call_tool pairs, {flavor}, process {run} of {repeats}: {PAIRS} pairs of \
                 {BLOCK}-call blocks: bare {:.3} µs, guarded {:.3} µs a call (medians of the \
                 blocks); guarded - bare {diff:.0} ns a call (median of the pairs; 95 % interval \
                 {lo:.0} to {hi:.0}), {:.2} % of bare; median ratio {:.4}",
                p.bare,
                p.guarded,
                p.share(diff),
                p.ratio,
            );
            runs.push((flavor, p));
        }
    }
    for name in names {
        let of: Vec<Paired> = runs
            .iter()
            .filter(|(flavor, _)| flavor == name)
            .map(|(_, p)| *p)
            .collect();
        if of.is_empty() {
            continue;
        }
        let each = |f: &dyn Fn(&Paired) -> f64| {
            let mut v: Vec<f64> = of.iter().map(f).collect();
            let m = median(&mut v);
            (m, v[0], v[v.len() - 1])
        };
        let bare = each(&|p| p.bare);
        let guarded = each(&|p| p.guarded);
        let diff = each(&|p| p.diff.0);
        let share = each(&|p| p.share(p.diff.0));
        let ratio = each(&|p| p.ratio);
        let met = diff.0 <= 1_000.0 && share.0 <= 2.0;
        println!(
            "mcp_call_tool pairs, {name}, median of {} processes (min to max): bare {:.3} µs \
             ({:.3} to {:.3}), guarded {:.3} µs ({:.3} to {:.3}); guarded - bare {:.0} ns a call \
             ({:.0} to {:.0}), {:.2} % of bare ({:.2} to {:.2}); median ratio {:.4} ({:.4} to \
             {:.4}); budget (at most 1 µs and 2 %): {}",
            of.len(),
            bare.0,
            bare.1,
            bare.2,
            guarded.0,
            guarded.1,
            guarded.2,
            diff.0,
            diff.1,
            diff.2,
            share.0,
            share.1,
            share.2,
            ratio.0,
            ratio.1,
            ratio.2,
            if met { "met" } else { "missed" },
        );
    }
}

/// `MCP_PAIRS=FLAVOR,…`: the pairs of each runtime named, one line each ([`Paired::line`]).
fn pairs_only(spec: &str) {
    for name in spec.split(',') {
        let flavor = match name {
            "current_thread" => Flavor::CurrentThread,
            "multi_thread" => Flavor::MultiThread,
            _ => panic!("MCP_PAIRS names current_thread or multi_thread, not {name:?}"),
        };
        let bench = Bench::new(flavor);
        println!("{}", paired(&bench).line(flavor));
    }
}

/// `MCP_CALLS=ROW:N`: make `N` calls of row `ROW` (`bare_current_thread`, …) and nothing else.
fn calls_only(spec: &str) {
    let usage = "MCP_CALLS is ROW:N, ROW one of bare_current_thread, guarded_current_thread, \
                 bare_multi_thread, guarded_multi_thread";
    let (row, n) = spec.split_once(':').expect(usage);
    let n: u64 = n.parse().expect(usage);
    let (side, flavor) = row.split_once('_').expect(usage);
    let flavor = match flavor {
        "current_thread" => Flavor::CurrentThread,
        "multi_thread" => Flavor::MultiThread,
        _ => panic!("{usage}"),
    };
    let bench = Bench::new(flavor);
    let caller = match side {
        "bare" => &bench.bare,
        "guarded" => &bench.guarded,
        _ => panic!("{usage}"),
    };
    let took = bench.time(caller, n);
    bench.check();
    println!(
        "{row}: {n} calls in {took:?}, {:.3} µs a call",
        took.as_secs_f64() * 1e6 / n as f64
    );
}

fn main() {
    if let Ok(spec) = std::env::var("MCP_CALLS") {
        calls_only(&spec);
        return;
    }
    if let Ok(spec) = std::env::var("MCP_PAIRS") {
        pairs_only(&spec);
        return;
    }
    // The calls are tens of microseconds: a short warm-up and measurement bound the run (four
    // rows of 4 s, then the pairs' processes, about 3 s each).
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args();
    let benches = [
        Bench::new(Flavor::CurrentThread),
        Bench::new(Flavor::MultiThread),
    ];
    call_tool(&mut c, &benches);
    Criterion::default().configure_from_args().final_summary();
}
