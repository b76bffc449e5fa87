//! The relay end to end on real sockets: an rmcp upstream over Streamable HTTP, the gateway's
//! sessions served by rmcp's Streamable HTTP service, an rmcp client.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, SamplingMessage, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};
use toolbreaker::Registry;
use toolbreaker_gateway::config::{GatewayConfig, Transport, UpstreamConfig};
use toolbreaker_gateway::relay::Gateway;

/// An upstream with `echo` (answers its `text`) and `ask` (reports progress, asks the client
/// for a sample, answers it).
#[derive(Clone)]
struct Up;

impl ServerHandler for Up {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(serde_json::Map::from_iter([("type".to_owned(), "object".into())]));
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "echo", schema.clone()),
            Tool::new("ask", "ask", schema),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let answer = match request.name.as_ref() {
            "echo" => {
                let text = request
                    .arguments
                    .and_then(|a| a.get("text").and_then(|t| t.as_str()).map(str::to_owned))
                    .unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            "ask" => {
                if let Some(token) = context.meta.get_progress_token() {
                    let _ = context.peer.notify_progress(ProgressNotificationParam::new(token, 0.5)).await;
                }
                let sampled = context
                    .peer
                    .create_message(CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10))
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let text = sampled.message.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            _ => return Err(ErrorData::invalid_params("no such tool", None)),
        };
        Ok(answer.into())
    }
}

/// A client that answers sampling with "sampled" and records progress.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_sampling().build(),
            Implementation::new("test-client", "0"),
        )
    }

    async fn create_message(
        &self,
        _: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(CreateMessageResult::new(SamplingMessage::assistant_text("sampled"), "m".into()))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push(params);
    }
}

async fn serve<S: ServerHandler + Send + 'static>(
    factory: impl Fn() -> S + Send + Sync + 'static,
) -> String {
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await.unwrap();
    });
    format!("http://{addr}/mcp")
}

fn upstream(name: &str, prefix: &str, url: &str) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        prefix: prefix.into(),
        transport: Transport::Http { url: url.into(), headers: vec![] },
        allow: None,
        deny: vec![],
        per_call_timeout: Duration::from_secs(10),
        classifier: Default::default(),
        tools: vec![],
    }
}

async fn gateway(upstreams: Vec<UpstreamConfig>) -> (Gateway, String) {
    let gateway = Gateway::new("gw", Registry::builder().build(), Duration::from_secs(30));
    gateway
        .start(GatewayConfig { upstreams, registry: Default::default() })
        .await
        .unwrap();
    let g = gateway.clone();
    let url = serve(move || g.session()).await;
    (gateway, url)
}

async fn client(url: &str) -> (Client, RunningService<RoleClient, Client>) {
    let handler = Client::default();
    let service = handler
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .unwrap();
    (handler, service)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_under_the_prefix_and_calls_relay_progress_and_sampling() {
    let up = serve(|| Up).await;
    let (_gateway, url) = gateway(vec![upstream("up", "up.", &up)]).await;
    let (handler, service) = client(&url).await;
    let tools = service.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["up.ask", "up.echo"]);

    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hello".into());
    let echoed = service
        .call_tool(CallToolRequestParams::new("up.echo").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text().unwrap().text, "hello");

    let asked = service.call_tool(CallToolRequestParams::new("up.ask")).await.unwrap();
    assert_eq!(asked.content[0].as_text().unwrap().text, "sampled", "{asked:?}");
    let progress = handler.progress.lock().unwrap().clone();
    assert_eq!(progress.len(), 1, "the upstream's progress reached the client: {progress:?}");

    let unknown = service.call_tool(CallToolRequestParams::new("up.nothing")).await;
    assert!(unknown.is_err(), "{unknown:?}");
}
