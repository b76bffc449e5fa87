//! An upstream's progress and log messages, relayed in the order they were sent, and all of
//! them before the answer of the call they belong to.
//!
//! rmcp hands each notification it receives to the handler in a task of its own, so two
//! progress notifications of one call can reach the client in either order (a client then
//! sees progress go backwards, which MCP forbids), and the call's answer can overtake them.
//! [`Ordered`] reads them off the connection itself, in the order they arrived, before rmcp
//! sees them: each is queued for one relaying task per connection, counted against the call it
//! belongs to, and the call's answer waits until its count is back to zero
//! ([`Registered::flushed`](super::Registered::flushed)).
//!
//! A notification about a request still being sent waits for its registration (the request
//! is sent and registered under [`Routes::sending`]): an upstream quick to report on a call
//! whose sender was not scheduled yet is relayed in order all the same. Each progress
//! notification of a registered call also puts the call's timeout back
//! ([`ClientTime::progressed`](super::ClientTime::progressed)).
//!
//! A log message goes where the upstream handler would send it: to the client of the
//! request whose response stream it came on, else to the one client session with requests in
//! flight on this upstream; it counts against that session's calls. One that belongs to no
//! one call (several sessions in flight, none) goes on to rmcp's handler, which sends it to
//! every session.
//!
//! Logging is deprecated by the protocol's next version (SEP-2577), not by the versions the
//! gateway speaks: it relays it.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{GetExtensions, GetMeta, JsonRpcMessage, ServerNotification};
use rmcp::service::{
    InboundStreamOrigin, Peer, RoleClient, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::Transport;
use tokio::sync::{Notify, mpsc};

use super::routes::Routes;

/// The longest an answer, or a request of the upstream relayed to the client, waits for the
/// call's progress and log messages before it to be handed to the client: long enough for a
/// machine under load (they go first, whatever the scheduling), short enough that a client not
/// reading its stream delays its own call by no more.
const FLUSH: Duration = Duration::from_secs(10);

/// How many of a call's progress notifications are queued and not yet handed to its client.
#[derive(Debug, Default)]
pub struct Unsent {
    count: AtomicUsize,
    zero: Notify,
}

impl Unsent {
    fn add(&self) {
        // AcqRel (with `sent`'s and `wait`'s): the count is the only state, and a waiter that
        // reads zero after a decrement must see every notification before it handed on.
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    fn sent(&self) {
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.zero.notify_waiters();
        }
    }

    /// Resolves once every notification queued so far has been handed to the client, or after
    /// [`FLUSH`] (what is left is then dropped with its route).
    pub async fn flushed(&self) {
        let _ = tokio::time::timeout(FLUSH, self.zero()).await;
    }

    async fn zero(&self) {
        loop {
            let zero = self.zero.notified();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            zero.await;
        }
    }
}

/// One notification to hand on, and the calls it counts against.
struct Relayed {
    peer: Peer<RoleServer>,
    notification: ServerNotification,
    unsent: Vec<Arc<Unsent>>,
}

/// A connection to an upstream whose progress notifications and log messages are relayed as
/// they arrive.
pub struct Ordered<T> {
    inner: T,
    routes: Arc<Routes>,
    relay: mpsc::UnboundedSender<Relayed>,
    /// A notification taken from `inner` and not yet routed (its routing waits for a
    /// registration under way): kept across a cancelled `receive`.
    held: Option<RxJsonRpcMessage<RoleClient>>,
}

impl<T> Ordered<T> {
    /// `inner`, relaying the progress of the calls in `routes`; starts the relaying task,
    /// which ends with the connection.
    pub fn new(inner: T, routes: Arc<Routes>) -> Self {
        let (relay, mut queued) = mpsc::unbounded_channel::<Relayed>();
        tokio::spawn(async move {
            while let Some(relayed) = queued.recv().await {
                let _ = relayed.peer.send_notification(relayed.notification).await;
                for unsent in &relayed.unsent {
                    unsent.sent();
                }
            }
        });
        Ordered {
            inner,
            routes,
            relay,
            held: None,
        }
    }

    /// Queues `message` for the relaying task when it is a progress notification or a log
    /// message whose call is registered; hands it back otherwise (for rmcp).
    fn route(&self, message: RxJsonRpcMessage<RoleClient>) -> Option<RxJsonRpcMessage<RoleClient>> {
        let JsonRpcMessage::Notification(notification) = &message else {
            return Some(message);
        };
        let (peer, notification, unsent) = match &notification.notification {
            ServerNotification::ProgressNotification(progress) => {
                let Some((origin, unsent)) =
                    self.routes.by_token_now(&progress.params.progress_token)
                else {
                    return Some(message);
                };
                origin.client_time.progressed();
                let Some((peer, token)) = origin.progress_target() else {
                    // The client asked for no progress: it only put the timeout back.
                    return None;
                };
                let mut params = progress.params.clone();
                params.progress_token = token;
                let progress = rmcp::model::ProgressNotification::new(params);
                (peer, progress.into(), vec![unsent])
            }
            ServerNotification::LoggingMessageNotification(log) => {
                let stream = match notification
                    .notification
                    .extensions()
                    .get::<InboundStreamOrigin>()
                {
                    Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id),
                    _ => None,
                };
                let Some((peer, unsent)) = self.routes.log_target_now(stream) else {
                    return Some(message);
                };
                let log = rmcp::model::LoggingMessageNotification::new(log.params.clone());
                (peer, log.into(), unsent)
            }
            _ => return Some(message),
        };
        for one in &unsent {
            one.add();
        }
        let relayed = Relayed {
            peer,
            notification,
            unsent,
        };
        if let Err(mpsc::error::SendError(relayed)) = self.relay.send(relayed) {
            for one in &relayed.unsent {
                one.sent();
            }
        }
        None
    }
}

/// Whether `message` is one [`Ordered`] may relay itself: a progress notification or a log
/// message, not sent on a 2026-07-28 listen stream (rmcp hands those to the stream's reader).
fn relayable(message: &RxJsonRpcMessage<RoleClient>) -> bool {
    matches!(
        message,
        JsonRpcMessage::Notification(n) if matches!(
            n.notification,
            ServerNotification::ProgressNotification(_)
                | ServerNotification::LoggingMessageNotification(_)
        ) && n.notification.get_meta().subscription_id().is_none()
    )
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    // Cancel-safe: rmcp may drop this future between two messages, or while a message waits
    // for its request's registration; that message is kept in `held` for the next call.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = match self.held.take() {
                Some(message) => message,
                None => self.inner.receive().await?,
            };
            if !relayable(&message) {
                return Some(message);
            }
            // The upstream reports on a request only once it was sent, and a request is sent
            // and registered while `sending` is held: once it is free, the registration of the
            // request this notification is about is done.
            self.held = Some(message);
            drop(self.routes.sending().await);
            let Some(message) = self.held.take() else {
                continue;
            };
            if let Some(message) = self.route(message) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
