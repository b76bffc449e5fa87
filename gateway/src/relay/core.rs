//! The gateway's shared state: its upstreams, their merged listings, and where each request
//! goes.
//!
//! Logging and `resources/subscribe` are deprecated by the protocol's next version (SEP-2577,
//! `subscriptions/listen`), not by the versions the gateway speaks: it relays them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use std::time::Duration;

use futures::future::join_all;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientRequest, ErrorCode, Prompt, Resource,
    ResourceTemplate, ServerResult, SetLevelRequest, SubscribeRequest, SubscribeRequestParams,
    Tool, UnsubscribeRequest, UnsubscribeRequestParams,
};
use tokio_util::sync::CancellationToken;
use toolbreaker::{AgentRun, Registry, ToolResult};

use super::input::Inputs;
use super::names::{collision, exposed, resolve};
use crate::redact::shown;
use crate::upstream::{
    Freshness, Listed, Origin, Refusal, SessionId, Sessions, Upstream, error_data,
};

/// How long a 2026-07-28 client's call waits upstream for the client's retry with the input
/// the upstream asked for, before it is cancelled.
pub(super) const INPUT_WAIT: Duration = Duration::from_secs(60);

/// The upstreams in force, in configuration order.
pub type Upstreams = Arc<Vec<Arc<Upstream>>>;

/// What every session of one gateway shares.
#[derive(Debug)]
pub struct Core {
    name: String,
    registry: Registry,
    sessions: Arc<Sessions>,
    /// Read by every request without a lock (each reload stores a new list).
    upstreams: ArcSwap<Vec<Arc<Upstream>>>,
    call_time_limit: Duration,
    calls: AtomicU64,
    /// 2026-07-28 clients' calls waiting for their answers to an upstream's requests.
    inputs: Arc<Inputs>,
    /// The tool names found shown by two upstreams at a listing, each logged once.
    collisions_logged: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Core {
    pub(super) fn new(name: String, registry: Registry, call_time_limit: Duration) -> Self {
        Core {
            name,
            registry,
            sessions: Arc::default(),
            upstreams: ArcSwap::default(),
            call_time_limit,
            calls: AtomicU64::new(0),
            inputs: Arc::new(Inputs::new(INPUT_WAIT)),
            collisions_logged: Default::default(),
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn inputs(&self) -> &Arc<Inputs> {
        &self.inputs
    }

    pub(super) fn registry(&self) -> &Registry {
        &self.registry
    }

    pub(super) fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    pub(super) fn upstreams(&self) -> Upstreams {
        self.upstreams.load_full()
    }

    pub(super) fn set_upstreams(&self, upstreams: Upstreams) {
        self.upstreams.store(upstreams);
    }

    pub(super) fn session_closed(&self, id: SessionId) {
        let orphaned = self.sessions.close(id);
        if orphaned.is_empty() {
            return;
        }
        let upstreams = self.upstreams();
        tokio::spawn(async move {
            for uri in orphaned {
                if let Some(upstream) = owner_of_uri(&upstreams, &uri) {
                    let _ = release(&upstream, &uri, None, &CancellationToken::new()).await;
                }
            }
        });
    }

    /// The first subscription to `uri` among the gateway's clients: `resources/subscribe` on
    /// a 2025-11-25 upstream (through its breaker), the upstream's listen stream reopened with
    /// it on a 2026-07-28 one.
    ///
    /// # Errors
    ///
    /// The upstream's refusal, or its breaker's, as [`forward`](Self::forward) answers it.
    pub(super) async fn subscribe(
        &self,
        upstream: &Upstream,
        uri: &str,
        origin: Origin,
        cancel: &CancellationToken,
    ) -> Result<(), ErrorData> {
        if upstream.is_modern() {
            upstream.listen_to(uri).await;
            return Ok(());
        }
        let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(
            SubscribeRequestParams::new(uri),
        ));
        self.forward(upstream, request, origin, cancel)
            .await
            .map(drop)
    }

    /// The last subscription to `uri` among the gateway's clients ended: the counterpart of
    /// [`subscribe`](Self::subscribe).
    ///
    /// # Errors
    ///
    /// As [`subscribe`](Self::subscribe).
    pub(super) async fn unsubscribe(
        &self,
        upstream: &Upstream,
        uri: &str,
        origin: Origin,
        cancel: &CancellationToken,
    ) -> Result<(), ErrorData> {
        release(upstream, uri, Some(origin), cancel)
            .await
            .map_err(|refused| refusal_of(upstream, refused))
    }

    /// Every visible tool of every upstream, under its prefix; a name two upstreams show is
    /// shown once (the first upstream's), and logged. With the listing's life and scope: its
    /// parts' ([`Freshness::and`]); an upstream's kept `private` listing is not shown.
    pub(super) async fn tools(&self) -> (Vec<Tool>, Freshness) {
        let upstreams = self.upstreams();
        let listed = join_all(upstreams.iter().map(|u| u.list_tools())).await;
        let mut seen = HashMap::new();
        let mut tools = Vec::new();
        let mut freshness = Freshness::default();
        for (upstream, listed) in upstreams.iter().zip(listed) {
            let Some(listed) = listed.and_then(Listed::shareable) else {
                continue;
            };
            freshness = freshness.and(listed.freshness);
            for mut tool in listed.items {
                if !upstream.config().exposes(&tool.name) {
                    continue;
                }
                let name = exposed(upstream.config(), &tool.name);
                if let Some(first) = seen.insert(name.clone(), upstream.name().to_owned()) {
                    // Logged once per name, not at every listing.
                    if self
                        .collisions_logged
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(name.clone())
                    {
                        tracing::error!(tool = %shown(&name), first = %first, second = %upstream.name(), "two upstreams show the same tool name; the second's is hidden");
                    }
                    continue;
                }
                tool.name = name.into();
                tools.push(tool);
            }
        }
        (tools, freshness)
    }

    /// The first tool name two upstreams show, with both upstreams: `(name, first, second)`.
    pub(super) fn collision(upstreams: &[Arc<Upstream>]) -> Option<(String, String, String)> {
        let names: Vec<(String, String)> = upstreams
            .iter()
            .flat_map(|u| {
                u.known_tools()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| u.config().exposes(&t.name))
                    .map(|t| (exposed(u.config(), &t.name), u.name().to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect();
        collision(names.iter().map(|(n, u)| (n.as_str(), u.as_str())))
            .map(|(name, a, b)| (name, a.to_owned(), b.to_owned()))
    }

    /// Every upstream's resources, as [`tools`](Self::tools) merges tools.
    pub(super) async fn resources(&self) -> (Vec<Resource>, Freshness) {
        let upstreams = self.upstreams();
        merged(join_all(upstreams.iter().map(|u| u.list_resources())).await)
    }

    /// Every upstream's resource templates, as [`tools`](Self::tools) merges tools.
    pub(super) async fn templates(&self) -> (Vec<ResourceTemplate>, Freshness) {
        let upstreams = self.upstreams();
        merged(join_all(upstreams.iter().map(|u| u.list_templates())).await)
    }

    /// Every upstream's prompts under its prefix, as [`tools`](Self::tools) merges tools.
    pub(super) async fn prompts(&self) -> (Vec<Prompt>, Freshness) {
        let upstreams = self.upstreams();
        let listed = join_all(upstreams.iter().map(|u| u.list_prompts())).await;
        let listed = upstreams.iter().zip(listed).map(|(upstream, listed)| {
            listed.map(|mut listed| {
                for prompt in &mut listed.items {
                    prompt.name = exposed(upstream.config(), &prompt.name);
                }
                listed
            })
        });
        merged(listed)
    }

    /// The upstream of tool `name` (as clients see it) and its own name for it.
    pub(super) fn resolve_tool(&self, name: &str) -> Option<(Arc<Upstream>, String)> {
        let upstreams = self.upstreams.load();
        let configs: Vec<_> = upstreams.iter().map(|u| u.config()).collect();
        let (i, rest) = resolve(&configs, name, |i, rest| {
            if !configs[i].exposes(rest) {
                return Some(false);
            }
            upstreams[i].knows_tool(rest)
        })?;
        configs[i]
            .exposes(rest)
            .then(|| (Arc::clone(&upstreams[i]), rest.to_owned()))
    }

    /// Tool `name` (as clients see it) from its upstream's last listing, under that name.
    pub(super) fn tool(&self, name: &str) -> Option<Tool> {
        let (upstream, own) = self.resolve_tool(name)?;
        let mut tool = upstream.tool(&own)?;
        tool.name = name.to_owned().into();
        Some(tool)
    }

    /// Calls tool `params.name` on its upstream, through its breaker.
    ///
    /// # Errors
    ///
    /// `-32602` (invalid params) for a name no upstream shows (unknown, or hidden by `allow`
    /// or `deny`), and for a retry (`requestState`, `inputResponses`) of a tool whose upstream
    /// speaks 2025-11-25: a state the gateway made is taken before the call gets here, so
    /// this one is no one's.
    pub(super) async fn call_tool(
        &self,
        mut params: CallToolRequestParams,
        origin: Origin,
        cancel: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some((upstream, name)) = self.resolve_tool(&params.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", shown(&params.name)),
                None,
            ));
        };
        if (params.request_state.is_some() || params.input_responses.is_some())
            && upstream.era().is_some_and(|era| era.has_initialize())
        {
            return Err(ErrorData::invalid_params(
                "requestState was not made by this gateway, and the tool's server takes none; call the tool again without it",
                None,
            ));
        }
        params.name = name.into();
        upstream
            .call_tool(&self.run(), params, Some(origin), cancel)
            .await
    }

    /// The run of one tool call: its name, its time limit.
    pub(super) fn run(&self) -> AgentRun {
        // Relaxed: a run's name only, unique by the read-modify-write; it orders nothing.
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        AgentRun::new(format!("call-{n}"), self.call_time_limit, 16)
    }

    /// The upstream and its own name for prompt `name`.
    pub(super) async fn resolve_prompt(
        &self,
        name: &str,
    ) -> Result<(Arc<Upstream>, String), ErrorData> {
        let upstreams = self.upstreams();
        let configs: Vec<_> = upstreams.iter().map(|u| u.config()).collect();
        let known: Vec<Option<Vec<Prompt>>> = join_all(upstreams.iter().map(|u| u.list_prompts()))
            .await
            .into_iter()
            .map(|listed| listed.map(|l| l.items))
            .collect();
        let found = resolve(&configs, name, |i, rest| {
            known[i]
                .as_ref()
                .map(|prompts| prompts.iter().any(|p| p.name == rest))
        });
        match found {
            Some((i, rest)) => Ok((Arc::clone(&upstreams[i]), rest.to_owned())),
            None => Err(ErrorData::invalid_params(
                format!("unknown prompt: {}", shown(name)),
                None,
            )),
        }
    }

    /// The upstream that listed resource `uri` (or a template it fits).
    pub(super) async fn upstream_of_uri(&self, uri: &str) -> Result<Arc<Upstream>, ErrorData> {
        let upstreams = self.upstreams();
        if let Some(upstream) = owner_of_uri(&upstreams, uri) {
            return Ok(upstream);
        }
        // Not listed yet: list, then look again.
        let _ = join_all(
            upstreams
                .iter()
                .map(|u| async move { (u.list_resources().await, u.list_templates().await) }),
        )
        .await;
        if let Some(upstream) = owner_of_uri(&upstreams, uri) {
            return Ok(upstream);
        }
        // No listing names it (none could be read: an upstream that is open serves its last
        // good one, and it may have none). The one upstream that may serve resources takes it,
        // so that its breaker answers (blocked) rather than a false "not found".
        let mut candidates = upstreams.iter().filter(|u| u.may_serve_resources());
        match (candidates.next(), candidates.next()) {
            (Some(only), None) => Ok(Arc::clone(only)),
            _ => Err(ErrorData::resource_not_found(
                format!("no upstream lists resource {}", shown(uri)),
                None,
            )),
        }
    }

    /// Forwards `request` to `upstream` through its breaker. A blocked or failed request is a
    /// JSON-RPC error whose `data` is the ToolResult JSON (`isError` exists only for tools);
    /// the upstream's own JSON-RPC error comes back as it is.
    pub(super) async fn forward(
        &self,
        upstream: &Upstream,
        request: ClientRequest,
        origin: Origin,
        cancel: &CancellationToken,
    ) -> Result<ServerResult, ErrorData> {
        upstream
            .request(request, Some(origin), cancel)
            .await
            .map_err(|refused| refusal_of(upstream, refused))
    }

    /// `logging/setLevel` goes to every upstream that logs.
    pub(super) async fn set_level(&self, request: SetLevelRequest, origin: Origin) {
        // A 2026-07-28 upstream has no `logging/setLevel`: the level goes with each of this
        // session's requests to it instead (`_meta`'s `io.modelcontextprotocol/logLevel`).
        self.sessions
            .set_level(origin.session, request.params.level);
        let upstreams = self.upstreams();
        let sends = upstreams
            .iter()
            .filter(|u| !u.is_modern() && u.capabilities().is_some_and(|c| c.logging.is_some()))
            .map(|u| {
                let request = ClientRequest::SetLevelRequest(request.clone());
                let origin = origin.clone();
                async move {
                    u.request(request, Some(origin), &CancellationToken::new())
                        .await
                }
            });
        join_all(sends).await;
    }

    /// A client's roots changed: every upstream is told.
    pub(super) async fn roots_changed(&self) {
        for upstream in self.upstreams().iter() {
            upstream.roots_changed().await;
        }
    }
}

/// The union of upstreams' listings and its life and scope; an upstream's kept `private`
/// listing is left out (it was fetched for another client).
fn merged<T>(listed: impl IntoIterator<Item = Option<Listed<T>>>) -> (Vec<T>, Freshness) {
    let mut items = Vec::new();
    let mut freshness = Freshness::default();
    for listed in listed.into_iter().flatten().filter_map(Listed::shareable) {
        freshness = freshness.and(listed.freshness);
        items.extend(listed.items);
    }
    (items, freshness)
}

/// A subscription to `uri` that no session holds any more, released upstream:
/// `resources/unsubscribe` through the breaker, or the listen stream reopened without it.
async fn release(
    upstream: &Upstream,
    uri: &str,
    origin: Option<Origin>,
    cancel: &CancellationToken,
) -> Result<(), Refusal> {
    if upstream.is_modern() {
        upstream.stop_listening_to(uri).await;
        return Ok(());
    }
    let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
        UnsubscribeRequestParams::new(uri),
    ));
    upstream.request(request, origin, cancel).await.map(drop)
}

/// The upstream whose listed resources hold `uri`, or whose template it fits (the template's
/// text before its first `{`).
fn owner_of_uri(upstreams: &[Arc<Upstream>], uri: &str) -> Option<Arc<Upstream>> {
    upstreams
        .iter()
        .find(|u| u.lists_resource(uri))
        .or_else(|| upstreams.iter().find(|u| u.fits_template(uri)))
        .cloned()
}

/// What a client hears of `refused`, a request to `upstream` that got no answer: the
/// upstream's own JSON-RPC error as it is, a cancellation as one, anything else a
/// [`refusal`].
fn refusal_of(upstream: &Upstream, refused: Refusal) -> ErrorData {
    match refused {
        Refusal::Blocked(blocked) => refusal(ToolResult::<()>::blocked(upstream.name(), blocked)),
        Refusal::Failed(rmcp::service::ServiceError::McpError(data)) => data,
        Refusal::Failed(error @ rmcp::service::ServiceError::Cancelled { .. }) => error_data(error),
        Refusal::Failed(error) => {
            // A refusal of access (HTTP 401 or 403) is never counted: the client reads its
            // status, and that waiting will not help.
            let (outcome, status) = match crate::upstream::refused_access(&error) {
                Some(status) => (toolbreaker::Outcome::Ignored, Some(status)),
                // A process that cannot be started is the configuration's fault: not counted.
                None if crate::upstream::unreached(&error)
                    .is_some_and(|u| u.cause == crate::upstream::Cause::Start) =>
                {
                    (toolbreaker::Outcome::Ignored, None)
                }
                None => (upstream.config().classifier.error(&error), None),
            };
            refusal(crate::upstream::reworded(ToolResult::<()>::failed(
                upstream.name(),
                outcome,
                status,
                // Said in words only when it is no outage (or no connection at all): other
                // failures read as their kind.
                (status.is_some() || crate::upstream::unreached(&error).is_some())
                    .then(|| crate::upstream::failure_words(&error))
                    .flatten(),
            )))
        }
    }
}

/// A blocked or failed request that is not a tool call: JSON-RPC error `-32603` whose message
/// is what the model reads and whose `data` is the ToolResult JSON.
fn refusal(result: ToolResult<()>) -> ErrorData {
    let message = match &result {
        ToolResult::Blocked { message, .. } | ToolResult::Failed { message, .. } => message.clone(),
        _ => String::from("the upstream gave no answer"),
    };
    let data = result
        .to_json()
        .ok()
        .and_then(|json| serde_json::from_str(&json).ok());
    ErrorData::new(ErrorCode::INTERNAL_ERROR, message, data)
}
