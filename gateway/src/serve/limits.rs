//! The cap on concurrent MCP sessions: overall and per client (its address now; its identity
//! once the gateway has one), with the idle expiry rmcp applies to a 2025-11-25 session.
//!
//! What holds a place ([`Slot`]):
//! - a 2025-11-25 session, from its `initialize` until it ends: a `DELETE`, its idle expiry
//!   ([`HttpOptions::session_idle`]), or the gateway's shutdown;
//! - a 2026-07-28 `subscriptions/listen` stream (the one request of that era that stays open,
//!   with a session of its own in the gateway), until its response ends.
//!
//! Other 2026-07-28 requests are stateless: they end with their response, so they hold no
//! place. A request over the cap is answered `503 Service Unavailable` (the gateway's limit)
//! or `429 Too Many Requests` (the client's), with `Retry-After` and a JSON-RPC error naming
//! the limit and its flag.
//!
//! [`HttpOptions::session_idle`]: super::HttpOptions::session_idle

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::store::EventStore;
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use super::in_flight::HeldBy;
use super::jsonrpc::is_json;
use super::legacy::LegacySessions;
use super::log_limit::{LOG_INTERVAL, LogLimit};

/// The `Retry-After` of a refusal, in seconds: a place frees when a session ends, which the
/// gateway cannot foresee.
pub(crate) const RETRY_AFTER_SECS: u64 = 5;

/// The JSON-RPC error code of a refusal: in JSON-RPC's range for a server's own errors.
const FULL_CODE: i32 = -32000;

/// Whose sessions count together toward the per-client cap.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// The peer's IP address (its port aside: one client opens many connections).
    Address(IpAddr),
}

/// The places in use, and the sessions they are bound to.
#[derive(Default)]
struct Count {
    total: usize,
    by_client: HashMap<ClientKey, usize>,
    /// The 2025-11-25 sessions rmcp has made and not closed, with the place bound to each once
    /// its `initialize` has been answered.
    live: HashMap<Arc<str>, Option<Slot>>,
}

/// The caps and the count.
pub(crate) struct Limits {
    max: usize,
    per_client: usize,
    count: Mutex<Count>,
}

/// Which cap refused a new session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Full {
    Overall(usize),
    Client(usize),
}

/// One place in use, freed when dropped.
pub(crate) struct Slot {
    limits: Arc<Limits>,
    client: Option<ClientKey>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut count = self.limits.lock();
        count.total -= 1;
        if let Some(client) = &self.client
            && let Some(held) = count.by_client.get_mut(client)
        {
            *held -= 1;
            if *held == 0 {
                count.by_client.remove(client);
            }
        }
    }
}

impl Limits {
    /// At most `max` places in all, `per_client` for one client.
    pub(crate) fn new(max: usize, per_client: usize) -> Arc<Limits> {
        Arc::new(Limits {
            max,
            per_client,
            count: Mutex::new(Count::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Count> {
        // A count is whole after every change (no panic midway), so a poisoned lock's is good.
        self.count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for `client` (`None`: a peer whose address is not known, counted overall only).
    fn admit(self: &Arc<Self>, client: Option<ClientKey>) -> Result<Slot, Full> {
        let mut count = self.lock();
        if count.total >= self.max {
            return Err(Full::Overall(self.max));
        }
        if let Some(client) = &client {
            let held = count.by_client.entry(client.clone()).or_default();
            if *held >= self.per_client {
                return Err(Full::Client(self.per_client));
            }
            *held += 1;
        }
        count.total += 1;
        drop(count);
        Ok(Slot {
            limits: Arc::clone(self),
            client,
        })
    }

    /// How many places are in use.
    #[cfg(test)]
    fn in_use(&self) -> usize {
        self.lock().total
    }

    /// rmcp made session `id`.
    fn created(&self, id: &str) {
        self.lock().live.insert(Arc::from(id), None);
    }

    /// Session `id` is answered: it holds `slot` until it is closed (if it is closed already,
    /// the place is freed now).
    fn bind(&self, id: &str, slot: Slot) {
        let mut count = self.lock();
        let unbound = match count.live.get_mut(id) {
            Some(place) => place.replace(slot),
            None => Some(slot),
        };
        drop(count);
        drop(unbound);
    }

    /// Session `id` ended; its place is freed.
    fn closed(&self, id: &str) {
        let ended = self.lock().live.remove(id);
        // Dropped with the lock released: a slot's drop takes it.
        drop(ended);
    }
}

/// rmcp's session manager for 2025-11-25 sessions ([`LocalSessionManager`]), which frees a
/// session's place when rmcp closes it (its `DELETE`, its idle expiry, the shutdown: rmcp
/// closes every session whose service ended).
pub(crate) struct Counted {
    inner: LocalSessionManager,
    limits: Arc<Limits>,
    legacy: Arc<LegacySessions>,
}

impl Counted {
    /// Sessions that expire after `idle` without a message either way.
    pub(crate) fn new(limits: Arc<Limits>, idle: Duration) -> Counted {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        let legacy = Arc::new(LegacySessions::new(idle));
        Counted {
            inner,
            limits,
            legacy,
        }
    }

    /// What the manager hears of its sessions, for the shortcut.
    pub(crate) fn legacy(&self) -> Arc<LegacySessions> {
        Arc::clone(&self.legacy)
    }
}

impl SessionManager for Counted {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.limits.created(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.legacy.initialize(id, &message);
        let answer = self.inner.initialize_session(id, message).await;
        if answer.is_err() {
            self.legacy.closed(id);
        }
        answer
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.legacy.closed(id);
        let closed = self.inner.close_session(id).await;
        self.limits.closed(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.legacy.heard(id, Some(&message));
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.legacy.heard(id, Some(&message));
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.legacy.heard(id, None);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.legacy.heard(id, None);
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// What a POST without `Mcp-Session-Id` asks for, as far as the cap goes.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<RequestId>,
}

/// The middleware of `/mcp` (inside the one that reads malformed bodies, so the body is read
/// already); see the [module](self).
pub(crate) async fn cap_sessions(
    State(limits): State<Arc<Limits>>,
    request: Request,
    next: Next,
) -> Response {
    // A body that is not JSON opens nothing (rmcp answers 415), and is not read here.
    let headers = request.headers();
    if request.method() != Method::POST
        || headers.contains_key("mcp-session-id")
        || !is_json(headers)
    {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // The layer outside this one has read a JSON body already, up to the size limit (a body
    // over it, only its first chunks): this reads what is in memory.
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        let text = "Bad Request: the request body could not be read";
        return (StatusCode::BAD_REQUEST, text).into_response();
    };
    let head = serde_json::from_slice::<Head<'_>>(&body).ok();
    let (method, id) = match &head {
        Some(Head {
            method: Some(method),
            id,
        }) => (method.as_ref(), id.clone()),
        _ => ("", None),
    };
    let opens = matches!(method, "initialize" | "subscriptions/listen");
    let listen = method == "subscriptions/listen";
    let request = Request::from_parts(parts, Body::from(body.clone()));
    if !opens {
        return next.run(request).await;
    }
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| ClientKey::Address(peer.ip()));
    let slot = match limits.admit(client.clone()) {
        Ok(slot) => slot,
        Err(full) => return refuse(full, id, client.as_ref()),
    };
    let response = next.run(request).await;
    if listen {
        // Held until the stream's response ends (or is dropped: the client went away).
        return response.map(|inner| Body::new(HeldBy { inner, _held: slot }));
    }
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok());
    if let Some(session) = session {
        limits.bind(session, slot);
    }
    response
}

/// The answer to a request over the cap.
fn refuse(full: Full, id: Option<RequestId>, client: Option<&ClientKey>) -> Response {
    let (status, limit, max, message) = match full {
        Full::Overall(max) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "--max-sessions",
            max,
            format!(
                "too many sessions: the gateway holds its limit of {max} concurrent sessions \
                 (--max-sessions); end one (DELETE) or retry after {RETRY_AFTER_SECS} s"
            ),
        ),
        Full::Client(max) => (
            StatusCode::TOO_MANY_REQUESTS,
            "--max-sessions-per-client",
            max,
            format!(
                "too many sessions from this client: it holds the limit of {max} concurrent \
                 sessions per client (--max-sessions-per-client); end one (DELETE) or retry \
                 after {RETRY_AFTER_SECS} s"
            ),
        ),
    };
    static REFUSED: LogLimit = LogLimit::new(LOG_INTERVAL);
    if let Some(suppressed) = REFUSED.admit(limit) {
        let client = client.map(|ClientKey::Address(ip)| ip.to_string());
        tracing::warn!(
            limit,
            max,
            client = client.as_deref().unwrap_or("unknown"),
            suppressed,
            "refused a new session: its limit is reached (`suppressed`: how many since the \
             last one logged)"
        );
    }
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": FULL_CODE,
            "message": message,
            "data": {"limit": limit, "max": max, "retryAfterSeconds": RETRY_AFTER_SECS},
        },
    });
    let mut response = (status, answer.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ip: &str) -> Option<ClientKey> {
        Some(ClientKey::Address(ip.parse().unwrap()))
    }

    #[test]
    fn places_are_counted_overall_and_per_client_and_freed_on_drop() {
        let limits = Limits::new(3, 2);
        let a1 = limits.admit(at("10.0.0.1")).unwrap();
        let a2 = limits.admit(at("10.0.0.1")).unwrap();
        assert_eq!(limits.admit(at("10.0.0.1")).err(), Some(Full::Client(2)));
        let b = limits.admit(at("10.0.0.2")).unwrap();
        assert_eq!(limits.admit(None).err(), Some(Full::Overall(3)));
        assert_eq!(limits.in_use(), 3);
        drop(a1);
        let a3 = limits.admit(at("10.0.0.1")).unwrap();
        drop((a2, a3, b));
        assert_eq!(limits.in_use(), 0);
        assert!(limits.lock().by_client.is_empty());
    }

    #[test]
    fn a_session_holds_its_place_until_closed_and_one_closed_before_binding_frees_it() {
        let limits = Limits::new(2, 2);
        limits.created("s1");
        limits.bind("s1", limits.admit(None).unwrap());
        assert_eq!(limits.in_use(), 1);
        limits.closed("s1");
        assert_eq!(limits.in_use(), 0);
        // rmcp ended it before its answer was seen: the place is not kept.
        limits.created("s2");
        limits.closed("s2");
        limits.bind("s2", limits.admit(None).unwrap());
        assert_eq!(limits.in_use(), 0);
        assert!(limits.lock().live.is_empty());
    }
}
