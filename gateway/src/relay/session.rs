//! [`Session`]: one client session of the gateway, an rmcp server service that relays every
//! request to the upstream it belongs to.
//!
//! Logging and `resources/subscribe` are deprecated by the protocol's next version (SEP-2577,
//! `subscriptions/listen`), not by the versions the gateway speaks: it relays them.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ClientRequest, CompleteRequest,
    CompleteRequestParams, CompleteResult, GetPromptRequest, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequest, ReadResourceRequestParams,
    ReadResourceResponse, Reference, ResultType, ServerCapabilities, ServerResult, SetLevelRequest,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::core::Core;
use super::input::Inputs;
use crate::upstream::{Freshness, Origin, PROTOCOL, ProgressTo, SessionId};

/// One client session: made by the gateway for each client that connects (each Streamable
/// HTTP session, or the one stdio client). Dropping it (the session ended) forgets the
/// session's subscriptions.
#[derive(Debug)]
pub struct Session {
    core: Arc<Core>,
    id: SessionId,
}

impl Session {
    pub(super) fn new(core: Arc<Core>) -> Self {
        let id = core.sessions().open();
        Session { core, id }
    }

    fn origin(&self, context: &RequestContext<RoleServer>) -> Origin {
        Origin {
            session: self.id,
            peer: context.peer.clone(),
            request: context.id.clone(),
            progress: context.meta.get_progress_token(),
            meta: Some(context.meta.clone()),
            modern: modern(context),
            input: None,
            client_time: Arc::default(),
            progress_to: None,
        }
    }

    /// The client's peer is where this session's notifications go: a 2025-11-25 session's.
    /// A 2026-07-28 request has no session (its peer lasts as long as its response), so its
    /// client is told of changes only through `subscriptions/listen`.
    fn attach(&self, context: &RequestContext<RoleServer>) {
        if !modern(context) {
            self.core.sessions().attach(self.id, &context.peer);
        }
    }

    /// A 2026-07-28 client's tool call: a retry with the gateway's own `requestState` goes on
    /// with the call it names; any other runs as a call of its own, whose upstream's requests
    /// for input (a 2025-11-25 upstream's) come back to the client as `input_required`.
    async fn call_tool_modern(
        &self,
        mut params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let inputs = Arc::clone(self.core.inputs());
        // What the gateway's `requestState` is bound to: this tool, with these arguments.
        let tool = format!(
            "{}\0{}",
            params.name,
            serde_json::to_string(&params.arguments).unwrap_or_default()
        );
        // This request's stream, where the call's progress goes until a retry takes it on.
        let here = (context.peer.clone(), context.meta.get_progress_token());
        if let Some(state) = params.request_state.take_if(|s| Inputs::owns(s)) {
            let answers = params.input_responses.take();
            let response = inputs
                .resume(&tool, &state, answers, here, &context.ct)
                .await?;
            return Ok(complete(response));
        }
        let (asks, asked) = Inputs::channel();
        let progress_to: ProgressTo = Arc::new(std::sync::Mutex::new(here));
        let mut origin = self.origin(&context);
        origin.input = Some(asks);
        origin.progress_to = Some(Arc::clone(&progress_to));
        let core = Arc::clone(&self.core);
        // The call's own token: the call is ended by dropping its task (an expired wait, a
        // client gone), which cancels it upstream; the client's token ends the drive.
        let call = tokio::spawn(async move {
            core.call_tool(params, origin, &CancellationToken::new())
                .await
        });
        let capabilities = context.client_capabilities().unwrap_or_default();
        let response = inputs
            .drive(
                &tool,
                AbortOnDropHandle::new(call),
                asked,
                capabilities,
                progress_to,
                &context.ct,
            )
            .await?;
        Ok(complete(response))
    }

    fn initialize(&self, requested: &ProtocolVersion) -> InitializeResult {
        let version = [
            PROTOCOL,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_03_26,
        ]
        .into_iter()
        .find(|v| v == requested)
        .unwrap_or(PROTOCOL);
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_completions()
            .enable_logging()
            .build();
        let mut result = InitializeResult::new(capabilities);
        result.protocol_version = version;
        result.server_info = Implementation::new(self.core.name(), env!("CARGO_PKG_VERSION"));
        result
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.core.session_closed(self.id);
    }
}

/// A 2026-07-28 answer says it is final (`resultType: "complete"`), whatever the upstream's
/// said.
pub(super) fn complete(response: CallToolResponse) -> CallToolResponse {
    // (rmcp takes `resultType` off again for a 2025-11-25 client.)
    match response {
        CallToolResponse::Complete(mut result) => {
            result.result_type.get_or_insert(ResultType::COMPLETE);
            CallToolResponse::Complete(result)
        }
        other => other,
    }
}

/// The `ttlMs` and `cacheScope` of one of the gateway's listings (SEP-2549), for a 2026-07-28
/// client: its parts' life and scope, said outright.
fn hints(
    freshness: Freshness,
    context: &RequestContext<RoleServer>,
) -> (Option<u64>, Option<CacheScope>) {
    if !modern(context) {
        // 2025-11-25 has neither.
        return (None, None);
    }
    let (ttl_ms, scope) = freshness.hints();
    (Some(ttl_ms), Some(scope))
}

/// Whether the request is a 2026-07-28 client's (no session; its version in its `_meta`).
fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// The answer of the kind a request expects; another kind from the upstream is an error (an
/// `input_required` result for a 2025-11-25 client too: the gateway answers an upstream's
/// request for input itself only for tool calls).
fn expect<T>(
    answer: ServerResult,
    take: impl FnOnce(ServerResult) -> Option<T>,
) -> Result<T, ErrorData> {
    take(answer).ok_or_else(|| {
        ErrorData::internal_error("the upstream answered with another kind of result", None)
    })
}

impl ServerHandler for Session {
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.attach(&context);
        let result = self.initialize(&request.protocol_version);
        context.peer.set_peer_info(request);
        Ok(result)
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.attach(&context);
        let (tools, freshness) = self.core.tools().await;
        let mut listed = ListToolsResult::with_all_items(tools);
        (listed.ttl_ms, listed.cache_scope) = hints(freshness, &context);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if modern(&context) {
            return self.call_tool_modern(params, context).await;
        }
        self.attach(&context);
        let cancel = context.ct.clone();
        self.core
            .call_tool(params, self.origin(&context), &cancel)
            .await
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.attach(&context);
        let (resources, freshness) = self.core.resources().await;
        let mut listed = ListResourcesResult::with_all_items(resources);
        (listed.ttl_ms, listed.cache_scope) = hints(freshness, &context);
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.attach(&context);
        let (templates, freshness) = self.core.templates().await;
        let mut listed = ListResourceTemplatesResult::with_all_items(templates);
        (listed.ttl_ms, listed.cache_scope) = hints(freshness, &context);
        Ok(listed)
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.attach(&context);
        let upstream = self.core.upstream_of_uri(&params.uri).await?;
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
        let answer = self
            .core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await?;
        let modern = modern(&context);
        expect(answer, |a| match a {
            ServerResult::ReadResourceResult(mut r) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                Some(r.into())
            }
            ServerResult::InputRequiredResult(r) if modern => Some(r.into()),
            _ => None,
        })
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.attach(&context);
        let uri = params.uri;
        let upstream = self.core.upstream_of_uri(&uri).await?;
        if !self.core.sessions().subscribe(self.id, &uri) {
            return Ok(());
        }
        let answer = self
            .core
            .subscribe(&upstream, &uri, self.origin(&context), &context.ct)
            .await;
        if answer.is_err() {
            self.core.sessions().unsubscribe(self.id, &uri);
        }
        answer
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.attach(&context);
        let upstream = self.core.upstream_of_uri(&params.uri).await?;
        if !self.core.sessions().unsubscribe(self.id, &params.uri) {
            return Ok(());
        }
        self.core
            .unsubscribe(&upstream, &params.uri, self.origin(&context), &context.ct)
            .await
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.attach(&context);
        let (prompts, freshness) = self.core.prompts().await;
        let mut listed = ListPromptsResult::with_all_items(prompts);
        (listed.ttl_ms, listed.cache_scope) = hints(freshness, &context);
        Ok(listed)
    }

    async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.attach(&context);
        let (upstream, name) = self.core.resolve_prompt(&params.name).await?;
        params.name = name;
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let answer = self
            .core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await?;
        let modern = modern(&context);
        expect(answer, |a| match a {
            ServerResult::GetPromptResult(mut r) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                Some(r.into())
            }
            ServerResult::InputRequiredResult(r) if modern => Some(r.into()),
            _ => None,
        })
    }

    async fn complete(
        &self,
        mut params: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.attach(&context);
        let upstream = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (upstream, name) = self.core.resolve_prompt(&prompt.name).await?;
                prompt.name = name;
                upstream
            }
            Reference::Resource(resource) => self.core.upstream_of_uri(&resource.uri).await?,
            _ => {
                return Err(ErrorData::invalid_params(
                    "unknown completion reference",
                    None,
                ));
            }
        };
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        let answer = self
            .core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await?;
        expect(answer, |a| match a {
            ServerResult::CompleteResult(r) => Some(r),
            _ => None,
        })
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.attach(&context);
        self.core
            .set_level(SetLevelRequest::new(params), self.origin(&context))
            .await;
        Ok(())
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.core.sessions().attach(self.id, &context.peer);
        self.core.roots_changed().await;
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Every kind the gateway advertises; rmcp narrows it to those.
        Some(requested.clone())
    }

    /// A 2026-07-28 client's `subscriptions/listen`: the stream is a session of its own for
    /// as long as it is open (list changes reach it), subscribed to its resources upstream
    /// as a 2025-11-25 session's `resources/subscribe` is.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sessions = self.core.sessions();
        sessions.attach_stream(self.id, context.sink().clone());
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let request = context.request_context();
        for uri in uris {
            if let Ok(upstream) = self.core.upstream_of_uri(&uri).await
                && sessions.subscribe(self.id, &uri)
            {
                let _ = self
                    .core
                    .subscribe(&upstream, &uri, self.origin(request), &request.ct)
                    .await;
            }
        }
        context.cancelled().await;
        // Dropping the session (this handler's) unsubscribes what no one else holds.
        Ok(())
    }

    /// A tool's definition as clients see it (its exposed name), from its upstream's last
    /// listing: what rmcp checks a 2026-07-28 request's `Mcp-Param-*` headers against.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.core.tool(name)
    }

    fn get_info(&self) -> InitializeResult {
        self.initialize(&PROTOCOL)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[
            ProtocolVersion::V_2026_07_28,
            PROTOCOL,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_03_26,
        ])
    }
}
