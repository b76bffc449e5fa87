//! The upstream MCP servers of the MCP gateway demo: `search`, `weather` and `notes`, each an rmcp
//! server (a hand-written `ServerHandler`) over Streamable HTTP, served by axum on an ephemeral
//! port of `127.0.0.1`.
//!
//! Shared by the example (`mcp_gateway.rs`) and its test (`examples/tests/gateway_mcp.rs`).
//!
//! Each server has a [`Control`]: its current [`Mode`] and what reached it, plain atomics.
//! Whoever holds the control switches the mode (the demo's schedule). Every request passes through
//! a middleware in front of the MCP endpoint first, which reads the JSON-RPC message and counts the
//! `tools/call` requests: that count is the server's own, of what reached it, whatever the gateway
//! believes it sent. In [`Mode::Unavailable`] the middleware answers every request HTTP 503 itself,
//! as a load balancer in front of a crashed server would; in [`Mode::Hang`] the tools never
//! answer, until the caller gives up (its cancellation ends the handler) or the server stops.
//!
//! The middleware also reads the state of the gateway's breaker for this server when a call
//! arrives, for the report only: a call that arrives while the breaker is open was admitted
//! before it opened and was still on its way (the gateway sends nothing while it is open), so the
//! demo can show how few those are.

use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use toolbreaker::{CircuitBreaker, State as BreakerState};

/// The path each upstream serves MCP at.
pub const MCP_PATH: &str = "/mcp";

/// The largest request body the counting middleware reads.
const MAX_BODY: usize = 1 << 20;

/// The upstream MCP servers; each is its own dependency with its own breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Upstream {
    /// A web search server: tool `query`.
    Search,
    /// A weather server: tool `forecast`.
    Weather,
    /// A note store: tools `get` and `put`. Always up; it answers `isError: true` to bad
    /// arguments.
    Notes,
}

impl Upstream {
    /// Every upstream, in display order.
    pub const ALL: [Upstream; 3] = [Upstream::Search, Upstream::Weather, Upstream::Notes];

    /// The server's name: its breaker's name in the registry and its tools' namespace on the
    /// gateway (`search.query`).
    pub const fn name(self) -> &'static str {
        match self {
            Upstream::Search => "search",
            Upstream::Weather => "weather",
            Upstream::Notes => "notes",
        }
    }

    /// Its tools, as it lists them.
    pub const fn tools(self) -> &'static [&'static str] {
        match self {
            Upstream::Search => &["query"],
            Upstream::Weather => &["forecast"],
            Upstream::Notes => &["get", "put"],
        }
    }

    /// Its position in [`Upstream::ALL`].
    pub const fn position(self) -> usize {
        self as usize
    }
}

/// How an upstream answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// It answers every call (`notes` answers bad arguments with `isError: true`).
    Healthy,
    /// The middleware in front of the MCP endpoint answers every request HTTP 503.
    Unavailable,
    /// Its tools never answer: the gateway's per-call timeout has to fire.
    Hang,
}

impl Mode {
    /// Whether the server is unhealthy in this mode.
    pub const fn is_failing(self) -> bool {
        !matches!(self, Mode::Healthy)
    }

    /// The mode in a few words, for logs.
    pub const fn describe(self) -> &'static str {
        match self {
            Mode::Healthy => "healthy",
            Mode::Unavailable => "down: HTTP 503 in front of its MCP endpoint",
            Mode::Hang => "hanging: its tools never answer",
        }
    }

    /// The mode as the JSON report names it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Healthy => "healthy",
            Mode::Unavailable => "http_503",
            Mode::Hang => "hang",
        }
    }

    const fn encode(self) -> u8 {
        match self {
            Mode::Healthy => 0,
            Mode::Unavailable => 1,
            Mode::Hang => 2,
        }
    }

    const fn decode(byte: u8) -> Mode {
        match byte {
            1 => Mode::Unavailable,
            2 => Mode::Hang,
            _ => Mode::Healthy,
        }
    }
}

/// A server's switchboard: its mode and what reached it. Lock-free; every counter is a statistic
/// (relaxed), read live by the progress line and exactly once the server has stopped.
#[derive(Debug)]
pub struct Control {
    mode: AtomicU8,
    /// The gateway's breaker for this server, read when a call arrives (for the report only).
    breaker: Arc<CircuitBreaker>,
    reached: AtomicU64,
    reached_failing: AtomicU64,
    reached_while_open: AtomicU64,
    cancelled: AtomicU64,
}

/// What reached one server, once it has stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    /// `tools/call` requests that reached the server (counted in front of its MCP endpoint).
    pub calls: u64,
    /// Those that arrived while it was failing (503 or hanging).
    pub while_failing: u64,
    /// Those that arrived while the gateway's breaker for it read open.
    pub while_open: u64,
    /// Calls whose caller gave up while the tool hung (the gateway's cancellation reached it).
    pub cancelled: u64,
}

impl Control {
    fn new(breaker: Arc<CircuitBreaker>) -> Control {
        Control {
            mode: AtomicU8::new(Mode::Healthy.encode()),
            breaker,
            reached: AtomicU64::new(0),
            reached_failing: AtomicU64::new(0),
            reached_while_open: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
        }
    }

    /// Switch the server to `mode`; requests that arrive afterwards are answered in it.
    pub fn set_mode(&self, mode: Mode) {
        // Relaxed: the mode is a self-contained value; nothing else is published with it.
        self.mode.store(mode.encode(), Ordering::Relaxed);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        Mode::decode(self.mode.load(Ordering::Relaxed))
    }

    /// What has reached the server so far.
    pub fn reached(&self) -> Reached {
        Reached {
            calls: self.reached.load(Ordering::Relaxed),
            while_failing: self.reached_failing.load(Ordering::Relaxed),
            while_open: self.reached_while_open.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Count one `tools/call` that arrived in `mode`.
    fn arrived(&self, mode: Mode) {
        self.reached.fetch_add(1, Ordering::Relaxed);
        if mode.is_failing() {
            self.reached_failing.fetch_add(1, Ordering::Relaxed);
        }
        if self.breaker.state() == BreakerState::Open {
            self.reached_while_open.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One running upstream server.
#[derive(Debug)]
pub struct UpstreamServer {
    /// Which upstream this is.
    pub upstream: Upstream,
    /// Its MCP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Its mode and counters.
    pub control: Arc<Control>,
    stop: watch::Sender<bool>,
    task: JoinHandle<io::Result<()>>,
}

impl UpstreamServer {
    /// Start `upstream`'s server on an ephemeral port of 127.0.0.1, healthy; `breaker` is the
    /// gateway's breaker for it, whose state the server notes when a call arrives.
    ///
    /// # Errors
    ///
    /// The error of binding the listener.
    pub async fn spawn(
        upstream: Upstream,
        breaker: Arc<CircuitBreaker>,
    ) -> io::Result<UpstreamServer> {
        let listener = crate::listen::tcp((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        // Small requests and answers: send them at once.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let control = Arc::new(Control::new(breaker));
        let (stop, stopping) = watch::channel(false);
        let handler = Handler {
            upstream,
            control: Arc::clone(&control),
            stopping: stopping.clone(),
            notes: Arc::new(Mutex::new(HashMap::from([(
                "plan.md".to_owned(),
                "1. ship the breaker\n2. write the docs\n".to_owned(),
            )]))),
        };
        // Stateless, JSON answers: each call is one POST answered in its body, so a caller that
        // gives up drops the POST, and that cancels the handler.
        let mut config = StreamableHttpServerConfig::default();
        config.legacy_session_mode = false;
        config.json_response = true;
        let service: StreamableHttpService<Handler, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(handler.clone()), Default::default(), config);
        let app = Router::new()
            .nest_service(MCP_PATH, service)
            .layer(middleware::from_fn_with_state(Arc::clone(&control), front));
        let mut signal = stopping;
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = signal.wait_for(|stopping| *stopping).await;
                })
                .await
        });
        Ok(UpstreamServer {
            upstream,
            url: format!("http://{addr}{MCP_PATH}"),
            control,
            stop,
            task,
        })
    }

    /// Stop accepting, release hanging tools, let in-flight requests finish and close every
    /// connection; what reached the server. Gives up (and aborts the server) after `grace`.
    ///
    /// # Errors
    ///
    /// The server's own error, or a note that it did not stop within `grace`; the counts are
    /// still those of the server.
    pub async fn shutdown(self, grace: Duration) -> (Reached, io::Result<()>) {
        self.stop.send_replace(true);
        let mut task = self.task;
        let stopped = match tokio::time::timeout(grace, &mut task).await {
            Ok(Ok(served)) => served,
            Ok(Err(join)) => Err(io::Error::other(join)),
            Err(_) => {
                task.abort();
                Err(io::Error::other(format!(
                    "{} server did not stop within {grace:?}",
                    self.upstream.name()
                )))
            }
        };
        (self.control.reached(), stopped)
    }
}

/// In front of the MCP endpoint: count the `tools/call` requests that reach the server, and
/// answer 503 while it is unavailable (nothing behind this sees the request then).
async fn front(State(control): State<Arc<Control>>, request: Request, next: Next) -> Response {
    let mode = control.mode();
    let (mut parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    };
    if is_tool_call(&bytes) {
        control.arrived(mode);
    }
    if mode == Mode::Unavailable {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(axum::http::header::RETRY_AFTER, "1")],
            "temporarily unavailable",
        )
            .into_response();
    }
    // The tool answers in the mode the call was counted in.
    parts.extensions.insert(mode);
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Whether a request body is a JSON-RPC `tools/call` request.
fn is_tool_call(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Message<'_>>(body).is_ok_and(|m| m.method == Some("tools/call"))
}

/// The MCP server behind the middleware: one per upstream, cloned for each request.
#[derive(Clone)]
struct Handler {
    upstream: Upstream,
    control: Arc<Control>,
    /// Becomes `true` when the server stops; releases hanging tools.
    stopping: watch::Receiver<bool>,
    /// `notes`' store.
    notes: Arc<Mutex<HashMap<String, String>>>,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.upstream.name(), "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(self.upstream)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mode = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Mode>().copied())
            .unwrap_or_else(|| self.control.mode());
        if mode == Mode::Hang {
            let mut stopping = self.stopping.clone();
            tokio::select! {
                () = context.ct.cancelled() => {
                    self.control.cancelled.fetch_add(1, Ordering::Relaxed);
                }
                _ = stopping.wait_for(|stopping| *stopping) => {}
            }
            return Err(ErrorData::internal_error("the server is stopping", None));
        }
        let args = request.arguments.unwrap_or_default();
        let text = |key: &str| args.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let answer = match (self.upstream, request.name.as_ref()) {
            (Upstream::Search, "query") => match text("q") {
                Some(q) if !q.trim().is_empty() => CallToolResult::structured(json!({
                    "query": q,
                    "results": [
                        {"title": "Circuit breaker pattern", "snippet": "Stop calling a failing dependency."},
                        {"title": "Retry storms", "snippet": "Why immediate retries make outages worse."},
                    ],
                })),
                _ => tool_error("invalid argument `q`: a non-empty search query is required"),
            },
            (Upstream::Weather, "forecast") => match text("city") {
                Some(city) if !city.trim().is_empty() => {
                    CallToolResult::structured(json!({"city": city, "sky": "clear", "temp_c": 21}))
                }
                _ => tool_error("invalid argument `city`: a city name is required"),
            },
            (Upstream::Notes, tool @ ("get" | "put")) => {
                let path = match text("path") {
                    Some(path) if valid_path(&path) => path,
                    _ => {
                        return Ok(tool_error(
                            "invalid argument `path`: must be a non-empty relative path without `..`",
                        )
                        .into());
                    }
                };
                let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                if tool == "put" {
                    let content = text("text").unwrap_or_default();
                    let bytes = content.len();
                    notes.insert(path.clone(), content);
                    CallToolResult::structured(json!({"path": path, "written": bytes}))
                } else {
                    match notes.get(&path) {
                        Some(content) => {
                            CallToolResult::structured(json!({"path": path, "content": content}))
                        }
                        None => tool_error(&format!("no note at `{path}`")),
                    }
                }
            }
            (_, name) => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{name}`"),
                    None,
                ));
            }
        };
        Ok(answer.into())
    }
}

/// The tool's own error answer: `isError: true` with words for the model, and no
/// `structuredContent` (so no `status` field: nothing a reader could take for the gateway's
/// `blocked` or `failed`).
fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn valid_path(path: &str) -> bool {
    !path.trim().is_empty() && !path.starts_with('/') && !path.split('/').any(|part| part == "..")
}

/// `upstream`'s tools, as it lists them.
fn tools(upstream: Upstream) -> Vec<Tool> {
    let schema = |properties: serde_json::Value, required: &[&str]| -> Arc<JsonObject> {
        let value = json!({"type": "object", "properties": properties, "required": required});
        match value {
            serde_json::Value::Object(object) => Arc::new(object),
            _ => Arc::new(JsonObject::new()),
        }
    };
    match upstream {
        Upstream::Search => vec![Tool::new(
            "query",
            "Search the web; the top results with a snippet each.",
            schema(json!({"q": {"type": "string"}}), &["q"]),
        )],
        Upstream::Weather => vec![Tool::new(
            "forecast",
            "Today's forecast for a city.",
            schema(json!({"city": {"type": "string"}}), &["city"]),
        )],
        Upstream::Notes => vec![
            Tool::new(
                "get",
                "Read a note by its relative path.",
                schema(json!({"path": {"type": "string"}}), &["path"]),
            ),
            Tool::new(
                "put",
                "Write a note at a relative path.",
                schema(
                    json!({"path": {"type": "string"}, "text": {"type": "string"}}),
                    &["path", "text"],
                ),
            ),
        ],
    }
}
