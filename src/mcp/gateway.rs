//! [`McpGateway`]: an MCP server that fronts upstream MCP servers, each call through its
//! upstream's breaker.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

use super::client::GuardedClient;
use crate::agent::AgentRun;
use crate::config::{ConfigError, Problem, duration_field};
use crate::sync::{Mutex, Ordering, RelaxedU64, lock};
use crate::types::State;

/// The path the gateway's Streamable HTTP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// An MCP server in front of upstream MCP servers: it lists their tools under namespaced names
/// (`search.query` is the upstream `search`'s tool `query`) and forwards each call through that
/// upstream's [`GuardedClient`], so through its breaker.
///
/// It relays tools only: a small gateway to embed. The gateway to deploy is the workspace
/// package `toolbreaker-gateway` (a binary with a config file, and a library): it relays all of
/// MCP (resources, prompts, completions, logging, progress, the servers' sampling, elicitation
/// and roots requests), supervises stdio upstreams, reloads on SIGHUP and serves `/metrics`.
///
/// - **Listing** (`tools/list`) asks every upstream at once, each for at most its guard's
///   per-call timeout, and answers with all their tools in one page. An upstream whose breaker
///   is open is not asked: its tools are the ones it listed last (so the model can still call
///   them, and be told they are blocked); an upstream that fails to answer is shown the same way.
/// - **Calling** (`tools/call`) strips the namespace and forwards the call with its arguments and
///   `_meta`. Each call is a run of its own ([`AgentRun`]): a deadline of
///   [`call_time_limit`](McpGatewayBuilder::call_time_limit) (default 60 s) for all its attempts.
///   The answer is the upstream's, or a `CallToolResult` with `isError: true` saying the
///   upstream is blocked or failed (see [`GuardedClient`]); a name with no upstream's prefix is
///   JSON-RPC error `-32602` (invalid params), as MCP asks for an unknown tool.
/// - **Cancellation**: a client's `notifications/cancelled`, a closed stdio, or an HTTP client
///   that drops its connection before the answer cancels the forwarded call: the upstream is
///   sent `notifications/cancelled`, and a probe's slot is given back with nothing recorded.
///
/// One upstream's outage is fenced from the others: each has its own breaker, and an open one
/// answers at once.
///
/// # Examples
///
/// ```no_run
/// use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
/// use toolbreaker::{Registry, mcp::{GuardedClient, McpGateway}};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Registry::builder().build();
/// let search = ().serve(StreamableHttpClientTransport::from_uri("http://127.0.0.1:9001/mcp")).await?;
/// let gateway = McpGateway::builder()
///     .upstream(GuardedClient::builder("search", search, &registry).build()?)
///     .build()?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// gateway.serve_http(listener, std::future::pending()).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct McpGateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    upstreams: Vec<GuardedClient>,
    by_name: HashMap<String, usize>,
    call_time_limit: Duration,
    info: ServerConfig,
    /// Each upstream's tools as it last listed them, by upstream name.
    listed: Mutex<HashMap<String, Vec<Tool>>>,
    /// Numbers the runs of forwarded calls.
    calls: RelaxedU64,
}

/// Builds an [`McpGateway`]; from [`McpGateway::builder`].
#[derive(Debug)]
#[must_use]
pub struct McpGatewayBuilder {
    upstreams: Vec<GuardedClient>,
    call_time_limit: Duration,
    name: String,
}

impl McpGateway {
    /// A gateway with no upstreams yet, calls limited to 60 s, named `toolbreaker-gateway`.
    pub fn builder() -> McpGatewayBuilder {
        McpGatewayBuilder {
            upstreams: Vec::new(),
            call_time_limit: Duration::from_secs(60),
            name: "toolbreaker-gateway".to_owned(),
        }
    }

    /// The upstreams, in the order they were added.
    pub fn upstreams(&self) -> &[GuardedClient] {
        &self.inner.upstreams
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&GuardedClient> {
        self.inner
            .by_name
            .get(name)
            .map(|&i| &self.inner.upstreams[i])
    }

    /// Every upstream's tools under namespaced names, as `tools/list` answers (see
    /// [Listing](Self)).
    pub async fn tools(&self) -> Vec<Tool> {
        let lists = self
            .inner
            .upstreams
            .iter()
            .map(|upstream| self.tools_of(upstream));
        let lists = futures::future::join_all(lists).await;
        lists.into_iter().flatten().collect()
    }

    /// One upstream's tools, namespaced: fresh if it answers in time, else the last it listed.
    async fn tools_of(&self, upstream: &GuardedClient) -> Vec<Tool> {
        // Read from the state, which counts nothing: a listing is not a blocked call.
        let open = upstream.breaker().state() == State::Open;
        let fresh = if !open {
            let limit = upstream.guard().per_call_timeout();
            tokio::time::timeout(limit, upstream.list_all_tools())
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            None
        };
        let mut listed = lock(&self.inner.listed);
        let tools = match fresh {
            Some(tools) => {
                listed.insert(upstream.server().to_owned(), tools.clone());
                tools
            }
            None => listed.get(upstream.server()).cloned().unwrap_or_default(),
        };
        drop(listed);
        tools
            .into_iter()
            .map(|mut tool| {
                tool.name = format!("{}.{}", upstream.server(), tool.name).into();
                tool
            })
            .collect()
    }

    /// Forward one call (a namespaced tool name) through its upstream's pipeline; what
    /// `tools/call` answers.
    ///
    /// # Errors
    ///
    /// JSON-RPC error `-32602` (invalid params) for a name with no upstream's prefix.
    pub async fn call(
        &self,
        mut params: CallToolRequestParams,
    ) -> Result<CallToolResult, ErrorData> {
        let Some((server, tool)) = params.name.split_once('.') else {
            return Err(unknown_tool(&params.name));
        };
        let Some(upstream) = self.upstream(server) else {
            return Err(unknown_tool(&params.name));
        };
        let tool = tool.to_owned();
        params.name = tool.into();
        // Relaxed: the number only tells runs apart in what the model and the traces read; no
        // other memory is published with it.
        let number = self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let run = AgentRun::new(
            format!("gateway-{number}"),
            self.inner.call_time_limit,
            u32::MAX,
        );
        Ok(upstream.call_tool(&run, params).await)
    }

    /// The gateway as rmcp's Streamable HTTP service (a tower service; mount it at
    /// [`MCP_PATH`] or anywhere), stateless: each request is served on its own, so a client
    /// that drops its connection cancels its call. Hosts allowed: rmcp's default, loopback.
    pub fn streamable_http_service(
        &self,
    ) -> StreamableHttpService<McpGateway, LocalSessionManager> {
        let mut config = StreamableHttpServerConfig::default();
        config.legacy_session_mode = false;
        config.json_response = true;
        self.streamable_http_service_with(config)
    }

    /// [`streamable_http_service`](Self::streamable_http_service) with rmcp's settings as
    /// given (allowed hosts for a gateway off loopback, say).
    pub fn streamable_http_service_with(
        &self,
        config: StreamableHttpServerConfig,
    ) -> StreamableHttpService<McpGateway, LocalSessionManager> {
        let gateway = self.clone();
        StreamableHttpService::new(move || Ok(gateway.clone()), Default::default(), config)
    }

    /// Serve Streamable HTTP at [`MCP_PATH`] on `listener` until `shutdown` completes.
    ///
    /// # Errors
    ///
    /// The listener's I/O errors, as `axum::serve` reports them.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let router = axum::Router::new().nest_service(MCP_PATH, self.streamable_http_service());
        // TCP_NODELAY: an answer streamed in small writes (SSE events) goes out at once, not
        // after the client's delayed ACK (about 40 ms a request with Nagle's algorithm on).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
    }

    /// Serve MCP on this process's stdin and stdout until the client closes stdin (MCP's way
    /// for a client to end a stdio server). Calls still running then are cancelled at once:
    /// their upstream calls are cancelled and their probe slots given back.
    ///
    /// # Errors
    ///
    /// The handshake's error (the client sent no valid `initialize`), or the serving task's
    /// panic, as an `io::Error`.
    pub async fn serve_stdio(self) -> io::Result<()> {
        let (closed, on_close) = tokio::sync::oneshot::channel();
        let stdin = EndOfInput {
            input: tokio::io::stdin(),
            closed: Some(closed),
        };
        let running = self
            .serve((stdin, tokio::io::stdout()))
            .await
            .map_err(io::Error::other)?;
        // rmcp lets a closed transport's handlers run for a while before it cancels them; a
        // closed stdin is the client gone, so its calls are cancelled now.
        let cancel = running.cancellation_token();
        let watch = tokio::spawn(async move {
            if on_close.await.is_ok() {
                cancel.cancel();
            }
        });
        let quit = running.waiting().await;
        watch.abort();
        quit.map_err(io::Error::other)?;
        Ok(())
    }
}

/// Input that says when it has ended: the first read that returns no bytes (end of file, or an
/// error) sends on `closed`.
struct EndOfInput<R> {
    input: R,
    closed: Option<tokio::sync::oneshot::Sender<()>>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let before = buf.filled().len();
        let asked = buf.remaining() > 0;
        let polled = std::pin::Pin::new(&mut self.input).poll_read(cx, buf);
        let ended = match &polled {
            std::task::Poll::Ready(Ok(())) => asked && buf.filled().len() == before,
            std::task::Poll::Ready(Err(_)) => true,
            std::task::Poll::Pending => false,
        };
        if ended && let Some(closed) = self.closed.take() {
            let _ = closed.send(());
        }
        polled
    }
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown tool `{name}`"), None)
}

impl McpGatewayBuilder {
    /// Front `upstream`; its tools are listed as `{upstream.server()}.{tool}`.
    pub fn upstream(mut self, upstream: GuardedClient) -> Self {
        self.upstreams.push(upstream);
        self
    }

    /// The longest a forwarded call may take, every attempt and retry wait together (default
    /// 60 s): the deadline of the call's run. It must be longer than every upstream's per-call
    /// timeout.
    pub fn call_time_limit(mut self, limit: Duration) -> Self {
        self.call_time_limit = limit;
        self
    }

    /// The name the gateway gives itself in MCP's `initialize` (default `toolbreaker-gateway`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The gateway.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming `upstream` ([`Problem::Duplicate`]) when two upstreams have one
    /// name, or `call_time_limit` when it is zero, too long, or no longer than an upstream's
    /// per-call timeout ([`Problem::TooShort`]: every attempt would be cut by the call's deadline,
    /// which records nothing, and a hanging upstream would never trip its breaker).
    pub fn build(self) -> Result<McpGateway, ConfigError> {
        duration_field("call_time_limit", self.call_time_limit)?;
        // An attempt cut by the call's deadline records nothing (it says nothing about the
        // upstream), so a limit no longer than an attempt's would hide a hanging upstream from
        // its breaker for ever.
        if self
            .upstreams
            .iter()
            .any(|u| self.call_time_limit <= u.guard().per_call_timeout())
        {
            return Err(ConfigError::new("call_time_limit", Problem::TooShort));
        }
        let mut by_name = HashMap::new();
        for (i, upstream) in self.upstreams.iter().enumerate() {
            if by_name.insert(upstream.server().to_owned(), i).is_some() {
                return Err(ConfigError::new("upstream", Problem::Duplicate));
            }
        }
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name, env!("CARGO_PKG_VERSION")));
        Ok(McpGateway {
            inner: Arc::new(Inner {
                upstreams: self.upstreams,
                by_name,
                call_time_limit: self.call_time_limit,
                info,
                listed: Mutex::new(HashMap::new()),
                calls: RelaxedU64::new(0),
            }),
        })
    }
}

impl ServerHandler for McpGateway {
    fn get_info(&self) -> ServerConfig {
        self.inner.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools().await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Cancelled (the client's notification, a closed stdio, a dropped HTTP connection):
        // the forwarded call is dropped, which sends the upstream `notifications/cancelled` and
        // gives a probe's slot back. rmcp sends no answer to a cancelled request.
        tokio::select! {
            biased;
            () = context.ct.cancelled() => Err(ErrorData::internal_error("cancelled", None)),
            answer = self.call(request) => answer.map(CallToolResponse::from),
        }
    }

    fn get_tool(&self, _name: &str) -> Option<Tool> {
        None
    }
}
