//! Which client session a message from an upstream belongs to.
//!
//! Every upstream has one connection, shared by all client sessions. A request forwarded to it
//! is registered here under the id and the progress token the upstream sees (both chosen by
//! this gateway's rmcp peer, so unique on the connection), with the client session it came
//! from. A progress notification, or a request the upstream sends while serving it
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`), is routed back to that
//! session with the client's own ids.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{ProgressToken, RequestId, RequestMetaObject};
use rmcp::service::{Peer, RoleServer};

use super::progress::Unsent;

/// A client session's number, unique in this gateway's process.
pub type SessionId = u64;

/// The client request a forwarded request came from.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The client session.
    pub session: SessionId,
    /// The client's peer: where its notifications and requests go.
    pub peer: Peer<RoleServer>,
    /// The client's id for its request.
    pub request: RequestId,
    /// The client's progress token, when it asked for progress.
    pub progress: Option<ProgressToken>,
    /// The client's request `_meta`, sent on with the forwarded request (its progress token
    /// replaced by the gateway's).
    pub meta: Option<RequestMetaObject>,
    /// The client speaks 2026-07-28: an upstream's `input_required` result reaches it as it
    /// is (it retries with the answers); a 2025-11-25 client is asked by the gateway instead.
    pub modern: bool,
    /// For a 2026-07-28 client's call: where a 2025-11-25 upstream's requests during the call
    /// go (the client has no session to be asked on); `None` for a session's client.
    pub input: Option<Asks>,
    /// Whether the request is waiting on its client now (a question relayed to it): that time
    /// is not the upstream's, for its timeout or its health.
    pub client_time: Arc<super::ClientTime>,
    /// For a 2026-07-28 client's call that waits across its retries: where its progress goes
    /// now (the latest retry's stream and progress token), in place of `peer` and `progress`.
    pub progress_to: Option<ProgressTo>,
}

/// Where a call's progress goes, changed at each retry of a 2026-07-28 client's call.
pub type ProgressTo = Arc<Mutex<(Peer<RoleServer>, Option<ProgressToken>)>>;

impl Origin {
    /// What the client declared it can do: its request's `_meta`, or its session's
    /// `initialize`. A 2026-07-28 upstream is told these, not the gateway's own, so that it
    /// asks the client only for what the client can give. Read when that is needed, not kept.
    pub fn client_capabilities(&self) -> Option<rmcp::model::ClientCapabilities> {
        self.meta
            .as_ref()
            .and_then(|meta| meta.client_capabilities())
            .or_else(|| self.peer.peer_info().map(|info| info.capabilities.clone()))
    }

    /// Where the request's progress goes now, and the client's token for it (none: the client
    /// asked for no progress).
    pub fn progress_target(&self) -> Option<(Peer<RoleServer>, ProgressToken)> {
        match &self.progress_to {
            Some(to) => {
                let to = to.lock().unwrap_or_else(PoisonError::into_inner);
                to.1.clone().map(|token| (to.0.clone(), token))
            }
            None => self
                .progress
                .clone()
                .map(|token| (self.peer.clone(), token)),
        }
    }
}

/// A request a 2025-11-25 upstream sent during a 2026-07-28 client's call, and where its answer
/// goes once the client's retry brings it.
#[derive(Debug)]
pub struct Ask {
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub request: rmcp::model::ServerRequest,
    /// The client's answer, or why there is none.
    pub answer: tokio::sync::oneshot::Sender<Result<rmcp::model::ClientResult, rmcp::ErrorData>>,
}

/// Where a call's [`Ask`]s go.
pub type Asks = tokio::sync::mpsc::Sender<Ask>;

/// The requests in flight on one upstream connection, by the id and token the upstream knows.
#[derive(Debug, Default)]
pub struct Routes {
    /// Held while a request is sent and registered, and taken (briefly) before a lookup: a
    /// message about a request never overtakes its registration.
    sending: tokio::sync::Mutex<()>,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    by_request: HashMap<RequestId, Route>,
    by_token: HashMap<ProgressToken, RequestId>,
}

impl Table {
    /// One route of the one client session with requests in flight, and the progress not yet
    /// handed on of each of that session's requests; `None` with no session, or several.
    fn one_session(&self) -> Option<(&Route, Vec<Arc<Unsent>>)> {
        let mut routes = self.by_request.values();
        let first = routes.next()?;
        let mut unsent = vec![Arc::clone(&first.unsent)];
        for other in routes {
            if other.origin.session != first.origin.session {
                return None;
            }
            unsent.push(Arc::clone(&other.unsent));
        }
        Some((first, unsent))
    }
}

/// Where a request's messages go, and its progress not yet handed on.
#[derive(Debug)]
struct Route {
    origin: Origin,
    unsent: Arc<Unsent>,
}

/// Removes a registration when the forwarded request ends, however it ends.
#[derive(Debug)]
pub struct Registered<'a> {
    routes: &'a Routes,
    request: RequestId,
    token: ProgressToken,
    unsent: Arc<Unsent>,
}

impl Registered<'_> {
    /// Resolves once every progress notification of the request received so far has been
    /// handed to its client: its answer goes after them.
    pub async fn flushed(&self) {
        self.unsent.flushed().await;
    }
}

impl Routes {
    /// Holds registration order: keep the guard from before the request is sent until
    /// [`register`](Self::register) is done.
    pub async fn sending(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.sending.lock().await
    }

    /// Records that the upstream's `request` (with its progress `token`) serves `origin`.
    pub fn register(
        &self,
        request: RequestId,
        token: ProgressToken,
        origin: Origin,
    ) -> Registered<'_> {
        let unsent = Arc::new(Unsent::default());
        let mut table = self.table();
        table.by_token.insert(token.clone(), request.clone());
        let route = Route {
            origin,
            unsent: Arc::clone(&unsent),
        };
        table.by_request.insert(request.clone(), route);
        Registered {
            routes: self,
            request,
            token,
            unsent,
        }
    }

    /// The origin of the upstream's request `request`, once any registration under way is done,
    /// and its progress not yet handed on.
    pub async fn by_request(&self, request: &RequestId) -> Option<(Origin, Arc<Unsent>)> {
        drop(self.sending.lock().await);
        self.table()
            .by_request
            .get(request)
            .map(|route| (route.origin.clone(), Arc::clone(&route.unsent)))
    }

    /// The origin of the request whose progress token is `token`.
    pub async fn by_token(&self, token: &ProgressToken) -> Option<Origin> {
        drop(self.sending.lock().await);
        self.by_token_now(token).map(|(origin, _)| origin)
    }

    /// The origin of the request whose progress token is `token` as registered now (without
    /// waiting for a registration under way), and its progress not yet handed on.
    pub fn by_token_now(&self, token: &ProgressToken) -> Option<(Origin, Arc<Unsent>)> {
        let table = self.table();
        let request = table.by_token.get(token)?;
        table
            .by_request
            .get(request)
            .map(|route| (route.origin.clone(), Arc::clone(&route.unsent)))
    }

    /// Where a log message goes, as registered now: the client of the request whose response
    /// stream (`stream`) it came on, else the one client session with requests in flight here
    /// ([`only_session`](Self::only_session)); with the calls it counts against (that request,
    /// or every request of that session). `None`: no one client.
    pub fn log_target_now(
        &self,
        stream: Option<&RequestId>,
    ) -> Option<(Peer<RoleServer>, Vec<Arc<Unsent>>)> {
        let table = self.table();
        // A 2026-07-28 client's call that waits across its retries is on its latest stream.
        let peer_of = |origin: &Origin| match &origin.progress_to {
            Some(to) => to.lock().unwrap_or_else(PoisonError::into_inner).0.clone(),
            None => origin.peer.clone(),
        };
        if let Some(route) = stream.and_then(|id| table.by_request.get(id)) {
            return Some((peer_of(&route.origin), vec![Arc::clone(&route.unsent)]));
        }
        let (first, unsent) = table.one_session()?;
        Some((peer_of(&first.origin), unsent))
    }

    /// The one client session with requests in flight on this upstream, if exactly one has:
    /// where a message that names no request goes (a stdio upstream's, or one sent on the
    /// standalone stream). One of its requests is the origin; with the progress of every one
    /// of them not yet handed on.
    pub async fn only_session(&self) -> Option<(Origin, Vec<Arc<Unsent>>)> {
        drop(self.sending.lock().await);
        let table = self.table();
        let (first, unsent) = table.one_session()?;
        Some((first.origin.clone(), unsent))
    }

    /// The client sessions with requests in flight here.
    pub fn sessions(&self) -> Vec<SessionId> {
        let mut sessions: Vec<SessionId> = self
            .table()
            .by_request
            .values()
            .map(|route| route.origin.session)
            .collect();
        sessions.sort_unstable();
        sessions.dedup();
        sessions
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut table = self.routes.table();
        table.by_request.remove(&self.request);
        table.by_token.remove(&self.token);
    }
}
