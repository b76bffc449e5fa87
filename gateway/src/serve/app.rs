//! The gateway's HTTP routes: `/mcp`, `/healthz`, `/readyz`, `/status` and `/metrics`.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use rmcp::ServerHandler;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use toolbreaker::mcp::MCP_PATH;

use super::auth::require_bearer;
use super::hosts::{AdmittedHosts, require_admitted_host};
use super::in_flight::{InFlight, track};
use super::jsonrpc::{BodyLimit, answer_malformed};
use super::limits::{Counted, Limits, cap_sessions};
use super::options::HttpOptions;
use super::ready::{ReadyFn, readyz};
use super::shortcut::{Shortcut, Shortcuts};

/// What `/status` answers: called on each request, its JSON is the body (the relay's view of
/// its upstreams).
pub type StatusFn = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// What `/metrics` runs before it renders: the relay exports its breakers' counters through
/// the `metrics` facade (`Registry::export_metrics`), so a scrape sees them as they are now.
pub type ScrapeFn = Arc<dyn Fn() + Send + Sync>;

/// The gateway's HTTP application: the routes, and what [`serve`](super::serve) needs to shut
/// them down.
///
/// - `/mcp`: MCP's Streamable HTTP transport with sessions (an `Mcp-Session-Id` per client,
///   so the server can send requests and notifications to it), one handler per session made by
///   the factory. rmcp checks there that `Host` is admitted and `Origin`, if present, too
///   (`403 Forbidden` otherwise: [`HttpOptions::effective_hosts`],
///   [`HttpOptions::effective_origins`]), and answers `413 Payload Too Large` to a body over
///   [`HttpOptions::max_request_bytes`]. A body that is not JSON-RPC is answered
///   `400 Bad Request` with JSON-RPC's error for it (`-32700` not JSON, `-32600` not a JSON-RPC
///   message, `-32602` params that do not fit the method), not rmcp's `415` (`serve::jsonrpc`).
///   At most [`HttpOptions::max_sessions`] sessions are open at once, and
///   [`HttpOptions::max_sessions_per_client`] from one client address: an `initialize` (or a
///   2026-07-28 `subscriptions/listen`) over either is answered `503` (overall) or `429` (per
///   client) with `Retry-After` and a JSON-RPC error naming the limit; a session ends at its
///   `DELETE` or after [`HttpOptions::session_idle`] without a message, freeing its place.
/// - `/admin/breakers/{breaker}/{action}` (`POST`), with [`HttpOptions::breakers`] set: a
///   breaker isolated, closed or reset by hand ([`BreakerControl`](super::BreakerControl)).
/// - `/healthz`: `200 ok`, always, without a token: liveness, the process is up and serving
///   (whatever its upstreams' state).
/// - `/readyz` (once [`with_readiness`](Self::with_readiness) gives it what to ask), without a
///   token: readiness, `200 {"ready":true}` when the upstreams the gateway needs are
///   connected, else `503 {"ready":false,"not_connected":[NAME, …]}` ([`Readiness`]).
/// - `/status`: the JSON of the [`StatusFn`] (`application/json`).
/// - `/metrics`: the process's Prometheus recorder ([`prometheus_handle`]) in Prometheus's text
///   format.
///
/// With [`HttpOptions::auth_token`] set, `/mcp`, `/status` and `/metrics` answer
/// `401 Unauthorized` (with `WWW-Authenticate: Bearer`) to a request without
/// `Authorization: Bearer TOKEN`; `/status` and `/metrics` also answer `403` to a `Host` that
/// is not admitted.
///
/// [`prometheus_handle`]: super::prometheus_handle
/// [`Readiness`]: super::Readiness
pub struct HttpApp {
    router: Router,
    sessions: CancellationToken,
    in_flight: InFlight,
    drain: Duration,
    shortcuts: Shortcuts,
}

impl HttpApp {
    /// The routes of `options`, whose MCP sessions are served by handlers that `factory` makes
    /// (one per session, at its `initialize`), with `/status` answered by `status`.
    ///
    /// # Errors
    ///
    /// - `options` are bad ([`HttpOptions::check`]): an `io::Error` of kind `InvalidInput`
    ///   whose inner error is the [`OptionsError`](super::OptionsError);
    /// - the Prometheus recorder cannot be installed ([`prometheus_handle`]'s error: another
    ///   global `metrics` recorder was installed first).
    ///
    /// [`prometheus_handle`]: super::prometheus_handle
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rmcp::ServerHandler;
    /// use toolbreaker_gateway::serve::{HttpApp, HttpOptions};
    ///
    /// #[derive(Clone)]
    /// struct Nothing;
    /// impl ServerHandler for Nothing {}
    ///
    /// let options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    /// let status = Arc::new(|| serde_json::json!({"upstreams": []}));
    /// let app = HttpApp::new(&options, || Ok(Nothing), status, None).unwrap();
    /// assert!(!app.sessions().is_cancelled());
    /// ```
    pub fn new<S, F>(
        options: &HttpOptions,
        factory: F,
        status: StatusFn,
        before_scrape: Option<ScrapeFn>,
    ) -> io::Result<HttpApp>
    where
        S: ServerHandler + Send + 'static,
        F: Fn() -> Result<S, io::Error> + Send + Sync + 'static,
    {
        options
            .check()
            .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
        let metrics = super::prometheus_handle()?;
        let hosts = options.effective_hosts();
        let sessions = CancellationToken::new();
        // A 2026-07-28 request whose first message back is its answer is answered as plain
        // JSON, not as an event stream of one event; one that sends progress or asks first is
        // answered as a stream (2025-11-25 sessions' requests always are: rmcp's session mode).
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(true)
            .with_allowed_hosts(hosts.iter().cloned())
            .with_allowed_origins(options.effective_origins())
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_request_bytes)
            .with_cancellation_token(sessions.clone());
        let limits = Limits::new(options.max_sessions, options.max_sessions_per_client);
        let manager = Counted::new(Arc::clone(&limits), options.session_idle);
        let shortcuts = Shortcuts::new(manager.legacy());
        let mcp = StreamableHttpService::new(factory, Arc::new(manager), config);
        let status = match &options.breakers {
            Some(control) => control.status(status),
            None => status,
        };
        let observed = Router::new()
            .route("/status", get(move || status_json(status.clone())))
            .route(
                "/metrics",
                get(move || render_metrics(metrics.clone(), before_scrape.clone())),
            )
            .layer(from_fn_with_state(
                AdmittedHosts::new(&hosts),
                require_admitted_host,
            ));
        let mcp = Router::new()
            .route_service(MCP_PATH, mcp)
            .layer(from_fn_with_state(limits, cap_sessions))
            .layer(from_fn_with_state(
                BodyLimit {
                    limit: options.max_request_bytes,
                    hosts: AdmittedHosts::new(&hosts),
                    shortcuts: shortcuts.clone(),
                },
                answer_malformed,
            ));
        let mut guarded = mcp.merge(observed);
        if let Some(control) = &options.breakers {
            let admin = control
                .routes(options.auth_token.is_some())
                .layer(from_fn_with_state(
                    AdmittedHosts::new(&hosts),
                    require_admitted_host,
                ));
            guarded = guarded.merge(admin);
        }
        if let Some(token) = &options.auth_token {
            guarded = guarded.layer(from_fn_with_state(token.clone(), require_bearer));
        }
        let in_flight = InFlight::new();
        let router = guarded
            .route("/healthz", get(|| async { "ok" }))
            .layer(from_fn_with_state((in_flight.clone(), MCP_PATH), track));
        Ok(HttpApp {
            router,
            sessions,
            in_flight,
            drain: options.drain,
            shortcuts,
        })
    }

    /// The app with `/readyz`, answered from `ready` on each request (see
    /// [`Readiness`](super::Readiness)). Like `/healthz`, it needs no token: load balancers'
    /// and orchestrators' probes send none.
    pub fn with_readiness(mut self, ready: ReadyFn) -> HttpApp {
        self.router = self
            .router
            .route("/readyz", get(move || readyz(ready.clone())));
        self
    }

    /// The app with `shortcut` offered each plain POST to `/mcp` (a 2026-07-28 request, or a
    /// 2025-11-25 session's request it may serve) before rmcp's
    /// transport ([`Shortcut`]); the bearer token, the request size limit and the malformed
    /// body's refusal come first, as for any request. Given once: a second is ignored.
    pub fn with_shortcut(self, shortcut: Shortcut) -> HttpApp {
        self.shortcuts.set(shortcut);
        self
    }

    /// The routes, to serve with [`serve`](super::serve) or to merge into a larger router
    /// (serving them some other way, ending the MCP sessions is the caller's:
    /// [`sessions`](Self::sessions)).
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// The token that ends every MCP session of these routes when cancelled: their streams
    /// close and their handlers' calls are cancelled. [`serve`](super::serve) cancels it once
    /// it has drained.
    pub fn sessions(&self) -> CancellationToken {
        self.sessions.clone()
    }

    /// How many requests are in flight now (MCP's standalone streams aside).
    pub fn in_flight(&self) -> usize {
        self.in_flight.count()
    }

    /// What [`serve`](super::serve) takes apart.
    pub(crate) fn into_parts(self) -> (Router, CancellationToken, InFlight, Duration) {
        (self.router, self.sessions, self.in_flight, self.drain)
    }
}

async fn status_json(status: StatusFn) -> Json<serde_json::Value> {
    Json(status())
}

async fn render_metrics(metrics: PrometheusHandle, before: Option<ScrapeFn>) -> Response {
    if let Some(before) = before {
        before();
    }
    metrics.run_upkeep();
    let mut response = super::metrics::render(&metrics).into_response();
    let text_format = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, text_format);
    response
}
