//! The values a [`ToolResult`](super::ToolResult)'s fields hold: how a call failed, why a run
//! stopped, how the call went, and the failed attempts a stop followed.

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::classify::{FailureKind, Outcome};

/// How a call that ran failed, as a [`ToolResult::Failed`](super::ToolResult::Failed) tells the
/// model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum FailedKind {
    /// The attempt ran out of time ([`FailureKind::Timeout`]).
    Timeout,
    /// No connection could be made ([`FailureKind::Connect`]).
    Connect,
    /// The dependency is shedding load ([`FailureKind::RateLimited`]).
    RateLimited,
    /// The dependency reported itself unavailable or broken ([`FailureKind::Unavailable`]).
    Unavailable,
    /// Any other counted failure ([`FailureKind::Other`]).
    Other,
    /// The dependency refused the call as the call's own fault (bad arguments, auth, not found):
    /// not counted against its health ([`Outcome::Ignored`]).
    Rejected,
}

impl FailedKind {
    /// The kind of a failed call whose last attempt was classified `outcome`: a counted failure's
    /// kind, or [`Rejected`](Self::Rejected) for any outcome that did not count.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{FailureKind, Outcome, agent::FailedKind};
    ///
    /// assert_eq!(FailedKind::of(&Outcome::Failure(FailureKind::Connect)), FailedKind::Connect);
    /// assert_eq!(FailedKind::of(&Outcome::Ignored), FailedKind::Rejected);
    /// ```
    pub const fn of(outcome: &Outcome) -> Self {
        match outcome {
            Outcome::Failure(FailureKind::Timeout) => FailedKind::Timeout,
            Outcome::Failure(FailureKind::Connect) => FailedKind::Connect,
            Outcome::Failure(FailureKind::RateLimited { .. }) => FailedKind::RateLimited,
            Outcome::Failure(FailureKind::Unavailable) => FailedKind::Unavailable,
            Outcome::Failure(FailureKind::Other) => FailedKind::Other,
            Outcome::Success | Outcome::Ignored => FailedKind::Rejected,
        }
    }

    /// The kind as used in JSON: `timeout`, `connect`, `rate_limited`, `unavailable`, `other`,
    /// `rejected`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailedKind::Timeout => "timeout",
            FailedKind::Connect => "connect",
            FailedKind::RateLimited => "rate_limited",
            FailedKind::Unavailable => "unavailable",
            FailedKind::Other => "other",
            FailedKind::Rejected => "rejected",
        }
    }

    /// Whether the failure counts against the dependency's health (every kind but `rejected`).
    pub const fn is_counted(self) -> bool {
        !matches!(self, FailedKind::Rejected)
    }
}

/// How one call through the guard pipeline went: attempts made and time spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct CallStats {
    /// Attempts that reached the dependency (0 when the call never started).
    pub attempts: u32,
    /// Wall time the call took, in milliseconds, waits between attempts included.
    pub elapsed_ms: u64,
}

/// The attempts of one call that failed before the call ended
/// [`Blocked`](super::ToolResult::Blocked) or [`Stopped`](super::ToolResult::Stopped): how many,
/// and how the last of them failed.
///
/// The guard pipeline retries only after a counted failure, so a call that the breaker or the run
/// stops after it started had every attempt before the stop fail; the model is told so, in the
/// JSON (`failed_attempts`, `last_failure` and, when known, `last_http_status`, beside the
/// result's other fields) and in a last sentence of the message. A call stopped before its first
/// attempt ended carries none, and its JSON has none of these fields.
///
/// ```json
/// {"status":"blocked","dependency":"search","reason":"dependency_open","retry_after_ms":30000,
///  "message":"search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 30.0 s. This call failed twice before that; the last failure: unavailable (HTTP 503).",
///  "failed_attempts":2,"last_failure":"unavailable","last_http_status":503,"attempts":2,"elapsed_ms":100}
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[non_exhaustive]
pub struct FailedAttempts {
    /// How many attempts of the call failed; never zero. An attempt the run's deadline cut short
    /// is not one of them (it says nothing about the dependency).
    #[cfg_attr(feature = "serde", serde(rename = "failed_attempts"))]
    pub count: u32,
    /// How the last of them failed: always a counted failure's kind (the pipeline retries no
    /// other).
    #[cfg_attr(feature = "serde", serde(rename = "last_failure"))]
    pub last: FailedKind,
    /// The HTTP status of the last one's answer, when it had one and it was known
    /// ([`Classify::http_status`](crate::Classify::http_status)).
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "last_http_status",
            default,
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub last_http_status: Option<u16>,
}

impl FailedAttempts {
    /// One more failed attempt, classified `outcome` with `http_status`, after `earlier` ones.
    #[cfg(feature = "tokio")]
    pub(super) fn after(
        earlier: Option<FailedAttempts>,
        outcome: &Outcome,
        http_status: Option<u16>,
    ) -> Self {
        FailedAttempts {
            count: earlier.map_or(0, |earlier| earlier.count).saturating_add(1),
            last: FailedKind::of(outcome),
            last_http_status: http_status,
        }
    }
}

/// Why an agent run may make no more tool calls, or (only [`RetryBudget`](Self::RetryBudget))
/// why one call stopped retrying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum StopReason {
    /// The run's deadline has passed.
    Deadline,
    /// The run has made as many tool calls as its budget allows.
    ToolCallBudget,
    /// The run's token allowance is spent.
    TokenBudget,
    /// Not the run but this call stopped: a retry after a failed attempt was refused by the
    /// dependency's retry budget ([`RetryBudget`](crate::breaker::RetryBudget)), because retries
    /// to it have reached their share of its first attempts. The run goes on; other calls, and
    /// later calls to this tool, are made as usual.
    RetryBudget,
}

impl StopReason {
    /// The reason as used in logs and JSON: `deadline`, `tool_call_budget`, `token_budget`,
    /// `retry_budget`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(toolbreaker::StopReason::ToolCallBudget.as_str(), "tool_call_budget");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Deadline => "deadline",
            StopReason::ToolCallBudget => "tool_call_budget",
            StopReason::TokenBudget => "token_budget",
            StopReason::RetryBudget => "retry_budget",
        }
    }
}
