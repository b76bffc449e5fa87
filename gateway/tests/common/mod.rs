//! What the gateway's tests share: an rmcp upstream, served over Streamable HTTP or stdio, and
//! an rmcp client.
#![allow(deprecated, dead_code)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, SamplingMessage, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};

/// An upstream with `echo` (answers its `text`) and `ask` (reports progress, asks the client
/// for a sample, answers it).
#[derive(Clone)]
pub struct Up {
    /// Whether it has `crash`, which ends the process (stdio upstreams only).
    pub crashable: bool,
}

impl ServerHandler for Up {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(rmcp::model::ListResourcesResult::with_all_items(vec![
            rmcp::model::Resource::new("mem://a", "a"),
        ]))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        if request.uri != "mem://a" {
            return Err(ErrorData::resource_not_found("no such resource", None));
        }
        Ok(
            rmcp::model::ReadResourceResult::new(vec![rmcp::model::ResourceContents::text(
                "A", "mem://a",
            )])
            .into(),
        )
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(serde_json::Map::from_iter([(
            "type".to_owned(),
            "object".into(),
        )]));
        let mut tools = vec![
            Tool::new("echo", "echo", schema.clone()),
            Tool::new("ask", "ask", schema.clone()),
            Tool::new("fail", "answers an internal error", schema.clone()),
        ];
        if self.crashable {
            tools.push(Tool::new(
                "crash",
                "ends the upstream's process",
                schema.clone(),
            ));
            tools.push(Tool::new(
                "getenv",
                "the value of environment variable `text`",
                schema,
            ));
        }
        // The same catalogue for every client, for a minute (SEP-2549): a gateway may serve it
        // to any client while this upstream is down.
        let mut listed = ListToolsResult::with_all_items(tools);
        listed.ttl_ms = Some(60_000);
        listed.cache_scope = Some(rmcp::model::CacheScope::Public);
        Ok(listed)
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
                    let _ = context
                        .peer
                        .notify_progress(ProgressNotificationParam::new(token, 0.5))
                        .await;
                }
                let sampled = if modern(&context) {
                    // 2026-07-28: the sample is asked for as `input_required`, and comes back
                    // with the retry.
                    match request
                        .input_responses
                        .as_ref()
                        .and_then(|answers| answers.get("sample"))
                    {
                        Some(answer) => {
                            serde_json::from_value::<CreateMessageResult>(answer.clone())
                                .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?
                        }
                        None => return Ok(ask_for_a_sample().into()),
                    }
                } else {
                    context
                        .peer
                        .create_message(sample_request())
                        .await
                        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
                };
                let text = sampled
                    .message
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            "crash" if self.crashable => std::process::exit(3),
            "getenv" if self.crashable => {
                let name = request
                    .arguments
                    .and_then(|a| a.get("text").and_then(|t| t.as_str()).map(str::to_owned))
                    .unwrap_or_default();
                let value = std::env::var(&name).unwrap_or_else(|_| "<unset>".to_owned());
                CallToolResult::success(vec![ContentBlock::text(value)])
            }
            "fail" => return Err(ErrorData::internal_error("the upstream is failing", None)),
            _ => return Err(ErrorData::invalid_params("no such tool", None)),
        };
        Ok(answer.into())
    }
}

/// Whether a request is a 2026-07-28 client's (no session: input is asked for as
/// `input_required`).
pub fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// What `ask` samples.
pub fn sample_request() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 10)
}

/// What the tests' clients answer a request for a sample with.
pub fn sampled() -> CreateMessageResult {
    CreateMessageResult::new(SamplingMessage::assistant_text("sampled"), "m".into())
}

/// `ask`'s request for a sample, in 2026-07-28's form.
pub fn ask_for_a_sample() -> rmcp::model::InputRequiredResult {
    let request = rmcp::model::CreateMessageRequest::new(sample_request());
    rmcp::model::InputRequiredResult::from_input_requests(
        [(
            "sample".to_owned(),
            rmcp::model::InputRequest::CreateMessage(request),
        )]
        .into(),
    )
}

/// An upstream that speaks only the protocol revisions `versions` (`S`'s tools, resources and
/// behaviour otherwise): a 2025-11-25-only upstream has no `server/discover`, a
/// 2026-07-28-only one no `initialize`.
#[derive(Clone)]
pub struct Only<S> {
    pub server: S,
    pub versions: &'static [rmcp::model::ProtocolVersion],
}

/// 2025-11-25 and the revisions before it, which have `initialize` and sessions.
pub const LEGACY: &[rmcp::model::ProtocolVersion] = &[
    rmcp::model::ProtocolVersion::V_2025_11_25,
    rmcp::model::ProtocolVersion::V_2025_06_18,
    rmcp::model::ProtocolVersion::V_2025_03_26,
];

/// Both eras.
pub const BOTH: &[rmcp::model::ProtocolVersion] = &[
    rmcp::model::ProtocolVersion::V_2026_07_28,
    rmcp::model::ProtocolVersion::V_2025_11_25,
    rmcp::model::ProtocolVersion::V_2025_06_18,
    rmcp::model::ProtocolVersion::V_2025_03_26,
];

/// 2026-07-28 alone.
pub const MODERN: &[rmcp::model::ProtocolVersion] = &[rmcp::model::ProtocolVersion::V_2026_07_28];

impl<S: ServerHandler> ServerHandler for Only<S> {
    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        std::borrow::Cow::Borrowed(self.versions)
    }

    async fn list_resources(
        &self,
        params: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        self.server.list_resources(params, context).await
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        self.server.read_resource(request, context).await
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.server.list_tools(params, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        self.server.call_tool(request, context).await
    }
}

/// A client that answers sampling with "sampled" and records progress.
#[derive(Clone, Default)]
pub struct Client {
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// Told at each progress notification (rmcp hands the client each in a task of its own,
    /// so one may still be on its way when the call's answer is read).
    pub progressed: Arc<tokio::sync::Notify>,
    pub tools_changed: Arc<tokio::sync::Notify>,
    /// The stream each sampling request arrived on (rmcp's `InboundStreamOrigin`).
    pub sampled_on: Arc<Mutex<Vec<Option<rmcp::service::InboundStreamOrigin>>>>,
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
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let origin = context
            .extensions
            .get::<rmcp::service::InboundStreamOrigin>()
            .cloned();
        self.sampled_on.lock().unwrap().push(origin);
        Ok(sampled())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
        self.progressed.notify_one();
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }
}

impl Client {
    /// The progress notifications received, once there are `count` of them (waited for
    /// notification by notification, 20 s at most in all).
    pub async fn progress_of(&self, count: usize) -> Vec<ProgressNotificationParam> {
        let wait = async {
            loop {
                let next = self.progressed.notified();
                if self.progress.lock().unwrap().len() >= count {
                    return;
                }
                next.await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(20), wait).await;
        self.progress.lock().unwrap().clone()
    }
}

/// An upstream over Streamable HTTP at `url`, shown under `prefix`, with the defaults of a
/// config file's section (10 s per call).
pub fn http_upstream(
    name: &str,
    prefix: &str,
    url: &str,
) -> toolbreaker_gateway::config::UpstreamConfig {
    toolbreaker_gateway::config::UpstreamConfig {
        name: name.into(),
        prefix: prefix.into(),
        transport: toolbreaker_gateway::config::Transport::Http {
            url: url.into(),
            headers: vec![],
        },
        allow: None,
        deny: vec![],
        per_call_timeout: std::time::Duration::from_secs(10),
        max_call: toolbreaker_gateway::config::MAX_CALL,
        classifier: Default::default(),
        tools: vec![],
        era: Default::default(),
        required: false,
        redaction: Default::default(),
    }
}

pub async fn serve<S: ServerHandler + Send + 'static>(
    factory: impl Fn() -> S + Send + Sync + 'static,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_on(listener, factory).await
}

pub async fn serve_on<S: ServerHandler + Send + 'static>(
    listener: tokio::net::TcpListener,
    factory: impl Fn() -> S + Send + Sync + 'static,
) -> String {
    let service = StreamableHttpService::new(
        move || Ok(factory()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().nest_service("/mcp", service))
            .await
            .unwrap();
    });
    format!("http://{addr}/mcp")
}

pub async fn client(url: &str) -> (Client, RunningService<RoleClient, Client>) {
    let handler = Client::default();
    let service = handler
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .unwrap();
    (handler, service)
}

/// Serves an upstream with `crash` on this process's stdin and stdout, until stdin closes.
pub async fn serve_stdio() {
    let service = Up { crashable: true }
        .serve((tokio::io::stdin(), tokio::io::stdout()))
        .await
        .expect("the gateway initializes");
    let _ = service.waiting().await;
}
