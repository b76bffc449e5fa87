//! Sessions for the `test_reconnection` tool (SEP-1699): rmcp's in-memory session manager, plus
//! what the tool needs that rmcp keeps to itself, the HTTP stream a call's answer travels on.
//!
//! The tool closes that stream mid-call; the client reconnects with `GET` and `Last-Event-ID`,
//! and the answer then arrives on the resumed stream. rmcp's `LocalSessionManager` keeps a
//! stream's events only until its answer is sent (without an event store), so the tool must
//! answer after the client has resumed, not before: [`Sessions::resumed`] says when it did.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio::sync::Notify;
use tokio_stream::wrappers::ReceiverStream;

/// The tool whose calls' streams are remembered.
pub const RECONNECTION_TOOL: &str = "test_reconnection";

/// rmcp's `LocalSessionManager`, remembering the HTTP stream of each `test_reconnection` call.
#[derive(Default)]
pub struct Sessions {
    inner: LocalSessionManager,
    /// `(session, JSON-RPC request id)` of a `test_reconnection` call -> rmcp's id of the HTTP
    /// response stream that carries its answer. Taken out by the call.
    streams: Mutex<HashMap<(SessionId, RequestId), u64>>,
    /// A session whose call closed its stream -> woken when the client resumes a stream of it.
    waiting: Mutex<HashMap<SessionId, Arc<Notify>>>,
}

/// What [`Sessions::close_stream`] did.
pub enum Closed {
    /// The stream was closed; await this before answering: the client has resumed.
    Resumed(Arc<Notify>),
    /// Nothing to close (not a remembered call, or the session is gone).
    Nothing,
}

impl Sessions {
    /// The live session `id`, as rmcp keeps it.
    async fn handle(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        let sessions = self.inner.sessions.read().await;
        let handle = sessions.get(id).cloned();
        handle.ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }

    /// Closes the HTTP stream that carries the answer to request `request` of `session`,
    /// after a priming event that tells the client to come back after `retry`.
    pub async fn close_stream(
        &self,
        session: &SessionId,
        request: &RequestId,
        retry: Duration,
    ) -> Closed {
        let key = (session.clone(), request.clone());
        let Some(stream) = self.streams.lock().unwrap().remove(&key) else {
            return Closed::Nothing;
        };
        let Ok(handle) = self.handle(session).await else {
            return Closed::Nothing;
        };
        let resumed = Arc::new(Notify::new());
        self.waiting
            .lock()
            .unwrap()
            .insert(session.clone(), resumed.clone());
        match handle.close_sse_stream(stream, Some(retry)).await {
            Ok(()) => Closed::Resumed(resumed),
            Err(_) => {
                self.waiting.lock().unwrap().remove(session);
                Closed::Nothing
            }
        }
    }

    /// Forgets a session's waiting call (it answered, resumed or not).
    pub fn forget(&self, session: &SessionId) {
        self.waiting.lock().unwrap().remove(session);
    }
}

/// The id of a `test_reconnection` call in `message`, if it is one.
fn reconnection_call(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    match &request.request {
        ClientRequest::CallToolRequest(call) if call.params.name == RECONNECTION_TOOL => {
            Some(request.id.clone())
        }
        _ => None,
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.streams
            .lock()
            .unwrap()
            .retain(|(session, _), _| session != id);
        self.forget(id);
        self.inner.close_session(id).await
    }

    /// As rmcp's own, but it keeps the stream's id of a `test_reconnection` call.
    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let handle = self.handle(id).await?;
        let receiver = handle.establish_request_wise_channel().await?;
        if let (Some(request), Some(stream)) =
            (reconnection_call(&message), receiver.http_request_id)
        {
            let key = (id.clone(), request);
            self.streams.lock().unwrap().insert(key, stream);
        }
        handle
            .push_message(message, receiver.http_request_id)
            .await?;
        Ok(ReceiverStream::new(receiver.inner))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    /// As rmcp's own; then wakes a `test_reconnection` call of the session waiting for it.
    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        if let Some(resumed) = self.waiting.lock().unwrap().remove(id) {
            resumed.notify_one();
        }
        Ok(stream)
    }
}
