//! What the MCP tests share: the upstream MCP server, a hand-written rmcp `ServerHandler` whose
//! tools do what each call's `do` argument says, counting server-side what reached it, served
//! over Streamable HTTP on a loopback port (with a middleware that counts HTTP requests and can
//! answer with an HTTP error instead) or over stdio by a child process; and the client side:
//! breakers on a mock clock, guarded clients without retries, and assertions on the
//! `CallToolResult` the model reads.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;
use toolbreaker::mcp::GuardedClient;
use toolbreaker::{AgentRun, Config, Registry, RetryPolicy, ToolGuard};

/// The path MCP is served at (the gateway's too).
pub const PATH: &str = toolbreaker::mcp::MCP_PATH;

/// The longest any test waits for an event before failing.
pub const WAIT: Duration = Duration::from_secs(10);

/// Consecutive counted failures that open a breaker.
pub const THRESHOLD: u32 = 3;
/// How long an opened breaker blocks, on the mock clock.
pub const COOLDOWN: Duration = Duration::from_millis(1840);
/// A probe's lease, on the mock clock: never reached, since the mock clock only moves by hand.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// Generous: on loopback every answer arrives long before it, so it never decides an outcome.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// Longer than any test takes, so no run reaches its deadline.
pub const RUN_TIME_LIMIT: Duration = Duration::from_secs(120);
/// How many calls race for the half-open probe slot.
pub const RACERS: usize = 32;

/// A registry whose breakers read a mock clock: opened after [`THRESHOLD`] counted failures,
/// open for [`COOLDOWN`] of mock time.
pub fn registry() -> (Registry, Arc<toolbreaker::quanta::Mock>) {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let config = Config::new(THRESHOLD, COOLDOWN, PROBE_TIMEOUT).unwrap();
    let registry = Registry::builder()
        .default_config(config)
        .clock(clock)
        .build();
    (registry, mock)
}

/// The guard every client in the tests uses: no retries, so each call is at most one attempt and the
/// server-side counts are exact.
pub fn no_retries() -> ToolGuard {
    ToolGuard::new(CALL_TIMEOUT, RetryPolicy::none())
}

/// `service` guarded as the server `server`, with breakers from `registry`: the client owns it.
pub fn guarded(
    server: &str,
    service: RunningService<RoleClient, ()>,
    registry: &Registry,
) -> GuardedClient {
    GuardedClient::builder(server, service, registry)
        .guard(no_retries())
        .build()
        .unwrap()
}

/// A run far from its deadline and budget.
pub fn run() -> AgentRun {
    AgentRun::new("run-1", RUN_TIME_LIMIT, 100_000)
}

/// The one text content of a result.
pub fn text_of(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content: {result:?}");
    &result.content[0].as_text().expect("a text content").text
}

/// The `ToolResult` JSON a guarded call's `CallToolResult` carries, checked to be the
/// pipeline's shape: `isError: true`, one text content that is the JSON's `message`.
pub fn pipeline_json(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let json = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(json["message"], text_of(result), "the text is the message");
    json
}

/// Asserts `result` is a blocked call of `dependency` for `reason`; its retry-after in ms.
pub fn assert_blocked(result: &CallToolResult, dependency: &str, reason: &str) -> u64 {
    let json = pipeline_json(result);
    assert_eq!(json["status"], "blocked", "{json}");
    assert_eq!(json["dependency"], dependency, "{json}");
    assert_eq!(json["reason"], reason, "{json}");
    assert_eq!(json["attempts"], 0, "nothing was sent: {json}");
    json["retry_after_ms"].as_u64().expect("retry_after_ms")
}

/// Asserts `result` is a failed call of `dependency` of `kind` (JSON name); the JSON.
pub fn assert_failed(result: &CallToolResult, dependency: &str, kind: &str) -> Value {
    let json = pipeline_json(result);
    assert_eq!(json["status"], "failed", "{json}");
    assert_eq!(json["dependency"], dependency, "{json}");
    assert_eq!(json["kind"], kind, "{json}");
    assert_eq!(json["counted"], kind != "rejected", "{json}");
    assert_eq!(json["attempts"], 1, "{json}");
    json
}

/// Asserts `result` is the server's success answer for `tool` with no `q`.
pub fn assert_answered(result: &CallToolResult, tool: &str) {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text_of(result), format!("{tool}: "));
}

/// A control tool, never listed or counted: the server's counts as `structuredContent`
/// (`calls`, `waiting`, `cancelled`), for a test that cannot read [`Shared`] (a child process).
pub const STATS: &str = "stats";

/// A control tool, never listed or counted: lets one waiting `do: "gate"` call through.
pub const OPEN_GATE: &str = "open_gate";

/// What an upstream has seen, counted server-side, and the switches a test flips.
pub struct Shared {
    /// Every HTTP request that reached the endpoint (the middleware counts it first).
    pub http_requests: AtomicUsize,
    /// Every `tools/call` that reached the handler, control tools aside.
    pub calls: AtomicUsize,
    /// Calls that have waited (`do: "hang"`, `"gate"`, `"gate_then_fail"`), done or not.
    pub waiting: AtomicUsize,
    /// Calls whose `RequestContext::ct` fired while they waited: the server saw the cancellation.
    pub cancelled: AtomicUsize,
    /// One permit per waiting `do: "gate"` call to let through.
    pub gate: Semaphore,
    /// While set, every HTTP request is answered with this status (and `Retry-After`).
    pub fault: Mutex<Option<(u16, Option<&'static str>)>>,
    /// The arguments of the last call, as the handler received them.
    pub last_arguments: Mutex<Option<JsonObject>>,
    /// While set, every HTTP request is answered with this status, content type and body.
    pub reply: Mutex<Option<(u16, &'static str, &'static str)>>,
}

impl Shared {
    /// Nothing seen yet, no fault, the gate shut.
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared {
            http_requests: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            cancelled: AtomicUsize::new(0),
            gate: Semaphore::new(0),
            fault: Mutex::new(None),
            last_arguments: Mutex::new(None),
            reply: Mutex::new(None),
        })
    }

    /// The counts the [`STATS`] tool answers.
    pub fn stats(&self) -> Value {
        json!({
            "calls": self.calls.load(Ordering::SeqCst),
            "waiting": self.waiting.load(Ordering::SeqCst),
            "cancelled": self.cancelled.load(Ordering::SeqCst),
        })
    }
}

/// A hand-written MCP server with the tools it was given. Each call does what its `do` argument
/// says:
///
/// - absent or `"answer"`: a success, text `{tool}: {q}` (`echo` also answers its arguments as
///   `structuredContent`);
/// - `"tool_error"`: an answer with `isError: true` (the tool's own word);
/// - `"internal"`: JSON-RPC error `-32603`; `"invalid"`: JSON-RPC error `-32602`;
/// - `"hang"`: waits until the request is cancelled (`RequestContext::ct`);
/// - `"gate"` / `"gate_then_fail"`: waits for a permit of [`Shared::gate`] (or a cancellation),
///   then answers, or fails with `-32603`.
///
/// A tool it does not have is `-32602` "tool not found", as rmcp's own router answers.
#[derive(Clone)]
pub struct ToolServer {
    pub tools: Arc<[&'static str]>,
    pub shared: Arc<Shared>,
}

impl ToolServer {
    /// A server with `tools`, counting into `shared`.
    pub fn new(tools: &[&'static str], shared: Arc<Shared>) -> ToolServer {
        ToolServer {
            tools: tools.into(),
            shared,
        }
    }

    /// Waits until `ready` completes or the request is cancelled; `true` if it completed.
    async fn wait(&self, context: &RequestContext<RoleServer>, ready: impl Future) -> bool {
        self.shared.waiting.fetch_add(1, Ordering::SeqCst);
        tokio::select! {
            () = context.ct.cancelled() => {
                self.shared.cancelled.fetch_add(1, Ordering::SeqCst);
                false
            }
            _ = ready => true,
            // Bounds a handler that nobody cancels (a failing test), so no task outlives it long.
            () = tokio::time::sleep(Duration::from_secs(60)) => false,
        }
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = object(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "do": {"type": "string"}},
        }));
        let tools = self
            .tools
            .iter()
            .map(|name| Tool::new(*name, format!("the {name} tool"), schema.clone()))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            STATS => {
                let mut stats = CallToolResult::success(vec![]);
                stats.structured_content = Some(self.shared.stats());
                return Ok(stats.into());
            }
            OPEN_GATE => {
                self.shared.gate.add_permits(1);
                return Ok(CallToolResult::success(vec![]).into());
            }
            _ => {}
        }
        self.shared.calls.fetch_add(1, Ordering::SeqCst);
        *self.shared.last_arguments.lock().unwrap() = request.arguments.clone();
        if !self.tools.contains(&request.name.as_ref()) {
            return Err(ErrorData::invalid_params("tool not found", None));
        }
        let argument = |key: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let answer = || {
            let text = format!("{}: {}", request.name, argument("q"));
            let mut answer = CallToolResult::success(vec![ContentBlock::text(text)]);
            if request.name == "echo" {
                answer.structured_content = request.arguments.clone().map(Value::Object);
            }
            Ok(answer.into())
        };
        let gate = || async { self.shared.gate.acquire().await.map(|p| p.forget()) };
        match argument("do").as_str() {
            "tool_error" => {
                Ok(CallToolResult::error(vec![ContentBlock::text("no such city")]).into())
            }
            "internal" => Err(ErrorData::internal_error("the index is down", None)),
            "invalid" => Err(ErrorData::invalid_params("`q` must not be empty", None)),
            "hang" => {
                self.wait(&context, std::future::pending::<()>()).await;
                Err(ErrorData::internal_error("cancelled", None))
            }
            "gate" if self.wait(&context, gate()).await => answer(),
            "gate_then_fail" if self.wait(&context, gate()).await => {
                Err(ErrorData::internal_error("the index is down", None))
            }
            "gate" | "gate_then_fail" => Err(ErrorData::internal_error("cancelled", None)),
            _ => answer(),
        }
    }
}

/// Counts every HTTP request, and answers it with the upstream's fault (an HTTP status, with
/// `Retry-After` if given) instead of passing it on, while one is set.
async fn fault_layer(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    shared.http_requests.fetch_add(1, Ordering::SeqCst);
    let reply = *shared.reply.lock().unwrap();
    if let Some((status, content_type, body)) = reply {
        let mut response = axum::response::Response::new(axum::body::Body::from(body));
        *response.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
        let value = axum::http::HeaderValue::from_static(content_type);
        response.headers_mut().insert("content-type", value);
        return response;
    }
    let fault = *shared.fault.lock().unwrap();
    let Some((status, retry_after)) = fault else {
        return next.run(request).await;
    };
    let mut response = axum::response::Response::new(axum::body::Body::from("unavailable"));
    *response.status_mut() = axum::http::StatusCode::from_u16(status).unwrap();
    if let Some(value) = retry_after {
        let value = axum::http::HeaderValue::from_static(value);
        response.headers_mut().insert("retry-after", value);
    }
    response
}

/// How an upstream serves Streamable HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sessions {
    /// Each request on its own, answered as JSON (what the gateway serves): one HTTP request per
    /// JSON-RPC message, so the request count is exact.
    Stateless,
    /// rmcp's default: a session per client, with its event stream.
    Legacy,
}

/// An upstream MCP server on a loopback port, stopped when dropped.
pub struct Upstream {
    pub addr: SocketAddr,
    pub url: String,
    pub shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Upstream {
    /// A stateless upstream with `tools`, on an ephemeral port.
    pub async fn start(tools: &[&'static str]) -> Upstream {
        Upstream::start_at("127.0.0.1:0".parse().unwrap(), tools, Sessions::Stateless).await
    }

    /// An upstream with `tools` on `addr` (port 0 for an ephemeral one), with fresh counts.
    pub async fn start_at(
        addr: SocketAddr,
        tools: &[&'static str],
        sessions: Sessions,
    ) -> Upstream {
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let shared = Shared::new();
        let mut config = StreamableHttpServerConfig::default();
        if sessions == Sessions::Stateless {
            config = config
                .with_legacy_session_mode(false)
                .with_json_response(true);
        }
        // Cancelled at shutdown: ends sessions and their event streams, so the server stops.
        let sessions_end = config.cancellation_token.clone();
        let server = ToolServer::new(tools, shared.clone());
        let service: StreamableHttpService<ToolServer, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
        let router = axum::Router::new().nest_service(PATH, service).layer(
            axum::middleware::from_fn_with_state(shared.clone(), fault_layer),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
                sessions_end.cancel();
            };
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await;
        });
        Upstream {
            addr,
            url: format!("http://{addr}{PATH}"),
            shared,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the server and waits until its listener is closed: connects are refused after.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT, task)
                .await
                .expect("the upstream stops within the wait")
                .expect("the upstream's task ends cleanly");
        }
        let refused = tokio::net::TcpStream::connect(self.addr).await;
        assert!(refused.is_err(), "nothing listens on a stopped upstream");
    }

    /// Answer every HTTP request with `status` (and `Retry-After: retry_after`) from now on.
    pub fn fail_http(&self, status: u16, retry_after: Option<&'static str>) {
        *self.shared.fault.lock().unwrap() = Some((status, retry_after));
    }

    /// Answer every HTTP request with `status`, `content_type` and `body` from now on.
    pub fn reply(&self, status: u16, content_type: &'static str, body: &'static str) {
        *self.shared.reply.lock().unwrap() = Some((status, content_type, body));
    }

    /// Serve MCP again.
    pub fn heal(&self) {
        *self.shared.fault.lock().unwrap() = None;
        *self.shared.reply.lock().unwrap() = None;
    }

    pub fn http_requests(&self) -> usize {
        self.shared.http_requests.load(Ordering::SeqCst)
    }

    pub fn calls(&self) -> usize {
        self.shared.calls.load(Ordering::SeqCst)
    }

    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::SeqCst)
    }

    pub fn cancelled(&self) -> usize {
        self.shared.cancelled.load(Ordering::SeqCst)
    }

    /// Lets one waiting `do: "gate"` call through.
    pub fn open_gate(&self) {
        self.shared.gate.add_permits(1);
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Asserts that `breaker` is half-open with its probe slot free (nothing was recorded): a permit
/// taken now is the probe, and is given back unused.
pub fn assert_probe_slot_free(breaker: &toolbreaker::CircuitBreaker) {
    assert_eq!(
        breaker.state(),
        toolbreaker::State::HalfOpen,
        "nothing was recorded"
    );
    let permit = breaker.try_acquire().expect("the slot is free");
    assert!(permit.is_probe());
    drop(permit);
}

/// A JSON object literal as rmcp's argument map.
pub fn object(value: Value) -> JsonObject {
    value.as_object().expect("an object").clone()
}

/// A call of `tool` with `arguments`.
pub fn call(tool: &'static str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool).with_arguments(object(arguments))
}

/// A call of `tool` that does `what` (see [`ToolServer`]).
pub fn doing(tool: &'static str, what: &str) -> CallToolRequestParams {
    call(tool, json!({ "do": what }))
}

/// Polls `condition` every 2 ms until it holds; panics naming `what` after `within`.
pub async fn wait_until_within(within: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Polls `condition` every 2 ms until it holds; panics naming `what` after [`WAIT`].
pub async fn wait_until(what: &str, condition: impl FnMut() -> bool) {
    wait_until_within(WAIT, what, condition).await;
}
