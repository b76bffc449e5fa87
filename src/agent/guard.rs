//! [`ToolGuard`]: every guard of the pipeline, in order, for one tool call.

use core::future::Future;
use core::time::Duration;

use tokio::time::Instant;

use super::retry::retryable;
use super::spans::CallSpan;
use super::{AgentRun, CallStats, RetryPolicy, StopReason, ToolResult};
use crate::breaker::CircuitBreaker;
use crate::classify::{Classify, FailureKind, Outcome};
use crate::time::{millis_floor, tokio_now};
use crate::types::Transition;

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
    /// dependency's classification, any [`Classify`]: a type passed as it is, a named function,
    /// or a closure whose argument is written as a reference (`|r: &Result<_, _>|`; see
    /// [Closures](Classify#closures)). The error of a failed call reaches the model as text, so
    /// `E`'s `Display` must hold nothing secret: map errors that may before returning them (a
    /// `reqwest::Error` displays its URL, query string and all; `Error::without_url` drops it).
    /// Tracing never records the error's text.
    pub async fn call<T, E, Fut>(
        &self,
        run: &AgentRun,
        dependency: &str,
        breaker: &CircuitBreaker,
        classify: impl Classify<T, E>,
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
        classify: impl Classify<T, E>,
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
        classify: impl Classify<T, E>,
        mut attempt: impl FnMut() -> Fut,
        mut observe: impl FnMut(&Attempt),
        span: &CallSpan,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        E: core::fmt::Display,
    {
        let started = tokio_now();
        let mut attempts = 0;
        let mut backoff = self.retry.backoff();
        let stats = |attempts| CallStats {
            attempts,
            elapsed_ms: millis_floor(started.elapsed()),
        };
        loop {
            // 1. The run's deadline and budgets: checked before anything else.
            if let Err(reason) = run.check(tokio_now()) {
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
            let left = run.deadline().saturating_duration_since(tokio_now());
            let limit = self.per_call_timeout.min(left);
            let probe = permit.is_probe();
            let attempt_span = span.attempt(dependency, attempts, probe);
            let attempt_started = tokio_now();
            let pending = attempt_span.in_scope(|| tokio::time::timeout(limit, attempt()));
            let (outcome, result) = match attempt_span.instrument(pending).await {
                // 4. Classify and record.
                Ok(result) => (classify.classify(&result), Some(result)),
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
            if let Err(reason) = run.check(tokio_now()) {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts));
            }
            // Honour the dependency's hint as a minimum, and never wait past the deadline.
            let wait = delay.max(outcome.retry_after().unwrap_or(Duration::ZERO));
            if tokio_now() + wait >= run.deadline() {
                return span
                    .answered(last(result), &outcome)
                    .with_stats(stats(attempts));
            }
            tokio::time::sleep(wait).await;
        }
    }
}
