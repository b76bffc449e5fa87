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
use crate::state::Transition;
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
/// # Tracing
///
/// With feature `tracing`, each [`call`](Self::call) is an `info` span named `execute_tool`
/// (target `toolbreaker`), with a child span `attempt` per attempt that reached the dependency.
/// Their fields follow what `tracing-opentelemetry` maps to OpenTelemetry, so an exporter gets
/// GenAI tool-execution spans with no code of the caller's:
///
/// | span | fields |
/// |---|---|
/// | `execute_tool` | `otel.name` (`execute_tool {dependency}`), `otel.kind` (`internal`), `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name` and `dependency` (the `dependency` argument), `run_id`; when the call ends: `outcome` (`ok`, `blocked`, `failed`, `stopped`, as [`ToolResult`]'s status), `attempt` (attempts made), `duration_ms` (`f64`, on tokio's clock, waits included), `otel.status_code` (`ok` or `error`) and, unless ok, `error.type` (the failure kind, `ignored` for a failure that did not count, the blocked reason, or the stop reason) |
/// | `attempt` | `otel.name` (`attempt {dependency}`), `otel.kind` (`client`), `dependency`, `attempt` (its number), `probe`; when it ends: `outcome` (`success`, `failure`, `ignored`, or `stopped` when the run's deadline cut it), `duration_ms`, `otel.status_code` and, unless a success, `error.type` |
///
/// The breaker's own events fire inside these spans (a `call blocked` event in the call's span, a
/// `counted failure` or a transition in the attempt's), so a subscriber sees them with the run's
/// id. No span or event carries the request, the response, the error's text, or anything else
/// from the call. Without the feature there are no spans and no cost.
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
    /// `E`'s `Display` must hold nothing secret: map errors that may before returning them (a
    /// `reqwest::Error` displays its URL, query string and all; `Error::without_url` drops it).
    /// Tracing never records the error's text.
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
    ///
    /// With feature `tracing`, the call is one span and each attempt a span inside it (see
    /// [Tracing](Self#tracing)).
    pub async fn call_observed<T, E, Fut>(
        &self,
        run: &AgentRun,
        dependency: &str,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> Outcome,
        attempt: impl FnMut() -> Fut,
        observe: impl FnMut(&Attempt),
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        E: core::fmt::Display,
    {
        let span = CallSpan::new(dependency, run);
        let result = span
            .instrument(self.guarded(run, dependency, breaker, classify, attempt, observe, &span))
            .await;
        span.finish(&result);
        result
    }

    /// The guards, in order, for one call.
    #[allow(clippy::too_many_arguments)] // private: `call_observed`'s arguments and its span
    async fn guarded<T, E, Fut>(
        &self,
        run: &AgentRun,
        dependency: &str,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> Outcome,
        mut attempt: impl FnMut() -> Fut,
        mut observe: impl FnMut(&Attempt),
        span: &CallSpan,
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
            let attempt_span = span.attempt(dependency, attempts, probe);
            let attempt_started = Instant::now();
            let pending = attempt_span.in_scope(|| tokio::time::timeout(limit, attempt()));
            let (outcome, result) = match attempt_span.instrument(pending).await {
                // 4. Classify and record.
                Ok(result) => (classify(&result), Some(result)),
                // Cut short by the run's deadline rather than the per-call timeout: that says
                // nothing about the dependency, so nothing is recorded (a probe's slot is given
                // back) and the run has stopped.
                Err(_elapsed) if limit < self.per_call_timeout => {
                    drop(permit);
                    attempt_span.cut(attempt_started.elapsed());
                    let reason = run.stop(StopReason::Deadline);
                    return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
                }
                Err(_elapsed) => (Outcome::Failure(FailureKind::Timeout), None),
            };
            let elapsed = attempt_started.elapsed();
            // Recorded inside the attempt's span, so the breaker's events (a counted failure, a
            // transition) belong to it.
            attempt_span.in_scope(|| {
                let transition = permit.record_timed(outcome, elapsed);
                observe(&Attempt {
                    number: attempts,
                    probe,
                    outcome,
                    timed_out: result.is_none(),
                    transition,
                    started: attempt_started,
                    elapsed,
                });
            });
            attempt_span.ended(&outcome, elapsed);
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
                return span
                    .answered(last(result), &outcome)
                    .with_stats(stats(attempts));
            };
            // Before waiting, the checks a retry would make anyway: an opened breaker ends the
            // call now (blocked), and so does a spent run (stopped); no wait is slept for nothing.
            // Asked without taking the probe slot (a half-open breaker's retry waits, then asks).
            if let Err(blocked) = breaker.check_open() {
                return ToolResult::blocked(dependency, &blocked).with_stats(stats(attempts));
            }
            if let Err(reason) = run.check(Instant::now()) {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
            }
            // Honour the dependency's hint as a minimum, and never wait past the deadline.
            let wait = delay.max(outcome.retry_after().unwrap_or(Duration::ZERO));
            if Instant::now() + wait >= run.deadline() {
                return span
                    .answered(last(result), &outcome)
                    .with_stats(stats(attempts));
            }
            tokio::time::sleep(wait).await;
        }
    }
}

/// The spans of one call through the pipeline (feature `tracing`). Without the feature these
/// types are empty and every method does nothing, so the pipeline pays nothing for them.
#[derive(Debug)]
struct CallSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
    /// When the call started, on tokio's clock.
    #[cfg(feature = "tracing")]
    started: Instant,
}

/// One attempt's span, inside its call's.
#[derive(Debug)]
struct AttemptSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

#[cfg(feature = "tracing")]
type Instrumented<F> = tracing::instrument::Instrumented<F>;
#[cfg(not(feature = "tracing"))]
type Instrumented<F> = F;

impl CallSpan {
    /// The call's span: named for OpenTelemetry's GenAI tool-execution span, carrying the
    /// dependency and the run's id; the rest is recorded when the call ends.
    #[inline(always)]
    fn new(dependency: &str, run: &AgentRun) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = (dependency, run);
        CallSpan {
            #[cfg(feature = "tracing")]
            span: tracing::info_span!(
                target: "toolbreaker",
                "execute_tool",
                "otel.name" = format_args!("execute_tool {dependency}"),
                "otel.kind" = "internal",
                "otel.status_code" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = dependency,
                dependency,
                run_id = run.id(),
                attempt = tracing::field::Empty,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            ),
            #[cfg(feature = "tracing")]
            started: Instant::now(),
        }
    }

    /// `future`, inside the call's span whenever it is polled.
    #[inline(always)]
    fn instrument<F: Future>(&self, future: F) -> Instrumented<F> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(future, self.span.clone());
        #[cfg(not(feature = "tracing"))]
        future
    }

    /// A span for attempt `number`, inside the call's.
    #[inline(always)]
    fn attempt(&self, dependency: &str, number: u32, probe: bool) -> AttemptSpan {
        #[cfg(not(feature = "tracing"))]
        let _ = (dependency, number, probe);
        AttemptSpan {
            #[cfg(feature = "tracing")]
            span: tracing::info_span!(
                target: "toolbreaker",
                parent: &self.span,
                "attempt",
                "otel.name" = format_args!("attempt {dependency}"),
                "otel.kind" = "client",
                "otel.status_code" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                dependency,
                attempt = number,
                probe,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            ),
        }
    }

    /// The answer of the call's last attempt, passed through; a failed answer's class (the
    /// failure kind, or `ignored` when the failure did not count) goes on the span.
    #[inline(always)]
    fn answered<T>(&self, answer: ToolResult<T>, outcome: &Outcome) -> ToolResult<T> {
        #[cfg(feature = "tracing")]
        if let ToolResult::Failed { .. } = answer {
            self.span.record("error.type", error_type(outcome));
        }
        #[cfg(not(feature = "tracing"))]
        let _ = outcome;
        answer
    }

    /// The call ended with `result`.
    #[inline(always)]
    fn finish<T>(&self, result: &ToolResult<T>) {
        #[cfg(feature = "tracing")]
        {
            let span = &self.span;
            if span.is_disabled() {
                return;
            }
            let (outcome, error_type) = match result {
                ToolResult::Ok { .. } => ("ok", None),
                ToolResult::Blocked { reason, .. } => ("blocked", Some(reason.as_str())),
                // Recorded by `answered`, which knows the last attempt's outcome.
                ToolResult::Failed { .. } => ("failed", None),
                ToolResult::Stopped { stop_reason, .. } => ("stopped", Some(stop_reason.as_str())),
            };
            span.record("attempt", result.stats().map_or(0, |stats| stats.attempts));
            let elapsed = self.started.elapsed();
            record_end(span, outcome, elapsed, error_type, result.is_ok());
        }
        #[cfg(not(feature = "tracing"))]
        let _ = result;
    }
}

impl AttemptSpan {
    /// `f`, inside the attempt's span.
    #[inline(always)]
    fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        return self.span.in_scope(f);
        #[cfg(not(feature = "tracing"))]
        f()
    }

    /// `future`, inside the attempt's span whenever it is polled.
    #[inline(always)]
    fn instrument<F: Future>(&self, future: F) -> Instrumented<F> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(future, self.span.clone());
        #[cfg(not(feature = "tracing"))]
        future
    }

    /// The attempt ran for `elapsed` and was classified as `outcome` (a timeout as
    /// `Failure(Timeout)`). The span closes here, before any wait for a retry.
    #[inline(always)]
    fn ended(self, outcome: &Outcome, elapsed: Duration) {
        #[cfg(feature = "tracing")]
        {
            let name = match outcome {
                Outcome::Success => "success",
                Outcome::Failure(_) => "failure",
                Outcome::Ignored => "ignored",
            };
            let ok = matches!(outcome, Outcome::Success);
            let error = (!ok).then(|| error_type(outcome));
            record_end(&self.span, name, elapsed, error, ok);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (outcome, elapsed);
    }

    /// The run's deadline cut the attempt short after `elapsed`; nothing was recorded. The span
    /// closes here.
    #[inline(always)]
    fn cut(self, elapsed: Duration) {
        #[cfg(feature = "tracing")]
        {
            let stopped = Some(StopReason::Deadline.as_str());
            record_end(&self.span, "stopped", elapsed, stopped, false);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = elapsed;
    }
}

/// What a span records when its call or attempt ends: `outcome`, `duration_ms`, `error.type`
/// when there is one, and `otel.status_code` (`ok` or `error`).
#[cfg(feature = "tracing")]
fn record_end(
    span: &tracing::Span,
    outcome: &str,
    elapsed: Duration,
    error_type: Option<&str>,
    ok: bool,
) {
    span.record("outcome", outcome);
    span.record("duration_ms", elapsed.as_secs_f64() * 1e3);
    if let Some(error_type) = error_type {
        span.record("error.type", error_type);
    }
    span.record("otel.status_code", if ok { "ok" } else { "error" });
}

/// The class of a failed attempt, for `error.type`: the failure kind, or `ignored` for a failure
/// that did not count against the dependency. Never the error itself.
#[cfg(feature = "tracing")]
fn error_type(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Failure(kind) => kind.as_str(),
        Outcome::Success | Outcome::Ignored => "ignored",
    }
}
