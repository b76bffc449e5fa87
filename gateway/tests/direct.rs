//! The direct road of a 2026-07-28 client's tool call (`Gateway::shortcut`, as the binary
//! serves it): the gateway app in front of a real rmcp upstream (2026-07-28 over HTTP) whose
//! requests are recorded as they arrive. The arguments reach the upstream as the client wrote
//! them; the breaker admits each call before any byte goes upstream (a tripped breaker's call
//! never reaches it); an upstream's status is classified as on rmcp's road; a request the
//! direct road does not take (an `Origin`, a log level) is still answered, by rmcp. A
//! 2025-11-25 session's call takes the direct road too, answered as rmcp answers such a
//! client, and its client's `notifications/cancelled` ends it.
#![allow(deprecated)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use common::Up;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolbreaker::Registry;
use toolbreaker_gateway::config::GatewayConfig;
use toolbreaker_gateway::relay::Gateway;
use toolbreaker_gateway::serve::{HttpApp, HttpOptions};

/// The longest any request here may take.
const WAIT: Duration = Duration::from_secs(20);

/// What the upstream saw, and whether it answers tool calls `503` now, or refuses them for a
/// capability the client did not declare (`-32021`, HTTP 400, as a 2026-07-28 server does).
#[derive(Clone, Default)]
struct Seen {
    calls: Arc<Mutex<Vec<String>>>,
    /// Told of each call recorded, and of each answer read to its end.
    heard: Arc<tokio::sync::Notify>,
    /// How many answers to calls were read to their end.
    completed: Arc<std::sync::atomic::AtomicUsize>,
    failing: Arc<AtomicBool>,
    refusing: Arc<AtomicBool>,
}

impl Seen {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    /// Until `done` holds of what was seen (or panics after 200 changes).
    async fn until(&self, done: impl Fn(&Seen) -> bool) {
        for _ in 0..200 {
            if done(self) {
                return;
            }
            let _ = tokio::time::timeout(WAIT, self.heard.notified()).await;
        }
        assert!(done(self), "never seen: {:?}", self.calls());
    }
}

/// Records each `tools/call` body; answers it `503` while `failing`.
async fn record(State(seen): State<Seen>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let text = String::from_utf8_lossy(&body).into_owned();
    if text.contains("\"tools/call\"") {
        seen.calls.lock().unwrap().push(text.clone());
        seen.heard.notify_one();
        if seen.failing.load(Ordering::SeqCst) {
            return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
        }
        if seen.refusing.load(Ordering::SeqCst) {
            let id = serde_json::from_str::<Value>(&text).unwrap()["id"].clone();
            let refusal = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32021, "message": "the client did not declare sampling"}});
            return (
                axum::http::StatusCode::BAD_REQUEST,
                [("content-type", "application/json")],
                refusal.to_string(),
            )
                .into_response();
        }
    }
    let call = text.contains("\"tools/call\"");
    let response = next.run(Request::from_parts(parts, body.into())).await;
    if !call {
        return response;
    }
    // Its answer's body, counted once the gateway has read it to its end.
    let (parts, body) = response.into_parts();
    let body = futures::stream::unfold(
        (body.into_data_stream(), Some(seen)),
        |(mut body, seen)| async move {
            use futures::StreamExt as _;
            match body.next().await {
                Some(chunk) => Some((chunk, (body, seen))),
                None => {
                    if let Some(seen) = seen {
                        seen.completed.fetch_add(1, Ordering::SeqCst);
                        seen.heard.notify_one();
                    }
                    None
                }
            }
        },
    );
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

struct Stack {
    mcp: String,
    http: reqwest::Client,
    seen: Seen,
    gateway: Gateway,
    _stop: oneshot::Sender<()>,
}

impl Stack {
    async fn start() -> Stack {
        Stack::start_with(|| Up { crashable: false }, "echo").await
    }

    /// The stack with the upstream `factory` serves, once the gateway has listed its `tool`.
    async fn start_with<S: ServerHandler + Send + 'static>(
        factory: impl Fn() -> S + Send + Sync + 'static,
        tool: &str,
    ) -> Stack {
        let seen = Seen::default();
        let upstream = {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let service = StreamableHttpService::new(
                move || Ok(factory()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let app = axum::Router::new()
                .nest_service("/mcp", service)
                .layer(from_fn_with_state(seen.clone(), record));
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            format!("http://{addr}/mcp")
        };
        let config =
            toolbreaker::Config::new(3, Duration::from_secs(60), Duration::from_secs(5)).unwrap();
        let gateway = Gateway::new("gw", Registry::new(config), Duration::from_secs(30));
        let up = common::http_upstream("up", "up.", &upstream);
        gateway
            .start(GatewayConfig {
                upstreams: vec![up],
                registry: Default::default(),
            })
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let options = HttpOptions::new(addr);
        let (sessions, status) = (gateway.clone(), gateway.clone());
        let app = HttpApp::new(
            &options,
            move || Ok(sessions.session()),
            Arc::new(move || status.status()),
            None,
        )
        .unwrap()
        .with_shortcut(gateway.shortcut());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(toolbreaker_gateway::serve::serve(
            listener,
            app,
            async move {
                let _ = stopped.await;
            },
        ));
        let stack = Stack {
            mcp: format!("http://{addr}/mcp"),
            http: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            seen,
            gateway,
            _stop: stop,
        };
        stack.wait_for_tool(tool).await;
        stack
    }

    /// Until the gateway has listed the upstream's `tool` (the direct road needs the listing).
    async fn wait_for_tool(&self, tool: &str) {
        for _ in 0..200 {
            let upstream = &self.gateway.upstreams()[0];
            if upstream.knows_tool(tool) == Some(true) && upstream.direct_link(tool).is_some() {
                return;
            }
            // The listing is the gateway's background task; asking for it starts it now.
            let list = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list",
                "params": {"_meta": meta()}});
            self.post(&list.to_string(), &[("mcp-method", "tools/list")])
                .await;
        }
        panic!("the gateway never listed the upstream's tools by the direct road's link");
    }

    /// A 2026-07-28 POST of `body` with `headers`: its status, content type and text.
    async fn post(&self, body: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
        let mut request = self
            .http
            .post(&self.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .body(body.to_owned());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the gateway answers");
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, kind, response.text().await.unwrap())
    }

    /// A 2025-11-25 session whose client declares `capabilities`, initialized: its id.
    async fn session(&self, capabilities: Value) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}});
        let response = self
            .http
            .post(&self.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.to_string())
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let text = response.text().await.unwrap();
        assert!(text.contains("2025-11-25"), "{text}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, text) = self.in_session(&session, &initialized.to_string()).await;
        assert_eq!(status, 202, "{text}");
        session
    }

    /// A POST of `body` in 2025-11-25 session `session`: its status, content type and text.
    async fn in_session(&self, session: &str, body: &str) -> (u16, String, String) {
        let response = self
            .http
            .post(&self.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session)
            .body(body.to_owned())
            .send()
            .await
            .expect("the gateway answers");
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, kind, response.text().await.unwrap())
    }

    /// Calls `up.echo` with `arguments` (as text) in `session`: the content type of the answer
    /// and its JSON.
    async fn echo_in_session(&self, session: &str, id: u64, arguments: &str) -> (String, Value) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"up.echo","arguments":{arguments}}}}}"#
        );
        let (status, kind, text) = self.in_session(session, &body).await;
        assert_eq!(status, 200, "{text}");
        (kind, answer_in(&text, id))
    }

    /// Calls `up.echo` with `arguments` (as text), with extra `headers`: the answer's JSON.
    async fn echo(&self, id: u64, arguments: &str, headers: &[(&str, &str)]) -> Value {
        self.echo_answered(id, arguments, headers, 200).await
    }

    /// As [`echo`](Self::echo), answered with HTTP `status`.
    async fn echo_answered(
        &self,
        id: u64,
        arguments: &str,
        headers: &[(&str, &str)],
        expected: u16,
    ) -> Value {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"up.echo","arguments":{arguments},"_meta":{}}}}}"#,
            meta()
        );
        let mut all = vec![("mcp-method", "tools/call"), ("mcp-name", "up.echo")];
        all.extend_from_slice(headers);
        let (status, _, text) = self.post(&body, &all).await;
        assert_eq!(status, expected, "{text}");
        answer_in(&text, id)
    }
}

/// The answer to request `id` in `text`: plain JSON, or the event of a stream that has it.
fn answer_in(text: &str, id: u64) -> Value {
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|data| data.contains(&format!("\"id\":{id}")))
        .unwrap_or(text);
    serde_json::from_str(json).unwrap_or_else(|_| panic!("no answer in {text}"))
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arguments_reach_the_upstream_as_the_client_wrote_them() {
    let stack = Stack::start().await;
    let written = r#"{"text": "as written",   "n": 1.50, "z": [1, 2]}"#;
    let answer = stack.echo(1, written, &[]).await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "as written",
        "{answer}"
    );
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let calls = stack.seen.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0].contains(&format!(r#""arguments":{written}"#)),
        "not as written: {}",
        calls[0]
    );
    let sent: Value = serde_json::from_str(&calls[0]).unwrap();
    let meta = &sent["params"]["_meta"];
    assert_eq!(sent["params"]["name"], "echo", "{sent}");
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"], "toolbreaker-gateway",
        "the gateway's own: {sent}"
    );
    assert!(meta["progressToken"].is_u64(), "the gateway's own: {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_direct_road_leaves_is_answered_by_rmcp() {
    let stack = Stack::start().await;
    let written = r#"{"text": "by rmcp",   "n": 1.50}"#;
    // A browser's request: its `Origin` is rmcp's to check. Answered, through rmcp, which
    // writes the arguments anew.
    let answer = stack
        .echo(2, written, &[("origin", "http://localhost:3000")])
        .await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "by rmcp",
        "{answer}"
    );
    let calls = stack.seen.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        !calls[0].contains(written),
        "rmcp's road writes the arguments anew: {}",
        calls[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tripped_breakers_call_never_reaches_the_upstream() {
    let stack = Stack::start().await;
    stack.seen.failing.store(true, Ordering::SeqCst);
    // Three 503s trip the breaker (threshold 3): each is the model's error, counted.
    for id in 10..13 {
        let answer = stack.echo(id, r#"{"text": "x"}"#, &[]).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
    }
    let calls = stack.seen.calls();
    assert_eq!(calls.len(), 3);
    assert!(
        calls
            .iter()
            .all(|c| c.contains(r#""arguments":{"text": "x"}"#)),
        "each by the direct road: {calls:?}"
    );
    let upstream = &stack.gateway.upstreams()[0];
    assert_eq!(upstream.last_failure(), Some("unavailable"));
    // Open: the next call is blocked at once, and nothing goes upstream.
    let answer = stack.echo(13, r#"{"text": "x"}"#, &[]).await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(result["structuredContent"]["status"], "blocked", "{answer}");
    assert_eq!(
        result["structuredContent"]["reason"], "dependency_open",
        "{answer}"
    );
    assert_eq!(
        stack.seen.calls().len(),
        3,
        "a blocked call was sent upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_refusal_for_the_client_reaches_it_as_its_error() {
    let stack = Stack::start().await;
    stack.seen.refusing.store(true, Ordering::SeqCst);
    // The upstream's `-32021` (HTTP 400) is the client's to hear, as on rmcp's road: its
    // JSON-RPC error with HTTP 400, not the model's tool result; not counted.
    for id in 20..24 {
        let answer = stack.echo_answered(id, r#"{"text": "x"}"#, &[], 400).await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32021, "{answer}");
    }
    assert_eq!(stack.seen.calls().len(), 4, "never blocked: not counted");
    assert_eq!(stack.gateway.upstreams()[0].last_failure(), None);
}

/// More calls at once than any fixed pool of 16 lets through.
const GATHERED: usize = 24;

/// An upstream with one tool, `name`, that answers `text` once `ready` resolves (or fails
/// after [`WAIT`]).
#[derive(Clone)]
struct Waiting {
    name: &'static str,
    text: &'static str,
    ready: Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>,
}

impl Waiting {
    /// `gather`: answers once [`GATHERED`] calls are in it at once.
    fn gather(barrier: Arc<tokio::sync::Barrier>) -> Waiting {
        let ready = move || {
            let barrier = Arc::clone(&barrier);
            Box::pin(async move {
                barrier.wait().await;
            }) as futures::future::BoxFuture<'static, ()>
        };
        Waiting {
            name: "gather",
            text: "gathered",
            ready: Arc::new(ready),
        }
    }

    /// `hang`: answers once the test says so.
    fn hang(told: tokio::sync::watch::Receiver<bool>) -> Waiting {
        let ready = move || {
            let mut told = told.clone();
            Box::pin(async move {
                let _ = told.wait_for(|told| *told).await;
            }) as futures::future::BoxFuture<'static, ()>
        };
        Waiting {
            name: "hang",
            text: "answered",
            ready: Arc::new(ready),
        }
    }
}

impl ServerHandler for Waiting {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::from_value(json!({"type": "object"})).unwrap();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            self.name,
            "Answers once it is ready",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match tokio::time::timeout(WAIT, (self.ready)()).await {
            Ok(()) => Ok(CallToolResult::success(vec![ContentBlock::text(self.text)]).into()),
            Err(_) => Err(ErrorData::internal_error("never ready", None)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_many_calls_reach_the_upstream_at_once_as_clients_send_on_either_road() {
    let barrier = Arc::new(tokio::sync::Barrier::new(GATHERED));
    let stack = Stack::start_with(move || Waiting::gather(Arc::clone(&barrier)), "gather").await;
    let stack = Arc::new(stack);
    // The direct road, then rmcp's (a browser's `Origin` sends the same call through it).
    for origin in [None, Some("http://localhost:3000")] {
        let calls = (0..GATHERED as u64).map(|id| {
            let stack = Arc::clone(&stack);
            tokio::spawn(async move {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"up.gather","arguments":{{}},"_meta":{}}}}}"#,
                    meta()
                );
                let mut headers = vec![("mcp-method", "tools/call"), ("mcp-name", "up.gather")];
                headers.extend(origin.map(|origin| ("origin", origin)));
                stack.post(&body, &headers).await
            })
        });
        for call in futures::future::join_all(calls).await {
            let (status, _, text) = call.unwrap();
            assert_eq!(status, 200, "{text}");
            assert!(text.contains("gathered"), "origin {origin:?}: {text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_call_takes_the_direct_road_and_reads_as_2025_11_25_wants() {
    let stack = Stack::start().await;
    let session = stack.session(json!({})).await;
    let written = r#"{"text": "in a session",   "n": 1.50}"#;
    let (kind, answer) = stack.echo_in_session(&session, 1, written).await;
    assert_eq!(kind, "application/json", "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["content"][0]["text"], "in a session", "{answer}");
    assert!(
        result.get("resultType").is_none(),
        "2025-11-25 has none: {answer}"
    );
    let calls = stack.seen.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains(written), "not as written: {}", calls[0]);
    let sent: Value = serde_json::from_str(&calls[0]).unwrap();
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({}),
        "the session's client's: {sent}"
    );
    // An unknown session is rmcp's to refuse.
    let (status, _, text) = stack
        .in_session(
            "no-such-session",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up.echo"}}"#,
        )
        .await;
    assert_eq!(status, 404, "{text}");
    assert_eq!(stack.seen.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_an_upstream_could_ask_or_that_set_a_log_level_is_served_by_rmcp() {
    let stack = Stack::start().await;
    let written = r#"{"text": "by rmcp",   "n": 1.50}"#;
    // Its client could be asked for a sample during the call: rmcp's road asks it.
    let sampling = stack.session(json!({"sampling": {}})).await;
    let (_, answer) = stack.echo_in_session(&sampling, 1, written).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "by rmcp",
        "{answer}"
    );
    // A log level: the call's log messages go to rmcp's stream.
    let logging = stack.session(json!({})).await;
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "debug"}});
    let (status, _, text) = stack.in_session(&logging, &level.to_string()).await;
    assert_eq!(status, 200, "{text}");
    let (_, answer) = stack.echo_in_session(&logging, 3, written).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "by rmcp",
        "{answer}"
    );
    let calls = stack.seen.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls.iter().all(|call| !call.contains(written)),
        "rmcp's road writes the arguments anew: {calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_client_cancels_its_call_on_the_direct_road() {
    let (told, upstream) = tokio::sync::watch::channel(false);
    let stack = Arc::new(Stack::start_with(move || Waiting::hang(upstream.clone()), "hang").await);
    let session = stack.session(json!({})).await;
    let call = |id: &'static str| {
        let (stack, session) = (Arc::clone(&stack), session.clone());
        tokio::spawn(async move {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"up.hang","arguments":{{}}}}}}"#
            );
            stack.in_session(&session, &body).await
        })
    };
    let (cancelled, kept) = (call("c-1"), call("c-2"));
    // Both calls are upstream (each by the direct road: the upstream sees what was written).
    stack.seen.until(|seen| seen.calls().len() == 2).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "c-1", "reason": "the user left"}});
    let (status, _, text) = stack.in_session(&session, &cancel.to_string()).await;
    assert_eq!(status, 202, "{text}");
    // The cancelled call ends with no answer, as rmcp's road ends its stream.
    let (status, kind, text) = cancelled.await.unwrap();
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/event-stream"),
        "{text}"
    );
    assert!(
        !text.contains("result") && !text.contains("error"),
        "{text}"
    );
    // The other goes on, and is answered.
    told.send_replace(true);
    let (status, _, text) = kept.await.unwrap();
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "answered", "{text}");
}

/// A call of `up.hang` with id `id` in `session`, on its way.
fn hang_in(
    stack: &Arc<Stack>,
    session: &str,
    id: &'static str,
) -> tokio::task::JoinHandle<(u16, String, String)> {
    let (stack, session) = (Arc::clone(stack), session.to_owned());
    tokio::spawn(async move {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"up.hang","arguments":{{}}}}}}"#
        );
        stack.in_session(&session, &body).await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_call_goes_on_when_its_client_goes_away_and_ends_with_the_session() {
    let (told, upstream) = tokio::sync::watch::channel(false);
    let stack = Arc::new(Stack::start_with(move || Waiting::hang(upstream.clone()), "hang").await);
    let session = stack.session(json!({})).await;
    // The client goes away: 2025-11-25 does not read that as a cancellation, and the call is
    // answered upstream (its answer read to the end).
    let gone = hang_in(&stack, &session, "gone");
    stack.seen.until(|seen| seen.calls().len() == 1).await;
    gone.abort();
    assert!(gone.await.is_err(), "aborted");
    told.send_replace(true);
    stack
        .seen
        .until(|seen| seen.completed.load(Ordering::SeqCst) == 1)
        .await;
    // The session ends (`DELETE`) while a call is in it: the call ends with no answer, as
    // rmcp ends its own.
    told.send_replace(false);
    let ended = hang_in(&stack, &session, "ended");
    stack.seen.until(|seen| seen.calls().len() == 2).await;
    let deleted = stack
        .http
        .delete(&stack.mcp)
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let (status, kind, text) = ended.await.unwrap();
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/event-stream"),
        "{text}"
    );
    assert!(
        !text.contains("result") && !text.contains("error"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_rmcps_road_refuses_are_refused_alike_on_either_road_and_never_sent() {
    let stack = Stack::start().await;
    let session = stack.session(json!({})).await;
    let deep = format!("{}1{}", "[".repeat(130), "]".repeat(130));
    for (n, arguments) in [
        r#"{"text": "\ud800"}"#.to_owned(),
        r#"{"text": "x", "n": 1e400}"#.to_owned(),
        format!(r#"{{"d": {deep}}}"#),
    ]
    .iter()
    .enumerate()
    {
        let id = n as u64;
        // 2026-07-28, without and with an `Origin` (rmcp's road).
        let direct = stack.echo_answered(id, arguments, &[], 400).await;
        let browser = stack
            .echo_answered(id, arguments, &[("origin", "http://localhost:3000")], 400)
            .await;
        assert_eq!(direct["error"]["code"], -32602, "{direct}");
        assert_eq!(
            direct["error"]["code"], browser["error"]["code"],
            "{browser}"
        );
        // 2025-11-25.
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"up.echo","arguments":{arguments}}}}}"#
        );
        let (_, _, text) = stack.in_session(&session, &body).await;
        assert_eq!(answer_in(&text, id)["error"]["code"], -32602, "{text}");
    }
    assert!(stack.seen.calls().is_empty(), "{:?}", stack.seen.calls());
}
