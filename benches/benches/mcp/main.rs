//! MCP (toolbreaker's feature `mcp`): what `GuardedClient::call_tool` adds to a bare rmcp
//! `Peer::call_tool`, and to the same bare call under the same per-call timer, side by side in
//! one criterion group (`mcp_call_tool`).
//!
//! Every row calls the one tool of a trivial rmcp server ([`Echo`]: it answers a short text)
//! through an rmcp client connected to it over an in-memory pipe (`tokio::io::duplex`: the client
//! on one half, the server on the other), on a Tokio runtime that drives both ends:
//!
//! - `bare_*`: rmcp's `Peer::call_tool`;
//! - `timeout_*`: the same call inside `tokio::time::timeout` of [`PER_CALL_TIMEOUT`], the
//!   guard's per-attempt timeout: the base the guard is judged against, with the same timer;
//! - `guarded_*`: `toolbreaker::mcp::GuardedClient::call_tool` with a guard of
//!   [`PER_CALL_TIMEOUT`] per attempt and the default retry policy (retries on: the request is
//!   copied per attempt) and a healthy, closed breaker;
//! - `*_current_thread`: a current-thread runtime, the calls made from `block_on` (the headline:
//!   one thread runs client, server and caller, so nothing waits on another core);
//! - `*_multi_thread`: a two-worker runtime, the calls made from a task spawned on it.
//!
//! Each caller has a pipe and a server of its own, built the same way.
//!
//! Then, printed: the overheads, measured so that a few percent can be resolved on a noisy
//! machine (`rounds.rs`). [`rounds::PROCESSES`] fresh processes of this benchmark, one after the
//! other, each make, on each runtime whose rows criterion ran, [`rounds::ROUNDS`] rounds of a
//! block of [`rounds::BLOCK`] calls by each caller, back to back in one task, the order of the
//! three changing every round. A round lasts about a third of a millisecond, so its blocks see
//! the same machine; the median of the rounds' differences is the overhead of that process
//! (with a 95 % interval from the order statistics), and the median over the processes is the
//! figure, set against the targets of the gateway issue: guarded at most 300 ns over the
//! timeout-wrapped bare call, and at most 1 µs over the bare call.
//!
//! ```sh
//! cargo bench -p toolbreaker-benches --bench mcp                     # about 100 s
//! cargo bench -p toolbreaker-benches --bench mcp -- current_thread   # one runtime's rows, rounds
//! MCP_REPEATS=9 cargo bench -p toolbreaker-benches --bench mcp       # more processes of rounds
//! MCP_CALLS=guarded_current_thread:2000 cargo bench -p toolbreaker-benches --bench mcp
//! ```
//!
//! The last form makes exactly that many calls of one row and exits, without criterion, printing
//! their time and the size of one call's future (what each move of it copies): for an
//! instruction-counting profiler, run with two counts, so that the difference is the calls' own
//! (connection set-up cancels out). `MCP_ROUNDS=current_thread,multi_thread` is what each fresh
//! process is started with: the rounds alone, one line of figures a runtime. What is measured,
//! and the figures, are in `benches/README.md`.

mod rounds;

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
/// The per-attempt timeout of the guarded caller, and the timeout of the `timeout_*` rows.
const PER_CALL_TIMEOUT: Duration = Duration::from_secs(10);
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

/// Who makes the calls: rmcp's peer as it is, the same under a timeout, or a [`GuardedClient`]
/// around one, for one run.
#[derive(Clone)]
enum Caller {
    Bare(Peer<RoleClient>),
    Timeout(Peer<RoleClient>),
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
            Caller::Timeout(peer) => {
                let start = Instant::now();
                for _ in 0..n {
                    let answer = tokio::time::timeout(PER_CALL_TIMEOUT, peer.call_tool(params()))
                        .await
                        .expect("the server answers in time")
                        .expect("the server answers");
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

impl Caller {
    /// The size of one call's future, in bytes: what each move of it copies.
    fn future_size(&self) -> usize {
        match self {
            Caller::Bare(peer) => size_of_val(&peer.call_tool(params())),
            Caller::Timeout(peer) => size_of_val(&tokio::time::timeout(
                PER_CALL_TIMEOUT,
                peer.call_tool(params()),
            )),
            Caller::Guarded(client, run) => size_of_val(&client.call_tool(run, params())),
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

    /// Back from [`name`](Self::name).
    fn parse(name: &str) -> Option<Flavor> {
        match name {
            "current_thread" => Some(Flavor::CurrentThread),
            "multi_thread" => Some(Flavor::MultiThread),
            _ => None,
        }
    }
}

/// One runtime with a bare, a timeout-wrapped and a guarded caller, each over a connection of
/// its own.
struct Bench {
    flavor: Flavor,
    bare: Caller,
    timeout: Caller,
    guarded: Caller,
    registry: Registry,
    /// The bare and timeout callers' connections; the guarded caller's client is owned by its
    /// `GuardedClient`, its server end kept here.
    _connections: ([Connection; 2], RunningService<RoleServer, Echo>),
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
        let (bare, timeout, guarded) = runtime.block_on(async {
            (
                Connection::open().await,
                Connection::open().await,
                Connection::open().await,
            )
        });
        let registry = Registry::builder().build();
        // The guard the figures were first measured with: 10 s a call and the default retry
        // policy, so each attempt copies the request for a retry that may follow (the client's
        // own default makes no retries and moves it: cheaper).
        let Connection {
            client: guarded,
            _server: guarded_server,
        } = guarded;
        let client = GuardedClient::builder(SERVER, guarded, &registry)
            .guard(ToolGuard::new(PER_CALL_TIMEOUT, RetryPolicy::default()))
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
            timeout: Caller::Timeout(timeout.peer()),
            guarded: Caller::Guarded(client, run),
            registry,
            _connections: ([bare, timeout], guarded_server),
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

/// Group `mcp_call_tool`: the six rows; then, when benchmarking, for each runtime whose rows
/// criterion ran, the rounds in fresh processes ([`rounds::repeats`]).
fn call_tool(c: &mut Criterion, benches: &[Bench]) {
    let mut ran = vec![false; benches.len()];
    let mut g = c.benchmark_group("mcp_call_tool");
    for (bench, ran) in benches.iter().zip(&mut ran) {
        let flavor = bench.flavor.name();
        g.bench_function(format!("bare_{flavor}"), |b| {
            *ran = true;
            b.iter_custom(|n| bench.time(&bench.bare, n))
        });
        g.bench_function(format!("timeout_{flavor}"), |b| {
            *ran = true;
            b.iter_custom(|n| bench.time(&bench.timeout, n))
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
        rounds::repeats(&flavors);
    }
}

/// `MCP_CALLS=ROW:N`: make `N` calls of row `ROW` (`bare_current_thread`, …) and nothing else.
fn calls_only(spec: &str) {
    let usage = "MCP_CALLS is ROW:N, ROW one of bare_current_thread, timeout_current_thread, \
                 guarded_current_thread, bare_multi_thread, timeout_multi_thread, \
                 guarded_multi_thread";
    let (row, n) = spec.split_once(':').expect(usage);
    let n: u64 = n.parse().expect(usage);
    let (side, flavor) = row.split_once('_').expect(usage);
    let flavor = Flavor::parse(flavor).expect(usage);
    let bench = Bench::new(flavor);
    let caller = match side {
        "bare" => &bench.bare,
        "timeout" => &bench.timeout,
        "guarded" => &bench.guarded,
        _ => panic!("{usage}"),
    };
    let took = bench.time(caller, n);
    bench.check();
    // A timer needs the runtime's context, even one that is never polled.
    let _runtime = bench.runtime.enter();
    println!(
        "{row}: {n} calls in {took:?}, {:.3} µs a call; {} bytes a call's future",
        took.as_secs_f64() * 1e6 / n as f64,
        caller.future_size(),
    );
}

fn main() {
    if let Ok(spec) = std::env::var("MCP_CALLS") {
        calls_only(&spec);
        return;
    }
    if let Ok(spec) = std::env::var("MCP_ROUNDS") {
        rounds::rounds_only(&spec);
        return;
    }
    // The calls are tens of microseconds: a short warm-up and measurement bound the run (six
    // rows of 4 s, then the rounds' processes, about 5 s each).
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
