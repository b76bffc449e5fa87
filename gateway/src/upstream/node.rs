//! [`Upstream`]: one upstream MCP server, its shared connection, its breakers and its last good
//! listings.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwapOption;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListToolsRequest, PaginatedRequestParams, Prompt, ProtocolVersion,
    RequestId, RequestMetaObject, Resource, ResourceTemplate, ServerCapabilities, ServerResult,
    Tool,
};
use rmcp::model::{
    CallToolResponse, GetExtensions, InputRequest, InputRequiredResult, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;
use toolbreaker::mcp::{ErrorWords, McpClassifier, rejection_words};
use toolbreaker::{
    AgentRun, Blocked, CircuitBreaker, Classified, FailureKind, Outcome, Registry, RetryPolicy,
    State, ToolGuard, ToolResult,
};

use super::client_time::{ClientTime, upstream_deadline};
use super::direct::{Answered, DirectCall, RawJson, plain_header_value};
use super::handler::UpstreamHandler;
use super::link::{Cause, Link, Unreached, connect, refused_access, unreached};
use super::listen::Listening;
use super::listing::{Freshness, Kept, Listed};
use super::meters::Meters;
use super::routes::{Origin, Routes};
use super::sessions::Sessions;
use crate::config::{Transport, UpstreamConfig};

/// The shortest and the longest wait between restarts of a stdio upstream that exited, and
/// between attempts to list an upstream whose tools are not known yet.
const RETRY_MIN: Duration = Duration::from_millis(250);
const RETRY_MAX: Duration = Duration::from_secs(30);
/// A stdio child that ran this long before it exited is restarted after the shortest wait.
const STABLE: Duration = Duration::from_secs(30);

/// The guard's own limit on an attempt: the run's limit is the one that applies first.
const GUARD_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);

/// `last_failure` of an upstream that refused the gateway access (HTTP 401 or 403).
pub const UNAUTHORIZED: &str = "unauthorized";

/// What the model reads of a stdio upstream whose process cannot be started.
const NOT_STARTED: &str =
    "not connected: its server process could not be started, and waiting will not help";

/// `result` of a call that failed because the upstream's process cannot be started (never
/// counted, as the configuration's fault, not the upstream's health) told in words that fit:
/// not as a call whose arguments were wrong.
pub fn reworded<T>(mut result: ToolResult<T>) -> ToolResult<T> {
    if let ToolResult::Failed {
        dependency,
        error,
        message,
        ..
    } = &mut result
        && error == NOT_STARTED
    {
        *message = format!(
            "{dependency} is {NOT_STARTED}: do not call it again; tell the user or use another \
             tool."
        );
    }
    result
}

/// The longest text of an error `/status` shows, in bytes.
const MAX_ERROR_TEXT: usize = 400;

/// What the model is told of a failed attempt's error: that the upstream refused access (which
/// waiting does not fix), that it is not connected (its process could not be started, or it
/// cannot be reached), the upstream's own words for a refusal (`rejection_words`), and how
/// long a timed-out call was given. Never the error's own text (it may quote a URL).
pub fn failure_words(error: &ServiceError) -> Option<String> {
    if let Some(status) = refused_access(error) {
        return Some(format!(
            "access refused (HTTP {status}): the upstream does not accept the gateway's \
             credentials for this, and waiting will not help"
        ));
    }
    if let Some(unreached) = unreached(error) {
        return Some(
            match unreached.cause {
                Cause::Start => NOT_STARTED,
                _ => "not connected: the upstream cannot be reached",
            }
            .to_owned(),
        );
    }
    match error {
        ServiceError::Timeout { timeout } => {
            Some(format!("timed out after {} ms", timeout.as_millis()))
        }
        other => rejection_words(other),
    }
}

/// Why a forwarded request got no upstream answer.
#[derive(Debug)]
pub enum Refusal {
    /// The breaker refused it: nothing was sent.
    Blocked(Blocked),
    /// It was sent (or the connection failed) and came back with this error.
    Failed(ServiceError),
}

/// One upstream MCP server.
#[derive(Debug)]
pub struct Upstream {
    config: UpstreamConfig,
    name: Arc<str>,
    /// Its request metrics, labelled with `name`.
    meters: Meters,
    breaker: Arc<CircuitBreaker>,
    tools: HashMap<String, (Arc<CircuitBreaker>, McpClassifier)>,
    guard: ToolGuard<ErrorWords>,
    routes: Arc<Routes>,
    sessions: Arc<Sessions>,
    /// The connection in force, read by every request without a lock.
    link: ArcSwapOption<Link>,
    connecting: tokio::sync::Mutex<()>,
    cache: Mutex<Cache>,
    /// The tools of the listing kept, by own name, each with whether it sends an argument in a
    /// header (`x-mcp-header`): read by every tool call without a lock.
    tool_index: ArcSwapOption<HashMap<String, bool>>,
    /// The listen stream of a 2026-07-28 upstream.
    listening: Listening,
    last_failure: Mutex<Option<&'static str>>,
    /// The HTTP status of the upstream's refusal of access in force (logged once per change),
    /// until a request succeeds.
    access_refused: Mutex<Option<u16>>,
    /// Whether `access_refused` may hold a status: read on every success.
    any_refused: AtomicBool,
    /// Why the upstream is not connected, in words (credentials taken out): the last attempt
    /// to connect's error, or the last request's that got no answer.
    unreached: Mutex<Option<String>>,
    /// The names in `allow`, `deny` and the tool sections that the last listing did not hold
    /// (warned about once per change).
    unknown_names: Mutex<Option<Vec<(&'static str, String)>>>,
    shutdown: CancellationToken,
}

/// What the upstream last listed, and said it can do.
#[derive(Debug, Default)]
struct Cache {
    /// The protocol revision of the last connection.
    era: Option<ProtocolVersion>,
    capabilities: Option<ServerCapabilities>,
    tools: Option<Kept<Tool>>,
    resources: Option<Kept<Resource>>,
    templates: Option<Kept<ResourceTemplate>>,
    prompts: Option<Kept<Prompt>>,
}

/// What one attempt of a tool call came to.
enum Reply {
    /// The tool's answer.
    Complete(CallToolResult),
    /// The tool's answer as the upstream sent it (the direct road): not an error, final;
    /// `typed` when it says its `resultType` itself.
    Raw { result: RawJson, typed: bool },
    /// A 2026-07-28 upstream's request for input, for a 2026-07-28 client to answer.
    InputRequired(InputRequiredResult),
    /// The upstream refused the request for what the client sent or lacks, not for the
    /// tool's arguments ([`for_the_client`]): the client's to hear as the JSON-RPC error it
    /// is, not the model's as a tool result.
    Refused(rmcp::ErrorData),
}

impl Reply {
    fn into_complete(self) -> CallToolResult {
        match self {
            Reply::Complete(answer) => answer,
            // Taken out before: the guard's result is matched for them first.
            Reply::Raw { .. } | Reply::InputRequired(_) | Reply::Refused(_) => {
                CallToolResult::error(vec![])
            }
        }
    }
}

/// Whether `error` says the upstream does not speak the connection's era: its own JSON-RPC
/// error to the request, or the one it answered the connection's attempt to open a new
/// session with (rmcp re-initializes a session the server forgot: the server was replaced).
fn speaks_another_era(error: &ServiceError) -> bool {
    type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;
    match error {
        ServiceError::McpError(error) => another_era(error),
        ServiceError::TransportSend(sent) => {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(sent.error.as_ref());
            while let Some(current) = source {
                if let Some(HttpError::ReinitializationFailed(error)) =
                    current.downcast_ref::<HttpError>()
                {
                    return another_era(error);
                }
                source = current.source();
            }
            false
        }
        _ => false,
    }
}

/// Whether an upstream's error says it does not speak the connection's era: an unsupported
/// protocol version (`-32022`), or a request without 2026-07-28's per-request `_meta` refused
/// as invalid params (rmcp's words for a session-era request reaching a stateless server).
fn another_era(error: &rmcp::ErrorData) -> bool {
    use rmcp::model::ErrorCode;
    error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        || (error.code == ErrorCode::INVALID_PARAMS && error.message.contains("request _meta"))
}

/// Whether an upstream's JSON-RPC error to a tool call is about the client's side of the
/// protocol rather than the call (so relayed as it is, not made the model's tool result): a
/// capability the client did not declare (`-32021`), headers that do not match the body
/// (`-32020`), and `-32602` to a retry (its `requestState` or `inputResponses` refused). None
/// of them counts against the upstream. (A protocol version, `-32022`, is the gateway's own
/// connection's: [`another_era`].)
fn for_the_client(error: &rmcp::ErrorData, retry: bool) -> bool {
    use rmcp::model::ErrorCode;
    matches!(
        error.code,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY | ErrorCode::HEADER_MISMATCH
    ) || (retry && error.code == ErrorCode::INVALID_PARAMS)
}

/// Asks a 2025-11-25 session's client each of a 2026-07-28 upstream's `input_required`
/// requests, as the server-to-client request it stands for, on the stream of the call it
/// belongs to; their answers by key, for the retry.
async fn ask_session(
    origin: &Origin,
    requests: rmcp::model::InputRequests,
) -> Result<rmcp::model::InputResponses, rmcp::ErrorData> {
    let mut answers = rmcp::model::InputResponses::new();
    // The rounds' questions are the client's time, not the upstream's.
    let _asking = origin.client_time.asking();
    for (key, request) in requests {
        let mut request = match request {
            InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
            InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
            InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
            _ => {
                return Err(rmcp::ErrorData::internal_error(
                    "the upstream asked for an input of a kind the gateway does not know",
                    None,
                ));
            }
        };
        request
            .extensions_mut()
            .insert(OriginatingRequestId(origin.request.clone()));
        // From a task of its own, as the upstream handler does: outside the handler's
        // task-local the mark above stands, and the request goes on the call's stream.
        let peer = origin.peer.clone();
        let answer = tokio::spawn(async move { peer.send_request(request).await })
            .await
            .map_err(|_| rmcp::ErrorData::internal_error("the relayed request was lost", None))?
            .map_err(super::error_data)?;
        let answer = serde_json::to_value(answer)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// Sends `notifications/cancelled` for a forwarded request dropped before its answer (a
/// client's cancellation, the pipeline's timeout, a closed client connection).
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    request: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take() {
            let request = self.request.clone();
            tokio::spawn(async move {
                let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(request),
                    Some("cancelled by the client".into()),
                ));
                let _ = peer.send_notification(cancelled.into()).await;
            });
        }
    }
}

/// An upstream's handshake (`server/discover`, `initialize`) still unanswered when its connect
/// is dropped (the caller's timeout ended it): kept and logged as why it cannot be reached, as
/// any connect error is.
struct Unanswered<'a> {
    upstream: &'a Upstream,
    since: std::time::Instant,
    armed: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.armed && !self.upstream.shutdown.is_cancelled() {
            // Worded the same each time (logged once per change); how long it waited is
            // debug-level detail.
            tracing::debug!(upstream = %self.upstream.name, waited_ms = self.since.elapsed().as_millis() as u64, "handshake unanswered");
            let text = "no answer to the MCP handshake (`server/discover` or `initialize`) \
                        within the time the caller waited (`per_call_timeout_ms`)";
            self.upstream
                .unreached(&Unreached::new(text.to_owned(), Cause::Connect));
        }
    }
}

impl Upstream {
    /// Upstream `config`, with its breakers from `registry`; its client sessions are
    /// `sessions`. Nothing connects until [`start`](Self::start) or the first request.
    pub fn new(config: UpstreamConfig, registry: &Registry, sessions: Arc<Sessions>) -> Arc<Self> {
        let name: Arc<str> = Arc::from(config.name.as_str());
        let breaker = registry.get(&config.name);
        let tools = config
            .tools
            .iter()
            .map(|tool| {
                let breaker = if tool.own_breaker {
                    registry.get(&config.breaker_name(&tool.name))
                } else {
                    breaker.clone()
                };
                let classifier = tool
                    .classifier
                    .clone()
                    .unwrap_or_else(|| config.classifier.clone());
                (tool.name.clone(), (breaker, classifier))
            })
            .collect();
        // The per-call timeout is the gateway's own, on the upstream's time alone (time spent
        // asking the client is not the upstream's: `client_time`); the guard's is the run's
        // limit.
        let guard = ToolGuard::new(GUARD_LIMIT, RetryPolicy::none())
            .error_text(failure_words as ErrorWords);
        Arc::new(Upstream {
            meters: Meters::new(&name),
            name,
            breaker,
            tools,
            guard,
            routes: Arc::default(),
            sessions,
            link: ArcSwapOption::empty(),
            connecting: tokio::sync::Mutex::new(()),
            cache: Mutex::default(),
            tool_index: ArcSwapOption::empty(),
            listening: Listening::default(),
            last_failure: Mutex::new(None),
            access_refused: Mutex::new(None),
            any_refused: AtomicBool::new(false),
            unreached: Mutex::new(None),
            unknown_names: Mutex::new(None),
            shutdown: CancellationToken::new(),
            config,
        })
    }

    /// The upstream's configuration.
    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The upstream's breaker.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    /// The kind of the last counted failure, or [`UNAUTHORIZED`] when the upstream refused the
    /// gateway access (HTTP 401 or 403: not counted), if any.
    pub fn last_failure(&self) -> Option<&'static str> {
        *lock(&self.last_failure)
    }

    /// The protocol revision of its last connection, once it has been reached.
    pub fn era(&self) -> Option<ProtocolVersion> {
        lock(&self.cache).era.clone()
    }

    /// Whether its last connection speaks 2026-07-28 or later (no sessions: its changes come
    /// on a listen stream, its requests for input as `input_required`).
    pub fn is_modern(&self) -> bool {
        self.era().is_some_and(|era| !era.has_initialize())
    }

    /// Listens to resource `uri`'s updates on a 2026-07-28 upstream (which has no
    /// `resources/subscribe`): its listen stream is reopened with it.
    pub async fn listen_to(&self, uri: &str) {
        if self.listening.add(uri)
            && let Ok(link) = self.link().await
        {
            let wait = Some(self.config.per_call_timeout);
            self.listening
                .open(&self.name, &link, &self.sessions, wait)
                .await;
        }
    }

    /// No client listens to resource `uri` any more: its listen stream is reopened without.
    pub async fn stop_listening_to(&self, uri: &str) {
        if self.listening.remove(uri) {
            let link = self.link.load_full().filter(|l| l.is_alive());
            if let Some(link) = link {
                let wait = Some(self.config.per_call_timeout);
                self.listening
                    .open(&self.name, &link, &self.sessions, wait)
                    .await;
            }
        }
    }

    /// The upstream's capabilities, once it has been reached.
    pub fn capabilities(&self) -> Option<ServerCapabilities> {
        lock(&self.cache).capabilities.clone()
    }

    /// The tools it last listed (its own names), if it has been listed.
    pub fn known_tools(&self) -> Option<Vec<Tool>> {
        lock(&self.cache)
            .tools
            .as_ref()
            .map(|kept| kept.items.clone())
    }

    /// Tool `name` (its own name) from the upstream's last listing; only that one is copied.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        lock(&self.cache)
            .tools
            .as_ref()?
            .items
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// Whether the upstream's last listing has tool `name` (its own name); `None` when it has
    /// never been listed. Asked on every call: nothing is copied.
    pub fn knows_tool(&self, name: &str) -> Option<bool> {
        self.tool_index
            .load()
            .as_ref()
            .map(|tools| tools.contains_key(name))
    }

    /// Indexes the tools of the listing kept (called under the cache's lock, so the index
    /// follows the listings in their order).
    fn index_tools(&self, kept: Option<&Kept<Tool>>) {
        let index = kept.map(|kept| {
            let names = kept.items.iter();
            let index = names.map(|t| (t.name.to_string(), names_header(&t.input_schema)));
            Arc::new(index.collect())
        });
        self.tool_index.store(index);
    }

    /// Starts the background task that lists an upstream not listed yet (one down at start)
    /// under its breaker, and restarts a stdio upstream that exited, with backoff. When its
    /// tools become known, every client session is sent `notifications/tools/list_changed`.
    pub fn start(self: &Arc<Self>) {
        let upstream = Arc::clone(self);
        tokio::spawn(async move { upstream.watch().await });
    }

    /// Ends the background task and the connection (a stdio child is ended).
    pub fn stop(&self) {
        self.shutdown.cancel();
        self.listening.close();
        self.link.store(None);
    }

    async fn watch(self: Arc<Self>) {
        let mut wait = RETRY_MIN;
        // The wait before a stdio child that exited is restarted: doubled for each child that
        // exits within `STABLE` of its start, back to the shortest after one that lived longer.
        let mut restart = RETRY_MIN;
        let mut linked_since = None;
        loop {
            let link = self.link.load_full();
            let stdio = matches!(self.config.transport, Transport::Stdio { .. });
            let needs_link = stdio && !link.as_ref().is_some_and(|l| l.is_alive());
            let unknown = lock(&self.cache).tools.is_none();
            if needs_link || unknown {
                let before = unknown;
                let ok = if needs_link {
                    self.link().await.is_ok()
                } else {
                    true
                };
                let listed = ok && (!unknown || self.list_tools().await.is_some());
                if before && lock(&self.cache).tools.is_some() {
                    for listener in self.sessions.peers() {
                        listener.tools_changed().await;
                    }
                }
                if ok && listed {
                    wait = RETRY_MIN;
                    continue;
                }
                // Asked without taking a permit: the wait is no probe.
                let delay = match self.breaker.retry_after() {
                    Some(retry_after) if !needs_link => retry_after.max(wait),
                    _ => wait,
                };
                wait = (wait * 2).min(RETRY_MAX);
                tokio::select! {
                    () = self.shutdown.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                continue;
            }
            // Linked and listed: wait for the connection to go (a child that exits).
            let since = *linked_since.get_or_insert_with(tokio::time::Instant::now);
            tokio::select! {
                () = self.shutdown.cancelled() => return,
                () = async {
                    match &link {
                        Some(link) => link.gone().await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let Some(link) = &link {
                        self.crashed(link);
                    }
                    linked_since = None;
                    restart = if since.elapsed() < STABLE { (restart * 2).min(RETRY_MAX) } else { RETRY_MIN };
                    tracing::warn!(upstream = %self.name, wait_ms = restart.as_millis() as u64, "restarting the upstream after a wait");
                    tokio::select! {
                        () = self.shutdown.cancelled() => return,
                        () = tokio::time::sleep(restart) => {}
                    }
                }
            }
        }
    }

    /// The child exited: a counted `connect` failure, and the link is dropped.
    fn crashed(&self, link: &Link) {
        if self.shutdown.is_cancelled() {
            // Ended by the gateway (a reload, a shutdown): not the upstream's failure.
            return;
        }
        self.link.store(None);
        *lock(&self.last_failure) = Some(FailureKind::Connect.as_str());
        // Counted here only when no request failed with the connection, and none is in flight
        // on it (their own failures count the crash: one crash, one failure).
        // A client's call still in flight counts it when its answer fails.
        if !link.loss_counted()
            && self.routes.sessions().is_empty()
            && let Ok(permit) = self.breaker.try_acquire()
        {
            permit.record(Outcome::Failure(FailureKind::Connect));
        }
    }

    /// The live connection, connecting when there is none.
    async fn link(&self) -> Result<Arc<Link>, ServiceError> {
        if let Some(link) = self.link.load().as_ref().filter(|l| l.is_alive()) {
            return Ok(Arc::clone(link));
        }
        let _one = self.connecting.lock().await;
        if let Some(link) = self.link.load().as_ref().filter(|l| l.is_alive()) {
            return Ok(Arc::clone(link));
        }
        if self.shutdown.is_cancelled() {
            return Err(ServiceError::TransportClosed);
        }
        let handler = UpstreamHandler::new(
            self.name.clone(),
            self.routes.clone(),
            self.sessions.clone(),
        );
        // A caller's timeout (a call's, the start's wait) may drop this future while the upstream
        // has not answered its handshake: the guard says so, as any other connect error.
        let mut unanswered = Unanswered {
            upstream: self,
            since: std::time::Instant::now(),
            armed: true,
        };
        let connected = connect(&self.name, &self.config.transport, handler, self.config.era).await;
        unanswered.armed = false;
        match connected {
            Ok(link) => {
                let link = Arc::new(link);
                if let Some(info) = link.peer().peer_info() {
                    lock(&self.cache).capabilities = Some(info.capabilities.clone());
                }
                let era = link.era();
                lock(&self.cache).era = Some(era.clone());
                self.link.store(Some(Arc::clone(&link)));
                lock(&self.unreached).take();
                self.granted();
                if link.is_modern() {
                    self.listening
                        .open(&self.name, &link, &self.sessions, None)
                        .await;
                }
                tracing::info!(upstream = %self.name, era = %era, "connected");
                Ok(link)
            }
            Err(unreached) => {
                self.unreached(&unreached);
                Err(unreached.into_service_error())
            }
        }
    }

    /// Keeps why the upstream cannot be reached (for `/status`) and logs it once per change:
    /// a down upstream is tried again and again.
    fn unreached(&self, unreached: &Unreached) {
        let text = self.shown(&unreached.text);
        let changed = lock(&self.unreached).replace(text.clone()) != Some(text.clone());
        match unreached.cause {
            Cause::Access(status) => self.refused(status),
            _ if changed => {
                tracing::warn!(upstream = %self.name, error = %text, "cannot connect")
            }
            _ => tracing::debug!(upstream = %self.name, error = %text, "cannot connect"),
        }
    }

    /// Sends `request` on the connection and waits for its answer, routing what the upstream
    /// sends about it to `origin`; `cancel` (the client's cancellation) or dropping the future
    /// cancels it upstream.
    pub async fn send(
        &self,
        request: ClientRequest,
        origin: Option<Origin>,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, ServiceError> {
        let link = self.link().await?;
        let peer = link.peer();
        let mut options = PeerRequestOptions::no_options();
        options.meta = origin.as_ref().and_then(|o| o.meta.as_ref()).map(|meta| {
            let modern = link.is_modern();
            let mut meta = forwarded_meta(meta, modern);
            if modern
                && let Some(capabilities) = origin.as_ref().and_then(Origin::client_capabilities)
            {
                meta.set_client_capabilities(capabilities);
            }
            if modern
                && meta.log_level().is_none()
                && let Some(level) = origin.as_ref().and_then(|o| self.sessions.level(o.session))
            {
                meta.set_log_level(level);
            }
            meta
        });
        let sending = self.routes.sending().await;
        let mut handle = peer.send_request_with_option(request, options).await?;
        let registered = origin.map(|origin| {
            self.routes
                .register(handle.id.clone(), handle.progress_token.clone(), origin)
        });
        drop(sending);
        let mut on_drop = CancelOnDrop {
            peer: Some(peer.clone()),
            request: handle.id.clone(),
        };
        let answer = tokio::select! {
            answer = &mut handle.rx => answer.unwrap_or(Err(ServiceError::TransportClosed)),
            () = cancel.cancelled() => return Err(ServiceError::Cancelled { reason: Some("cancelled by the client".into()) }),
        };
        on_drop.peer = None;
        if let Some(registered) = &registered {
            // The call's progress and log messages first, then its answer; bounded, should a
            // client's stream stall (what is left is then dropped with its route).
            registered.flushed().await;
        }
        self.settle(&link, answer)
    }

    /// What an answer on `link` (by rmcp or the direct road) says of the connection: whether
    /// the upstream is reachable, whether the connection is lost or speaks another era now
    /// (then the answer is a lost connection's). Answers `answer`, or the error it stands for.
    fn settle<T>(
        &self,
        link: &Arc<Link>,
        answer: Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        match &answer {
            Ok(_) | Err(ServiceError::McpError(_)) => link.note_reachable(true),
            Err(error @ ServiceError::TransportSend(_)) if no_answer(error) => {
                link.note_reachable(false);
                let text = self.shown(&error.to_string());
                *lock(&self.unreached) = Some(text);
            }
            Err(ServiceError::TransportSend(_)) => link.note_reachable(true),
            Err(ServiceError::TransportClosed) => {
                *lock(&self.unreached) = Some("the connection to the upstream closed".to_owned());
            }
            _ => {}
        }
        if let Err(error) = &answer
            && speaks_another_era(error)
        {
            // The server behind the URL now speaks another era than this connection (it was
            // replaced): the connection is lost, and the next request finds out afresh which
            // era to speak. This request fails as a lost connection's does; the client never
            // hears a version error the gateway itself does not have.
            tracing::warn!(upstream = %self.name, era = %link.era(), "the upstream no longer speaks this connection's era; reconnecting");
            link.note_lost();
            self.forget(link);
            return Err(ServiceError::TransportClosed);
        }
        match &answer {
            // The connection is gone (a stdio child that exited, a transport that closed): the
            // next request connects afresh.
            Err(ServiceError::TransportClosed) => {
                link.note_lost();
                self.forget(link);
            }
            // A request that failed on the wire (a 503 in front of the endpoint, a refused
            // connection) leaves the session as it is: rmcp recovers one the server forgot, and
            // reconnecting at every failure would start a session per call on an upstream
            // already in trouble.
            Err(ServiceError::TransportSend(_)) => link.note_lost(),
            _ => {}
        }
        answer
    }

    /// Drops `link` if it is still the one in force.
    fn forget(&self, link: &Arc<Link>) {
        self.link.rcu(|current| match current {
            Some(current) if Arc::ptr_eq(current, link) => None,
            other => other.clone(),
        });
    }

    /// [`send`](Self::send), admitted by the upstream's breaker, bounded by the per-call
    /// timeout, its outcome classified and recorded.
    ///
    /// # Errors
    ///
    /// [`Refusal::Blocked`] when the breaker refused it, [`Refusal::Failed`] with the upstream's
    /// error (or the timeout, or the connection's failure).
    pub async fn request(
        &self,
        request: ClientRequest,
        origin: Option<Origin>,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, Refusal> {
        let method = request.method().to_owned();
        let permit = self.breaker.try_acquire().map_err(|blocked| {
            self.count(&method, "blocked");
            Refusal::Blocked(blocked)
        })?;
        let (timeout, max) = (self.config.per_call_timeout, self.config.max_call);
        let started = std::time::Instant::now();
        let client = origin.as_ref().map(|o| Arc::clone(&o.client_time));
        let client = client.unwrap_or_default();
        let answer = tokio::select! {
            answer = self.send(request, origin, cancel) => answer,
            timeout = upstream_deadline(timeout, max, &client) => Err(ServiceError::Timeout { timeout }),
        };
        self.observe(
            &method,
            started.elapsed(),
            if answer.is_ok() { "ok" } else { "error" },
        );
        match &answer {
            Ok(_) => {
                self.granted();
                permit.record(Outcome::Success);
            }
            // A cancelled request says nothing of the upstream: the permit goes back unrecorded.
            Err(ServiceError::Cancelled { .. }) => drop(permit),
            Err(error) => {
                let outcome = self.outcome_of(&self.config.classifier, error);
                permit.record(outcome);
            }
        }
        answer.map_err(Refusal::Failed)
    }

    /// One forwarded request that reached the upstream: its latency and its result.
    fn observe(&self, method: &str, elapsed: Duration, result: &'static str) {
        self.meters.observe(method, elapsed, result);
    }

    /// One forwarded request, by result: `ok`, `error` (the upstream's, a timeout, a lost
    /// connection), `blocked` (refused by the breaker: nothing sent) or `failed`.
    fn count(&self, method: &str, result: &'static str) {
        self.meters.count(method, result);
    }

    fn note(&self, outcome: Outcome) {
        if let Outcome::Failure(kind) = outcome {
            *lock(&self.last_failure) = Some(kind.as_str());
        }
    }

    /// The outcome of a failed request's `error` by `classifier`, noted. An upstream's refusal
    /// of access (HTTP 401 or 403, at connect or at any request) is a configuration or
    /// permission failure, not an outage: `Ignored` (never counted), whatever the
    /// classification says; `last_failure` says `unauthorized`.
    fn outcome_of(&self, classifier: &McpClassifier, error: &ServiceError) -> Outcome {
        if let Some(status) = refused_access(error) {
            self.refused(status);
            return Outcome::Ignored;
        }
        if not_started(error) {
            return Outcome::Ignored;
        }
        let outcome = classifier.error(error);
        self.note(outcome);
        outcome
    }

    /// The upstream refused the gateway access with `status`: `last_failure` says so, and an
    /// error-level line is logged when the refusal is new (not at every request).
    fn refused(&self, status: u16) {
        *lock(&self.last_failure) = Some(UNAUTHORIZED);
        let before = {
            let mut refused = lock(&self.access_refused);
            self.any_refused.store(true, Ordering::Relaxed);
            refused.replace(status)
        };
        if before != Some(status) {
            tracing::error!(
                upstream = %self.name,
                status,
                "the upstream refused the gateway access (HTTP {status}): check the credentials \
                 it is given (its `headers`, its URL). Not counted against its breaker; \
                 waiting will not help"
            );
        }
    }

    /// A request succeeded: a refusal of access logged before is over.
    fn granted(&self) {
        // Relaxed: a hint that spares the lock on every success; it changes only under the
        // lock, which orders it with the status.
        if !self.any_refused.load(Ordering::Relaxed) {
            return;
        }
        let mut refused = lock(&self.access_refused);
        self.any_refused.store(false, Ordering::Relaxed);
        if refused.take().is_some() {
            tracing::info!(upstream = %self.name, "the upstream accepts the gateway's requests again");
        }
    }

    /// An error's `text` as `/status` shows it: the URL's credentials and every secret of the
    /// config taken out, at most [`MAX_ERROR_TEXT`] bytes.
    fn shown(&self, text: &str) -> String {
        let text = match &self.config.transport {
            Transport::Http { url, .. } => super::link::redact(url, text.to_owned()),
            Transport::Stdio { .. } => text.to_owned(),
        };
        let mut text = crate::redact::without_type_names(&crate::redact::redactor().apply(&text));
        if text.len() > MAX_ERROR_TEXT {
            let mut end = MAX_ERROR_TEXT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push('…');
        }
        text
    }

    /// Warns, once per change, of the names in `allow`, `deny` and the tool sections that the
    /// upstream's listing `tools` does not hold: a typo there hides every tool, hides nothing,
    /// or sets a tool's breaker for no tool.
    fn check_named_tools(&self, tools: &[Tool]) {
        let lists = |name: &str| tools.iter().any(|t| t.name == name);
        let config = &self.config;
        let unknown: Vec<(&'static str, String)> =
            (config.allow.iter().flatten().map(|n| ("allow", n)))
                .chain(config.deny.iter().map(|n| ("deny", n)))
                .chain(config.tools.iter().map(|t| ("tools", &t.name)))
                .filter(|(_, name)| !lists(name))
                .map(|(key, name)| (key, name.clone()))
                .collect();
        let mut last = lock(&self.unknown_names);
        if last.as_ref() == Some(&unknown) {
            return;
        }
        // The words `--check` uses too (with the nearest listed name): the same filter over
        // the same names in the same order, so each line goes with its (key, name).
        let listed: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
        let said = crate::config::names_matching_no_tool(config, &listed);
        for ((key, name), text) in unknown.iter().zip(&said) {
            tracing::warn!(upstream = %self.name, key, tool = %name, listed = tools.len(), "{text}");
        }
        *last = Some(unknown);
    }

    /// Calls `params.name` (the upstream's own name) through the guard pipeline: its breaker
    /// (the tool's own, if configured), the per-call timeout and the classification; the
    /// answer the model reads.
    ///
    /// A 2026-07-28 upstream may answer `input_required` (it needs sampling, elicitation or
    /// roots from the client). A 2026-07-28 client gets that result as it is and retries with
    /// the answers, a call of its own. A 2025-11-25 client is sent each input request as the
    /// server-to-client request it stands for, on the call's stream, and the gateway retries
    /// with the answers and the upstream's `requestState`, up to
    /// [`DEFAULT_MRTR_MAX_ROUNDS`](rmcp::model::DEFAULT_MRTR_MAX_ROUNDS) rounds: one call, one
    /// outcome, its final answer's. An `input_required` result handed to the client is neither
    /// a success nor a failure (the permit goes back unrecorded).
    ///
    /// # Errors
    ///
    /// The upstream's errors about the client's side of the protocol (`for_the_client`: an
    /// undeclared capability, a refused `requestState`), relayed as they are; every other
    /// failure is the model's tool result.
    pub async fn call_tool(
        &self,
        run: &AgentRun,
        params: CallToolRequestParams,
        origin: Option<Origin>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let name = params.name.clone();
        let client = origin.as_ref().map(|o| Arc::clone(&o.client_time));
        let client = client.unwrap_or_default();
        let mut params = Some(params);
        // The span's `gen_ai.tool.name`: the tool's name as the model called it (with the
        // upstream's prefix), not the breaker's.
        let exposed = format!("{}{}", self.config.prefix, name);
        let relayed = self
            .guarded(run, &name, &exposed, &client, || {
                let params = params.take();
                let origin = origin.clone();
                async move {
                    let params = params.ok_or(ServiceError::UnexpectedResponse)?;
                    self.call_rounds(params, origin, cancel).await
                }
            })
            .await?;
        Ok(match relayed {
            Relayed::Response(response) => response,
            // Only the direct road answers raw.
            Relayed::Raw { result, .. } => CallToolResponse::Complete(
                serde_json::from_slice(result.json())
                    .unwrap_or_else(|_| CallToolResult::error(vec![])),
            ),
        })
    }

    /// The link on which tool `name` (its own name) can be called by the direct road: the live
    /// connection, when it is a 2026-07-28 upstream's over HTTP, the name goes in a header as
    /// it is, and the tool's schema asks for no argument in a header (`x-mcp-header`).
    pub fn direct_link(&self, name: &str) -> Option<Arc<Link>> {
        let link = self.link.load_full()?;
        if !link.is_alive() || link.direct().is_none() || !plain_header_value(name) {
            return None;
        }
        let header = *self.tool_index.load().as_ref()?.get(name)?;
        (!header).then_some(link)
    }

    /// [`call_tool`](Self::call_tool) by the direct road of `link`
    /// ([`direct_link`](Self::direct_link)), for a client of either era: the same breaker,
    /// timeout, classification, metrics and words; the upstream's final answer that is not an
    /// error comes back as the raw JSON it sent.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn call_tool_direct(
        &self,
        run: &AgentRun,
        link: &Arc<Link>,
        exposed: &str,
        call: DirectCall<'_>,
    ) -> Result<Relayed, rmcp::ErrorData> {
        let time = ClientTime::default();
        let Some(direct) = link.direct() else {
            return Err(rmcp::ErrorData::internal_error("no direct road", None));
        };
        self.guarded(run, call.name, exposed, &time, || async {
            let answer = match call.cancel {
                Some(cancel) => tokio::select! {
                    answer = direct.call(&call, &time) => answer,
                    // As `send` ends a call its client cancelled.
                    () = cancel.cancelled() => return Err(ServiceError::Cancelled {
                        reason: Some("cancelled by the client".into()),
                    }),
                },
                None => direct.call(&call, &time).await,
            };
            // A JSON-RPC error, in a 2xx answer or not, is read as on rmcp's road.
            match self.settle(link, answer) {
                Ok(Answered::Result(raw)) => reply_of(raw),
                Ok(Answered::Error(error)) | Err(ServiceError::McpError(error))
                    if for_the_client(&error, false) =>
                {
                    Ok(Reply::Refused(error))
                }
                Ok(Answered::Error(error)) => Err(ServiceError::McpError(error)),
                Err(error) => Err(error),
            }
        })
        .await
    }

    /// A tool call (`name`, its own name; `exposed`, as the model called it, the span's
    /// `gen_ai.tool.name`) through the guard pipeline: its breaker (the tool's
    /// own, if configured), the per-call timeout (put back by progress `time` hears, up to its
    /// maximum), the classification; the answer the model reads.
    async fn guarded<F, A>(
        &self,
        run: &AgentRun,
        name: &str,
        exposed: &str,
        time: &ClientTime,
        mut attempt: F,
    ) -> Result<Relayed, rmcp::ErrorData>
    where
        F: FnMut() -> A,
        A: Future<Output = Result<Reply, ServiceError>>,
    {
        let (breaker, classifier) = match self.tools.get(name) {
            Some((breaker, classifier)) => (breaker, classifier),
            None => (&self.breaker, &self.config.classifier),
        };
        // Its timeout, put back by each of its progress notifications up to its maximum.
        let (timeout, max) = self.config.timeouts_for(name);
        let started = std::time::Instant::now();
        let classify = |result: &Result<Reply, ServiceError>| match result {
            Ok(Reply::Complete(answer)) => Classified::new(classifier.answer(answer), None),
            Ok(Reply::Raw { .. }) => Classified::new(Outcome::Success, None),
            Ok(Reply::InputRequired(_) | Reply::Refused(_)) => {
                Classified::new(Outcome::Ignored, None)
            }
            // A refusal of access is never counted; the model reads its status.
            Err(error) => match refused_access(error) {
                Some(status) => {
                    self.refused(status);
                    Classified::new(Outcome::Ignored, Some(status))
                }
                None if not_started(error) => Classified::new(Outcome::Ignored, None),
                None => Classified::new(classifier.error(error), classifier.error_status(error)),
            },
        };
        let result = self
            .guard
            .call_tool(run, exposed, breaker, classify, || {
                let attempt = attempt();
                async move {
                    tokio::select! {
                        answer = attempt => answer,
                        timeout = upstream_deadline(timeout, max, time) => {
                            Err(ServiceError::Timeout { timeout })
                        }
                    }
                }
            })
            .await;
        let result = match result {
            toolbreaker::ToolResult::Ok {
                value: Reply::InputRequired(input),
                ..
            } => {
                self.count("tools/call", "input_required");
                return Ok(Relayed::Response(CallToolResponse::InputRequired(input)));
            }
            toolbreaker::ToolResult::Ok {
                value: Reply::Refused(error),
                ..
            } => {
                self.count("tools/call", "error");
                return Err(error);
            }
            toolbreaker::ToolResult::Ok {
                value: Reply::Raw { result, typed },
                ..
            } => {
                self.granted();
                self.observe("tools/call", started.elapsed(), "ok");
                return Ok(Relayed::Raw { result, typed });
            }
            other => other.map(Reply::into_complete),
        };
        match &result {
            toolbreaker::ToolResult::Ok { .. } => {
                self.granted();
                self.observe("tools/call", started.elapsed(), "ok")
            }
            toolbreaker::ToolResult::Failed { kind, .. } => {
                // `last_failure` is the upstream's health: a call refused for its own sake (bad
                // arguments, a client's cancellation) says nothing of it.
                if kind.is_counted() {
                    *lock(&self.last_failure) = Some(kind.as_str());
                }
                self.observe("tools/call", started.elapsed(), "failed");
            }
            toolbreaker::ToolResult::Blocked { .. } => self.count("tools/call", "blocked"),
            _ => self.count("tools/call", "stopped"),
        }
        let answer = reworded(result).into();
        Ok(Relayed::Response(CallToolResponse::Complete(answer)))
    }

    /// One attempt of a tool call: the request, and for a 2025-11-25 client behind a
    /// 2026-07-28 upstream, the rounds of `input_required` the gateway answers by asking the
    /// client.
    async fn call_rounds(
        &self,
        params: CallToolRequestParams,
        origin: Option<Origin>,
        cancel: &CancellationToken,
    ) -> Result<Reply, ServiceError> {
        // Only a session's client behind a 2026-07-28 upstream may need the call again: the
        // plain relay moves its parameters and copies nothing.
        let asks_client = origin.as_ref().is_some_and(|o| !o.modern)
            && lock(&self.cache)
                .era
                .as_ref()
                .is_some_and(|e| !e.has_initialize());
        let mut again = asks_client.then(|| params.clone());
        let mut retry = params.request_state.is_some() || params.input_responses.is_some();
        let mut request = params;
        for _ in 0..rmcp::model::DEFAULT_MRTR_MAX_ROUNDS {
            let call = ClientRequest::CallToolRequest(CallToolRequest::new(request));
            let answer = match self.send(call, origin.clone(), cancel).await {
                Err(ServiceError::McpError(error)) if for_the_client(&error, retry) => {
                    return Ok(Reply::Refused(error));
                }
                answer => answer?,
            };
            retry = true;
            match answer {
                ServerResult::CallToolResult(answer) => return Ok(Reply::Complete(answer)),
                ServerResult::InputRequiredResult(input) => {
                    let (Some(origin), Some(retry)) = (&origin, again.as_mut()) else {
                        // A 2026-07-28 client answers it itself (or no client can).
                        return Ok(Reply::InputRequired(input));
                    };
                    let answers = ask_session(origin, input.input_requests.unwrap_or_default())
                        .await
                        .map_err(ServiceError::McpError)?;
                    retry.input_responses = (!answers.is_empty()).then_some(answers);
                    retry.request_state = input.request_state;
                    request = retry.clone();
                }
                _ => return Err(ServiceError::UnexpectedResponse),
            }
        }
        Err(ServiceError::InputRequiredRoundsExceeded {
            max_rounds: rmcp::model::DEFAULT_MRTR_MAX_ROUNDS,
        })
    }

    /// Every tool of the upstream (its own names), page after page, admitted by its breaker,
    /// with its life and scope; the last good listing when the breaker refuses or the listing
    /// fails; `None` when it has never been listed.
    pub async fn list_tools(&self) -> Option<Listed<Tool>> {
        let listed = self
            .all_pages(
                |p| ClientRequest::ListToolsRequest(ListToolsRequest::with_param(p)),
                |r| match r {
                    ServerResult::ListToolsResult(r) => Some((
                        r.tools,
                        r.next_cursor,
                        Freshness::of(r.ttl_ms, r.cache_scope.as_ref()),
                    )),
                    _ => None,
                },
            )
            .await;
        let listed = {
            let mut cache = lock(&self.cache);
            let listed = keep(&mut cache.tools, listed);
            self.index_tools(cache.tools.as_ref());
            listed
        };
        if let Some(fresh) = listed.as_ref().filter(|l| !l.kept) {
            self.check_named_tools(&fresh.items);
        }
        listed
    }

    /// [`list_tools`](Self::list_tools) for resources.
    pub async fn list_resources(&self) -> Option<Listed<Resource>> {
        if !self.has(|c| c.resources.is_some()) {
            return None;
        }
        let listed = self
            .all_pages(
                |p| ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(p)),
                |r| match r {
                    ServerResult::ListResourcesResult(r) => Some((
                        r.resources,
                        r.next_cursor,
                        Freshness::of(r.ttl_ms, r.cache_scope.as_ref()),
                    )),
                    _ => None,
                },
            )
            .await;
        keep(&mut lock(&self.cache).resources, listed)
    }

    /// [`list_tools`](Self::list_tools) for resource templates.
    pub async fn list_templates(&self) -> Option<Listed<ResourceTemplate>> {
        if !self.has(|c| c.resources.is_some()) {
            return None;
        }
        let listed = self
            .all_pages(
                |p| {
                    ClientRequest::ListResourceTemplatesRequest(
                        ListResourceTemplatesRequest::with_param(p),
                    )
                },
                |r| match r {
                    ServerResult::ListResourceTemplatesResult(r) => Some((
                        r.resource_templates,
                        r.next_cursor,
                        Freshness::of(r.ttl_ms, r.cache_scope.as_ref()),
                    )),
                    _ => None,
                },
            )
            .await;
        keep(&mut lock(&self.cache).templates, listed)
    }

    /// [`list_tools`](Self::list_tools) for prompts.
    pub async fn list_prompts(&self) -> Option<Listed<Prompt>> {
        if !self.has(|c| c.prompts.is_some()) {
            return None;
        }
        let listed = self
            .all_pages(
                |p| ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(p)),
                |r| match r {
                    ServerResult::ListPromptsResult(r) => Some((
                        r.prompts,
                        r.next_cursor,
                        Freshness::of(r.ttl_ms, r.cache_scope.as_ref()),
                    )),
                    _ => None,
                },
            )
            .await;
        keep(&mut lock(&self.cache).prompts, listed)
    }

    /// Whether the upstream's capabilities (once known) include what `has` asks; true while
    /// they are not known, so that the first listing connects and finds out.
    fn has(&self, has: impl Fn(&ServerCapabilities) -> bool) -> bool {
        lock(&self.cache).capabilities.as_ref().is_none_or(has)
    }

    /// Every page of a listing, admitted by the breaker as one request; the items, and the
    /// listing's life and scope (its pages', [`Freshness::and`]).
    async fn all_pages<T>(
        &self,
        make: impl Fn(PaginatedRequestParams) -> ClientRequest,
        take: impl Fn(ServerResult) -> Option<(Vec<T>, Option<String>, Freshness)>,
    ) -> Option<(Vec<T>, Freshness)> {
        let permit = self.breaker.try_acquire().ok()?;
        let cancel = CancellationToken::new();
        let timeout = self.config.per_call_timeout;
        let pages = async {
            let mut all = Vec::new();
            let mut freshness: Option<Freshness> = None;
            let mut cursor = None;
            // A bound on pages: an upstream that hands out cursors forever is cut off.
            for _ in 0..1000 {
                let mut params = PaginatedRequestParams::default();
                params.cursor = cursor.take();
                let answer = self.send(make(params), None, &cancel).await?;
                let (items, next, page) = take(answer).ok_or(ServiceError::UnexpectedResponse)?;
                all.extend(items);
                freshness = Some(freshness.map_or(page, |f| f.and(page)));
                match next {
                    Some(next) if !next.is_empty() => cursor = Some(next),
                    _ => break,
                }
            }
            Ok((all, freshness.unwrap_or_default()))
        };
        match tokio::time::timeout(timeout, pages)
            .await
            .unwrap_or(Err(ServiceError::Timeout { timeout }))
        {
            Ok(all) => {
                self.granted();
                permit.record(Outcome::Success);
                Some(all)
            }
            Err(error) => {
                let outcome = self.outcome_of(&self.config.classifier, &error);
                permit.record(outcome);
                None
            }
        }
    }

    /// The upstream's line of `/status`.
    pub fn status(&self) -> serde_json::Value {
        let state = self.breaker.state();
        // Side-effect free: polling /status never takes a probe slot or asks the fleet.
        let retry_after_ms = self
            .breaker
            .retry_after()
            .map(|wait| u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
        let state = match state {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        };
        let connected = self.link.load().as_ref().is_some_and(|l| l.is_reachable());
        let error = if connected {
            None
        } else {
            lock(&self.unreached).clone()
        };
        serde_json::json!({
            "name": &*self.name,
            "transport": match self.config.transport { Transport::Http { .. } => "http", Transport::Stdio { .. } => "stdio" },
            "state": state,
            "retry_after_ms": retry_after_ms,
            "last_failure": self.last_failure(),
            "tools": lock(&self.cache).tools.as_ref().map_or(0, |kept| kept.items.len()),
            "era": lock(&self.cache).era.as_ref().map(ToString::to_string),
            "connected": connected,
            "error": error,
        })
    }
}

/// Whether `error` is that a stdio upstream's process cannot be started: the configuration's
/// fault (no such program, a missing `cwd`), which waiting does not fix; never counted.
fn not_started(error: &ServiceError) -> bool {
    unreached(error).is_some_and(|u| u.cause == Cause::Start)
}

/// Whether `error` says the upstream gave no answer at all (refused, reset, closed: the
/// classification's `connect`), rather than an answer that was an error.
fn no_answer(error: &ServiceError) -> bool {
    refused_access(error).is_none()
        && McpClassifier::new().error(error) == Outcome::Failure(FailureKind::Connect)
}

/// The client's `_meta` as it goes upstream: its own keys (trace context, custom keys) pass,
/// MCP's per-request keys (`io.modelcontextprotocol/…`: protocol version, client info and
/// capabilities) are the gateway's to set for its own connection, so they are dropped; the
/// log level passes to a 2026-07-28 upstream, which reads it there.
fn forwarded_meta(meta: &RequestMetaObject, modern: bool) -> RequestMetaObject {
    let mut forwarded = meta.clone();
    forwarded.retain(|key, _| {
        !key.starts_with("io.modelcontextprotocol/")
            || (modern && key == "io.modelcontextprotocol/logLevel")
    });
    forwarded
}

/// What a tool call came to, for its client.
#[derive(Debug)]
pub enum Relayed {
    /// The upstream's final answer, not an error, as the raw JSON it sent (the direct road).
    Raw {
        /// The `result`, as sent.
        result: RawJson,
        /// Whether it says its `resultType` (`"complete"`) itself.
        typed: bool,
    },
    /// Any other answer: the model's tool result, or a request for input.
    Response(CallToolResponse),
}

/// The reply a direct road's `result` stands for: a final answer that is not an error stays
/// raw; an error answer (which the classification reads) or a request for input is read.
fn reply_of(raw: RawJson) -> Result<Reply, ServiceError> {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let kind: Kind<'_> =
        serde_json::from_slice(raw.json()).map_err(|_| ServiceError::UnexpectedResponse)?;
    match kind.result_type.as_deref() {
        None | Some("complete") if kind.is_error != Some(true) => Ok(Reply::Raw {
            typed: kind.result_type.is_some(),
            result: raw,
        }),
        None | Some("complete") => serde_json::from_slice(raw.json())
            .map(Reply::Complete)
            .map_err(|_| ServiceError::UnexpectedResponse),
        Some("input_required") => serde_json::from_slice(raw.json())
            .map(Reply::InputRequired)
            .map_err(|_| ServiceError::UnexpectedResponse),
        // A task, or a kind of result this gateway does not know: as on rmcp's road.
        Some(_) => Err(ServiceError::UnexpectedResponse),
    }
}

/// Whether a tool's input schema has an argument sent in a header (SEP-2243's
/// `x-mcp-header`, anywhere in it).
fn names_header(schema: &serde_json::Map<String, serde_json::Value>) -> bool {
    fn within(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(map) => names_header(map),
            serde_json::Value::Array(items) => items.iter().any(within),
            _ => false,
        }
    }
    schema
        .iter()
        .any(|(key, value)| key == "x-mcp-header" || within(value))
}

/// Keeps a listing just given as the last good one in `slot`, and answers it; with none
/// given, answers the last good one (with what is left of its life), if any.
fn keep<T: Clone>(
    slot: &mut Option<Kept<T>>,
    listed: Option<(Vec<T>, Freshness)>,
) -> Option<Listed<T>> {
    match listed {
        Some((items, freshness)) => {
            *slot = Some(Kept {
                items: items.clone(),
                freshness,
                at: std::time::Instant::now(),
            });
            Some(Listed {
                items,
                freshness,
                kept: false,
            })
        }
        None => slot.as_ref().map(Kept::served),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Upstream {
    /// Takes `earlier`'s last good listings: a reloaded upstream whose breaker is open still
    /// shows its tools, and a collision with them is still found.
    pub fn inherit(&self, earlier: &Upstream) {
        let earlier = lock(&earlier.cache);
        let mut cache = lock(&self.cache);
        cache.era.clone_from(&earlier.era);
        cache.capabilities.clone_from(&earlier.capabilities);
        cache.tools.clone_from(&earlier.tools);
        self.index_tools(cache.tools.as_ref());
        cache.resources.clone_from(&earlier.resources);
        cache.templates.clone_from(&earlier.templates);
        cache.prompts.clone_from(&earlier.prompts);
    }

    /// Whether the upstream serves resources, as far as is known: its capabilities say so, or
    /// they are not known yet (it has not been reached).
    pub fn may_serve_resources(&self) -> bool {
        self.has(|c| c.resources.is_some())
    }

    /// Whether the upstream's last resource listing holds `uri`.
    pub fn lists_resource(&self, uri: &str) -> bool {
        lock(&self.cache)
            .resources
            .as_ref()
            .is_some_and(|r| r.items.iter().any(|r| r.uri == uri))
    }

    /// Whether `uri` fits one of the upstream's resource templates (the text before the
    /// template's first `{`, when that is not empty).
    pub fn fits_template(&self, uri: &str) -> bool {
        lock(&self.cache)
            .templates
            .as_ref()
            .is_some_and(|templates| {
                templates.items.iter().any(|t| {
                    let stem = t.uri_template.split('{').next().unwrap_or_default();
                    !stem.is_empty() && uri.starts_with(stem)
                })
            })
    }

    /// The upstream's health check, run as its breaker's probe when a cooldown ends: MCP
    /// `ping` on its connection (reconnecting first, or restarting a stdio upstream), or
    /// `server/discover` on a 2026-07-28 one (which has no `ping`), its outcome classified as
    /// any request's. A probe that is not a client's call.
    pub async fn ping(&self) -> Outcome {
        let modern = match self.link().await {
            Ok(link) => link.is_modern(),
            Err(error) => return self.outcome_of(&self.config.classifier, &error),
        };
        let check = if modern {
            ClientRequest::DiscoverRequest(rmcp::model::DiscoverRequest::default())
        } else {
            ClientRequest::PingRequest(rmcp::model::PingRequest::default())
        };
        match self.send(check, None, &CancellationToken::new()).await {
            Ok(_) => {
                self.granted();
                Outcome::Success
            }
            Err(error) => self.outcome_of(&self.config.classifier, &error),
        }
    }

    /// Tells the upstream that a client's roots changed, if it is connected and has sessions
    /// (2026-07-28 has no such notification: roots are asked for during a call).
    pub async fn roots_changed(&self) {
        let link = self.link.load_full();
        if let Some(link) = link.filter(|l| l.is_alive() && !l.is_modern()) {
            let _ = link.peer().notify_roots_list_changed().await;
        }
    }
}
