//! The time a forwarded request spends waiting on its client is not the upstream's: a call
//! whose upstream asked for sampling or elicitation waits while a person reads the question,
//! and that wait must neither time the call out nor count against the upstream's health, in
//! either era (a 2025-11-25 upstream's request relayed to the client, a 2026-07-28 client's
//! `input_required` round, a 2026-07-28 upstream's input asked of a 2025-11-25 client).
//!
//! The upstream's progress notifications of a request put its timeout back (the MCP
//! specification lets a sender "reset the timeout clock on receiving a progress
//! notification"): a long-running tool that reports progress runs past the per-call timeout,
//! up to the maximum the config sets (`max_call_ms`).
//!
//! [`ClientTime`] says whether a request is waiting on its client now, and counts the
//! upstream's progress notifications of it; [`upstream_deadline`] resolves once the per-call
//! timeout has passed on the upstream's time alone since its last progress, or the maximum in
//! all.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether one forwarded request is waiting on its client (one count per question asked), and
/// how many progress notifications the upstream sent about it.
#[derive(Debug, Default)]
pub struct ClientTime {
    asking: AtomicUsize,
    progress: AtomicU64,
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

    /// The upstream sent a progress notification about the request: its timeout starts afresh.
    pub fn progressed(&self) {
        // SeqCst as in `asking`: the timer reads the count after `notify_waiters`.
        self.progress.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn progress(&self) -> u64 {
        self.progress.load(Ordering::SeqCst)
    }

    /// Resolves once the client is asked, or the upstream's progress is no longer `heard`.
    async fn asked_or_progressed(&self, heard: u64) {
        loop {
            let changed = self.changed.notified();
            if self.is_asking() || self.progress() != heard {
                return;
            }
            changed.await;
        }
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

/// Resolves once `timeout` has passed while the request was not waiting on its client and
/// the upstream sent no progress about it, or `max` has passed in all while it was not waiting
/// on its client; answers which of the two it was (`timeout` or `max`, for the error).
pub async fn upstream_deadline(timeout: Duration, max: Duration, client: &ClientTime) -> Duration {
    let mut left = timeout;
    let mut total = max.max(timeout);
    let mut heard = client.progress();
    loop {
        client.until(false).await;
        let started = Instant::now();
        tokio::select! {
            () = tokio::time::sleep(left.min(total)) => {}
            () = client.asked_or_progressed(heard) => {}
        }
        let spent = started.elapsed();
        left = left.saturating_sub(spent);
        total = total.saturating_sub(spent);
        let now = client.progress();
        if now != heard {
            heard = now;
            left = timeout;
        }
        if client.is_asking() {
            continue;
        }
        if total.is_zero() {
            return max.max(timeout);
        }
        if left.is_zero() {
            return timeout;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_time_spent_asking_the_client_is_not_counted() {
        let client = ClientTime::default();
        let timeout = Duration::from_secs(10);
        let start = Instant::now();
        let deadline = upstream_deadline(timeout, Duration::from_secs(300), &client);
        tokio::pin!(deadline);
        // 4 s of the upstream's time, then 30 s asking the client, then the rest.
        tokio::select! {
            _ = &mut deadline => panic!("timed out early"),
            () = tokio::time::sleep(Duration::from_secs(4)) => {}
        }
        let asking = client.asking();
        tokio::select! {
            _ = &mut deadline => panic!("timed out while the client was asked"),
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
        let max = Duration::from_secs(300);
        let limit = upstream_deadline(Duration::from_millis(1500), max, &client).await;
        assert_eq!(limit, Duration::from_millis(1500));
        assert_eq!(start.elapsed(), Duration::from_millis(1500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_still_open_at_the_deadline_holds_it() {
        let client = ClientTime::default();
        let start = Instant::now();
        let asking = client.asking();
        let deadline = upstream_deadline(Duration::from_secs(1), Duration::from_secs(300), &client);
        tokio::pin!(deadline);
        tokio::select! {
            _ = &mut deadline => panic!("timed out while the client was asked"),
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        drop(asking);
        deadline.await;
        assert_eq!(start.elapsed(), Duration::from_secs(6));
    }

    #[tokio::test(start_paused = true)]
    async fn progress_puts_the_timeout_back_up_to_the_maximum() {
        let client = Arc::new(ClientTime::default());
        let start = Instant::now();
        // Progress every 800 ms against a 1 s timeout: only the 5 s maximum ends it.
        let reporter = {
            let client = Arc::clone(&client);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(800)).await;
                    client.progressed();
                }
            })
        };
        let limit =
            upstream_deadline(Duration::from_secs(1), Duration::from_secs(5), &client).await;
        assert_eq!(limit, Duration::from_secs(5), "cut by the maximum");
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        reporter.abort();
        // Once the progress stops, the timeout runs out 1 s after the last one.
        let start = Instant::now();
        let deadline = upstream_deadline(Duration::from_secs(1), Duration::from_secs(5), &client);
        tokio::pin!(deadline);
        tokio::select! {
            _ = &mut deadline => panic!("timed out early"),
            () = tokio::time::sleep(Duration::from_millis(300)) => {}
        }
        client.progressed();
        let limit = deadline.await;
        assert_eq!(limit, Duration::from_secs(1), "cut by the timeout");
        assert_eq!(start.elapsed(), Duration::from_millis(1300));
    }
}
