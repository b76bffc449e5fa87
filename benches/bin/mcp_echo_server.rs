//! A trivial MCP tool server over Streamable HTTP on loopback, for the gateway comparison
//! (`benches/mcp_gateway_compare.sh`): one tool, `echo`, that answers its `text` argument as one
//! short text, and nothing else to do per call, so what a client measures is the transport and
//! rmcp's own path (and, in front of it, a proxy's).
//!
//! ```sh
//! cargo run --release -p toolbreaker-benches --bin mcp_echo_server -- --listen 127.0.0.1:8931
//! ```
//!
//! It serves rmcp's Streamable HTTP service with rmcp's defaults (sessions for the protocol
//! versions that have them, answers as event streams) at `/mcp`, on a two-worker Tokio runtime,
//! prints `ready http://ADDR/mcp` on stdout once it is listening (port 0 picks a free one) and
//! runs until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};

/// The one tool's name.
const TOOL: &str = "echo";
/// Where the service is mounted.
const PATH: &str = "/mcp";

/// The server: `echo` answers its `text` argument (or an empty text).
#[derive(Clone)]
struct Echo {
    schema: Arc<JsonObject>,
    /// How long `echo` waits before it answers.
    delay: std::time::Duration,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            TOOL,
            "Answers its `text` argument.",
            Arc::clone(&self.schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("no tool named {:?}", request.name),
                None,
            ));
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("text"))
            .and_then(|text| text.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// `--listen ADDR` (default `127.0.0.1:0`) and `--delay-ms MS` (default 0: how long `echo`
/// waits before it answers, to hold calls in flight); anything else is a usage error.
fn options() -> (SocketAddr, std::time::Duration) {
    let usage = "usage: mcp_echo_server [--listen 127.0.0.1:PORT] [--delay-ms MS]";
    let mut args = std::env::args().skip(1);
    let mut addr = "127.0.0.1:0".to_owned();
    let mut delay = 0;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => addr = args.next().unwrap_or_else(|| exit_usage(usage)),
            "--delay-ms" => {
                let ms = args.next().unwrap_or_else(|| exit_usage(usage));
                delay = ms.parse().unwrap_or_else(|_| exit_usage(usage));
            }
            "--help" | "-h" => {
                println!("{usage}");
                std::process::exit(0);
            }
            _ => exit_usage(usage),
        }
    }
    let addr = addr.parse().unwrap_or_else(|_| exit_usage(usage));
    (addr, std::time::Duration::from_millis(delay))
}

fn exit_usage(usage: &str) -> ! {
    eprintln!("{usage}");
    std::process::exit(2)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let (addr, delay) = options();
    let schema = match serde_json::json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
    }) {
        serde_json::Value::Object(schema) => Arc::new(schema),
        _ => unreachable!("a JSON object"),
    };
    let config = StreamableHttpServerConfig::default();
    let sessions_end = config.cancellation_token.clone();
    let echo = Echo { schema, delay };
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(echo.clone()), Default::default(), config);
    let router = axum::Router::new().nest_service(PATH, service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    // Small requests and answers: sent at once.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    println!("ready http://{bound}{PATH}");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            stopped().await;
            sessions_end.cancel();
        })
        .await
}

/// Ctrl-C or SIGTERM.
async fn stopped() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
