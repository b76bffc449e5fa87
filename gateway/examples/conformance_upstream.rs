//! The upstream MCP server the official MCP conformance suite (npm
//! `@modelcontextprotocol/conformance`, pinned in `gateway/conformance/package.json`) is run
//! against, directly and through the gateway: an rmcp server with every tool, resource, prompt,
//! completion and logging behaviour the suite's server scenarios ask for.
//!
//! ```text
//! cargo run -p toolbreaker-gateway --example conformance_upstream -- [--listen ADDR] [--era ERA]
//! cargo run -p toolbreaker-gateway --example conformance_upstream -- --stdio [--era ERA]
//! ```
//!
//! - Over Streamable HTTP at `http://ADDR/mcp` (`--listen`, default `127.0.0.1:0`: a free
//!   port): with sessions for 2025-11-25 and earlier, stateless for 2026-07-28. Its first line
//!   on stdout is that URL, so a script or a test reads the port from it. Hosts other than
//!   loopback (and the listening address) are refused, as MCP's DNS-rebinding rule asks.
//! - Over stdio with `--stdio`: one client on stdin and stdout, as a child process upstream
//!   (an `initialize` handshake, or 2026-07-28 requests with their `_meta`).
//! - `--era 2025-11-25|2026-07-28|both` (default `both`): the MCP eras it serves.
//!   - `both`: `initialize` and sessions for 2025-11-25 and earlier, and 2026-07-28's
//!     stateless requests (`server/discover`, per-request `_meta` with the protocol version and
//!     client capabilities, `input_required` results and retries with `inputResponses` and
//!     `requestState` for sampling, elicitation and roots, `subscriptions/listen`, `resultType`,
//!     `ttlMs` and `cacheScope`).
//!   - `2025-11-25`: a server of the session era only: a request naming 2026-07-28 is refused
//!     as an unsupported protocol version (it is not among its supported versions, nor in
//!     `server/discover`'s).
//!   - `2026-07-28`: a stateless server only: `initialize` is refused (no supported version
//!     has that handshake), HTTP has no sessions (no `Mcp-Session-Id`, no GET stream, no
//!     DELETE), and every HTTP request must carry its protocol version.
//! - `--crash-after-calls N`: tool calls are counted as they arrive; the one after the Nth ends
//!   the process (exit code 3) without an answer, as a crashing child would, for supervision
//!   tests. A client that waits for each answer before its next call gets N answers; answers
//!   still on their way when the process ends are lost with it.
//!
//! `gateway/conformance/check.sh` builds it, starts it and runs the suite against it.

#[path = "conformance_upstream/catalog.rs"]
mod catalog;
#[path = "conformance_upstream/http.rs"]
mod http;
#[path = "conformance_upstream/server.rs"]
mod server;
#[path = "conformance_upstream/sessions.rs"]
mod sessions;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use rmcp::ServiceExt;

use server::{Era, Shared, Upstream};

/// The MCP conformance suite's upstream server.
#[derive(Parser, Debug)]
#[command(name = "conformance_upstream", version)]
struct Args {
    /// The address to serve Streamable HTTP on (port 0: a free one); the first stdout line is
    /// the URL.
    #[arg(long, default_value = "127.0.0.1:0", conflicts_with = "stdio")]
    listen: SocketAddr,
    /// Serve one client over stdin and stdout instead.
    #[arg(long)]
    stdio: bool,
    /// Answer this many tool calls, then end the process (exit code 3) at the next one.
    #[arg(long, value_name = "N")]
    crash_after_calls: Option<u64>,
    /// The MCP eras to serve: `2025-11-25` (initialize and sessions), `2026-07-28`
    /// (stateless), or `both`.
    #[arg(long, value_enum, default_value_t = Era::Both)]
    era: Era,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = if args.stdio {
        serve_stdio(args.crash_after_calls, args.era).await
    } else {
        serve_http(args.listen, args.crash_after_calls, args.era).await
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance upstream: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves one client on stdin and stdout until it leaves.
async fn serve_stdio(crash_after: Option<u64>, era: Era) -> Result<(), Box<dyn std::error::Error>> {
    let upstream = Upstream::new(Shared::new(crash_after, None, era));
    let running = upstream.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// Serves Streamable HTTP on `listen` until SIGINT or SIGTERM.
async fn serve_http(
    listen: SocketAddr,
    crash_after: Option<u64>,
    era: Era,
) -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let (router, ending) = http::router_for_era(addr, crash_after, era);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "http://{addr}/mcp")?;
    stdout.flush()?;
    drop(stdout);
    // TCP_NODELAY: its SSE answers go out at once, not after the client's delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            stopped().await;
            // Ends the sessions' event streams, which would otherwise hold the shutdown.
            ending.cancel();
        })
        .await?;
    Ok(())
}

/// Resolves at SIGINT or SIGTERM.
async fn stopped() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
