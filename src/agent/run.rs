//! [`AgentRun`]: one agent run's id, deadline and budgets, shared by all its tool calls.

use core::time::Duration;

use tokio::time::Instant;

use super::fields::StopReason;
use crate::sync::{AtomicU8, AtomicU32, Ordering, RelaxedU64 as AtomicU64};
use crate::time::tokio_now;

/// One agent run: its id, deadline and budgets, shared by all its tool calls (also concurrent
/// ones: every field is atomic).
///
/// Once a run has stopped, it stays stopped: there is no way around the guard.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{AgentRun, StopReason};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let run = AgentRun::new("run-7", Duration::from_secs(30), 10).with_token_budget(1_000);
/// assert_eq!(run.spend_tokens(600), Ok(()));
/// assert_eq!(run.spend_tokens(600), Err(StopReason::TokenBudget));
/// assert_eq!(run.stop_reason(), Some(StopReason::TokenBudget), "and it stays stopped");
/// # });
/// ```
#[derive(Debug)]
pub struct AgentRun {
    id: Box<str>,
    deadline: Instant,
    max_tool_calls: u32,
    tool_calls: AtomicU32,
    tokens_left: Option<AtomicU64>,
    /// 0 while running, else `StopReason` as `1 + index`; set once.
    stopped: AtomicU8,
}

impl AgentRun {
    /// A run that must finish within `time_limit` from now (tokio's clock) and may make
    /// `max_tool_calls` attempts in all, retries included.
    pub fn new(id: impl Into<Box<str>>, time_limit: Duration, max_tool_calls: u32) -> Self {
        let now = tokio_now();
        // A limit too long to add to now (`Duration::MAX`) is no deadline at all: a century.
        let deadline = now
            .checked_add(time_limit)
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
        Self::with_deadline(id, deadline, max_tool_calls)
    }

    /// A run with an absolute deadline on tokio's clock.
    pub fn with_deadline(id: impl Into<Box<str>>, deadline: Instant, max_tool_calls: u32) -> Self {
        AgentRun {
            id: id.into(),
            deadline,
            max_tool_calls,
            tool_calls: AtomicU32::new(0),
            tokens_left: None,
            stopped: AtomicU8::new(0),
        }
    }

    /// Give the run a token allowance that the caller draws down with
    /// [`spend_tokens`](Self::spend_tokens).
    pub fn with_token_budget(mut self, tokens: u64) -> Self {
        self.tokens_left = Some(AtomicU64::new(tokens));
        self
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The run's deadline, on tokio's clock.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Attempts made so far, retries included.
    pub fn tool_calls(&self) -> u32 {
        // Relaxed: a statistic; the budget itself is enforced by the read-modify-write below.
        self.tool_calls.load(Ordering::Relaxed)
    }

    /// Why the run stopped, once it has. The reason is set by the first call (or
    /// [`spend_tokens`](Self::spend_tokens)) that finds the deadline passed or a budget spent, and
    /// never changes after that; before such a call it reads `None` even if the deadline has
    /// passed.
    pub fn stop_reason(&self) -> Option<StopReason> {
        // Relaxed: the reason is a value on its own; nothing else is published with it.
        match self.stopped.load(Ordering::Relaxed) {
            1 => Some(StopReason::Deadline),
            2 => Some(StopReason::ToolCallBudget),
            3 => Some(StopReason::TokenBudget),
            _ => None,
        }
    }

    /// Draw `tokens` from the run's token allowance (model tokens, as the caller counts them).
    ///
    /// # Errors
    ///
    /// [`StopReason::TokenBudget`] when the allowance cannot cover `tokens` (the run stops), or
    /// the reason the run had already stopped. A run without a token budget never runs out.
    pub fn spend_tokens(&self, tokens: u64) -> Result<(), StopReason> {
        if let Some(reason) = self.stop_reason() {
            return Err(reason);
        }
        let Some(left) = &self.tokens_left else {
            return Ok(());
        };
        // Relaxed: the allowance is one counter on its own.
        match left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(tokens)
        }) {
            Ok(_) => Ok(()),
            Err(_) => Err(self.stop(StopReason::TokenBudget)),
        }
    }

    /// Stop the run for `reason`, unless it has already stopped; returns the reason it stopped for.
    pub(super) fn stop(&self, reason: StopReason) -> StopReason {
        let code = match reason {
            StopReason::Deadline => 1,
            StopReason::ToolCallBudget => 2,
            StopReason::TokenBudget => 3,
            // A call's stop, not the run's: never set on the run (see `StopReason::RetryBudget`).
            StopReason::RetryBudget => return reason,
        };
        // Relaxed: set-once value; the first reason wins.
        let _ = self
            .stopped
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
        self.stop_reason().unwrap_or(reason)
    }

    /// Whether a new call may start now: not stopped, deadline not passed, token allowance left.
    pub(super) fn check(&self, now: Instant) -> Result<(), StopReason> {
        if let Some(reason) = self.stop_reason() {
            return Err(reason);
        }
        if now >= self.deadline {
            return Err(self.stop(StopReason::Deadline));
        }
        if let Some(left) = &self.tokens_left {
            // Relaxed: the allowance is one counter on its own, as in `spend_tokens`.
            if left.load(Ordering::Relaxed) == 0 {
                return Err(self.stop(StopReason::TokenBudget));
            }
        }
        if self.tool_calls() >= self.max_tool_calls {
            return Err(self.stop(StopReason::ToolCallBudget));
        }
        Ok(())
    }

    /// Take one attempt from the tool-call budget.
    pub(super) fn take_attempt(&self) -> Result<(), StopReason> {
        // Relaxed: one counter on its own; the read-modify-write makes the budget exact under
        // concurrent calls.
        match self
            .tool_calls
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |made| {
                (made < self.max_tool_calls).then_some(made + 1)
            }) {
            Ok(_) => Ok(()),
            Err(_) => Err(self.stop(StopReason::ToolCallBudget)),
        }
    }
}
