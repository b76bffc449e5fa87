//! [`Session`]: one client session of the gateway, an rmcp server service that relays every
//! request to the upstream it belongs to.
//!
//! Logging and `resources/subscribe` are deprecated by the protocol's next version (SEP-2577,
//! `subscriptions/listen`), not by the versions the gateway speaks: it relays them.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientRequest, CompleteRequest, CompleteRequestParams,
    CompleteResult, GetPromptRequest, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequest, ReadResourceRequestParams, ReadResourceResponse, Reference,
    ServerCapabilities, ServerResult, SetLevelRequest, SetLevelRequestParams, SubscribeRequest,
    SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use super::core::Core;
use crate::upstream::{Origin, PROTOCOL, SessionId};

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
        }
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

/// The answer of the kind a request expects; another kind from the upstream is an error.
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
        self.core.sessions().attach(self.id, &context.peer);
        let result = self.initialize(&request.protocol_version);
        context.peer.set_peer_info(request);
        Ok(result)
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        Ok(ListToolsResult::with_all_items(self.core.tools().await))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        let cancel = context.ct.clone();
        let result = self
            .core
            .call_tool(params, self.origin(&context), &cancel)
            .await?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        Ok(ListResourcesResult::with_all_items(
            self.core.resources().await,
        ))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        Ok(ListResourceTemplatesResult::with_all_items(
            self.core.templates().await,
        ))
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        let upstream = self.core.upstream_of_uri(&params.uri).await?;
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
        let answer = self
            .core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await?;
        expect(answer, |a| match a {
            ServerResult::ReadResourceResult(r) => Some(r.into()),
            _ => None,
        })
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        let uri = params.uri.clone();
        let upstream = self.core.upstream_of_uri(&uri).await?;
        if !self.core.sessions().subscribe(self.id, &uri) {
            return Ok(());
        }
        let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(params));
        let answer = self
            .core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await;
        if answer.is_err() {
            self.core.sessions().unsubscribe(self.id, &uri);
        }
        answer.map(drop)
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        let upstream = self.core.upstream_of_uri(&params.uri).await?;
        if !self.core.sessions().unsubscribe(self.id, &params.uri) {
            return Ok(());
        }
        let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(params));
        self.core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await
            .map(drop)
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        Ok(ListPromptsResult::with_all_items(self.core.prompts().await))
    }

    async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        let (upstream, name) = self.core.resolve_prompt(&params.name).await?;
        params.name = name;
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let answer = self
            .core
            .forward(&upstream, request, self.origin(&context), &context.ct)
            .await?;
        expect(answer, |a| match a {
            ServerResult::GetPromptResult(r) => Some(r.into()),
            _ => None,
        })
    }

    async fn complete(
        &self,
        mut params: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
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
        self.core.sessions().attach(self.id, &context.peer);
        self.core
            .set_level(SetLevelRequest::new(params), self.origin(&context))
            .await;
        Ok(())
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.core.sessions().attach(self.id, &context.peer);
        self.core.roots_changed().await;
    }

    fn get_info(&self) -> InitializeResult {
        self.initialize(&PROTOCOL)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[
            PROTOCOL,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_03_26,
        ])
    }
}
