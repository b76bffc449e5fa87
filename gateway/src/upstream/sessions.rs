//! The client sessions connected to the gateway: where list changes, resource updates and log
//! messages that belong to no one request go.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::service::{Peer, RoleServer};

use super::routes::SessionId;

/// The live client sessions, by number.
#[derive(Debug, Default)]
pub struct Sessions {
    next: AtomicU64,
    live: Mutex<BTreeMap<SessionId, Live>>,
}

#[derive(Debug, Default)]
struct Live {
    /// Known once the session's first request arrives.
    peer: Option<Peer<RoleServer>>,
    /// The resource URIs this session subscribed to.
    subscriptions: HashSet<String>,
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
            live.peer = Some(peer.clone());
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

    /// Every attached session's peer.
    pub fn peers(&self) -> Vec<Peer<RoleServer>> {
        self.live()
            .values()
            .filter_map(|l| l.peer.clone())
            .collect()
    }

    /// Session `id`'s peer.
    pub fn peer(&self, id: SessionId) -> Option<Peer<RoleServer>> {
        self.live().get(&id).and_then(|l| l.peer.clone())
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

    /// The peers of the sessions subscribed to `uri`.
    pub fn subscribers(&self, uri: &str) -> Vec<Peer<RoleServer>> {
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
