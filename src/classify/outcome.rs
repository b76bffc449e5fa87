//! What a call's result says about its dependency: [`Outcome`], [`FailureKind`], and
//! [`Classified`], an outcome with the HTTP status the result carries.

use core::time::Duration;

/// How one call went, as far as the dependency's health is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The dependency answered well. Clears the consecutive-failure count; closes a half-open breaker.
    Success,
    /// The dependency is unhealthy. Counts toward the threshold; reopens a half-open breaker.
    Failure(FailureKind),
    /// The call failed, but not because of the dependency. Counts nothing, clears nothing; a probe
    /// reporting it gives back its slot.
    Ignored,
}

impl Outcome {
    /// The dependency's hint of how long to wait before calling again, if it gave one
    /// (`Retry-After` on a 429).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{FailureKind, Outcome};
    ///
    /// let limited = Outcome::Failure(FailureKind::RateLimited { retry_after: Some(Duration::from_secs(2)) });
    /// assert_eq!(limited.retry_after(), Some(Duration::from_secs(2)));
    /// assert_eq!(Outcome::Success.retry_after(), None);
    /// ```
    pub const fn retry_after(&self) -> Option<Duration> {
        match self {
            Outcome::Failure(FailureKind::RateLimited { retry_after }) => *retry_after,
            _ => None,
        }
    }

    /// Whether this outcome counts toward tripping the breaker.
    pub const fn is_counted_failure(&self) -> bool {
        matches!(self, Outcome::Failure(_))
    }
}

/// Why a counted failure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The call, or the dependency behind a gateway, ran out of time (HTTP 408, 504; a client timeout).
    Timeout,
    /// No connection could be made.
    Connect,
    /// The dependency is shedding load (HTTP 429), with its `Retry-After` hint when it sent one.
    RateLimited {
        /// How long the dependency asked callers to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The dependency reported itself unavailable or broken (HTTP 5xx).
    Unavailable,
    /// Any other failure that says the dependency is unhealthy (a malformed response, say).
    Other,
}

impl FailureKind {
    /// The kind's name as used in logs and JSON: `timeout`, `connect`, `rate_limited`,
    /// `unavailable`, `other`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(toolbreaker::FailureKind::Unavailable.as_str(), "unavailable");
    /// ```
    pub const fn as_str(&self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::Connect => "connect",
            FailureKind::RateLimited { .. } => "rate_limited",
            FailureKind::Unavailable => "unavailable",
            FailureKind::Other => "other",
        }
    }
}

/// One result's classification: its [`Outcome`] and, when the result carries one, its HTTP
/// status (for what the model is told of a failure).
///
/// What the function [`with`](super::with) makes returns. A closure that returns an
/// [`Outcome`] gives one with no status (`From<Outcome>`); every guarded call takes either.
///
/// # Examples
///
/// ```
/// use toolbreaker::{Classified, FailureKind, Outcome};
///
/// let failed = Classified::new(Outcome::Failure(FailureKind::Unavailable), Some(503));
/// assert_eq!((failed.outcome(), failed.http_status()), (Outcome::Failure(FailureKind::Unavailable), Some(503)));
/// assert_eq!(Classified::from(Outcome::Success).http_status(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Classified {
    outcome: Outcome,
    http_status: Option<u16>,
}

impl Classified {
    /// `outcome`, with the HTTP status the result carries, if any.
    pub const fn new(outcome: Outcome, http_status: Option<u16>) -> Self {
        Classified {
            outcome,
            http_status,
        }
    }

    /// The outcome the breaker records.
    pub const fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The HTTP status the result carries, if it has one.
    pub const fn http_status(&self) -> Option<u16> {
        self.http_status
    }
}

impl From<Outcome> for Classified {
    #[inline(always)]
    fn from(outcome: Outcome) -> Self {
        Classified::new(outcome, None)
    }
}
