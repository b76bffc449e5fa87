//! [`Listening`]: the gateway's `subscriptions/listen` stream to a 2026-07-28 upstream, which
//! has no `resources/subscribe` and no standalone stream: list changes, and updates of the
//! resources the gateway's clients subscribed to, come on it.
//!
//! One stream per connection, for every kind of list change and every subscribed resource; a
//! change of the resources reopens it with the new set (a stream's filter is fixed when it
//! opens). What comes on it goes to the clients it concerns ([`Sessions::relay`]). A stream
//! that ends with its connection is opened again with the next connection.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::SubscriptionFilter;
use tokio_util::task::AbortOnDropHandle;

use super::link::Link;
use super::sessions::Sessions;

/// The upstream's listen stream and the resources it is for.
#[derive(Debug, Default)]
pub struct Listening {
    uris: Mutex<BTreeSet<String>>,
    stream: Mutex<Option<AbortOnDropHandle<()>>>,
}

impl Listening {
    /// Adds `uri` to the resources listened to; whether it was not there.
    pub fn add(&self, uri: &str) -> bool {
        lock(&self.uris).insert(uri.to_owned())
    }

    /// Takes `uri` out of the resources listened to; whether it was there.
    pub fn remove(&self, uri: &str) -> bool {
        lock(&self.uris).remove(uri)
    }

    /// (Re)opens the stream on `link`, for every list change and the resources listened to;
    /// the stream open before is closed (upstream, its request is cancelled). With `wait`,
    /// returns once the upstream acknowledged it (or refused it, or `wait` passed): a client's
    /// subscription answered is one the upstream serves. Without, at once: a connection is not
    /// held up by an upstream slow to acknowledge.
    pub async fn open(
        &self,
        upstream: &str,
        link: &Arc<Link>,
        sessions: &Arc<Sessions>,
        wait: Option<std::time::Duration>,
    ) {
        let Some(filter) = self.filter(link) else {
            // Nothing it advertises to listen for.
            self.close();
            return;
        };
        let peer = link.peer().clone();
        let sessions = Arc::clone(sessions);
        let upstream = upstream.to_owned();
        let (ready, acknowledged) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let listened = peer.listen(filter).await;
            let _ = ready.send(());
            let mut stream = match listened {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::warn!(upstream = %upstream, %error, "cannot listen for the upstream's changes");
                    return;
                }
            };
            while let Ok(Some(notification)) = stream.next().await {
                sessions.relay(notification).await;
            }
        });
        *lock(&self.stream) = Some(AbortOnDropHandle::new(task));
        if let Some(wait) = wait {
            let _ = tokio::time::timeout(wait, acknowledged).await;
        }
    }

    /// What to listen for on `link`: the list changes its server advertises, and the
    /// resources listened to if it advertises resource subscriptions; `None` for nothing.
    fn filter(&self, link: &Link) -> Option<SubscriptionFilter> {
        let capabilities = link.peer().peer_info()?.capabilities.clone();
        let changes = |listed: Option<bool>| listed.unwrap_or(false).then_some(true);
        let mut filter = SubscriptionFilter::new();
        filter.tools_list_changed = capabilities.tools.and_then(|t| changes(t.list_changed));
        filter.prompts_list_changed = capabilities.prompts.and_then(|p| changes(p.list_changed));
        if let Some(resources) = capabilities.resources {
            filter.resources_list_changed = changes(resources.list_changed);
            let uris: Vec<String> = lock(&self.uris).iter().cloned().collect();
            if resources.subscribe == Some(true) && !uris.is_empty() {
                filter.resource_subscriptions = Some(uris);
            }
        }
        (filter != SubscriptionFilter::new()).then_some(filter)
    }

    /// Closes the stream (the connection is gone, or the upstream stopped).
    pub fn close(&self) {
        lock(&self.stream).take();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
