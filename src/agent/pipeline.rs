//! The pipeline's steps for one call through a [`ToolGuard`]: the run's deadline and budgets,
//! the breaker, the attempt under its timeout, classification, and the bounded retry (see the
//! module docs), with the [`Attempt`] each step reports.

use core::future::Future;
use core::time::Duration;

use tokio::time::Instant;

use super::fields::{CallStats, FailedAttempts, StopReason};
use super::guard::{ErrorText, ToolGuard};
use super::result::ToolResult;
use super::retry::{capped_hint, retryable, timed_out};
use super::run::AgentRun;
use super::spans::CallSpan;
use super::target::{CallBudget, Target};
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

impl<X> ToolGuard<X> {
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
    /// `classify` comes before `attempt`, so a closure written in place is read before `attempt`
    /// has told the compiler `T` and `E`: one that matches on `r` infers, but one that calls a
    /// method on what `r` holds (`|r| r.as_ref().map_or_else(|e| e.outcome(), ..)`) needs its
    /// argument's type written, `|r: &Result<T, E>|`, as in the example below.
    ///
    /// The breaker reads its own clock, not tokio's: in a test on tokio's paused clock, give the
    /// breaker a `quanta` mock (`toolbreaker::quanta::Clock::mock()`) and move both.
    ///
    /// # Examples
    ///
    /// A classification that asks the error, its argument's type written; the dependency answers
    /// 503 until its breaker opens, and the blocked result says what the call tried:
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{AgentRun, CircuitBreaker, FailureKind, Outcome, RetryPolicy, ToolGuard, ToolResult};
    ///
    /// struct HttpError(u16);
    ///
    /// impl HttpError {
    ///     fn outcome(&self) -> Outcome {
    ///         match self.0 {
    ///             500.. => Outcome::Failure(FailureKind::Unavailable),
    ///             _ => Outcome::Ignored,
    ///         }
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let breaker = CircuitBreaker::builder().name("search").failure_threshold(2).build().unwrap();
    /// let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default());
    /// let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
    /// let result = guard
    ///     .call(
    ///         &run,
    ///         &breaker,
    ///         |r: &Result<String, HttpError>| r.as_ref().map_or_else(|e| e.outcome(), |_| Outcome::Success),
    ///         || async { Err(HttpError(503)) },
    ///     )
    ///     .await;
    /// let ToolResult::Blocked { message, tried: Some(tried), .. } = &result else { panic!() };
    /// assert_eq!((tried.count, tried.last.as_str()), (2, "unavailable"));
    /// assert!(message.ends_with(" This call failed twice before that; the last failure: unavailable."));
    /// # });
    /// ```
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
        let mut attempt = attempt;
        let target = Target::Breaker(breaker);
        // `guard`'s steps written out, not awaited through it: one state machine fewer to move
        // the call's future and its result through on the MCP client's path.
        let span = CallSpan::new(target.name(), run);
        let attempt = move |_: &str, last| attempt(last);
        let call = self.guarded(run, target, classify, attempt, observe, &span);
        let result = span.instrument(call).await;
        span.finish(&result);
        result
    }

    /// The call through every guard, inside its span, for a breaker or a pool: `attempt` is
    /// given the member the attempt goes to (the breaker's own name for a breaker) and whether
    /// it is the last.
    pub(super) async fn guard<'a, T, E, O, Fut>(
        &self,
        run: &AgentRun,
        target: Target<'a>,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut(&'a str, bool) -> Fut,
        observe: impl FnMut(&Attempt),
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let span = CallSpan::new(target.name(), run);
        let result = span
            .instrument(self.guarded(run, target, classify, attempt, observe, &span))
            .await;
        span.finish(&result);
        result
    }

    /// The guards, in order, for one call.
    ///
    /// Tokio's clock is read once per step: at the start (the run's check, the time left and the
    /// attempt's start share it), when the attempt ends (its time, the call's, and the checks
    /// before a retry), and after a retry's wait. The backoff is built at the first retry.
    pub(super) async fn guarded<'a, T, E, O, Fut>(
        &self,
        run: &AgentRun,
        target: Target<'a>,
        classify: impl Fn(&Result<T, E>) -> O,
        mut attempt: impl FnMut(&'a str, bool) -> Fut,
        mut observe: impl FnMut(&Attempt),
        span: &CallSpan,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let dependency = target.name();
        let mut budget = CallBudget::new(self.retry_budget.as_ref());
        // A pool's member whose attempt failed last: a retry asks the others first.
        let mut avoid = None;
        let started = tokio_now();
        let mut now = started;
        let mut attempts = 0;
        let mut backoff = None;
        // The attempts of this call that failed so far: a stop after them says what they were.
        let mut tried: Option<FailedAttempts> = None;
        let stats = |attempts, now: Instant| CallStats {
            attempts,
            elapsed_ms: millis_floor(now.saturating_duration_since(started)),
        };
        // A `blocked` or `stopped` end of the call, with what it tried and its stats.
        let stop = |result: ToolResult<T>, tried, attempts, now| {
            result
                .after_failures(tried)
                .with_stats(stats(attempts, now))
        };
        loop {
            // 1. The run's deadline and budgets: checked before anything else.
            if let Err(reason) = run.check(now) {
                return stop(ToolResult::stopped(run.id(), reason), tried, attempts, now);
            }
            // 2. The breaker (or the pool), asked again before every retry.
            let permit = match target.acquire(avoid) {
                Ok(permit) => permit,
                Err(blocked) => {
                    return stop(
                        ToolResult::blocked(dependency, blocked),
                        tried,
                        attempts,
                        now,
                    );
                }
            };
            if let Err(reason) = run.take_attempt() {
                return stop(ToolResult::stopped(run.id(), reason), tried, attempts, now);
            }
            attempts += 1;
            budget.attempt(attempts, permit.breaker());
            // 3. The attempt, under a timeout no longer than the time left to the deadline. When
            // the time left is no more than the per-call timeout, the deadline is the limit that
            // binds: running out of time is running into the deadline, the dependency's own time
            // never having been the one cut short.
            let left = run.deadline().saturating_duration_since(now);
            let deadline_binds = left <= self.per_call_timeout;
            let limit = self.per_call_timeout.min(left);
            let probe = permit.is_probe();
            let member = permit.member();
            let attempt_span = span.attempt(member, attempts, probe);
            let attempt_started = now;
            let last = self.retry.is_last(attempts);
            let pending = attempt_span.in_scope(|| {
                tokio::time::timeout_at(attempt_started + limit, attempt(member, last))
            });
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
                    return stop(ToolResult::stopped(run.id(), reason), tried, attempts, now);
                }
                Err(_elapsed) => (Outcome::Failure(FailureKind::Timeout), None, None),
            };
            // Recorded inside the attempt's span, so the breaker's events (a counted failure, a
            // transition) belong to it.
            avoid = Some(permit.index());
            // The breaker keeps the raw hint (it caps it itself); the retry and the model get it
            // cut to that cap.
            let shown = match outcome.retry_after() {
                Some(_) => capped_hint(outcome, &permit.breaker().config()),
                None => outcome,
            };
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
                    .answered(self.last(dependency, shown, status, limit, result), &shown)
                    .with_stats(stats(attempts, now));
            };
            // Before waiting, the checks a retry would make anyway: an opened breaker ends the
            // call now (blocked), and so does a spent run (stopped); no wait is slept for nothing.
            // Asked without taking the probe slot (a half-open breaker's retry waits, then asks).
            // Only a counted failure is retried, so this attempt is one more failed one: either
            // end says so.
            tried = Some(FailedAttempts::after(tried, &shown, status));
            if let Err(blocked) = target.check_open() {
                return stop(
                    ToolResult::blocked(dependency, blocked),
                    tried,
                    attempts,
                    now,
                );
            }
            if let Err(reason) = run.check(now) {
                return stop(ToolResult::stopped(run.id(), reason), tried, attempts, now);
            }
            // Honour the dependency's hint as a minimum (unless the retry goes to another of a
            // pool's members), and never wait past the deadline.
            let hint = shown.retry_after().unwrap_or(Duration::ZERO);
            let failed = avoid.unwrap_or_default();
            let wait = if hint > delay && target.retry_waits_for_hint(failed) {
                hint
            } else {
                delay
            };
            // A hint too long to add to now (a server's `Retry-After` of 20 digits) ends past
            // any deadline, like every other wait that does.
            if now
                .checked_add(wait)
                .is_none_or(|end| end >= run.deadline())
            {
                return span
                    .answered(self.last(dependency, shown, status, limit, result), &shown)
                    .with_stats(stats(attempts, now));
            }
            if let Err(refused) = budget.retry(run, dependency, span) {
                return stop(refused, tried, attempts, now);
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
