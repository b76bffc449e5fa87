//! What the model sees: the result of a tool call, serialised (feature `serde`).

use serde::{Deserialize, Serialize};

use crate::blocked::Blocked;
use crate::state::BlockedReason;

/// The result of one tool call as the agent runtime hands it to the model.
///
/// Serialised with a `status` tag. A `blocked` result says the tool is unavailable, for how long,
/// and what the model may do instead; it never invites an immediate retry, and never reads like a
/// problem with the model's arguments.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, ToolResult};
///
/// let (clock, _mock) = toolbreaker::quanta::Clock::mock();
/// let search = CircuitBreaker::builder()
///     .failure_threshold(1)
///     .cooldown(Duration::from_millis(1840))
///     .clock(clock)
///     .build()?;
/// search.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
///
/// let blocked = search.try_acquire().unwrap_err();
/// let json = ToolResult::<()>::blocked("search", &blocked).to_json().unwrap();
/// assert_eq!(
///     json,
///     r#"{"status":"blocked","dependency":"search","reason":"dependency_open","retry_after_ms":1840,"message":"search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 1.8 s."}"#
/// );
///
/// let ok = ToolResult::ok(serde_json::json!({"hits": 3}));
/// assert_eq!(ok.to_json().unwrap(), r#"{"status":"ok","value":{"hits":3}}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolResult<T> {
    /// The tool ran and returned `value`.
    Ok {
        /// The tool's answer.
        value: T,
    },
    /// The dependency's breaker did not admit the call; nothing was sent.
    Blocked {
        /// The dependency whose breaker blocked the call.
        dependency: String,
        /// `dependency_open` or `probe_in_flight`.
        reason: BlockedReason,
        /// Milliseconds until the dependency may be called again; never zero.
        retry_after_ms: u64,
        /// The same, in words written for the model.
        message: String,
    },
}

impl<T> ToolResult<T> {
    /// A successful result.
    pub fn ok(value: T) -> Self {
        ToolResult::Ok { value }
    }

    /// The result of a call `dependency`'s breaker blocked.
    ///
    /// The message tells the model not to call the tool again now, to answer with what it knows
    /// or use another tool, and when the tool may be tried (retry-after in seconds, to a tenth,
    /// never shown as less than 0.1 s).
    pub fn blocked(dependency: impl Into<String>, blocked: &Blocked) -> Self {
        let dependency = dependency.into();
        let retry_after_ms = u64::try_from(blocked.retry_after().as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let what = match blocked.reason() {
            BlockedReason::DependencyOpen => "is temporarily unavailable",
            BlockedReason::ProbeInFlight => "is being checked for recovery",
        };
        // Tenths of a second, rounded to nearest but never to zero: "try after 0.0 s" would read
        // as "now".
        let tenths = retry_after_ms.saturating_add(50) / 100;
        let tenths = tenths.max(1);
        let message = format!(
            "{dependency} {what}; do not call it again now. Answer with what you know, \
             use another tool, or try after {}.{} s.",
            tenths / 10,
            tenths % 10
        );
        ToolResult::Blocked {
            dependency,
            reason: blocked.reason(),
            retry_after_ms,
            message,
        }
    }

    /// Whether the tool ran.
    pub fn is_ok(&self) -> bool {
        matches!(self, ToolResult::Ok { .. })
    }
}

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
