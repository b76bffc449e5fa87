//! How the gateway is served, whatever its MCP handler does.
//!
//! - Over HTTP: [`HttpApp`] is the axum router: `/mcp` (MCP's Streamable HTTP transport, with
//!   sessions), `/healthz` (liveness), `/readyz` (readiness: [`Readiness`]), `/status` and
//!   `/metrics`, behind the bearer token, the `Host` and
//!   `Origin` checks of MCP's DNS-rebinding rule and the request size limit of [`HttpOptions`].
//!   [`serve`] runs it on a listener ([`serve_tls`] in TLS: [`TlsServer`]; where:
//!   [`ListenAddr`]) until a shutdown signal ([`shutdown_signal`]), then drains
//!   the requests in flight up to [`HttpOptions::drain`] and ends the MCP sessions. A body that
//!   is not JSON-RPC gets JSON-RPC's error for it (`jsonrpc`). The sessions open at once are
//!   capped, overall and per client address (`limits`); with [`HttpOptions::breakers`],
//!   `/admin/breakers/…` changes a breaker by hand ([`BreakerControl`]).
//! - Over stdio: [`serve_stdio`] serves one client on stdin and stdout ([`serve_io`] on any
//!   pair of streams).
//! - Metrics: [`prometheus_handle`] installs the process's Prometheus recorder once;
//!   [`forget_series`] leaves a removed dependency's series out of `/metrics`.

mod admin;
mod app;
mod auth;
mod hosts;
mod in_flight;
mod jsonrpc;
mod legacy;
mod limits;
mod listen;
mod log_limit;
pub(crate) use self::log_limit::{LOG_INTERVAL, LogLimit};
mod metrics;
mod options;
mod ready;
mod shortcut;
mod shutdown;
mod stdio;
mod tls;

pub use self::admin::BreakerControl;
pub use self::app::{HttpApp, ScrapeFn, StatusFn};
pub use self::auth::BearerToken;
pub use self::legacy::{Cancellable, LegacySession};
pub use self::listen::{BadListenAddr, ListenAddr};
pub use self::metrics::{LATENCY_BUCKETS, forget_series, keep_series, prometheus_handle};
pub use self::options::{HttpOptions, OptionsError};
pub use self::ready::{Readiness, ReadyFn, UpstreamReadiness};
pub use self::shortcut::Shortcut;
pub use self::shutdown::{serve, serve_tls, shutdown_signal};
pub use self::stdio::{MAX_LINE_BYTES, serve_io, serve_stdio};
pub use self::tls::{HANDSHAKE_TIMEOUT, TlsError, TlsServer};
