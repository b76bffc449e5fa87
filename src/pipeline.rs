//! The guard pipeline: how an agent runtime calls a tool (feature `tokio`).
//!
//! A breaker alone does not stop an agent from looping: the model sees an error and asks for the
//! same tool again, and a retry loop inside the tool can recreate the very load the breaker was
//! meant to stop. [`ToolGuard::call`] composes the guards in one order, for every tool call:
//!
//! 1. **Run deadline and budgets** ([`AgentRun`]): a run past its deadline, or with its tool-call
//!    or token budget spent, starts no call; the result is `stopped`, and so is every later call
//!    on the run.
//! 2. **Breaker**: if the dependency's breaker does not admit the call, the result is `blocked`
//!    at once; the operation never starts.
//! 3. **Per-call timeout**: the attempt runs under [`ToolGuard::per_call_timeout`], cut to the
//!    time left before the run's deadline; running out of the per-call time is
//!    [`FailureKind::Timeout`]. Running into the run's deadline says nothing about the dependency:
//!    nothing is recorded and the result is `stopped` (`deadline`).
//! 4. **Classification** of the attempt's result, recorded on the breaker.
//! 5. **Bounded retry** ([`RetryPolicy`]), only for counted failures of a retryable kind
//!    (timeout, connect, unavailable, rate-limited), never for `Ignored`: capped exponential
//!    backoff with jitter (`backon`), at least the `Retry-After` hint, never past the deadline.
//!    Before every retry the breaker is asked again: once it has opened, retrying stops and the
//!    result is `blocked`, at once rather than after the wait. Every attempt draws on the run's
//!    tool-call budget; a spent budget also ends the call before the wait.
//!
//! The order follows the practice the crate's source article describes (run deadline, breaker,
//! per-call timeout, classification, then a short retry) and AWS's guidance on retries with
//! backoff: a retry only for transient failures, and never one that recreates an outage's load.

use core::future::Future;
use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use core::time::Duration;

use backon::BackoffBuilder;
use tokio::time::Instant;

use crate::breaker::CircuitBreaker;
use crate::classify::{FailureKind, Outcome};
use crate::state::{State, Transition};
use crate::tool::{CallStats, StopReason, ToolResult};

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
        Self::with_deadline(id, Instant::now() + time_limit, max_tool_calls)
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
    fn stop(&self, reason: StopReason) -> StopReason {
        let code = match reason {
            StopReason::Deadline => 1,
            StopReason::ToolCallBudget => 2,
            StopReason::TokenBudget => 3,
        };
        // Relaxed: set-once value; the first reason wins.
        let _ = self
            .stopped
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
        self.stop_reason().unwrap_or(reason)
    }

    /// Whether a new call may start now: not stopped, deadline not passed, token allowance left.
    fn check(&self, now: Instant) -> Result<(), StopReason> {
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
    fn take_attempt(&self) -> Result<(), StopReason> {
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

/// The bounded retry of the pipeline: capped exponential backoff with jitter (`backon`), only
/// for counted failures of a retryable kind.
///
/// Defaults: 2 retries, first delay 100 ms, doubling, capped at 2 s, with jitter (each delay
/// grows by a random share of up to itself).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    max_retries: u32,
    min_delay: Duration,
    max_delay: Duration,
    jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// At most `retries` retries after the first attempt.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The first delay, doubled after each retry up to [`max_delay`](Self::max_delay).
    pub fn min_delay(mut self, delay: Duration) -> Self {
        self.min_delay = delay;
        self
    }

    /// The cap on the delay between two attempts (before jitter).
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Whether each delay grows by a random share of up to itself (on by default), so retries
    /// from many runs do not arrive together.
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    fn backoff(&self) -> backon::ExponentialBackoff {
        let builder = backon::ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_retries as usize);
        if self.jitter {
            builder.with_jitter().build()
        } else {
            builder.build()
        }
    }
}

/// Whether a counted failure of this kind may be retried.
fn retryable(kind: &FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::Timeout
            | FailureKind::Connect
            | FailureKind::Unavailable
            | FailureKind::RateLimited { .. }
    )
}

/// One attempt of a call through the pipeline, as [`ToolGuard::call_observed`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attempt {
    /// 1 for the first attempt of the call, 2 for its first retry, and so on.
    pub number: u32,
    /// Whether the attempt held the half-open probe slot.
    pub probe: bool,
    /// How it was classified (a timeout is `Failure(Timeout)`).
    pub outcome: Outcome,
    /// Whether it ran out of time.
    pub timed_out: bool,
    /// The state change recording it caused, if any.
    pub transition: Option<Transition>,
    /// When it started, on tokio's clock.
    pub started: Instant,
    /// How long it ran.
    pub elapsed: Duration,
}

/// How a dependency's tool is called: a per-call timeout and a retry policy.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{AgentRun, CircuitBreaker, FailureKind, Outcome, RetryPolicy, ToolGuard, ToolResult};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default());
/// let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
/// let mut calls = 0;
/// let result = guard
///     .call(&run, "search", &breaker, |r: &Result<&str, &str>| match r {
///         Ok(_) => Outcome::Success,
///         Err(_) => Outcome::Failure(FailureKind::Unavailable),
///     }, || {
///         calls += 1;
///         let answer = if calls < 2 { Err("503") } else { Ok("hits") };
///         async move { answer }
///     })
///     .await;
/// assert!(matches!(result, ToolResult::Ok { value: "hits", .. }));
/// assert_eq!(result.stats().unwrap().attempts, 2, "one retry after the 503");
/// assert_eq!(run.tool_calls(), 2);
/// # });
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolGuard {
    per_call_timeout: Duration,
    retry: RetryPolicy,
}

impl ToolGuard {
    /// Attempts time out after `per_call_timeout` (or at the run's deadline, if sooner).
    pub fn new(per_call_timeout: Duration, retry: RetryPolicy) -> Self {
        ToolGuard {
            per_call_timeout,
            retry,
        }
    }

    /// The longest one attempt may run.
    pub fn per_call_timeout(&self) -> Duration {
        self.per_call_timeout
    }

    /// Call `dependency`'s tool for `run` through every guard, in order (see the module docs).
    ///
    /// `attempt` makes one attempt and is called once per attempt; `classify` is the
    /// dependency's classification. The error of a failed call reaches the model as text, so
    /// `E`'s `Display` must hold nothing secret.
    pub async fn call<T, E, Fut>(
        &self,
        run: &AgentRun,
        dependency: &str,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> Outcome,
        attempt: impl FnMut() -> Fut,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        E: core::fmt::Display,
    {
        self.call_observed(run, dependency, breaker, classify, attempt, |_| {})
            .await
    }

    /// [`call`](Self::call), reporting every attempt that reached the dependency to `observe`
    /// as it ends: for a runtime's own counters and logs (probes, retries, transitions).
    pub async fn call_observed<T, E, Fut>(
        &self,
        run: &AgentRun,
        dependency: &str,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> Outcome,
        mut attempt: impl FnMut() -> Fut,
        mut observe: impl FnMut(&Attempt),
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        E: core::fmt::Display,
    {
        let started = Instant::now();
        let mut attempts = 0;
        let mut backoff = self.retry.backoff();
        let stats = |attempts| CallStats {
            attempts,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        loop {
            // 1. The run's deadline and budgets: checked before anything else.
            if let Err(reason) = run.check(Instant::now()) {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
            }
            // 2. The breaker, asked again before every retry.
            let permit = match breaker.try_acquire() {
                Ok(permit) => permit,
                Err(blocked) => {
                    return ToolResult::blocked(dependency, &blocked).with_stats(stats(attempts));
                }
            };
            if let Err(reason) = run.take_attempt() {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
            }
            attempts += 1;
            // 3. The attempt, under a timeout no longer than the time left to the deadline.
            let left = run.deadline().saturating_duration_since(Instant::now());
            let limit = self.per_call_timeout.min(left);
            let probe = permit.is_probe();
            let attempt_started = Instant::now();
            let (outcome, result) = match tokio::time::timeout(limit, attempt()).await {
                // 4. Classify and record.
                Ok(result) => (classify(&result), Some(result)),
                // Cut short by the run's deadline rather than the per-call timeout: that says
                // nothing about the dependency, so nothing is recorded (a probe's slot is given
                // back) and the run has stopped.
                Err(_elapsed) if limit < self.per_call_timeout => {
                    drop(permit);
                    let reason = run.stop(StopReason::Deadline);
                    return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
                }
                Err(_elapsed) => (Outcome::Failure(FailureKind::Timeout), None),
            };
            let transition = permit.record(outcome);
            observe(&Attempt {
                number: attempts,
                probe,
                outcome,
                timed_out: result.is_none(),
                transition,
                started: attempt_started,
                elapsed: attempt_started.elapsed(),
            });
            // What the model is told if this attempt is the last.
            let last = |result: Option<Result<T, E>>| match (result, outcome) {
                (Some(Ok(value)), Outcome::Success | Outcome::Ignored) => {
                    ToolResult::Ok { value, call: None }
                }
                (Some(Ok(_)), Outcome::Failure(kind)) => ToolResult::failed(
                    dependency,
                    format!("the dependency answered with a failure ({})", kind.as_str()),
                    true,
                ),
                (Some(Err(error)), _) => {
                    ToolResult::failed(dependency, error.to_string(), outcome.is_counted_failure())
                }
                (None, _) => ToolResult::failed(
                    dependency,
                    format!("timed out after {} ms", limit.as_millis()),
                    true,
                ),
            };
            // 5. Retry only counted failures of a retryable kind, within the policy.
            let retry = match outcome {
                Outcome::Failure(kind) if retryable(&kind) => backoff.next(),
                _ => None,
            };
            let Some(delay) = retry else {
                return last(result).with_stats(stats(attempts));
            };
            // Before waiting, the checks a retry would make anyway: an opened breaker ends the
            // call now (blocked), and so does a spent run (stopped); no wait is slept for nothing.
            if breaker.state() == State::Open {
                if let Err(blocked) = breaker.try_acquire() {
                    return ToolResult::blocked(dependency, &blocked).with_stats(stats(attempts));
                }
            }
            if let Err(reason) = run.check(Instant::now()) {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
            }
            // Honour the dependency's hint as a minimum, and never wait past the deadline.
            let wait = delay.max(outcome.retry_after().unwrap_or(Duration::ZERO));
            if Instant::now() + wait >= run.deadline() {
                return last(result).with_stats(stats(attempts));
            }
            tokio::time::sleep(wait).await;
        }
    }
}
