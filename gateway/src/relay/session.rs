//! [`Session`]: one client session of the gateway, an rmcp server service that relays every
//! request to the upstream it belongs to.
//!
//! Logging and `resources/subscribe` are deprecated by the protocol's next version (SEP-2577,
//! `subscriptions/listen`), not by the versions the gateway speaks: it relays them.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequest, ClientNotification, ClientRequest, CompleteRequest, EmptyResult, ErrorCode,
    GetPromptRequest, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, ProtocolVersion,
    ReadResourceRequest, Reference, ServerCapabilities, ServerResult, SetLevelRequest,
    SubscribeRequest, UnsubscribeRequest,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, Service};
use rmcp::ErrorData;

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
        let version = [PROTOCOL, ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_03_26]
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

impl Service<RoleServer> for Session {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        let core = &self.core;
        let cancel = context.ct.clone();
        match request {
            ClientRequest::InitializeRequest(request) => {
                let result = self.initialize(&request.params.protocol_version);
                context.peer.set_peer_info(request.params);
                Ok(ServerResult::InitializeResult(result))
            }
            ClientRequest::PingRequest(_) => Ok(ServerResult::EmptyResult(EmptyResult {})),
            ClientRequest::ListToolsRequest(_) => Ok(ServerResult::ListToolsResult(
                ListToolsResult::with_all_items(core.tools().await),
            )),
            ClientRequest::CallToolRequest(request) => {
                let CallToolRequest { params, .. } = request;
                let result = core.call_tool(params, self.origin(&context), &cancel).await?;
                Ok(ServerResult::CallToolResult(result))
            }
            ClientRequest::ListResourcesRequest(_) => Ok(ServerResult::ListResourcesResult(
                ListResourcesResult::with_all_items(core.resources().await),
            )),
            ClientRequest::ListResourceTemplatesRequest(_) => Ok(ServerResult::ListResourceTemplatesResult(
                ListResourceTemplatesResult::with_all_items(core.templates().await),
            )),
            ClientRequest::ReadResourceRequest(request) => {
                let upstream = core.upstream_of_uri(&request.params.uri).await?;
                let forwarded = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(request.params));
                core.forward(&upstream, forwarded, self.origin(&context), &cancel).await
            }
            ClientRequest::SubscribeRequest(request) => {
                let uri = request.params.uri.clone();
                let upstream = core.upstream_of_uri(&uri).await?;
                let first = core.sessions().subscribe(self.id, &uri);
                if !first {
                    return Ok(ServerResult::EmptyResult(EmptyResult {}));
                }
                let forwarded = ClientRequest::SubscribeRequest(SubscribeRequest::new(request.params));
                let answer = core.forward(&upstream, forwarded, self.origin(&context), &cancel).await;
                if answer.is_err() {
                    core.sessions().unsubscribe(self.id, &uri);
                }
                answer
            }
            ClientRequest::UnsubscribeRequest(request) => {
                let uri = request.params.uri.clone();
                let upstream = core.upstream_of_uri(&uri).await?;
                if !core.sessions().unsubscribe(self.id, &uri) {
                    return Ok(ServerResult::EmptyResult(EmptyResult {}));
                }
                let forwarded = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(request.params));
                core.forward(&upstream, forwarded, self.origin(&context), &cancel).await
            }
            ClientRequest::ListPromptsRequest(_) => Ok(ServerResult::ListPromptsResult(
                ListPromptsResult::with_all_items(core.prompts().await),
            )),
            ClientRequest::GetPromptRequest(request) => {
                let mut params = request.params;
                let (upstream, name) = core.resolve_prompt(&params.name).await?;
                params.name = name;
                let forwarded = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
                core.forward(&upstream, forwarded, self.origin(&context), &cancel).await
            }
            ClientRequest::CompleteRequest(request) => {
                let mut params = request.params;
                let upstream = match &mut params.r#ref {
                    Reference::Prompt(prompt) => {
                        let (upstream, name) = core.resolve_prompt(&prompt.name).await?;
                        prompt.name = name;
                        upstream
                    }
                    Reference::Resource(resource) => core.upstream_of_uri(&resource.uri).await?,
                    _ => return Err(ErrorData::invalid_params("unknown completion reference", None)),
                };
                let forwarded = ClientRequest::CompleteRequest(CompleteRequest::new(params));
                core.forward(&upstream, forwarded, self.origin(&context), &cancel).await
            }
            ClientRequest::SetLevelRequest(request) => {
                core.set_level(SetLevelRequest::new(request.params), self.origin(&context)).await;
                Ok(ServerResult::EmptyResult(EmptyResult {}))
            }
            other => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                other.method().to_owned(),
                None,
            )),
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.core.sessions().attach(self.id, &context.peer);
        if let ClientNotification::RootsListChangedNotification(_) = notification {
            self.core.roots_changed().await;
        }
        // A cancellation cancels the request's context (rmcp), which cancels what it forwarded.
        Ok(())
    }

    fn get_info(&self) -> InitializeResult {
        self.initialize(&PROTOCOL)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(&[PROTOCOL, ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_03_26])
    }
}
