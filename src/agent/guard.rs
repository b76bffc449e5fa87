//! [`ToolGuard`]: every guard of the pipeline, in order, for one tool call.

use core::future::Future;
use core::time::Duration;

use tokio::time::Instant;

use super::result::{CallStats, StopReason, ToolResult};
use super::retry::RetryPolicy;
use super::retry::retryable;
use super::run::AgentRun;
use super::spans::CallSpan;
use crate::breaker::CircuitBreaker;
use crate::classify::{Classified, FailureKind, Outcome};
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

/// What a [`ToolGuard`] shows the model of an attempt's error, besides its failure kind and
/// HTTP status: nothing ([`Redacted`], the default), or what the function given to
/// [`ToolGuard::error_text`] returns. Sealed: those are the two.
pub trait ErrorText<E>: sealed::Sealed {
    /// The words to show the model for `error`, or `None` to show only its kind and status.
    fn error_text(&self, error: &E) -> Option<String>;
}

/// A [`ToolGuard`]'s default: no error's text reaches the model, only the failure's kind and,
/// when known, the HTTP status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Redacted;

impl<E> ErrorText<E> for Redacted {
    fn error_text(&self, _: &E) -> Option<String> {
        None
    }
}

impl<E> ErrorText<E> for fn(&E) -> Option<String> {
    fn error_text(&self, error: &E) -> Option<String> {
        self(error)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Redacted {}
    impl<E> Sealed for fn(&E) -> Option<String> {}
}

/// How a dependency's tool is called: a per-call timeout, a retry policy, and what of an error
/// the model may read.
///
/// The dependency is the breaker's: [`call`](Self::call) takes the dependency's
/// [`CircuitBreaker`], and every name the model or a trace sees (a `blocked` or `failed` result,
/// the spans' `gen_ai.tool.name` and `dependency`) is [`CircuitBreaker::name`]. Use named
/// breakers: a [`Registry`](crate::Registry)'s are, and [`Builder::name`](crate::breaker::Builder::name)
/// names one made alone.
///
/// # What the model is told
///
/// A `failed` result says how the call failed ([`FailedKind`](super::FailedKind): a counted
/// failure's kind, or `rejected` for the call's own fault) and, when the classification knows it,
/// the HTTP status ([`Classified::http_status`], which a classifier type's
/// [`classify::with`](crate::classify::with) gives). It never holds an error's own text: errors carry
/// what the model must not read (a `reqwest::Error` displays its URL, query string and any API key
/// in it included). A caller whose errors are safe to show, or who can redact them, opts in with
/// [`error_text`](Self::error_text): a function from the error to the words to show, or `None`
/// to show only the kind and status. Tracing never records an error's text either way.
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
/// | `execute_tool` | `otel.name` (`execute_tool {dependency}`), `otel.kind` (`internal`), `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name` and `dependency` (the breaker's name), `run_id`; when the call ends: `outcome` (`ok`, `blocked`, `failed`, `stopped`, as [`ToolResult`]'s status), `attempt` (attempts made), `duration_ms` (`f64`, on tokio's clock, waits included), `otel.status_code` (`ok` or `error`) and, unless ok, `error.type` (the failure kind, `ignored` for a failure that did not count, the blocked reason, or the stop reason) |
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
/// let breaker = CircuitBreaker::builder().name("search").build().unwrap();
/// let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default());
/// let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
/// let mut calls = 0;
/// let result = guard
///     .call(&run, &breaker, |r| match r {
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
pub struct ToolGuard<X = Redacted> {
    per_call_timeout: Duration,
    retry: RetryPolicy,
    error_text: X,
}

impl ToolGuard {
    /// Attempts time out after `per_call_timeout` (or at the run's deadline, if sooner); no
    /// error's text reaches the model (see [What the model is told](Self#what-the-model-is-told)).
    pub fn new(per_call_timeout: Duration, retry: RetryPolicy) -> Self {
        ToolGuard {
            per_call_timeout,
            retry,
            error_text: Redacted,
        }
    }
}

impl<X> ToolGuard<X> {
    /// The same guard, showing the model what `text` returns for a failed attempt's error (`None`:
    /// only the kind and status, as by default). Only for errors whose words hold nothing secret,
    /// or with a function that takes out what may: a `reqwest::Error`'s `Display` holds its URL
    /// (`Error::without_url` drops it). A guard made this way calls dependencies whose error type
    /// is `E`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{AgentRun, CircuitBreaker, FailureKind, Outcome, RetryPolicy, ToolGuard, ToolResult};
    ///
    /// /// An error the tool wrote for the model: its words are safe to show.
    /// #[derive(Debug)]
    /// struct BadQuery(&'static str);
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let breaker = CircuitBreaker::builder().name("search").build().unwrap();
    /// let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
    /// let classify = |_: &Result<(), BadQuery>| Outcome::Ignored;
    /// let attempt = || async { Err(BadQuery("`q` must not be empty")) };
    ///
    /// let redacted = ToolGuard::new(Duration::from_secs(2), RetryPolicy::none());
    /// let ToolResult::Failed { error, .. } = redacted.call(&run, &breaker, classify, attempt).await else { panic!() };
    /// assert_eq!(error, "invalid request");
    ///
    /// let shown = redacted.error_text(|e: &BadQuery| Some(e.0.to_owned()));
    /// let ToolResult::Failed { error, message, .. } = shown.call(&run, &breaker, classify, attempt).await else { panic!() };
    /// assert_eq!(error, "`q` must not be empty");
    /// assert!(message.starts_with("search rejected the call: `q` must not be empty."));
    /// # });
    /// ```
    pub fn error_text<E>(
        self,
        text: fn(&E) -> Option<String>,
    ) -> ToolGuard<fn(&E) -> Option<String>> {
        ToolGuard {
            per_call_timeout: self.per_call_timeout,
            retry: self.retry,
            error_text: text,
        }
    }

    /// The longest one attempt may run.
    pub fn per_call_timeout(&self) -> Duration {
        self.per_call_timeout
    }

    /// Call the tool of `breaker`'s dependency for `run` through every guard, in order (see the
    /// module docs).
    ///
    /// `attempt` makes one attempt and is called once per attempt; `classify` is the
    /// dependency's classification, a function from an attempt's result to an [`Outcome`] or a
    /// [`Classified`]: a closure written in place (`|r| match r { .. }`, its argument's type
    /// inferred), a named function, or a classifier type through
    /// [`classify::with`](crate::classify::with), which also gives the HTTP status (see
    /// [Closures in place, types through `with`](crate::Classify#closures-in-place-types-through-with)).
    /// A failed call tells the model the failure's kind and HTTP
    /// status only, unless the guard shows errors' text ([`error_text`](Self::error_text)). An
    /// answer (`Ok`) is passed on as [`ToolResult::Ok`] unless it counts against the dependency:
    /// one classified `Ignored`, such as a 4xx response through `HttpClassifier`, is the
    /// dependency's own word on what the call got wrong, for the caller to render for the model.
    ///
    /// The breaker reads its own clock, not tokio's: in a test on tokio's paused clock, give the
    /// breaker a `quanta` mock (`toolbreaker::quanta::Clock::mock()`) and move both.
    pub async fn call<T, E, O, Fut>(
        &self,
        run: &AgentRun,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut() -> Fut,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        self.call_observed(run, breaker, classify, attempt, |_| {})
            .await
    }

    /// [`call`](Self::call), reporting every attempt that reached the dependency to `observe`
    /// as it ends: for a runtime's own counters and logs (probes, retries, transitions).
    ///
    /// With feature `tracing`, the call is one span and each attempt a span inside it (see
    /// [Tracing](Self#tracing)).
    pub async fn call_observed<T, E, O, Fut>(
        &self,
        run: &AgentRun,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut() -> Fut,
        observe: impl FnMut(&Attempt),
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let mut attempt = attempt;
        self.call_knowing_last(run, breaker, classify, move |_| attempt(), observe)
            .await
    }

    /// [`call_observed`](Self::call_observed), whose `attempt` is told whether no attempt can
    /// follow it (the retry policy allows no more), so that it can move what it would otherwise
    /// copy for a retry.
    pub(crate) async fn call_knowing_last<T, E, O, Fut>(
        &self,
        run: &AgentRun,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut(bool) -> Fut,
        observe: impl FnMut(&Attempt),
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let span = CallSpan::new(breaker.name(), run);
        let result = span
            .instrument(self.guarded(run, breaker, classify, attempt, observe, &span))
            .await;
        span.finish(&result);
        result
    }

    /// The guards, in order, for one call.
    ///
    /// Tokio's clock is read once per step: at the start (the run's check, the time left and the
    /// attempt's start share it), when the attempt ends (its time, the call's, and the checks
    /// before a retry), and after a retry's wait. The backoff is built at the first retry.
    async fn guarded<T, E, O, Fut>(
        &self,
        run: &AgentRun,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> O,
        mut attempt: impl FnMut(bool) -> Fut,
        mut observe: impl FnMut(&Attempt),
        span: &CallSpan,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let dependency = breaker.name();
        let started = tokio_now();
        let mut now = started;
        let mut attempts = 0;
        let mut backoff = None;
        let stats = |attempts, now: Instant| CallStats {
            attempts,
            elapsed_ms: millis_floor(now.saturating_duration_since(started)),
        };
        loop {
            // 1. The run's deadline and budgets: checked before anything else.
            if let Err(reason) = run.check(now) {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts, now));
            }
            // 2. The breaker, asked again before every retry.
            let permit = match breaker.try_acquire() {
                Ok(permit) => permit,
                Err(blocked) => {
                    return ToolResult::blocked(dependency, blocked)
                        .with_stats(stats(attempts, now));
                }
            };
            if let Err(reason) = run.take_attempt() {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts, now));
            }
            attempts += 1;
            // 3. The attempt, under a timeout no longer than the time left to the deadline. When
            // the time left is no more than the per-call timeout, the deadline is the limit that
            // binds: running out of time is running into the deadline, the dependency's own time
            // never having been the one cut short.
            let left = run.deadline().saturating_duration_since(now);
            let deadline_binds = left <= self.per_call_timeout;
            let limit = self.per_call_timeout.min(left);
            let probe = permit.is_probe();
            let attempt_span = span.attempt(dependency, attempts, probe);
            let attempt_started = now;
            let last = self.retry.is_last(attempts);
            let pending = attempt_span
                .in_scope(|| tokio::time::timeout_at(attempt_started + limit, attempt(last)));
            let answered = attempt_span.instrument(pending).await;
            now = tokio_now();
            let elapsed = now.saturating_duration_since(attempt_started);
            let (outcome, status, result) = match answered {
                // 4. Classify and record.
                Ok(result) => {
                    let classified = classify(&result).into();
                    (classified.outcome(), classified.http_status(), Some(result))
                }
                // Cut short by the run's deadline rather than the per-call timeout: that says
                // nothing about the dependency, so nothing is recorded (a probe's slot is given
                // back) and the run has stopped.
                Err(_elapsed) if deadline_binds => {
                    drop(permit);
                    attempt_span.cut(elapsed);
                    let reason = run.stop(StopReason::Deadline);
                    return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts, now));
                }
                Err(_elapsed) => (Outcome::Failure(FailureKind::Timeout), None, None),
            };
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
            // 5. Retry only counted failures of a retryable kind, within the policy.
            let retry = match outcome {
                Outcome::Failure(kind) if retryable(&kind) => {
                    backoff.get_or_insert_with(|| self.retry.backoff()).next()
                }
                _ => None,
            };
            let Some(delay) = retry else {
                return span
                    .answered(
                        self.last(dependency, outcome, status, limit, result),
                        &outcome,
                    )
                    .with_stats(stats(attempts, now));
            };
            // Before waiting, the checks a retry would make anyway: an opened breaker ends the
            // call now (blocked), and so does a spent run (stopped); no wait is slept for nothing.
            // Asked without taking the probe slot (a half-open breaker's retry waits, then asks).
            if let Err(blocked) = breaker.check_open() {
                return ToolResult::blocked(dependency, blocked).with_stats(stats(attempts, now));
            }
            if let Err(reason) = run.check(now) {
                return ToolResult::stopped(run.id(), reason).with_stats(stats(attempts, now));
            }
            // Honour the dependency's hint as a minimum, and never wait past the deadline.
            let wait = delay.max(outcome.retry_after().unwrap_or(Duration::ZERO));
            // A hint too long to add to now (a server's `Retry-After` of 20 digits) ends past
            // any deadline, like every other wait that does.
            if now
                .checked_add(wait)
                .is_none_or(|end| end >= run.deadline())
            {
                return span
                    .answered(
                        self.last(dependency, outcome, status, limit, result),
                        &outcome,
                    )
                    .with_stats(stats(attempts, now));
            }
            tokio::time::sleep(wait).await;
            now = tokio_now();
        }
    }

    /// What the model is told when an attempt is the last: a value, or the failure's kind and
    /// status (an error's text only if this guard shows it). An answer is passed on unless it
    /// counts against the dependency: one classified `Ignored` (a 4xx response) is the
    /// dependency's own word on the call's fault, which the caller renders for the model (it
    /// says what to correct). `None` is an attempt that ran out of its `limit`.
    fn last<T, E>(
        &self,
        dependency: &str,
        outcome: Outcome,
        status: Option<u16>,
        limit: Duration,
        result: Option<Result<T, E>>,
    ) -> ToolResult<T>
    where
        X: ErrorText<E>,
    {
        match result {
            Some(Ok(value)) if !outcome.is_counted_failure() => {
                ToolResult::Ok { value, call: None }
            }
            Some(result) => self.failed(dependency, outcome, status, &result),
            None => timed_out(dependency, outcome, limit),
        }
    }

    /// A failed attempt's result for the model; out of line, so the healthy path's code stays
    /// small.
    #[cold]
    #[inline(never)]
    fn failed<T, E>(
        &self,
        dependency: &str,
        outcome: Outcome,
        status: Option<u16>,
        result: &Result<T, E>,
    ) -> ToolResult<T>
    where
        X: ErrorText<E>,
    {
        let text = match result {
            Err(error) => self.error_text.error_text(error),
            Ok(_) => None,
        };
        ToolResult::failed(dependency, outcome, status, text)
    }
}

/// An attempt that ran out of its `limit`, as the model is told it.
#[cold]
#[inline(never)]
fn timed_out<T>(dependency: &str, outcome: Outcome, limit: Duration) -> ToolResult<T> {
    let text = format!("timed out after {} ms", millis_floor(limit));
    ToolResult::failed(dependency, outcome, None, Some(text))
}
