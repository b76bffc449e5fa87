//! The 2025-11-25 sessions a [`Shortcut`](super::Shortcut) may serve: what rmcp's session
//! manager ([`Counted`](super::limits::Counted)) hears of each session, kept where a request
//! reads it without a lock shared by all calls.
//!
//! A session is offered to the shortcut ([`LegacySessions::offered`]) when all of this holds:
//! - its `initialize` asked for 2025-11-25 and its client declared none of `roots`, `sampling`,
//!   `elicitation` or the tasks extension (nothing an upstream could ask of it during a call);
//! - its client has said `notifications/initialized`;
//! - it never set a log level (`logging/setLevel`: a call's log messages go to rmcp's stream);
//! - rmcp heard from it less than half its idle expiry ago. rmcp ends a session after
//!   [`HttpOptions::session_idle`](super::HttpOptions::session_idle) without a message through
//!   it; the shortcut's calls do not go through it, so once half that time has passed, the
//!   next request goes to rmcp, which starts the idle time again.
//!
//! A `notifications/cancelled` of a call the shortcut holds cancels it
//! ([`LegacySession::cancellable`]); rmcp never knew the call. So does the session's end (its
//! `DELETE`, its idle expiry, the shutdown).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ProtocolVersion, RequestId,
};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

/// A 2025-11-25 session the shortcut may serve.
#[derive(Debug)]
pub struct LegacySession {
    /// The client's capabilities, as its `initialize` declared them (rmcp's reading).
    capabilities: Box<RawValue>,
    /// Whether the client said `notifications/initialized`.
    ready: AtomicBool,
    /// Whether the client set a log level (`logging/setLevel`): its calls are rmcp's since.
    logs: AtomicBool,
    /// When rmcp last heard from the session: milliseconds after its registry began.
    heard: AtomicU64,
    /// The calls the shortcut holds, by request id: cancelled by the client's
    /// `notifications/cancelled`.
    calls: Mutex<HashMap<RequestId, CancellationToken>>,
}

impl LegacySession {
    /// The client's capabilities (a JSON object), as `initialize` declared them.
    #[must_use]
    pub fn capabilities(&self) -> &RawValue {
        &self.capabilities
    }

    /// A call of this session with JSON-RPC id `id` (its JSON text), cancelled when the
    /// client cancels it, until the returned guard is dropped; `None` when `id` is not an id
    /// or another call of the session holds it.
    #[must_use]
    pub fn cancellable(self: &Arc<Self>, id: &RawValue) -> Option<Cancellable> {
        let id: RequestId = serde_json::from_str(id.get()).ok()?;
        let token = CancellationToken::new();
        let mut calls = self.lock();
        if calls.contains_key(&id) {
            return None;
        }
        calls.insert(id.clone(), token.clone());
        drop(calls);
        Some(Cancellable {
            session: Arc::clone(self),
            id,
            token,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        // A map is whole after every change: a poisoned lock's is good.
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cancel(&self, id: &RequestId) {
        if let Some(token) = self.lock().get(id) {
            token.cancel();
        }
    }
}

/// A call of a [`LegacySession`] the client may cancel; forgotten when dropped.
#[derive(Debug)]
pub struct Cancellable {
    session: Arc<LegacySession>,
    id: RequestId,
    token: CancellationToken,
}

impl Cancellable {
    /// Cancelled when the client cancels the call.
    #[must_use]
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for Cancellable {
    fn drop(&mut self) {
        self.session.lock().remove(&self.id);
    }
}

/// Every 2025-11-25 session rmcp holds whose client the shortcut may serve.
pub(crate) struct LegacySessions {
    live: papaya::HashMap<Arc<str>, Arc<LegacySession>>,
    began: Instant,
    /// rmcp's idle expiry of a session.
    idle: Duration,
}

impl LegacySessions {
    pub(crate) fn new(idle: Duration) -> LegacySessions {
        LegacySessions {
            live: papaya::HashMap::new(),
            began: Instant::now(),
            idle,
        }
    }

    /// Milliseconds since the registry began.
    fn now(&self) -> u64 {
        u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// rmcp is about to answer session `id`'s `initialize`, `message`.
    pub(crate) fn initialize(&self, id: &str, message: &ClientJsonRpcMessage) {
        let ClientJsonRpcMessage::Request(request) = message else {
            return;
        };
        let ClientRequest::InitializeRequest(initialize) = &request.request else {
            return;
        };
        let params = &initialize.params;
        let capabilities = &params.capabilities;
        if params.protocol_version != ProtocolVersion::V_2025_11_25
            || capabilities.roots.is_some()
            || capabilities.sampling.is_some()
            || capabilities.elicitation.is_some()
            || capabilities.supports_tasks()
        {
            return;
        }
        let Ok(capabilities) = serde_json::value::to_raw_value(capabilities) else {
            return;
        };
        let session = LegacySession {
            capabilities,
            ready: AtomicBool::new(false),
            logs: AtomicBool::new(false),
            heard: AtomicU64::new(self.now()),
            calls: Mutex::default(),
        };
        self.live.pin().insert(Arc::from(id), Arc::new(session));
    }

    /// rmcp is about to take `message` (`None`: a stream's `GET`) of session `id`.
    pub(crate) fn heard(&self, id: &str, message: Option<&ClientJsonRpcMessage>) {
        self.heard_at(id, message, self.now());
    }

    /// [`heard`](Self::heard) at `now` (milliseconds after the registry began).
    fn heard_at(&self, id: &str, message: Option<&ClientJsonRpcMessage>, now: u64) {
        let live = self.live.pin();
        let Some(session) = live.get(id) else {
            return;
        };
        // Relaxed: a time only; a request that reads an older one goes to rmcp, which is
        // always right.
        session.heard.fetch_max(now, Ordering::Relaxed);
        match message {
            Some(ClientJsonRpcMessage::Request(request))
                if matches!(request.request, ClientRequest::SetLevelRequest(_)) =>
            {
                // Kept, not offered: a call the shortcut holds can still be cancelled.
                // Relaxed: a request that reads the old value still takes the direct road, as
                // one that came just before the `setLevel` would; nothing else is ordered by it.
                session.logs.store(true, Ordering::Relaxed);
            }
            Some(ClientJsonRpcMessage::Notification(notification)) => {
                match &notification.notification {
                    ClientNotification::InitializedNotification(_) => {
                        // Release: the session's fields, read by whoever sees it ready.
                        session.ready.store(true, Ordering::Release);
                    }
                    ClientNotification::CancelledNotification(cancelled) => {
                        if let Some(request) = &cancelled.params.request_id {
                            session.cancel(request);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Session `id` ended: its calls the shortcut holds end too, with no answer (as rmcp ends
    /// the streams of its own).
    pub(crate) fn closed(&self, id: &str) {
        let Some(session) = self.live.pin().remove(id).map(Arc::clone) else {
            return;
        };
        for token in session.lock().values() {
            token.cancel();
        }
    }

    /// Session `id`, if the shortcut may serve its request now (see the [module](self)).
    pub(crate) fn offered(&self, id: &str) -> Option<Arc<LegacySession>> {
        self.offered_at(id, self.now())
    }

    /// [`offered`](Self::offered) at `now` (milliseconds after the registry began).
    fn offered_at(&self, id: &str, now: u64) -> Option<Arc<LegacySession>> {
        let live = self.live.pin();
        let session = live.get(id)?;
        let quiet = now.saturating_sub(session.heard.load(Ordering::Relaxed));
        let half = u64::try_from(self.idle.as_millis() / 2).unwrap_or(u64::MAX);
        // Acquire: pairs with the Release that said it ready.
        // Relaxed `logs`: see where it is stored.
        let plain = session.ready.load(Ordering::Acquire) && !session.logs.load(Ordering::Relaxed);
        (plain && quiet < half).then(|| Arc::clone(session))
    }
}

#[cfg(test)]
#[allow(deprecated)]
mod tests {
    use rmcp::model::{
        CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientInfo,
        Implementation, InitializeRequest, InitializedNotification, JsonRpcNotification,
        JsonRpcRequest, JsonRpcVersion2_0, LoggingLevel, SetLevelRequest, SetLevelRequestParams,
    };

    use super::*;

    fn initialize(
        version: ProtocolVersion,
        capabilities: ClientCapabilities,
    ) -> ClientJsonRpcMessage {
        let mut info = ClientInfo::new(capabilities, Implementation::new("c", "1"));
        info.protocol_version = version;
        ClientJsonRpcMessage::Request(JsonRpcRequest::new(
            RequestId::Number(0),
            ClientRequest::InitializeRequest(InitializeRequest::new(info)),
        ))
    }

    fn notification(notification: ClientNotification) -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::Notification(JsonRpcNotification {
            jsonrpc: JsonRpcVersion2_0,
            notification,
        })
    }

    fn initialized() -> ClientJsonRpcMessage {
        notification(ClientNotification::InitializedNotification(
            InitializedNotification::default(),
        ))
    }

    const IDLE: Duration = Duration::from_secs(60);

    /// Session `id`, its client's `initialize` (for `version`, declaring `capabilities`) and
    /// `notifications/initialized` heard.
    fn opened(
        sessions: &LegacySessions,
        id: &str,
        version: ProtocolVersion,
        capabilities: ClientCapabilities,
    ) {
        sessions.initialize(id, &initialize(version, capabilities));
        sessions.heard(id, Some(&initialized()));
    }

    #[test]
    fn a_session_is_offered_once_initialized_and_until_it_sets_a_level_or_ends() {
        let sessions = LegacySessions::new(IDLE);
        sessions.initialize(
            "s",
            &initialize(ProtocolVersion::V_2025_11_25, ClientCapabilities::default()),
        );
        assert!(sessions.offered("s").is_none(), "not initialized yet");
        sessions.heard("s", Some(&initialized()));
        let session = sessions.offered("s").expect("offered");
        assert_eq!(session.capabilities().get(), "{}");
        let level = ClientJsonRpcMessage::Request(JsonRpcRequest::new(
            RequestId::Number(1),
            ClientRequest::SetLevelRequest(SetLevelRequest::new(SetLevelRequestParams::new(
                LoggingLevel::Debug,
            ))),
        ));
        let id: Box<RawValue> = serde_json::from_str("9").unwrap();
        let held = session.cancellable(&id).unwrap();
        sessions.heard("s", Some(&level));
        assert!(sessions.offered("s").is_none(), "a log level is rmcp's");
        // A call the shortcut took before can still be cancelled.
        let cancel = notification(ClientNotification::CancelledNotification(
            CancelledNotification::new(CancelledNotificationParam::new(
                Some(RequestId::Number(9)),
                None,
            )),
        ));
        sessions.heard("s", Some(&cancel));
        assert!(held.token().is_cancelled());
        opened(
            &sessions,
            "t",
            ProtocolVersion::V_2025_11_25,
            ClientCapabilities::default(),
        );
        sessions.closed("t");
        assert!(sessions.offered("t").is_none(), "ended");
    }

    #[test]
    fn a_client_an_upstream_could_ask_for_input_or_of_another_revision_is_never_offered() {
        let sessions = LegacySessions::new(IDLE);
        let asks = [
            ClientCapabilities::builder().enable_roots().build(),
            ClientCapabilities::builder().enable_sampling().build(),
            ClientCapabilities::builder().enable_elicitation().build(),
        ];
        for (n, capabilities) in asks.into_iter().enumerate() {
            let id = n.to_string();
            opened(&sessions, &id, ProtocolVersion::V_2025_11_25, capabilities);
            assert!(sessions.offered(&id).is_none(), "{id}");
        }
        opened(
            &sessions,
            "old",
            ProtocolVersion::V_2025_06_18,
            ClientCapabilities::default(),
        );
        assert!(sessions.offered("old").is_none());
    }

    #[test]
    fn a_session_quiet_on_rmcp_for_half_its_idle_expiry_goes_to_rmcp_which_hears_it_again() {
        let sessions = LegacySessions::new(IDLE);
        sessions.initialize(
            "s",
            &initialize(ProtocolVersion::V_2025_11_25, ClientCapabilities::default()),
        );
        let (at, half) = (1_000, 30_000);
        sessions.heard_at("s", Some(&initialized()), at);
        assert!(sessions.offered_at("s", at + half - 1).is_some());
        assert!(sessions.offered_at("s", at + half).is_none());
        // rmcp takes that request: the idle time starts again.
        sessions.heard_at("s", None, at + half);
        assert!(sessions.offered_at("s", at + half).is_some());
        assert!(sessions.offered_at("s", at + 2 * half - 1).is_some());
        // An older time heard late changes nothing.
        sessions.heard_at("s", None, at);
        assert!(sessions.offered_at("s", at + 2 * half - 1).is_some());
    }

    #[test]
    fn a_cancelled_call_is_told_and_forgotten_once_done() {
        let sessions = LegacySessions::new(IDLE);
        opened(
            &sessions,
            "s",
            ProtocolVersion::V_2025_11_25,
            ClientCapabilities::default(),
        );
        let session = sessions.offered("s").unwrap();
        let id: Box<RawValue> = serde_json::from_str(r#""call-1""#).unwrap();
        let other: Box<RawValue> = serde_json::from_str("7").unwrap();
        let call = session.cancellable(&id).unwrap();
        let kept = session.cancellable(&other).unwrap();
        assert!(session.cancellable(&id).is_none(), "one call per id");
        let cancel = |request: RequestId| {
            notification(ClientNotification::CancelledNotification(
                CancelledNotification::new(CancelledNotificationParam::new(Some(request), None)),
            ))
        };
        sessions.heard("s", Some(&cancel(RequestId::String("call-1".into()))));
        assert!(call.token().is_cancelled());
        assert!(!kept.token().is_cancelled());
        drop(call);
        assert!(session.cancellable(&id).is_some(), "forgotten once done");
        sessions.heard("s", Some(&cancel(RequestId::Number(7))));
        assert!(kept.token().is_cancelled());
        drop(kept);
        // The session's end ends every call it holds.
        let (one, two) = (
            session.cancellable(&id).unwrap(),
            session.cancellable(&other).unwrap(),
        );
        sessions.closed("s");
        assert!(one.token().is_cancelled() && two.token().is_cancelled());
    }
}
