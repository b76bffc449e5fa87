//! The gateway as its upstream's client: what the upstream sends is relayed to the client
//! session it belongs to.
//!
//! - A request (`sampling/createMessage`, `elicitation/create`, `roots/list`) goes to the
//!   client whose call the upstream is serving: the one whose forwarded request's response
//!   stream it arrived on (Streamable HTTP), or else the one client session with requests in
//!   flight on this upstream (a stdio upstream, or the standalone stream). With none, or
//!   several and no stream to tell them apart, it is refused: a client is never sent another
//!   client's request.
//! - Progress goes to the request it reports on, with the client's own progress token.
//! - A log message goes to the session of the request it came with, else to the one session
//!   with requests in flight here, else to every session.
//! - `notifications/resources/updated` goes to the sessions subscribed to its URI; list changes
//!   go to every session.
//!
//! Sampling, roots and logging are deprecated by the protocol's next version (SEP-2577), not
//! by the versions the gateway speaks: it relays them.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, ErrorCode, GetExtensions, Implementation,
    ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::{
    InboundStreamOrigin, NotificationContext, OriginatingRequestId, RequestContext, RoleClient,
    Service, ServiceError,
};

use super::progress::Unsent;
use super::routes::{Ask, Asks, Origin, Routes};
use super::sessions::{Listener, Sessions};

/// The protocol version the gateway speaks to its upstreams and its clients: the newest whose
/// sessions carry server-to-client requests and notifications on a connection.
pub const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The rmcp client service of one upstream connection.
#[derive(Clone, Debug)]
pub struct UpstreamHandler {
    upstream: Arc<str>,
    routes: Arc<Routes>,
    sessions: Arc<Sessions>,
}

impl UpstreamHandler {
    /// The handler of upstream `upstream`'s connection.
    pub fn new(upstream: Arc<str>, routes: Arc<Routes>, sessions: Arc<Sessions>) -> Self {
        UpstreamHandler {
            upstream,
            routes,
            sessions,
        }
    }

    /// The client request a message from the upstream belongs to, if one can be told.
    /// Where the upstream's requests are routed: its connection reads progress off it.
    pub(super) fn routes(&self) -> Arc<Routes> {
        Arc::clone(&self.routes)
    }

    /// With the progress of that call (or those calls) not yet handed on: what the upstream
    /// sent before this message.
    async fn origin(
        &self,
        extensions: &rmcp::model::Extensions,
    ) -> Option<(Origin, Vec<Arc<Unsent>>)> {
        if let Some(InboundStreamOrigin::OutboundRequest(id)) =
            extensions.get::<InboundStreamOrigin>()
            && let Some((origin, unsent)) = self.routes.by_request(id).await
        {
            return Some((origin, vec![unsent]));
        }
        self.routes.only_session().await
    }

    async fn log_targets(&self, extensions: &rmcp::model::Extensions) -> Vec<Listener> {
        match self.origin(extensions).await {
            Some((origin, _)) => vec![Listener::Peer(origin.peer)],
            None => self.sessions.peers(),
        }
    }
}

/// Hands `request` to the 2026-07-28 client's call through `asks`, and waits for the client's
/// answer (its retry), or for the upstream to cancel.
async fn ask(
    asks: &Asks,
    request: ServerRequest,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<ClientResult, ErrorData> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    if asks.send(Ask { request, answer }).await.is_err() {
        return Err(ErrorData::internal_error(
            "the client's call ended before it could be asked",
            None,
        ));
    }
    tokio::select! {
        answer = answered => answer.unwrap_or_else(|_| {
            Err(ErrorData::internal_error("the client's call ended before it answered", None))
        }),
        () = cancel.cancelled() => Err(ErrorData::internal_error("cancelled by the upstream", None)),
    }
}

/// An rmcp error as the JSON-RPC error relayed back.
pub fn error_data(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(data) => data,
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

impl Service<RoleClient> for UpstreamHandler {
    async fn handle_request(
        &self,
        request: ServerRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        match &request {
            ServerRequest::PingRequest(_) => return Ok(ClientResult::empty(())),
            ServerRequest::CustomRequest(custom) => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    crate::redact::shown(&custom.method).to_string(),
                    None,
                ));
            }
            _ => {}
        }
        let Some((origin, unsent)) = self.origin(&context.extensions).await else {
            if let ServerRequest::ListRootsRequest(_) = request {
                // Asked outside any client's call (servers ask on connect): the gateway has
                // no roots of its own.
                return Ok(ClientResult::ListRootsResult(
                    rmcp::model::ListRootsResult::default(),
                ));
            }
            tracing::warn!(upstream = %self.upstream, "a request from the upstream belongs to no one client call; refused");
            return Err(ErrorData::invalid_request(
                "the gateway cannot tell which client this request is for",
                None,
            ));
        };
        // From here the call waits on its client, not on the upstream.
        let _asking = origin.client_time.asking();
        // What the upstream sent before this request reaches the client before it: the
        // connection queued its progress in order (`progress::Ordered`) before rmcp handed this
        // request here. A 2026-07-28 client's first leg would otherwise be answered
        // `input_required` with that progress still on its way, and lose it.
        for one in &unsent {
            one.flushed().await;
        }
        if let Some(asks) = &origin.input {
            // A 2026-07-28 client takes no request from a server: the call it is waiting on
            // answers `input_required`, and its retry brings the answer (see `relay::input`).
            return ask(asks, request, &context.ct).await;
        }
        let mut request = request;
        request
            .extensions_mut()
            .insert(OriginatingRequestId(origin.request.clone()));
        // Sent from a task of its own: rmcp marks a request sent inside a handler with the id of
        // the request being handled (a task-local), which here is the upstream's id, not the
        // client's; outside that scope the mark set above stands, and the client gets the
        // request on the stream of the call it belongs to.
        let peer = origin.peer.clone();
        let mut sent = tokio::spawn(async move { peer.send_request(request).await });
        tokio::select! {
            answer = &mut sent => match answer {
                Ok(answer) => answer.map_err(error_data),
                Err(_) => Err(ErrorData::internal_error("the relayed request was lost", None)),
            },
            () = context.ct.cancelled() => {
                sent.abort();
                Err(ErrorData::internal_error("cancelled by the upstream", None))
            }
        }
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        match notification {
            ServerNotification::ProgressNotification(progress) => {
                let mut params = progress.params;
                if let Some(origin) = self.routes.by_token(&params.progress_token).await
                    && let Some((peer, token)) = origin.progress_target()
                {
                    params.progress_token = token;
                    let _ = peer.notify_progress(params).await;
                }
            }
            ServerNotification::LoggingMessageNotification(log) => {
                for listener in self.log_targets(&context.extensions).await {
                    listener
                        .notify(ServerNotification::LoggingMessageNotification(log.clone()))
                        .await;
                }
            }
            other => self.sessions.relay(other).await,
        }
        Ok(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::new(
            ClientCapabilities::builder()
                .enable_sampling()
                .enable_elicitation()
                .enable_roots()
                .enable_roots_list_changed()
                .build(),
            Implementation::new("toolbreaker-gateway", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = PROTOCOL;
        config
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[
            ProtocolVersion::V_2026_07_28,
            PROTOCOL,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_03_26,
        ])
    }
}
