//! [`RetryPolicy`]: the pipeline's bounded retry.

use core::time::Duration;

use backon::BackoffBuilder;

use super::result::ToolResult;
use crate::classify::{FailureKind, Outcome};
use crate::time::millis_floor;

/// The bounded retry of the pipeline: capped exponential backoff with jitter (`backon`), only
/// for counted failures of a retryable kind.
///
/// A retry waits at least the dependency's hint (a 429's `Retry-After` and the rate-limit
/// headers, cut to the breaker's [`max_hinted_open`](crate::breaker::Builder::max_hinted_open)),
/// except a pool's retry that goes to another member (`ToolGuard::call_pool`); a wait that would
/// end past the run's deadline is not waited: the call ends `failed`.
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

    /// Whether attempt `number` (1 for the first) is the last this policy allows.
    pub(super) fn is_last(&self, number: u32) -> bool {
        number > self.max_retries
    }

    pub(super) fn backoff(&self) -> backon::ExponentialBackoff {
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
pub(super) fn retryable(kind: &FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::Timeout
            | FailureKind::Connect
            | FailureKind::Unavailable
            | FailureKind::RateLimited { .. }
    )
}

/// `outcome` with its hint cut to the breaker's cap on hinted open times (`max_hinted_open`; a
/// cap of zero, hints off, leaves it): what the retry waits and the model is told, so neither
/// outlasts what the breaker itself keeps open for.
pub(super) fn capped_hint(outcome: Outcome, config: &crate::config::Config) -> Outcome {
    let cap = config.max_hinted_open();
    match outcome {
        Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(hint),
        }) if !cap.is_zero() && hint > cap => Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(cap),
        }),
        other => other,
    }
}

/// An attempt that ran out of its `limit`, as the model is told it.
#[cold]
#[inline(never)]
pub(super) fn timed_out<T>(dependency: &str, outcome: Outcome, limit: Duration) -> ToolResult<T> {
    let text = format!("timed out after {} ms", millis_floor(limit));
    ToolResult::failed(dependency, outcome, None, Some(text))
}
