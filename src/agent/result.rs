//! What the model sees: the result of a tool call (serialisable with feature `serde`).

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use super::fields::{CallStats, FailedAttempts, FailedKind, StopReason};
use super::message;
use crate::classify::Outcome;
use crate::time::millis_floor;
use crate::types::{Blocked, BlockedReason};

/// The result of one tool call as the agent runtime hands it to the model.
///
/// Serialised with a `status` tag. A `blocked` result says the tool is unavailable, for how long,
/// and what the model may do instead; it never invites an immediate retry, and never reads like a
/// problem with the model's arguments. A `blocked` or `stopped` result that ends a call through the
/// guard pipeline after attempts of that call failed says so ([`FailedAttempts`]): how many failed
/// and how the last failed, in its JSON and in its message.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, ToolResult};
///
/// let (clock, _mock) = toolbreaker::quanta::Clock::mock();
/// let search = CircuitBreaker::builder()
///     .name("search")
///     .failure_threshold(1)
///     .cooldown(Duration::from_millis(1840))
///     .clock(clock)
///     .build()?;
/// search.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
///
/// let blocked = search.try_acquire().unwrap_err();
/// let json = ToolResult::<()>::blocked(search.name(), blocked).to_json().unwrap();
/// assert_eq!(
///     json,
///     r#"{"status":"blocked","dependency":"search","reason":"dependency_open","retry_after_ms":1840,"message":"search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 1.8 s."}"#
/// );
///
/// let ok = ToolResult::ok(serde_json::json!({"hits": 3}));
/// assert_eq!(ok.to_json().unwrap(), r#"{"status":"ok","value":{"hits":3}}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "status", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ToolResult<T> {
    /// The tool ran and returned `value`.
    Ok {
        /// The tool's answer.
        value: T,
        /// How the call went, when it came through the guard pipeline.
        #[cfg_attr(
            feature = "serde",
            serde(flatten, skip_serializing_if = "Option::is_none")
        )]
        call: Option<CallStats>,
    },
    /// The dependency's breaker did not admit the call; nothing was sent.
    Blocked {
        /// The dependency whose breaker blocked the call (a pool's name, for a pool none of
        /// whose members admitted it).
        dependency: String,
        /// `dependency_open`, `probe_in_flight`, `isolated`, `pool_exhausted` or `throttled`.
        reason: BlockedReason,
        /// Milliseconds until the dependency may be called again; never zero.
        retry_after_ms: u64,
        /// The same, in words written for the model (and, after failed attempts, what they were).
        message: String,
        /// The attempts of this call that failed before its breaker refused a retry, when any
        /// did: the model is told it was not blocked at once.
        #[cfg_attr(
            feature = "serde",
            serde(flatten, skip_serializing_if = "Option::is_none")
        )]
        tried: Option<FailedAttempts>,
        /// How the call went, when it came through the guard pipeline (a retry the opened
        /// breaker refused shows its earlier attempts here).
        #[cfg_attr(
            feature = "serde",
            serde(flatten, skip_serializing_if = "Option::is_none")
        )]
        call: Option<CallStats>,
    },
    /// The tool ran and failed, after any retries the pipeline allowed.
    ///
    /// What the model reads of the failure is its kind and, when known, the HTTP status; never an
    /// error's own text (a `reqwest::Error` displays its URL, query string and API key included),
    /// unless the caller chose to show it: through `ToolGuard::error_text` (feature `tokio`), or
    /// by passing words to [`ToolResult::failed`].
    Failed {
        /// The dependency that failed.
        dependency: String,
        /// How it failed: a counted failure's kind, or `rejected` for the call's own fault.
        kind: FailedKind,
        /// The HTTP status of the last attempt's answer, when it had one and it was known
        /// ([`Classify::http_status`](crate::Classify::http_status)).
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        http_status: Option<u16>,
        /// Milliseconds the dependency asked callers to wait, when it said (a 429's
        /// `Retry-After`, [`Outcome::retry_after`]); never zero.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        retry_after_ms: Option<u64>,
        /// What went wrong, in words: by default the kind and the status (`unavailable (HTTP
        /// 503)`, `timed out after 250 ms`, `HTTP 400`); the text the caller chose to show, when
        /// it chose to.
        error: String,
        /// Whether the failure counts against the dependency's health; `false` means the call
        /// itself was at fault (bad arguments, auth, not found).
        counted: bool,
        /// What the model may do, in words.
        message: String,
        /// How the call went.
        #[cfg_attr(
            feature = "serde",
            serde(flatten, skip_serializing_if = "Option::is_none")
        )]
        call: Option<CallStats>,
    },
    /// The agent run may make no more tool calls: its deadline passed or a budget is spent; or
    /// this call may make no more attempts: the dependency's retry budget refused a retry
    /// ([`StopReason::RetryBudget`]).
    Stopped {
        /// The run that stopped.
        run_id: String,
        /// `deadline`, `tool_call_budget` or `token_budget`; or `retry_budget`, when the retry
        /// budget refused this call's retry (the run goes on).
        stop_reason: StopReason,
        /// What the model may do, in words (and, after failed attempts, what they were).
        message: String,
        /// The attempts of this call that failed before the run stopped it, when any did.
        #[cfg_attr(
            feature = "serde",
            serde(flatten, skip_serializing_if = "Option::is_none")
        )]
        tried: Option<FailedAttempts>,
        /// How the call went.
        #[cfg_attr(
            feature = "serde",
            serde(flatten, skip_serializing_if = "Option::is_none")
        )]
        call: Option<CallStats>,
    },
}

impl<T> ToolResult<T> {
    /// A successful result.
    pub fn ok(value: T) -> Self {
        ToolResult::Ok { value, call: None }
    }

    /// The result of a call that `dependency`'s breaker blocked: pass the name of the breaker
    /// that refused ([`CircuitBreaker::name`](crate::CircuitBreaker::name)), as the guard
    /// pipeline does, so the model is never told about another dependency.
    ///
    /// The message tells the model not to call the tool again now, to answer with what it knows
    /// or use another tool, and when the tool may be tried (retry-after in seconds, to a tenth,
    /// never shown as less than 0.1 s).
    #[cold]
    pub fn blocked(dependency: &str, blocked: Blocked) -> Self {
        let retry_after_ms = millis_floor(blocked.retry_after()).max(1);
        ToolResult::Blocked {
            dependency: dependency.to_owned(),
            reason: blocked.reason(),
            retry_after_ms,
            message: message::blocked(dependency, blocked.reason(), retry_after_ms),
            tried: None,
            call: None,
        }
    }

    /// The result of a call to `dependency` that ran and failed, its last attempt classified
    /// `outcome`: a counted failure, or the call's own fault (`Ignored`; any outcome that is not
    /// a counted failure reads as `rejected`). The message differs accordingly.
    ///
    /// The model is told the failure's kind and `http_status`, when known. `error`, when given,
    /// is shown instead as the words for what went wrong: it is shown as given, so it must hold
    /// nothing secret (no URL with a key in it, no header, no argument). The pipeline passes an
    /// error's text only where the guard was told to (`ToolGuard::error_text`).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{FailureKind, Outcome, ToolResult, agent::FailedKind};
    ///
    /// let failed = ToolResult::<()>::failed("search", Outcome::Failure(FailureKind::Unavailable), Some(503), None);
    /// let ToolResult::Failed { kind, error, counted, message, .. } = &failed else { unreachable!() };
    /// assert_eq!((*kind, error.as_str(), *counted), (FailedKind::Unavailable, "unavailable (HTTP 503)", true));
    /// assert!(message.starts_with("search failed: unavailable (HTTP 503). Do not call it again now"));
    /// ```
    #[cold]
    pub fn failed(
        dependency: impl Into<String>,
        outcome: Outcome,
        http_status: Option<u16>,
        error: Option<String>,
    ) -> Self {
        let dependency = dependency.into();
        let kind = FailedKind::of(&outcome);
        let counted = kind.is_counted();
        let error = error.unwrap_or_else(|| message::error(kind, http_status));
        let retry_after_ms = outcome.retry_after().map(|wait| millis_floor(wait).max(1));
        let message = message::failed(&dependency, &error, counted, retry_after_ms, http_status);
        ToolResult::Failed {
            dependency,
            kind,
            http_status,
            retry_after_ms,
            error,
            counted,
            message,
            call: None,
        }
    }

    /// The same result with an answer's value turned into another by `f`: the way from what a
    /// call returns to what the model should read (a response to its body, a record to the
    /// fields the model needs). A `blocked`, `failed` or `stopped` result is kept as it is, its
    /// dependency, reason, HTTP status, retry-after, message and stats included; only `ok`
    /// results run `f`.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{FailureKind, Outcome, ToolResult};
    ///
    /// let ok = ToolResult::ok(vec!["a", "b"]).map(|hits| hits.len());
    /// assert!(matches!(ok, ToolResult::Ok { value: 2, .. }));
    ///
    /// let limited = Outcome::Failure(FailureKind::RateLimited { retry_after: Some(std::time::Duration::from_secs(7)) });
    /// let failed = ToolResult::<Vec<&str>>::failed("search", limited, Some(429), None);
    /// let mapped = failed.clone().map(|hits| hits.len());
    /// assert_eq!(mapped.to_json()?, failed.to_json()?);
    /// assert!(mapped.to_json()?.contains(r#""http_status":429,"retry_after_ms":7000"#));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ToolResult<U> {
        match self {
            ToolResult::Ok { value, call } => ToolResult::Ok {
                value: f(value),
                call,
            },
            ToolResult::Blocked {
                dependency,
                reason,
                retry_after_ms,
                message,
                tried,
                call,
            } => ToolResult::Blocked {
                dependency,
                reason,
                retry_after_ms,
                message,
                tried,
                call,
            },
            ToolResult::Failed {
                dependency,
                kind,
                http_status,
                retry_after_ms,
                error,
                counted,
                message,
                call,
            } => ToolResult::Failed {
                dependency,
                kind,
                http_status,
                retry_after_ms,
                error,
                counted,
                message,
                call,
            },
            ToolResult::Stopped {
                run_id,
                stop_reason,
                message,
                tried,
                call,
            } => ToolResult::Stopped {
                run_id,
                stop_reason,
                message,
                tried,
                call,
            },
        }
    }

    /// The result of a call on a run that may make no more tool calls.
    #[cold]
    pub fn stopped(run_id: impl Into<String>, stop_reason: StopReason) -> Self {
        ToolResult::Stopped {
            run_id: run_id.into(),
            stop_reason,
            message: message::stopped(stop_reason),
            tried: None,
            call: None,
        }
    }

    /// The result of a call on run `run_id` whose retry `dependency`'s retry budget refused:
    /// `stopped` (`retry_budget`), the run itself going on.
    #[cfg(feature = "tokio")]
    #[cold]
    pub(super) fn retry_refused(run_id: &str, dependency: &str) -> Self {
        ToolResult::Stopped {
            run_id: run_id.to_owned(),
            stop_reason: StopReason::RetryBudget,
            message: message::retry_refused(dependency),
            tried: None,
            call: None,
        }
    }

    /// The same `blocked` or `stopped` result, ending a call after `tried`, when attempts of the
    /// call failed before the stop: the failures go into the result, and a sentence saying what
    /// they were ends its message. Any other result, or `None`, is kept as it is.
    #[cfg(feature = "tokio")]
    #[cold]
    pub(super) fn after_failures(mut self, failed: Option<FailedAttempts>) -> Self {
        let Some(failed) = failed else {
            return self;
        };
        match &mut self {
            ToolResult::Blocked { message, tried, .. }
            | ToolResult::Stopped { message, tried, .. } => {
                message.push(' ');
                message.push_str(&message::tried(&failed));
                *tried = Some(failed);
            }
            ToolResult::Ok { .. } | ToolResult::Failed { .. } => {}
        }
        self
    }

    /// The failed attempts a `blocked` or `stopped` result followed, when it came through the guard
    /// pipeline after attempts of its call failed; `None` for a call stopped before any attempt
    /// ended, and for every other result.
    pub fn failed_attempts(&self) -> Option<FailedAttempts> {
        match self {
            ToolResult::Blocked { tried, .. } | ToolResult::Stopped { tried, .. } => *tried,
            ToolResult::Ok { .. } | ToolResult::Failed { .. } => None,
        }
    }

    /// The same result with the pipeline's attempts and time spent.
    pub fn with_stats(mut self, stats: CallStats) -> Self {
        match &mut self {
            ToolResult::Ok { call, .. }
            | ToolResult::Blocked { call, .. }
            | ToolResult::Failed { call, .. }
            | ToolResult::Stopped { call, .. } => *call = Some(stats),
        }
        self
    }

    /// The pipeline's attempts and time spent, if the result came through it.
    pub fn stats(&self) -> Option<CallStats> {
        match self {
            ToolResult::Ok { call, .. }
            | ToolResult::Blocked { call, .. }
            | ToolResult::Failed { call, .. }
            | ToolResult::Stopped { call, .. } => *call,
        }
    }

    /// Whether the tool returned a value: `Ok`, not `Blocked`, `Failed` (a failed call ran too)
    /// or `Stopped`.
    pub fn is_ok(&self) -> bool {
        matches!(self, ToolResult::Ok { .. })
    }
}

#[cfg(feature = "serde")]
impl<T: Serialize> ToolResult<T> {
    /// The JSON the model receives.
    ///
    /// # Errors
    ///
    /// Whatever `serde_json` reports for a `T` it cannot serialise (a map with non-string keys,
    /// a `Serialize` impl that fails).
    pub fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }
}
