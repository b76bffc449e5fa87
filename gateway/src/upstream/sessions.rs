//! The client sessions connected to the gateway: where list changes, resource updates and log
//! messages that belong to no one request go. A 2025-11-25 client's session is told through
//! its peer; a 2026-07-28 client (no session) through each open `subscriptions/listen` stream,
//! which is a session of its own here for as long as the stream is open.
//!
//! Logging is deprecated by the protocol's next version (SEP-2577), not by the versions the
//! gateway speaks: a session's level is kept for its requests to 2026-07-28 upstreams.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::model::{
    GetMeta, LoggingLevel, ResourceListChangedNotification, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParam, ServerNotification, ToolListChangedNotification,
};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};

use super::routes::SessionId;

/// The live client sessions, by number.
#[derive(Debug, Default)]
pub struct Sessions {
    next: AtomicU64,
    live: Mutex<BTreeMap<SessionId, Live>>,
}

#[derive(Debug, Default)]
struct Live {
    /// Known once the session's first request arrives (a 2025-11-25 session), or the
    /// `subscriptions/listen` stream's sink (a 2026-07-28 listener).
    peer: Option<Listener>,
    /// The resource URIs this session subscribed to.
    subscriptions: HashSet<String>,
    /// The log level its client set (`logging/setLevel`), for 2026-07-28 upstreams.
    level: Option<LoggingLevel>,
}

impl Sessions {
    /// A new session's number.
    pub fn open(&self) -> SessionId {
        // Relaxed: the number only has to be unique, which the read-modify-write gives; it
        // orders nothing else (the map is under its lock).
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.live().insert(id, Live::default());
        id
    }

    /// Session `id` is reached through `peer`.
    pub fn attach(&self, id: SessionId, peer: &Peer<RoleServer>) {
        if let Some(live) = self.live().get_mut(&id)
            && live.peer.is_none()
        {
            live.peer = Some(Listener::Peer(peer.clone()));
        }
    }

    /// Session `id` ended; the URIs it alone subscribed to (to unsubscribe upstream).
    pub fn close(&self, id: SessionId) -> Vec<String> {
        let mut live = self.live();
        let Some(gone) = live.remove(&id) else {
            return Vec::new();
        };
        gone.subscriptions
            .into_iter()
            .filter(|uri| !live.values().any(|l| l.subscriptions.contains(uri)))
            .collect()
    }

    /// The number of sessions open.
    pub fn len(&self) -> usize {
        self.live().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.live().is_empty()
    }

    /// Session `id` (a new one, from [`open`](Self::open)) is a 2026-07-28 client's
    /// `subscriptions/listen` stream: what it accepted is told through `sink`, which filters.
    pub fn attach_stream(&self, id: SessionId, sink: SubscriptionSink) {
        if let Some(live) = self.live().get_mut(&id) {
            live.peer = Some(Listener::Stream(sink));
        }
    }

    /// Every attached session's peer or stream.
    pub fn peers(&self) -> Vec<Listener> {
        self.live()
            .values()
            .filter_map(|l| l.peer.clone())
            .collect()
    }

    /// Session `id` subscribes to `uri`; whether it is the first session to.
    pub fn subscribe(&self, id: SessionId, uri: &str) -> bool {
        let mut live = self.live();
        let first = !live.values().any(|l| l.subscriptions.contains(uri));
        if let Some(session) = live.get_mut(&id) {
            session.subscriptions.insert(uri.to_owned());
        }
        first
    }

    /// Session `id` unsubscribes from `uri`; whether no session is subscribed to it any more.
    pub fn unsubscribe(&self, id: SessionId, uri: &str) -> bool {
        let mut live = self.live();
        if let Some(session) = live.get_mut(&id) {
            session.subscriptions.remove(uri);
        }
        !live.values().any(|l| l.subscriptions.contains(uri))
    }

    /// Session `id`'s client set the log level `level`.
    pub fn set_level(&self, id: SessionId, level: LoggingLevel) {
        if let Some(live) = self.live().get_mut(&id) {
            live.level = Some(level);
        }
    }

    /// The log level session `id`'s client set, if any.
    pub fn level(&self, id: SessionId) -> Option<LoggingLevel> {
        self.live().get(&id).and_then(|live| live.level)
    }

    /// Relays an upstream's change notification to the clients it concerns: a resource's
    /// update to its subscribers, a list change to every client; anything else is dropped.
    pub async fn relay(&self, notification: ServerNotification) {
        let listeners = match &notification {
            ServerNotification::ResourceUpdatedNotification(updated) => {
                self.subscribers(&updated.params.uri)
            }
            ServerNotification::ResourceListChangedNotification(_)
            | ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_) => self.peers(),
            _ => return,
        };
        for listener in listeners {
            // What the upstream's listen stream stamped on it is its own.
            let mut notification = notification.clone();
            notification
                .get_meta_mut()
                .remove("io.modelcontextprotocol/subscriptionId");
            listener.notify(notification).await;
        }
    }

    /// The peers or streams of the sessions subscribed to `uri`.
    pub fn subscribers(&self, uri: &str) -> Vec<Listener> {
        self.live()
            .values()
            .filter(|l| l.subscriptions.contains(uri))
            .filter_map(|l| l.peer.clone())
            .collect()
    }

    fn live(&self) -> MutexGuard<'_, BTreeMap<SessionId, Live>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a client is told of changes: a 2025-11-25 session's peer, or a 2026-07-28 client's
/// `subscriptions/listen` stream (whose sink drops what the client did not ask for).
#[derive(Debug, Clone)]
pub enum Listener {
    /// A session's peer.
    Peer(Peer<RoleServer>),
    /// A listen stream.
    Stream(SubscriptionSink),
}

impl Listener {
    /// Sends `notification`; a closed session or stream, or one that did not ask for this
    /// kind, is passed over.
    pub async fn notify(&self, notification: ServerNotification) {
        match self {
            Listener::Peer(peer) => {
                let _ = peer.send_notification(notification).await;
            }
            Listener::Stream(sink) => {
                let _ = sink.send(notification).await;
            }
        }
    }

    /// `notifications/tools/list_changed`.
    pub async fn tools_changed(&self) {
        self.notify(ToolListChangedNotification::default().into())
            .await;
    }

    /// `notifications/prompts/list_changed`.
    pub async fn prompts_changed(&self) {
        self.notify(rmcp::model::PromptListChangedNotification::default().into())
            .await;
    }

    /// `notifications/resources/list_changed`.
    pub async fn resources_changed(&self) {
        self.notify(ResourceListChangedNotification::default().into())
            .await;
    }

    /// `notifications/resources/updated` for `params`.
    pub async fn resource_updated(&self, params: ResourceUpdatedNotificationParam) {
        self.notify(ResourceUpdatedNotification::new(params).into())
            .await;
    }
}
