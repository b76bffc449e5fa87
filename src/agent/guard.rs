//! [`ToolGuard`]: how a dependency's tool is called (the per-call timeout, the retry policy, what
//! of an error the model may read); its pipeline's steps are in `pipeline.rs`.

use core::time::Duration;

use super::retry::RetryPolicy;
use crate::breaker::RetryBudget;

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
/// [`CircuitBreaker`](crate::CircuitBreaker), and every name the model or a trace sees (a
/// `blocked` or `failed` result, the spans' `gen_ai.tool.name` and `dependency`) is
/// [`CircuitBreaker::name`](crate::CircuitBreaker::name). Use named breakers: a
/// [`Registry`](crate::Registry)'s are, and [`Builder::name`](crate::breaker::Builder::name)
/// names one made alone. A tool served by several equivalent upstreams goes through
/// [`call_pool`](Self::call_pool) with a [`Pool`](crate::pool::Pool): each attempt to the member
/// the pool chooses, a retry to another; the model reads the pool's name.
///
/// # What the model is told
///
/// A `failed` result says how the call failed ([`FailedKind`](super::FailedKind): a counted
/// failure's kind, or `rejected` for the call's own fault) and, when the classification knows it,
/// the HTTP status ([`Classified::http_status`](crate::Classified::http_status), which a
/// classifier type's [`classify::with`](crate::classify::with) gives). It never holds an error's
/// own text: errors carry what the model must not read (a `reqwest::Error` displays its URL, query
/// string and any API key in it included). A caller whose errors are safe to show, or who can
/// redact them, opts in with [`error_text`](Self::error_text): a function from the error to the
/// words to show, or `None` to show only the kind and status. Tracing never records an error's
/// text either way.
///
/// A call that the breaker blocks, or the run stops, after some of its attempts failed (the
/// breaker opened on them, the budget ran out between them) says so, in the same terms:
/// [`FailedAttempts`](super::FailedAttempts) (how many failed, the last one's kind and HTTP
/// status) in the result and a last sentence of its message. A call blocked or stopped before
/// any attempt reads as it always did.
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
/// | `execute_tool` | `otel.name` (`execute_tool {tool}`), `otel.kind` (`internal`), `gen_ai.operation.name` (`execute_tool`), `gen_ai.tool.name` (the tool: the name given to [`call_tool`](Self::call_tool), else the breaker's), `dependency` (the breaker's name), `run_id`; when the call ends: `outcome` (`ok`, `blocked`, `failed`, `stopped`, as [`ToolResult`](super::ToolResult)'s status), `attempt` (attempts made), `duration_ms` (`f64`, on tokio's clock, waits included), `otel.status_code` (`ok` or `error`) and, unless ok, `error.type` (the failure kind, `ignored` for a failure that did not count, the blocked reason, or the stop reason) |
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
#[derive(Clone, Debug, PartialEq)]
pub struct ToolGuard<X = Redacted> {
    pub(super) per_call_timeout: Duration,
    pub(super) retry: RetryPolicy,
    pub(super) error_text: X,
    /// The guard's own retry budget, if given (`retry_budget`); else the dependency's registry's.
    pub(super) retry_budget: Option<RetryBudget>,
}

impl ToolGuard {
    /// Attempts time out after `per_call_timeout` (or at the run's deadline, if sooner); no
    /// error's text reaches the model (see [What the model is told](Self#what-the-model-is-told)).
    pub fn new(per_call_timeout: Duration, retry: RetryPolicy) -> Self {
        ToolGuard {
            per_call_timeout,
            retry,
            error_text: Redacted,
            retry_budget: None,
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
            retry_budget: self.retry_budget,
        }
    }

    /// The same guard, drawing every call's retries from `budget` (see [`RetryBudget`]): each
    /// call's first attempt deposits, and each retry (to the same dependency or, through
    /// [`call_pool`](Self::call_pool), to another member) must be allowed by the budget first. A
    /// refused retry ends the call `stopped` with [`StopReason::RetryBudget`](super::StopReason::RetryBudget),
    /// telling the model the last failure; the run goes on. Clones of `budget` in other guards
    /// share it. A guard with no budget of its own uses the one its dependency's
    /// [`Registry`](crate::Registry) gives it, if any (`RegistryBuilder::retry_budget`, the
    /// `retry_budget` key of a configuration file); a pool's call, the registry budget of the
    /// member its first attempt went to.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{AgentRun, CircuitBreaker, FailureKind, Outcome, RetryBudget, RetryPolicy, StopReason, ToolGuard, ToolResult};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let breaker = CircuitBreaker::builder().name("search").failure_threshold(100).build().unwrap();
    /// // No floor, and one retry per two first attempts.
    /// let budget = RetryBudget::new(0.5, 0, Duration::from_secs(10)).unwrap();
    /// let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default()).retry_budget(budget.clone());
    /// let run = AgentRun::new("run-1", Duration::from_secs(60), 100);
    /// let unavailable = |_: &Result<(), u16>| Outcome::Failure(FailureKind::Unavailable);
    /// let result = guard.call(&run, &breaker, unavailable, || async { Err(503) }).await;
    /// let ToolResult::Stopped { stop_reason, message, tried: Some(tried), .. } = &result else { panic!("{result:?}") };
    /// assert_eq!(*stop_reason, StopReason::RetryBudget, "0.5 × 1 first attempt allows no retry");
    /// assert_eq!(tried.count, 1);
    /// assert!(message.starts_with("search failed, and a retry was refused by its retry budget"));
    /// assert!(message.ends_with("This call failed once before that: unavailable."));
    ///
    /// let second = guard.call(&run, &breaker, unavailable, || async { Err(503) }).await;
    /// assert_eq!(second.stats().unwrap().attempts, 2, "2 first attempts: 1 retry allowed");
    /// assert_eq!(budget.refused(), 2);
    /// assert_eq!(run.stop_reason(), None, "the run goes on");
    /// # });
    /// ```
    #[must_use]
    pub fn retry_budget(mut self, budget: RetryBudget) -> Self {
        self.retry_budget = Some(budget);
        self
    }

    /// The guard's own retry budget, if it was given one.
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.retry_budget.as_ref()
    }

    /// The longest one attempt may run.
    pub fn per_call_timeout(&self) -> Duration {
        self.per_call_timeout
    }
}
