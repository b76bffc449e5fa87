//! An upstream's progress, relayed in the order it was sent, and all of it before the answer
//! of the call it reports on.
//!
//! rmcp hands each notification it receives to the handler in a task of its own, so two
//! progress notifications of one call can reach the client in either order (a client then
//! sees progress go backwards, which MCP forbids), and the call's answer can overtake them.
//! [`Ordered`] reads them off the connection itself, in the order they arrived, before rmcp
//! sees them: each is queued for one relaying task per connection, counted against the call it
//! belongs to, and the call's answer waits until its count is back to zero
//! ([`Registered::flushed`](super::Registered::flushed)).
//!
//! A progress notification whose call is not registered yet (its request is still being
//! sent) goes on to rmcp, whose handler waits for the registration: late, and in no promised
//! order, but not lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{JsonRpcMessage, ProgressNotificationParam, ServerNotification};
use rmcp::service::{Peer, RoleClient, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{Notify, mpsc};

use super::routes::Routes;

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

    /// Resolves once every notification queued so far has been handed to the client.
    pub async fn wait(&self) {
        loop {
            let zero = self.zero.notified();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            zero.await;
        }
    }
}

/// One notification to hand on.
struct Relayed {
    peer: Peer<RoleServer>,
    params: ProgressNotificationParam,
    unsent: Arc<Unsent>,
}

/// A connection to an upstream whose progress notifications are relayed as they arrive.
pub struct Ordered<T> {
    inner: T,
    routes: Arc<Routes>,
    relay: mpsc::UnboundedSender<Relayed>,
}

impl<T> Ordered<T> {
    /// `inner`, relaying the progress of the calls in `routes`; starts the relaying task,
    /// which ends with the connection.
    pub fn new(inner: T, routes: Arc<Routes>) -> Self {
        let (relay, mut queued) = mpsc::unbounded_channel::<Relayed>();
        tokio::spawn(async move {
            while let Some(relayed) = queued.recv().await {
                let _ = relayed.peer.notify_progress(relayed.params).await;
                relayed.unsent.sent();
            }
        });
        Ordered {
            inner,
            routes,
            relay,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    // Nothing is awaited once a message is taken from `inner`: cancelled between two
    // messages, as rmcp may, it loses none.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if let JsonRpcMessage::Notification(notification) = &message
                && let ServerNotification::ProgressNotification(progress) =
                    &notification.notification
                && let Some((origin, unsent)) =
                    self.routes.by_token_now(&progress.params.progress_token)
                && let Some((peer, token)) = origin.progress_target()
            {
                let mut params = progress.params.clone();
                params.progress_token = token;
                unsent.add();
                let relayed = Relayed {
                    peer,
                    params,
                    unsent: Arc::clone(&unsent),
                };
                if self.relay.send(relayed).is_err() {
                    unsent.sent();
                }
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
