//! The words a [`ToolResult`](super::ToolResult) says to the model: its `message`, and a failure's
//! `error` when the caller gave none.
//!
//! Every message says what the model may do next, and none invites an immediate retry or reads
//! like a problem with the model's arguments unless the dependency said it was one.

#[cfg(feature = "tokio")]
use super::fields::FailedAttempts;
use super::fields::{FailedKind, StopReason};
use crate::types::BlockedReason;

/// The message of a call `dependency`'s breaker blocked for `reason`, callable again in
/// `retry_after_ms`.
pub(super) fn blocked(dependency: &str, reason: BlockedReason, retry_after_ms: u64) -> String {
    let what = match reason {
        BlockedReason::PoolExhausted => return pool_exhausted(dependency, retry_after_ms),
        BlockedReason::Saturated => return saturated(dependency),
        BlockedReason::Throttled => return throttled(dependency, retry_after_ms),
        // Until its operators close it: no time the model could wait for.
        BlockedReason::Isolated => return isolated(dependency),
        BlockedReason::DependencyOpen => "is temporarily unavailable",
        BlockedReason::ProbeInFlight => "is being checked for recovery",
    };
    format!(
        "{} {what}; do not call it again now. Answer with what you know, \
         use another tool, or try after {} s.",
        subject(dependency),
        seconds(retry_after_ms)
    )
}

/// The message of a call blocked because `dependency` was isolated by hand: it stays so until
/// its operators close it, so no wait is offered.
fn isolated(dependency: &str) -> String {
    format!(
        "{} is switched off by its operators until they turn it back on; do not call it again. \
         Answer with what you know or use another tool.",
        subject(dependency)
    )
}

/// The message of a call `dependency`'s cap on calls in flight refused: busy, not down.
fn saturated(dependency: &str) -> String {
    format!(
        "{} is busy: it is handling as many calls as it accepts at once, and is not down. Try \
         again shortly, or use another tool.",
        subject(dependency)
    )
}

/// The message of a call no upstream of the pool `pool` admitted, one callable again in
/// `retry_after_ms` (the earliest of its members').
fn pool_exhausted(pool: &str, retry_after_ms: u64) -> String {
    format!(
        "Every upstream of {} is unavailable; do not call it again now. Answer with what you \
         know, use another tool, or try after {} s.",
        if pool.is_empty() { "this tool" } else { pool },
        seconds(retry_after_ms)
    )
}

/// The message of a call adaptive throttling shed: `dependency` is failing more and more of its
/// calls, and this one was not sent, to let it recover.
fn throttled(dependency: &str, retry_after_ms: u64) -> String {
    format!(
        "{} is degrading, so this call was held back here to let it recover; nothing was sent. \
         Answer with what you know, use another tool, or try after {} s.",
        subject(dependency),
        seconds(retry_after_ms)
    )
}

/// What went wrong, in words, for a failure with no words of the caller's: the kind and the
/// status (`unavailable (HTTP 503)`), the status alone for the call's own fault (`HTTP 400`), or
/// the kind alone when no status is known.
pub(super) fn error(kind: FailedKind, http_status: Option<u16>) -> String {
    match (http_status, kind.is_counted()) {
        (Some(status), true) => format!("{} (HTTP {status})", words(kind)),
        (Some(status), false) => format!("HTTP {status}"),
        (None, _) => words(kind).to_owned(),
    }
}

/// The message of a call to `dependency` that failed with `error`: a counted failure (with the
/// dependency's wait, when it asked for one) or the call's own fault, whose advice follows what
/// the HTTP status says was wrong ([`rejected`]).
pub(super) fn failed(
    dependency: &str,
    error: &str,
    counted: bool,
    retry_after_ms: Option<u64>,
    http_status: Option<u16>,
) -> String {
    let subject = subject(dependency);
    match retry_after_ms {
        Some(wait) if counted => format!(
            "{subject} failed: {error}. Do not call it again now; answer with what you \
             know, use another tool, or try after {} s.",
            seconds(wait)
        ),
        _ if counted => format!(
            "{subject} failed: {error}. Do not call it again now; answer with what you \
             know or use another tool."
        ),
        _ => format!(
            "{subject} rejected the call: {error}. {}",
            rejected(http_status)
        ),
    }
}

/// What the model may do about a call the dependency refused as the call's own fault, from the
/// HTTP status when there is one (RFC 9110, section 15.5): a refusal of access (401, 403, 407)
/// is no fault of the arguments, so it does not ask for them to be corrected; a missing
/// resource (404, 410) points at the names and identifiers the call gave; any other client
/// error, or a refusal with no status (a tool's own error text says what was wrong), asks for
/// the arguments to be corrected.
fn rejected(http_status: Option<u16>) -> &'static str {
    match http_status {
        Some(401 | 403 | 407) => {
            "It refused access, which no change to the call will fix: do not call it again \
             for this; tell the user or use another tool."
        }
        Some(404 | 410) => {
            "What the call named was not found: check the names and identifiers in the \
             arguments before calling it again."
        }
        Some(400..=499) | None => "Correct the arguments before calling it again.",
        Some(_) => "Do not repeat the same call unchanged.",
    }
}

/// The message of a call on a run that stopped for `reason`.
pub(super) fn stopped(reason: StopReason) -> String {
    let why = match reason {
        StopReason::Deadline => "has reached its deadline",
        StopReason::ToolCallBudget => "has used its tool-call budget",
        StopReason::TokenBudget => "has used its token budget",
        StopReason::RetryBudget => return retry_refused(""),
    };
    format!("This run {why}; no more tool calls can be made in it. Answer with what you know now.")
}

/// The message of a call whose retry `dependency`'s retry budget refused: the dependency is
/// failing, and retries to it are limited to a share of its calls.
pub(super) fn retry_refused(dependency: &str) -> String {
    format!(
        "{} failed, and a retry was refused by its retry budget: too many calls to it are being \
         retried. Do not call it again now; answer with what you know or use another tool.",
        subject(dependency)
    )
}

/// The sentence a `blocked` or `stopped` message ends with when the call's attempts failed before
/// the stop: how many, and how the last failed ("This call failed twice before that; the last
/// failure: unavailable (HTTP 503).").
#[cfg(feature = "tokio")]
pub(super) fn tried(tried: &FailedAttempts) -> String {
    let last = error(tried.last, tried.last_http_status);
    match tried.count {
        0 | 1 => format!("This call failed once before that: {last}."),
        2 => format!("This call failed twice before that; the last failure: {last}."),
        n => format!("This call failed {n} times before that; the last failure: {last}."),
    }
}

/// A failure's kind in words, for a failure with nothing else to say.
const fn words(kind: FailedKind) -> &'static str {
    match kind {
        FailedKind::Timeout => "timed out",
        FailedKind::Connect => "could not connect",
        FailedKind::RateLimited => "rate limited",
        FailedKind::Unavailable => "unavailable",
        FailedKind::Other => "other failure",
        FailedKind::Rejected => "invalid request",
    }
}

/// A wait in milliseconds as a message shows it: seconds to a tenth, rounded to nearest but
/// never to zero ("try after 0.0 s" would read as "now").
fn seconds(ms: u64) -> String {
    let tenths = (ms.saturating_add(50) / 100).max(1);
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// How a message names the dependency: its name, or "This tool" for an unnamed breaker.
fn subject(dependency: &str) -> &str {
    if dependency.is_empty() {
        "This tool"
    } else {
        dependency
    }
}
