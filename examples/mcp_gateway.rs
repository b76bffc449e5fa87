//! An MCP gateway in front of MCP servers that fail and recover: the gateway lists its upstreams'
//! tools under namespaced names (`search.query`) and forwards every request through that
//! upstream's circuit breaker, so an agent's model is told at once that a tool is down, and the
//! failing server is left alone, instead of each call waiting on it.
//!
//! The gateway is the `toolbreaker-gateway` binary's own code (its library, the workspace package
//! `gateway/`): the relay `toolbreaker_gateway::relay::Gateway`, configured from the TOML text the
//! binary would read with `--config` (`GatewayConfig::from_toml_str`; this run writes it with the
//! upstreams' ports), served by the binary's HTTP app (`serve::HttpApp`: `/mcp`, `/healthz`,
//! `/status`, `/metrics`) on a real socket. What this example adds is around it: upstreams that
//! fail on a schedule, agents, and a report.
//!
//! ```text
//! cargo run --release --example mcp_gateway --features mcp_gateway             # 10 s, 16 MCP clients, a table
//! cargo run --release --example mcp_gateway --features mcp_gateway -- --duration 4 --json
//! cargo run --release --example mcp_gateway --features mcp_gateway -- --serve   # keep the gateway up; Ctrl-C ends it
//! ```
//!
//! Everything runs in this process on real sockets (`127.0.0.1`, ephemeral ports; nothing else
//! is contacted), and every hop is MCP over Streamable HTTP with the official Rust SDK (rmcp):
//!
//! - three upstream MCP servers (hand-written `ServerHandler`s behind axum): `search` (tool
//!   `query`), `weather` (tool `forecast`) and `notes` (tools `get` and `put`);
//! - the gateway: the relay with one connection per upstream, each request admitted by the
//!   upstream's breaker (from one `Registry`), bounded by the per-call timeout and classified by
//!   `McpClassifier`; the breaker's probe is an MCP `ping` of the upstream (its health check),
//!   so no agent's call is spent on one;
//! - the agents: concurrent MCP clients, each its own rmcp client of the gateway, calling
//!   `search.query`, `weather.forecast`, `notes.get` and `notes.put` at random and reading each
//!   `CallToolResult` as a model's runtime would: a real answer, the tool's own `isError`, or the
//!   gateway's `isError` with `structuredContent.status` `blocked`, `failed` or `stopped`.
//!
//! Part-way through, two upstreams fail, each in its own way, and recover later. The schedule is
//! in fractions of `--duration`, so a short demo still goes through every phase:
//!
//! | upstream | behaviour |
//! |---|---|
//! | `search` | healthy; **HTTP 503** from a middleware in front of its MCP endpoint from 15 % to 45 % of the demo; healthy again |
//! | `weather` | healthy; **hangs** from 30 % to 60 % (its tool never answers), so the gateway's attempts time out and are cancelled |
//! | `notes` | always up, but answers **`isError: true`** to bad arguments (a path with `..`), which the agents send on 1 call in 5 |
//!
//! Each upstream counts, in front of its MCP endpoint, the `tools/call` requests that reached it,
//! and notes the state of the gateway's breaker for it when each arrives: the report sets what
//! reached each server beside what the agents were told and what the breaker counted.
//!
//! Settings (built in):
//!
//! | setting | value | why |
//! |---|---|---|
//! | failure threshold | 5 consecutive counted failures | a 503 outage trips within a few calls, a hang within one per-call timeout |
//! | cooldown | 500 ms | several probes fit in each outage, even in a 4 s demo (`search` is down 1.2 s of it) |
//! | probe timeout | 2 s | the probe's lease; longer than the per-call timeout, so a probe always reports |
//! | per-call timeout | 250 ms | how long a call to the hanging `weather` waits before it counts as a timeout (and is cancelled upstream) |
//! | retries | none | the gateway forwards each call once, as the binary does: the agent decides whether to call again |
//! | call deadline | 2 s | the gateway's limit for one forwarded tool call |
//! | agents | 16 MCP clients, 5 ms think time | `--clients N`; each waits for its answer, then thinks, then calls again |
//!
//! What to look for in the output (a line a second with each breaker's state and what reached
//! each upstream, a line for each breaker transition and each schedule switch, then the table):
//!
//! - `search` trips after 5 counted failures (503s) and from then on its calls
//!   are answered `blocked` at once: nothing is sent, and the upstream's own count of calls stops
//!   growing (the probe is a ping); `weather` does the same after its first calls time out,
//!   and the gateway cancels each timed-out call upstream (`cancelled`). When the hang begins,
//!   every agent that calls `weather` in its first 250 ms is left waiting, and their attempts
//!   time out together, so about one counted failure per agent comes before the trip: the
//!   threshold bounds what the breaker lets through, not what was already in flight;
//! - a probe (an MCP `ping`) 500 ms after each trip or failed probe: while `search` answers 503
//!   it fails and reopens the breaker; once it has recovered, it closes it, and calls flow again.
//!   A hanging `weather` still answers its pings (only its tool hangs), so its probe closes the
//!   breaker, the next calls time out, and it trips again: a few trips in its outage, rather
//!   than one;
//! - one outage never blocks another upstream: each has its own breaker;
//! - `notes` never trips, however many `isError` answers it gives: a tool's own error proves the
//!   server up (`McpClassifier` ignores it), so its breaker records them as `ignored`;
//! - what reached each upstream while its breaker read open: only calls already on their way when
//!   it opened (usually none);
//! - a blocked call as the model reads it: `isError: true`, the words for the model as the one
//!   text content, and the structured result (`status`, `dependency`, `retry_after_ms`, ...) as
//!   `structuredContent`; one taken from the run is printed at the end.
//!
//! The run checks its invariants (that `notes` never tripped, that each failing upstream tripped
//! and was closed again by the end, that nothing reached an upstream while its breaker was open
//! beyond calls already in flight, that the breakers' counts and the agents' agree, ...), prints
//! each as `ok` or `FAILED`, and exits with status 1 if any failed. None depends on the machine's
//! speed; the three about trips and closes need an outage to see a threshold's worth of counted
//! failures and a recovery to leave room for a probe, which a run far smaller than the defaults
//! (one agent for a second, say) may not give: there they are `skipped`, neither held nor failed.
//!
//! Options: `--duration SECS` (default 10), `--clients N` agent MCP clients (default 16), `--json`
//! (print one JSON object and nothing else on stdout; the progress lines go to stderr), `--serve`,
//! `--port PORT`, `--help`. A bad flag is a usage error: a message and exit status 2.
//!
//! The parts, each in `mcp_gateway/`: `upstream.rs` (the three servers, their middleware and
//! counts), `agents.rs` (the MCP clients and how they read a `CallToolResult`), `scenario.rs` (the
//! gateway, the schedule, the progress lines, a run from start to report), `report.rs` (the
//! figures, the invariants, the table and the JSON). `examples/tests/gateway_mcp.rs` runs the same
//! scenario for 4 s and checks its report, and checks the `--json` report of a real run in CI.
//!
//! # Serve mode: `--serve`
//!
//! `--serve` starts the upstreams and the gateway and keeps them up until Ctrl-C, printing the
//! gateway's address (`http://127.0.0.1:PORT/mcp`, on a line of its own on stdout; `--port` picks
//! the port) so that any MCP client (an IDE's, an inspector) can connect to it; the binary's
//! `/status`, `/metrics` and `/healthz` are served beside it. The schedule loops
//! in cycles of 20 s (`search` down from 3 s to 9 s of each cycle, `weather` hanging from 6 s to
//! 12 s), and every transition is printed: call `search.query` a few times while it is down and
//! see its breaker open, and the answer turn `blocked`. No agents run unless `--clients N` is
//! given, so the breakers move on your calls alone.

#[path = "mcp_gateway/agents.rs"]
mod agents;
#[path = "gateway/flags.rs"]
mod flags;
#[path = "gateway/listen.rs"]
mod listen;
#[path = "mcp_gateway/report.rs"]
mod report;
#[path = "mcp_gateway/scenario.rs"]
mod scenario;
#[path = "mcp_gateway/upstream.rs"]
mod upstream;

use std::process::ExitCode;
use std::time::Duration;

use scenario::{Log, Settings, THINK_TIME};

const DEFAULT_DURATION_SECS: f64 = 10.0;
const MAX_DURATION_SECS: f64 = 3600.0;
const DEFAULT_CLIENTS: usize = 16;
const MAX_CLIENTS: usize = 256;

const USAGE: &str = "\
usage: mcp_gateway [--duration SECS] [--clients N] [--json]
       mcp_gateway --serve [--port PORT] [--clients N]

  --duration SECS    how long the agents call the gateway (default 10; up to 3600)
  --clients N        how many agent MCP clients call the gateway at once (default 16; up to
                     256); with --serve, background agents (default none)
  --json             print one JSON object (every figure and the invariants checked), and
                     nothing else, on stdout; the progress lines go to stderr
  --serve            keep the gateway up, its upstreams failing in a 20 s cycle, until Ctrl-C;
                     its address goes to stdout, for any MCP client to connect to
  --port PORT        with --serve, the gateway's port on 127.0.0.1 (default: any free one)
  -h, --help         print this help";

#[derive(Debug, PartialEq)]
struct Args {
    duration: Option<Duration>,
    clients: Option<usize>,
    json: bool,
    serve: bool,
    port: Option<u16>,
}

#[derive(Debug, PartialEq)]
enum Command {
    Run(Args),
    Help,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut parsed = Args {
        duration: None,
        clients: None,
        json: false,
        serve: false,
        port: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = flags::split(arg);
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value ({what})"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--json" if inline.is_none() => parsed.json = true,
            "--serve" if inline.is_none() => parsed.serve = true,
            "--json" | "--serve" => return Err(format!("{flag} takes no value")),
            "--duration" => {
                let text = value("seconds")?;
                parsed.duration = Some(flags::seconds("--duration", &text, MAX_DURATION_SECS)?);
            }
            "--clients" => {
                let text = value("a number of MCP clients")?;
                parsed.clients = Some(flags::whole_number("--clients", &text, 1, MAX_CLIENTS)?);
            }
            "--port" => {
                let text = value("a TCP port")?;
                let port = flags::whole_number("--port", &text, 1, usize::from(u16::MAX))?;
                parsed.port = u16::try_from(port).ok();
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if parsed.serve {
        if parsed.json {
            return Err("--serve prints no report: it takes no --json".to_owned());
        }
        if parsed.duration.is_some() {
            return Err(
                "--serve runs until Ctrl-C, its schedule in 20 s cycles: it takes no --duration"
                    .to_owned(),
            );
        }
    } else if parsed.port.is_some() {
        return Err("--port needs --serve".to_owned());
    }
    Ok(Command::Run(parsed))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(args)) => args,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("mcp_gateway: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.serve {
        let log = Log::new(false);
        let clients = args.clients.unwrap_or(0);
        return match scenario::serve(args.port.unwrap_or(0), clients, THINK_TIME, log).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("mcp_gateway: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let settings = Settings {
        duration: args
            .duration
            .unwrap_or(Duration::from_secs_f64(DEFAULT_DURATION_SECS)),
        clients: args.clients.unwrap_or(DEFAULT_CLIENTS),
        think_time: THINK_TIME,
    };
    let report = match scenario::run(settings, Log::new(args.json)).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("mcp_gateway: {error}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        println!("{}", report.json());
    } else {
        println!();
        print!("{}", report.table());
        println!();
        match &report.blocked_example {
            Some(example) => {
                let name = example["structuredContent"]["dependency"]
                    .as_str()
                    .unwrap_or("a tool");
                println!("A blocked call to {name}, the CallToolResult as the model receives it:");
                println!(
                    "{}",
                    serde_json::to_string_pretty(example).unwrap_or_default()
                );
            }
            None => println!("No call was blocked in this run."),
        }
    }
    let failed: Vec<_> = report
        .invariants()
        .into_iter()
        .filter(|invariant| invariant.verdict == report::Verdict::Fails)
        .collect();
    for invariant in &failed {
        eprintln!(
            "mcp_gateway: invariant `{}` failed: {} ({})",
            invariant.name, invariant.says, invariant.detail
        );
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
