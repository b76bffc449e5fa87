//! The upstream over Streamable HTTP: the axum router that serves it at `/mcp`, with sessions
//! for 2025-11-25 and earlier, stateless for 2026-07-28 (rmcp serves a request that names
//! 2026-07-28 in its `_meta` without a session either way).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::server::{Era, Shared, Upstream};
use super::sessions::Sessions;

/// How long a client waits before it resumes a stream the server closed (the priming event's
/// `retry`).
const SSE_RETRY: Duration = Duration::from_millis(100);

/// The router serving the upstream, both eras, at `/mcp` for a listener bound to `addr`,
/// ending at the call after `crash_after` tool calls (if given); and the token whose
/// cancellation ends every session's event streams (for a graceful shutdown, which they would
/// otherwise hold).
///
/// Requests whose `Host` is not loopback or `addr`'s IP are refused (MCP's DNS-rebinding rule).
// The entry of the gateway's tests (`tests/conformance_upstream.rs`); the example's own `main`
// names its era.
#[allow(dead_code)]
pub fn router(addr: SocketAddr, crash_after: Option<u64>) -> (axum::Router, CancellationToken) {
    router_for_era(addr, crash_after, Era::Both)
}

/// As [`router`], serving `era`: with [`Era::Stateless`] there are no sessions at all (rmcp's
/// `legacy_session_mode` off, and every request must carry its protocol version).
pub fn router_for_era(
    addr: SocketAddr,
    crash_after: Option<u64>,
    era: Era,
) -> (axum::Router, CancellationToken) {
    let sessions = Arc::new(Sessions::default());
    let shared = Shared::new(crash_after, Some(sessions.clone()), era);
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
    hosts.push(addr.ip().to_string());
    let stateless = era == Era::Stateless;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_stateless_protocol_metadata_required(stateless)
        .with_sse_retry(Some(SSE_RETRY))
        .with_allowed_hosts(hosts);
    let ending = config.cancellation_token.clone();
    let service =
        StreamableHttpService::new(move || Ok(Upstream::new(shared.clone())), sessions, config);
    (axum::Router::new().nest_service("/mcp", service), ending)
}
