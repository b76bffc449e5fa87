//! How the gateway is served, whatever its MCP handler does.
//!
//! - Over HTTP: [`HttpApp`] is the axum router: `/mcp` (MCP's Streamable HTTP transport, with
//!   sessions), `/healthz`, `/status` and `/metrics`, behind the bearer token, the `Host` and
//!   `Origin` checks of MCP's DNS-rebinding rule and the request size limit of [`HttpOptions`].
//!   [`serve`] runs it on a listener until a shutdown signal ([`shutdown_signal`]), then drains
//!   the requests in flight up to [`HttpOptions::drain`] and ends the MCP sessions. A body that
//!   is not JSON-RPC gets JSON-RPC's error for it (`jsonrpc`).
//! - Over stdio: [`serve_stdio`] serves one client on stdin and stdout ([`serve_io`] on any
//!   pair of streams).
//! - Metrics: [`prometheus_handle`] installs the process's Prometheus recorder once;
//!   [`forget_series`] leaves a removed dependency's series out of `/metrics`.

mod app;
mod auth;
mod hosts;
mod in_flight;
mod jsonrpc;
mod log_limit;
pub(crate) use self::log_limit::{LOG_INTERVAL, LogLimit};
mod metrics;
mod options;
mod shutdown;
mod stdio;

pub use self::app::{HttpApp, ScrapeFn, StatusFn};
pub use self::auth::BearerToken;
pub use self::metrics::{LATENCY_BUCKETS, forget_series, keep_series, prometheus_handle};
pub use self::options::{HttpOptions, OptionsError};
pub use self::shutdown::{serve, shutdown_signal};
pub use self::stdio::{serve_io, serve_stdio};
