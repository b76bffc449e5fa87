//! [`GuardedClient`]: an rmcp client whose every `call_tool` goes through the guard pipeline.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, Tool,
};
use rmcp::service::{Peer, RoleClient};

use super::classify::McpClassifier;
use crate::agent::{AgentRun, Attempt, RetryPolicy, ToolGuard, ToolResult};
use crate::breaker::CircuitBreaker;
use crate::config::{ConfigError, Problem, duration_field, name_field};
use crate::registry::Registry;

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
/// let search = GuardedClient::builder("search", service.peer().clone(), &registry).build()?;
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
    server_route: Route,
    tools: HashMap<String, Route>,
    guard: ToolGuard<ErrorWords>,
}

/// A tool's breaker and classification.
#[derive(Clone, Debug)]
struct Route {
    breaker: Arc<CircuitBreaker>,
    classifier: McpClassifier,
}

/// Builds a [`GuardedClient`]; from [`GuardedClient::builder`].
#[derive(Debug)]
#[must_use]
pub struct GuardedClientBuilder<'r> {
    server: String,
    peer: Peer<RoleClient>,
    registry: &'r Registry,
    guard: ToolGuard,
    words: ErrorWords,
    classifier: McpClassifier,
    tool_breakers: Vec<String>,
    tool_classifiers: Vec<(String, McpClassifier)>,
}

/// The default guard: attempts of at most 10 s, no retries (a tool call may have effects; see
/// [`GuardedClientBuilder::guard`]).
const DEFAULT_PER_CALL_TIMEOUT: Duration = Duration::from_secs(10);

impl GuardedClient {
    /// A client for the MCP server `server` (a name for breakers, metrics and the model: no
    /// `.`, no whitespace), reached through `peer`, with breakers from `registry`.
    pub fn builder(
        server: impl Into<String>,
        peer: Peer<RoleClient>,
        registry: &Registry,
    ) -> GuardedClientBuilder<'_> {
        GuardedClientBuilder {
            server: server.into(),
            peer,
            registry,
            guard: ToolGuard::new(DEFAULT_PER_CALL_TIMEOUT, RetryPolicy::none()),
            words: rejection_words,
            classifier: McpClassifier::new(),
            tool_breakers: Vec::new(),
            tool_classifiers: Vec::new(),
        }
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
        self.call_tool_result(run, params).await.into()
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
            let request = match params.take() {
                Some(request) if !last => {
                    let copy = request.clone();
                    params = Some(request);
                    copy
                }
                Some(request) => request,
                // No attempt follows the last one (`call_knowing_last`): never reached.
                None => CallToolRequestParams::new(""),
            };
            peer.call_tool(request)
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

impl<'r> GuardedClientBuilder<'r> {
    /// The pipeline's per-call timeout and retry policy (default: 10 s, no retries). The words
    /// shown for an error stay this builder's ([`error_text`](Self::error_text)).
    ///
    /// Retries are off by default because a tool call may have effects and a failed attempt may
    /// still have run: a timeout, an internal error or a connection cut mid-answer all come after
    /// the server had the request, and a retry runs the tool again. Give a [`RetryPolicy`] to a
    /// server whose tools are safe to repeat (read-only, or idempotent: MCP's `readOnlyHint` and
    /// `idempotentHint` annotations say so, as hints).
    pub fn guard(mut self, guard: ToolGuard) -> Self {
        self.guard = guard;
        self
    }

    /// What the model reads of an error besides its kind: [`rejection_words`] by default;
    /// `|_| None` shows nothing but the kind and status.
    pub fn error_text(mut self, words: ErrorWords) -> Self {
        self.words = words;
        self
    }

    /// The server's classification (default: [`McpClassifier::new`]), for every tool without
    /// one of its own.
    pub fn classifier(mut self, classifier: McpClassifier) -> Self {
        self.classifier = classifier;
        self
    }

    /// `tool` gets a breaker of its own: the registry's breaker named `server.tool`, so one
    /// tool's outage leaves the server's other tools open to calls.
    pub fn tool_breaker(mut self, tool: impl Into<String>) -> Self {
        self.tool_breakers.push(tool.into());
        self
    }

    /// `tool`'s own classification, in place of the server's: for a tool whose `isError`
    /// answers relay its own upstream's outage, say.
    pub fn tool_classifier(mut self, tool: impl Into<String>, classifier: McpClassifier) -> Self {
        self.tool_classifiers.push((tool.into(), classifier));
        self
    }

    /// The client.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming `server` ([`Problem::Empty`]) when the server's name is empty or
    /// holds a `.`, whitespace or a control character (a gateway names tools `server.tool`), or
    /// `per_call_timeout` when the guard's is zero or too long.
    pub fn build(self) -> Result<GuardedClient, ConfigError> {
        // A gateway names tools `server.tool`: the name holds no `.` either.
        name_field("server", &self.server)?;
        if self.server.contains('.') {
            return Err(ConfigError::new("server", Problem::Empty));
        }
        duration_field("per_call_timeout", self.guard.per_call_timeout())?;
        let server_route = Route {
            breaker: self.registry.get(&self.server),
            classifier: self.classifier,
        };
        let mut tools: HashMap<String, Route> = HashMap::new();
        for tool in self.tool_breakers {
            let breaker = self.registry.get(&format!("{}.{tool}", self.server));
            tools.insert(
                tool,
                Route {
                    breaker,
                    classifier: server_route.classifier.clone(),
                },
            );
        }
        for (tool, classifier) in self.tool_classifiers {
            tools
                .entry(tool)
                .or_insert_with(|| server_route.clone())
                .classifier = classifier;
        }
        Ok(GuardedClient {
            inner: Arc::new(Inner {
                server: self.server,
                peer: self.peer,
                server_route,
                tools,
                guard: self.guard.error_text(self.words),
            }),
        })
    }
}
