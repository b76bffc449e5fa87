//! The time a forwarded request spends waiting on its client is not the upstream's: a call
//! whose upstream asked for sampling or elicitation waits while a person reads the question,
//! and that wait must neither time the call out nor count against the upstream's health, in
//! either era (a 2025-11-25 upstream's request relayed to the client, a 2026-07-28 client's
//! `input_required` round, a 2026-07-28 upstream's input asked of a 2025-11-25 client).
//!
//! [`ClientTime`] says whether a request is waiting on its client now; [`upstream_deadline`]
//! resolves once the per-call timeout has passed on the upstream's time alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether one forwarded request is waiting on its client (one count per question asked).
#[derive(Debug, Default)]
pub struct ClientTime {
    asking: AtomicUsize,
    changed: Notify,
}

/// Held while the client is asked; dropping it ends the wait.
#[must_use]
#[derive(Debug)]
pub struct Asking<'a>(&'a ClientTime);

impl ClientTime {
    /// The client is asked from now until the guard is dropped.
    pub fn asking(&self) -> Asking<'_> {
        // SeqCst with `is_asking` and the notification: a timer that reads the count after
        // `notify_waiters` sees this change (the count is the only state it reads).
        self.asking.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
        Asking(self)
    }

    /// Whether the client is being asked now.
    pub fn is_asking(&self) -> bool {
        self.asking.load(Ordering::SeqCst) > 0
    }

    /// Resolves when the count changes next (or at once, if `asking` differs from now).
    async fn until(&self, asking: bool) {
        loop {
            let changed = self.changed.notified();
            if self.is_asking() == asking {
                return;
            }
            changed.await;
        }
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.0.asking.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

/// Resolves once `timeout` has passed while the request was not waiting on its client.
pub async fn upstream_deadline(timeout: Duration, client: &ClientTime) {
    let mut left = timeout;
    loop {
        client.until(false).await;
        let started = Instant::now();
        tokio::select! {
            () = tokio::time::sleep(left) => {
                if !client.is_asking() {
                    return;
                }
            }
            () = client.until(true) => {}
        }
        left = left.saturating_sub(started.elapsed());
        if left.is_zero() && !client.is_asking() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_time_spent_asking_the_client_is_not_counted() {
        let client = ClientTime::default();
        let timeout = Duration::from_secs(10);
        let start = Instant::now();
        let deadline = upstream_deadline(timeout, &client);
        tokio::pin!(deadline);
        // 4 s of the upstream's time, then 30 s asking the client, then the rest.
        tokio::select! {
            () = &mut deadline => panic!("timed out early"),
            () = tokio::time::sleep(Duration::from_secs(4)) => {}
        }
        let asking = client.asking();
        tokio::select! {
            () = &mut deadline => panic!("timed out while the client was asked"),
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        drop(asking);
        deadline.await;
        assert_eq!(start.elapsed(), Duration::from_secs(40));
    }

    #[tokio::test(start_paused = true)]
    async fn with_no_question_it_is_the_timeout() {
        let client = ClientTime::default();
        let start = Instant::now();
        upstream_deadline(Duration::from_millis(1500), &client).await;
        assert_eq!(start.elapsed(), Duration::from_millis(1500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_still_open_at_the_deadline_holds_it() {
        let client = ClientTime::default();
        let start = Instant::now();
        let asking = client.asking();
        let deadline = upstream_deadline(Duration::from_secs(1), &client);
        tokio::pin!(deadline);
        tokio::select! {
            () = &mut deadline => panic!("timed out while the client was asked"),
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        drop(asking);
        deadline.await;
        assert_eq!(start.elapsed(), Duration::from_secs(6));
    }
}
