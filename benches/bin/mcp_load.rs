//! A load generator for MCP servers over Streamable HTTP, for the gateway comparison
//! (`benches/mcp_gateway_compare.sh`): N concurrent rmcp clients, each calling one tool in a loop
//! for D seconds; one JSON line on stdout with the calls per second, the latency percentiles and
//! the errors.
//!
//! ```sh
//! cargo run --release -p toolbreaker-benches --bin mcp_load -- \
//!     --url http://127.0.0.1:8931/mcp --clients 64 --duration 10
//! ```
//!
//! Options: `--url URL` (required), `--clients N` (64), `--duration SECONDS` (10), `--warm-up
//! SECONDS` (1), `--tool NAME` (`echo`), `--text TEXT` (the `text` argument, `circuit breakers`),
//! `--protocol VERSION` (rmcp's newest unless given: 2025-11-25 and earlier connect by
//! `initialize`, a session each; 2026-07-28 by `server/discover`, then stateless requests).
//!
//! What is measured, and what is not:
//!
//! - Every client is an rmcp client (`()`, no handler) over rmcp's Streamable HTTP transport
//!   with a `reqwest::Client` of its own (its own kept-alive connections), as N separate agents
//!   would be. All of them connect and initialize, and the first lists the tools and checks that
//!   the tool is there, before the clock starts.
//! - Then every client calls the tool, one call after another, from one instant for the
//!   warm-up and the duration; no call starts after the end. A call's latency is `Instant`
//!   before `call_tool` to `Instant` after its answer. The calls that end within the duration
//!   (after the warm-up, by the end) are counted and timed, and the calls/s are their number
//!   over the duration: the rate of completions in a window, which a call's own length does not
//!   bias (a server that takes seconds a call is not undercounted for calls that straddle the
//!   warm-up's end).
//! - A call that answers an error, or a result with `isError`, is an error (the first message
//!   is reported). A call still running 5 s after the end is given up and counted as a timeout:
//!   the run is bounded by time whatever the server does.
//! - The generator runs on a two-worker Tokio runtime, on the same machine as the server: on a
//!   small machine it takes its share of the cores, the same share for every server measured.
//!
//! The JSON line: `url`, `clients`, `duration_s`, `warm_up_s`, `calls`, `calls_per_s`,
//! `errors`, `timeouts`, `first_error` (or null), and latencies in µs: `p50_us`, `p90_us`,
//! `p99_us`, `max_us`, `mean_us` (nearest rank over every counted call). Exit status 1 when a
//! client cannot connect or no call succeeded, 2 on a usage error.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::time::Instant;

/// How long a call still running at the end is given before it is counted as a timeout.
const GRACE: Duration = Duration::from_secs(5);

const USAGE: &str = "usage: mcp_load --url URL [--clients N] [--duration SECONDS] \
                     [--warm-up SECONDS] [--tool NAME] [--text TEXT]\n                     [--protocol VERSION]";

/// The command line.
struct Args {
    url: String,
    clients: usize,
    duration: Duration,
    warm_up: Duration,
    tool: String,
    text: String,
    /// The protocol version the clients ask for (rmcp's newest by default).
    protocol: Option<String>,
}

impl Args {
    fn parse() -> Args {
        let mut url = None;
        let mut clients = 64;
        let mut duration = 10.0;
        let mut warm_up = 1.0;
        let mut tool = "echo".to_owned();
        let mut text = "circuit breakers".to_owned();
        let mut protocol = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = || args.next().unwrap_or_else(|| exit_usage());
            match arg.as_str() {
                "--url" => url = Some(value()),
                "--clients" => clients = value().parse().unwrap_or_else(|_| exit_usage()),
                "--duration" => duration = value().parse().unwrap_or_else(|_| exit_usage()),
                "--warm-up" => warm_up = value().parse().unwrap_or_else(|_| exit_usage()),
                "--tool" => tool = value(),
                "--text" => text = value(),
                "--protocol" => protocol = Some(value()),
                "--help" | "-h" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                _ => exit_usage(),
            }
        }
        let seconds = |s: f64| {
            if s.is_finite() && s >= 0.0 {
                Duration::from_secs_f64(s)
            } else {
                exit_usage()
            }
        };
        let (duration, warm_up) = (seconds(duration), seconds(warm_up));
        if clients == 0 || duration.is_zero() {
            exit_usage();
        }
        Args {
            url: url.unwrap_or_else(|| exit_usage()),
            clients,
            duration,
            warm_up,
            tool,
            text,
            protocol,
        }
    }
}

fn exit_usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}

/// One client's counts over the run.
#[derive(Default)]
struct Tally {
    /// Latencies of the counted calls, ns.
    latencies: Vec<u64>,
    errors: u64,
    timeouts: u64,
    first_error: Option<String>,
}

impl Tally {
    fn error(&mut self, message: String) {
        self.errors += 1;
        self.first_error.get_or_insert(message);
    }
}

/// Connects and initializes one client.
async fn connect(
    url: &str,
    protocol: Option<&str>,
) -> Result<RunningService<RoleClient, ClientConfig>, String> {
    let http = reqwest::Client::new();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let mut info = ClientConfig::default();
    if let Some(protocol) = protocol {
        info.protocol_version =
            serde_json::from_value(serde_json::Value::String(protocol.to_owned()))
                .map_err(|e| format!("--protocol {protocol}: {e}"))?;
    }
    if info.protocol_version.has_initialize() {
        return info.serve(transport).await.map_err(|e| e.to_string());
    }
    // 2026-07-28 and later: no `initialize` and no session; `server/discover`, then each
    // request on its own.
    let lifecycle = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![info.protocol_version.clone()],
    };
    rmcp::ClientServiceExt::serve_with_lifecycle(info, transport, lifecycle)
        .await
        .map_err(|e| e.to_string())
}

/// One client's loop: calls until `end`; those that end at or after `counted` and by `end`
/// are counted.
async fn calls(
    client: Arc<RunningService<RoleClient, ClientConfig>>,
    params: CallToolRequestParams,
    counted: Instant,
    end: Instant,
) -> Tally {
    let mut tally = Tally::default();
    loop {
        let begun = Instant::now();
        if begun >= end {
            break;
        }
        let call = client.peer().call_tool(params.clone());
        let answer = tokio::time::timeout_at(end + GRACE, call).await;
        let done = Instant::now();
        let count = done >= counted && done <= end;
        match answer {
            Err(_) => {
                tally.timeouts += 1;
                break;
            }
            Ok(Err(e)) => {
                if count {
                    tally.error(format!("call failed: {e}"));
                }
            }
            Ok(Ok(result)) if result.is_error == Some(true) => {
                if count {
                    tally.error(format!("the tool answered an error: {:?}", result.content));
                }
            }
            Ok(Ok(_)) => {
                if count {
                    tally.latencies.push((done - begun).as_nanos() as u64);
                }
            }
        }
    }
    tally
}

/// The nearest-rank `p`-th percentile of sorted `v`, in µs.
fn percentile(v: &[u64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1] as f64 / 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    // Every client connects at once, each in a task of its own.
    let connecting: Vec<_> = (0..args.clients)
        .map(|_| {
            let url = args.url.clone();
            let protocol = args.protocol.clone();
            tokio::spawn(async move { connect(&url, protocol.as_deref()).await })
        })
        .collect();
    let mut clients = Vec::with_capacity(args.clients);
    for task in connecting {
        match task.await.expect("a connecting task") {
            Ok(client) => clients.push(Arc::new(client)),
            Err(e) => {
                eprintln!("mcp_load: a client could not connect to {}: {e}", args.url);
                std::process::exit(1);
            }
        }
    }
    // The version the server agreed to (newest: no initialize, so the one asked for).
    let protocol = clients[0]
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .or_else(|| args.protocol.clone())
        .unwrap_or_else(|| rmcp::model::ProtocolVersion::LATEST.to_string());
    match clients[0].peer().list_all_tools().await {
        Ok(tools) if tools.iter().any(|t| t.name == args.tool) => {}
        Ok(tools) => {
            let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
            eprintln!(
                "mcp_load: {} lists no tool {:?} (it lists {names:?})",
                args.url, args.tool
            );
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("mcp_load: listing the tools of {} failed: {e}", args.url);
            std::process::exit(1);
        }
    }
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".to_owned(), args.text.clone().into());
    let params = CallToolRequestParams::new(args.tool.clone()).with_arguments(arguments);

    // The clock starts here, with every client connected.
    let start = Instant::now();
    let counted = start + args.warm_up;
    let end = counted + args.duration;
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| tokio::spawn(calls(Arc::clone(client), params.clone(), counted, end)))
        .collect();
    let mut all = Tally::default();
    for task in tasks {
        let tally = task.await.expect("a client's task");
        all.latencies.extend(tally.latencies);
        all.errors += tally.errors;
        all.timeouts += tally.timeouts;
        if all.first_error.is_none() {
            all.first_error = tally.first_error;
        }
    }
    for client in clients {
        if let Ok(client) = Arc::try_unwrap(client) {
            let _ = tokio::time::timeout(GRACE, client.cancel()).await;
        }
    }

    let mut latencies = all.latencies;
    latencies.sort_unstable();
    let calls = latencies.len();
    let mean = latencies.iter().map(|&ns| ns as f64).sum::<f64>() / calls.max(1) as f64 / 1e3;
    let round = |x: f64| (x * 10.0).round() / 10.0;
    let line = json!({
        "url": args.url,
        "protocol": protocol,
        "clients": args.clients,
        "duration_s": args.duration.as_secs_f64(),
        "warm_up_s": args.warm_up.as_secs_f64(),
        "calls": calls,
        "calls_per_s": round(calls as f64 / args.duration.as_secs_f64()),
        "errors": all.errors,
        "timeouts": all.timeouts,
        "first_error": all.first_error,
        "p50_us": round(percentile(&latencies, 50.0)),
        "p90_us": round(percentile(&latencies, 90.0)),
        "p99_us": round(percentile(&latencies, 99.0)),
        "max_us": round(percentile(&latencies, 100.0)),
        "mean_us": round(mean),
    });
    println!("{line}");
    if calls == 0 {
        std::process::exit(1);
    }
}
