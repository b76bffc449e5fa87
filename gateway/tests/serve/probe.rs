//! What the serve tests share: a small rmcp handler whose `slow` tool waits for the test to let
//! it through, and a gateway app served on a loopback port.

// Shared with `serve_logs.rs`, which uses part of it.
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolbreaker_gateway::serve::{BearerToken, HttpApp, HttpOptions, serve};

/// The longest any test waits for an event before failing.
pub const WAIT: Duration = Duration::from_secs(10);

/// The token the served apps require.
pub const TOKEN: &str = "t0ken-of-the-serve-tests";

/// An `initialize` request, as a client's first POST.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"serve-tests","version":"1"}}}"#;

/// What the handler tells the test, and the gate its `slow` calls wait at.
pub struct Events {
    /// A `slow` call has begun waiting.
    pub entered: mpsc::UnboundedReceiver<()>,
    /// A `slow` call was cancelled while it waited.
    pub cancelled: mpsc::UnboundedReceiver<()>,
    /// One permit lets one waiting `slow` call through.
    pub gate: Arc<Semaphore>,
}

/// A handler with two listed tools: `echo` answers `echo: {q}` at once; `slow` says it has begun,
/// waits for a permit of the gate (or its cancellation), then answers `slow: done`. And one
/// unlisted: `authorization` answers whether the HTTP request had an `Authorization` header.
#[derive(Clone)]
pub struct Probe {
    entered: mpsc::UnboundedSender<()>,
    cancelled: mpsc::UnboundedSender<()>,
    gate: Arc<Semaphore>,
}

impl Probe {
    /// A handler, and the events of all its clones.
    pub fn new() -> (Probe, Events) {
        let (entered, entered_rx) = mpsc::unbounded_channel();
        let (cancelled, cancelled_rx) = mpsc::unbounded_channel();
        let gate = Arc::new(Semaphore::new(0));
        let events = Events {
            entered: entered_rx,
            cancelled: cancelled_rx,
            gate: gate.clone(),
        };
        let probe = Probe {
            entered,
            cancelled,
            gate,
        };
        (probe, events)
    }
}

fn text(text: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

impl ServerHandler for Probe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object"}).as_object().unwrap().clone();
        let tools = ["echo", "slow"].map(|name| Tool::new(name, name, schema.clone()));
        Ok(ListToolsResult::with_all_items(tools.into()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "echo" => {
                let q = request.arguments.as_ref().and_then(|a| a.get("q"));
                Ok(text(format!(
                    "echo: {}",
                    q.and_then(|q| q.as_str()).unwrap_or("")
                )))
            }
            // What the handler sees of the client's `Authorization` header.
            "authorization" => {
                let parts = context.extensions.get::<axum::http::request::Parts>();
                let parts = parts.expect("rmcp hands the handler the HTTP request's parts");
                let seen = parts.headers.contains_key("authorization");
                Ok(text(if seen { "present" } else { "absent" }.to_owned()))
            }
            "slow" => {
                let _ = self.entered.send(());
                tokio::select! {
                    permit = self.gate.acquire() => {
                        permit.expect("the gate stays open").forget();
                        Ok(text("slow: done".to_owned()))
                    }
                    () = context.ct.cancelled() => {
                        let _ = self.cancelled.send(());
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                }
            }
            _ => Err(ErrorData::invalid_params("tool not found", None)),
        }
    }
}

/// A gateway app served on a loopback port until [`Served::stop`].
pub struct Served {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub sessions: CancellationToken,
    /// How many times `/status` was asked.
    pub status_calls: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    pub server: JoinHandle<io::Result<()>>,
}

impl Served {
    /// Serves `probe` with options that require [`TOKEN`], as `adjust` changes them.
    pub async fn start(probe: Probe, adjust: impl FnOnce(&mut HttpOptions)) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut options = HttpOptions::new(addr);
        options.auth_token = BearerToken::new(TOKEN);
        adjust(&mut options);
        let status_calls = Arc::new(AtomicUsize::new(0));
        let calls = status_calls.clone();
        let status = Arc::new(move || {
            let asked = calls.fetch_add(1, Ordering::SeqCst) + 1;
            json!({"upstreams": [{"name": "search", "state": "closed", "tools": 2}], "asked": asked})
        });
        let app = HttpApp::new(&options, move || Ok(probe.clone()), status, None).unwrap();
        let sessions = app.sessions();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, app, async move {
            let _ = stopped.await;
        }));
        Served {
            addr,
            base: format!("http://{addr}"),
            sessions,
            status_calls,
            stop: Some(stop),
            server,
        }
    }

    /// The MCP endpoint's URL.
    pub fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// An rmcp client of the MCP endpoint, with `token` (the handshake done, or its error).
    pub async fn client(
        &self,
        token: Option<&str>,
    ) -> Result<RunningService<RoleClient, ()>, rmcp::service::ClientInitializeError> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.mcp());
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        tokio::time::timeout(WAIT, ().serve(transport))
            .await
            .expect("the handshake ends within the wait")
    }

    /// Sends the shutdown signal.
    pub fn stop(&mut self) {
        self.stop.take().expect("stopped once").send(()).unwrap();
    }

    /// Waits for [`serve`] to return; its result.
    pub async fn returned(self) -> io::Result<()> {
        tokio::time::timeout(WAIT, self.server)
            .await
            .expect("serve returns within the wait")
            .expect("serve does not panic")
    }
}

/// A call of `tool` with no arguments.
pub fn call(tool: &'static str) -> CallToolRequestParams {
    CallToolRequestParams::new(tool)
}

/// The one text content of a result.
pub fn text_of(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "one content: {result:?}");
    result.content[0]
        .as_text()
        .expect("a text content")
        .text
        .clone()
}

/// Waits for the next event on `events`, failing after [`WAIT`].
pub async fn next(events: &mut mpsc::UnboundedReceiver<()>, what: &str) {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .expect("the handler lives");
}
