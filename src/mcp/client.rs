//! [`GuardedClient`]: an rmcp client whose every `call_tool` goes through the guard pipeline.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService, Service};

use super::classify::McpClassifier;
use crate::agent::{AgentRun, Attempt, ToolGuard, ToolResult};
use crate::breaker::CircuitBreaker;
use crate::registry::Registry;

mod builder;

pub use self::builder::GuardedClientBuilder;

/// How a [`GuardedClient`] words an error for the model: a function from rmcp's error to the
/// words to show, or `None` for the failure's kind (and HTTP status) only.
pub type ErrorWords = fn(&ServiceError) -> Option<String>;

/// The longest a JSON-RPC error's message shown to the model may be, in bytes; longer ones are
/// cut at a character boundary and end in `…`.
const MAX_SHOWN: usize = 300;

/// A [`GuardedClient`]'s default words for an error: the server's own message of a JSON-RPC
/// error that says the *call* was wrong (`-32602` invalid params, rmcp's answer to an unknown
/// tool included; `-32601` method not found), which tells the model what to correct, cut to
/// 300 bytes. Nothing for every other error: a transport error's text (addresses, paths, a
/// library's internals) and an internal error's message never reach the model.
///
/// # Examples
///
/// ```
/// use rmcp::{ServiceError, model::ErrorData};
/// use toolbreaker::mcp::rejection_words;
///
/// let bad = ServiceError::McpError(ErrorData::invalid_params("`q` must not be empty", None));
/// assert_eq!(rejection_words(&bad).as_deref(), Some("`q` must not be empty"));
/// let internal = ServiceError::McpError(ErrorData::internal_error("db at 10.0.0.7 is down", None));
/// assert_eq!(rejection_words(&internal), None);
/// assert_eq!(rejection_words(&ServiceError::TransportClosed), None);
/// ```
pub fn rejection_words(error: &ServiceError) -> Option<String> {
    let ServiceError::McpError(data) = error else {
        return None;
    };
    if data.code != rmcp::model::ErrorCode::INVALID_PARAMS
        && data.code != rmcp::model::ErrorCode::METHOD_NOT_FOUND
    {
        return None;
    }
    let message = data.message.trim();
    if message.is_empty() {
        return None;
    }
    if message.len() <= MAX_SHOWN {
        return Some(message.to_owned());
    }
    let mut end = MAX_SHOWN;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}…", &message[..end]))
}

/// An rmcp client whose every `tools/call` goes through the guard pipeline
/// ([`ToolGuard`]): the run's deadline and budgets, the server's breaker, the per-call timeout,
/// classification ([`McpClassifier`]) and bounded retry.
///
/// One breaker per MCP server by default, the [`Registry`]'s breaker named after the server;
/// a tool given its own ([`GuardedClientBuilder::tool_breaker`]) uses the registry's breaker
/// named `server.tool`. While a breaker is open, nothing is sent to the server: the call returns
/// at once a `CallToolResult` with `isError: true`, the model's message as its one text
/// content, and the [`ToolResult`] JSON as `structuredContent` (`CallToolResult::from`, whose
/// docs are on [`ToolResult`]'s page).
///
/// Dropping a call's future (a caller's cancellation) drops the request: rmcp sends the server
/// `notifications/cancelled`, and a probe's slot is given back with nothing recorded.
///
/// Listing tools ([`list_tools`](Self::list_tools), [`list_all_tools`](Self::list_all_tools))
/// goes straight to the server: it is neither blocked nor recorded. Cloning is cheap: one
/// `Arc`.
///
/// A registry in fleet mode (feature `redis`) works as it is: the breakers are the registry's,
/// shared with every instance.
///
/// # The connection
///
/// The client owns the rmcp service it was built from ([`builder`](Self::builder)), and with
/// it the connection: it stays open as long as any clone of the client lives, and closes when
/// the last one is dropped. A client made in a helper function and returned alone keeps working;
/// handing the builder the peer alone, whose service the helper would drop (every call then a
/// counted `connect` failure), does not compile.
/// [`builder_caller_keeps_alive`](Self::builder_caller_keeps_alive) is for a caller that owns the
/// service itself.
///
/// # The transport under it
///
/// The per-call timeout covers the whole of `Peer::call_tool`, including any wait inside the
/// transport. rmcp's Streamable HTTP client (`StreamableHttpClientTransport::from_uri`) sends at
/// most 16 requests at once by default and keeps no idle connections: under more concurrent
/// calls than that, later ones queue inside rmcp, and that wait counts against the timeout (a
/// healthy, slow server can then time out, and one hanging tool can hold the slots every tool of
/// the server shares). A client making many calls at once builds its transport with
/// `StreamableHttpClientTransport::with_client`, a pooled `reqwest::Client`, and a higher
/// `StreamableHttpClientTransportConfig::max_concurrent_requests` (the `mcp_gateway` example
/// does).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use rmcp::{ServiceExt, model::CallToolRequestParams, transport::StreamableHttpClientTransport};
/// use toolbreaker::{AgentRun, Registry, mcp::GuardedClient};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Registry::builder().build();
/// let service = ().serve(StreamableHttpClientTransport::from_uri("http://127.0.0.1:8080/mcp")).await?;
/// let search = GuardedClient::builder("search", service, &registry).build()?;
///
/// let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
/// let answer = search.call_tool(&run, CallToolRequestParams::new("query")).await;
/// if answer.is_error == Some(true) {
///     // The model reads why, and what to do instead.
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct GuardedClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    server: String,
    peer: Peer<RoleClient>,
    /// The running service `peer` belongs to, when the client owns it: dropped with the last
    /// clone, which ends the connection.
    _connection: Option<Connection>,
    server_route: Route,
    tools: HashMap<String, Route>,
    guard: ToolGuard<ErrorWords>,
}

/// An rmcp `RunningService` of any handler, kept only to keep it alive.
type Connection = Box<dyn Any + Send + Sync>;

/// A tool's breaker and classification.
#[derive(Clone, Debug)]
struct Route {
    breaker: Arc<CircuitBreaker>,
    classifier: McpClassifier,
}

impl GuardedClient {
    /// A client for the MCP server `server` (a name for breakers, metrics and the model: no
    /// `.`, no whitespace), reached through `service` (an rmcp client of any handler, the
    /// handshake done), with breakers from `registry`.
    ///
    /// The client owns `service`: the connection stays open as long as any clone of the client
    /// lives, and is closed (rmcp cancels the service) when the last one is dropped.
    ///
    /// # Examples
    ///
    /// A helper that connects and returns the client alone: the connection lives in it.
    ///
    /// ```no_run
    /// use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
    /// use toolbreaker::{Registry, mcp::GuardedClient};
    ///
    /// async fn search(registry: &Registry) -> Result<GuardedClient, Box<dyn std::error::Error>> {
    ///     let transport = StreamableHttpClientTransport::from_uri("http://127.0.0.1:9001/mcp");
    ///     let service = ().serve(transport).await?;
    ///     Ok(GuardedClient::builder("search", service, registry).build()?)
    /// }
    /// ```
    ///
    /// Handing it the peer alone, whose service would be dropped at the end of the helper and
    /// every call then fail as a counted `connect` failure, does not compile:
    ///
    /// ```compile_fail,E0308
    /// use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
    /// use toolbreaker::{Registry, mcp::GuardedClient};
    ///
    /// async fn search(registry: &Registry) -> Result<GuardedClient, Box<dyn std::error::Error>> {
    ///     let transport = StreamableHttpClientTransport::from_uri("http://127.0.0.1:9001/mcp");
    ///     let service = ().serve(transport).await?;
    ///     Ok(GuardedClient::builder("search", service.peer().clone(), registry).build()?)
    /// }
    /// ```
    pub fn builder<S: Service<RoleClient>>(
        server: impl Into<String>,
        service: RunningService<RoleClient, S>,
        registry: &Registry,
    ) -> GuardedClientBuilder<'_> {
        let peer = service.peer().clone();
        GuardedClientBuilder::new(server.into(), peer, Some(Box::new(service)), registry)
    }

    /// A client for `server` over `peer` alone, for a caller that keeps the connection alive
    /// itself: one that closes the service at a time of its choosing, or awaits its end
    /// (`RunningService::waiting`) to reconnect. Otherwise as [`builder`](Self::builder).
    ///
    /// The client does not own the connection. Once the `RunningService` that `peer` belongs to
    /// is dropped or closed, every call fails at once as a counted `connect` failure, and the
    /// breaker opens on a server that is healthy. Keep the service alive as long as the client
    /// (and every clone of it) is used, or use [`builder`](Self::builder).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use rmcp::{ServiceExt, transport::StreamableHttpClientTransport};
    /// use toolbreaker::{Registry, mcp::GuardedClient};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Registry::builder().build();
    /// let service = ().serve(StreamableHttpClientTransport::from_uri("http://127.0.0.1:9001/mcp")).await?;
    /// let search =
    ///     GuardedClient::builder_caller_keeps_alive("search", service.peer().clone(), &registry)
    ///         .build()?;
    /// // ... calls through `search` ...
    /// drop(search);
    /// service.cancel().await?; // the connection closes here, after its last use
    /// # Ok(()) }
    /// ```
    pub fn builder_caller_keeps_alive(
        server: impl Into<String>,
        peer: Peer<RoleClient>,
        registry: &Registry,
    ) -> GuardedClientBuilder<'_> {
        GuardedClientBuilder::new(server.into(), peer, None, registry)
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.inner.server
    }

    /// The rmcp peer calls are sent through.
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.inner.peer
    }

    /// The server's breaker (the registry's breaker named [`server`](Self::server)).
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.inner.server_route.breaker
    }

    /// The breaker that guards `tool`: its own, if it was given one, else the server's.
    pub fn breaker_for(&self, tool: &str) -> &Arc<CircuitBreaker> {
        &self.route(tool).breaker
    }

    /// The guard every call goes through.
    pub fn guard(&self) -> &ToolGuard<ErrorWords> {
        &self.inner.guard
    }

    fn route(&self, tool: &str) -> &Route {
        if self.inner.tools.is_empty() {
            return &self.inner.server_route;
        }
        self.inner
            .tools
            .get(tool)
            .unwrap_or(&self.inner.server_route)
    }

    /// Call a tool for `run` through the pipeline; the `CallToolResult` the model reads. An
    /// answer is the server's, unchanged (`isError` answers included); a blocked, stopped or
    /// failed call is the pipeline's result as a `CallToolResult` (see
    /// [`GuardedClient`]).
    pub async fn call_tool(&self, run: &AgentRun, params: CallToolRequestParams) -> CallToolResult {
        // `call_tool_observed` awaited directly: one state machine fewer than through
        // `call_tool_result`.
        self.call_tool_observed(run, params, |_| {}).await.into()
    }

    /// [`call_tool`](Self::call_tool), as the pipeline's [`ToolResult`]: for a runtime that
    /// reads the status, the reason and the attempts before turning it into what the model sees
    /// (`CallToolResult::from`).
    pub async fn call_tool_result(
        &self,
        run: &AgentRun,
        params: CallToolRequestParams,
    ) -> ToolResult<CallToolResult> {
        self.call_tool_observed(run, params, |_| {}).await
    }

    /// [`call_tool_result`](Self::call_tool_result), reporting each attempt that reached the
    /// server to `observe` as it ends ([`ToolGuard::call_observed`]).
    pub async fn call_tool_observed(
        &self,
        run: &AgentRun,
        params: CallToolRequestParams,
        observe: impl FnMut(&Attempt),
    ) -> ToolResult<CallToolResult> {
        let route = self.route(&params.name);
        let peer = &self.inner.peer;
        // Each attempt sends its own copy of the request, but the last the retry policy allows
        // takes the original: with retries off, nothing is ever copied.
        let mut params = Some(params);
        let attempt = move |last: bool| {
            // The copy is made where the original lies, which stays there: not moved out and back.
            let request = if last { params.take() } else { params.clone() };
            // No attempt follows the last one (`call_knowing_last`): `None` is never reached.
            peer.call_tool(request.unwrap_or_else(|| CallToolRequestParams::new("")))
        };
        self.inner
            .guard
            .call_knowing_last(
                run,
                &route.breaker,
                crate::classify::with(&route.classifier),
                attempt,
                observe,
            )
            .await
    }

    /// One page of the server's tools, straight from the server (rmcp's
    /// `Peer::list_tools`): not blocked, not recorded.
    ///
    /// # Errors
    ///
    /// rmcp's, as it reports them.
    pub async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
    ) -> Result<ListToolsResult, ServiceError> {
        self.inner.peer.list_tools(params).await
    }

    /// Every tool of the server, page after page (rmcp's `Peer::list_all_tools`): not blocked,
    /// not recorded.
    ///
    /// # Errors
    ///
    /// rmcp's, as it reports them.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ServiceError> {
        self.inner.peer.list_all_tools().await
    }
}
