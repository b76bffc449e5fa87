//! Outcomes, failure kinds, and the classification of a call's result.
//!
//! Only failures that say the dependency is unhealthy count toward tripping a breaker. A call that
//! failed because of the caller (bad arguments, auth, not found) is [`Outcome::Ignored`]: it neither
//! counts nor clears the run of failures.

use core::time::Duration;

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "reqwest")]
pub mod reqwest;

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

/// A dependency's classification: from a call's result to an [`Outcome`].
///
/// Every guarded call takes one: [`CircuitBreaker::call`](crate::CircuitBreaker::call),
/// [`run`](crate::CircuitBreaker::run), `run_with_timeout`, the pipeline's `ToolGuard::call`
/// (feature `tokio`) and the tower layer. A type is passed as it is (`breaker.call(op,
/// SearchErrors)`, or `toolbreaker::classify::http::HttpClassifier` with feature `http`); write
/// one when the rule has settings or is shared between dependencies.
///
/// # Closures
///
/// Every `Fn(&Result<T, E>) -> Outcome` is a classification too, through a blanket impl. A
/// closure written in place must name its argument as a reference, `|r: &_|` (its type is still
/// inferred from the call), or be a named function: the compiler infers a closure's argument
/// types from `Fn` bounds only, and this bound is `Classify`, which a type such as
/// `HttpClassifier` can implement where it cannot implement `Fn`. A bare `|r|` does not compile
/// here (the compiler takes `r` by value); a closure bound to a variable with its argument typed,
/// `let classify = |r: &Result<String, u16>| ...`, works anywhere.
///
/// # What the model is told
///
/// [`http_status`](Self::http_status) gives the HTTP status a result carries, when there is one.
/// The pipeline's `failed` result shows it to the model beside the failure kind; it never shows an
/// error's own text unless the guard was told to (`ToolGuard::error_text`). The default is no
/// status.
///
/// # Examples
///
/// A search API whose client returns a status code, where 404 means the index is missing (the
/// dependency is broken) rather than the query being bad:
///
/// ```
/// use toolbreaker::{CallError, CircuitBreaker, Classify, FailureKind, Outcome};
///
/// struct SearchErrors;
///
/// impl Classify<String, u16> for SearchErrors {
///     fn classify(&self, result: &Result<String, u16>) -> Outcome {
///         match result {
///             Ok(_) => Outcome::Success,
///             Err(404) | Err(500..=599) => Outcome::Failure(FailureKind::Unavailable),
///             Err(429) => Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
///             Err(_) => Outcome::Ignored,
///         }
///     }
///
///     fn http_status(&self, result: &Result<String, u16>) -> Option<u16> {
///         result.as_ref().err().copied()
///     }
/// }
///
/// assert_eq!(SearchErrors.classify(&Ok("hit".into())), Outcome::Success);
/// assert_eq!(SearchErrors.classify(&Err(404)), Outcome::Failure(FailureKind::Unavailable));
/// assert_eq!(SearchErrors.classify(&Err(400)), Outcome::Ignored);
///
/// // The type is passed as it is.
/// let breaker = CircuitBreaker::builder().failure_threshold(1).build()?;
/// let answer = breaker.call(|| Err::<String, u16>(400), SearchErrors);
/// assert!(matches!(answer, Err(CallError::Inner(400))));
/// assert!(breaker.call(|| Err::<String, u16>(503), SearchErrors).is_err());
/// assert!(matches!(breaker.call(|| Ok("hit".to_string()), SearchErrors), Err(CallError::Blocked(_))));
///
/// // A closure in place names its argument as a reference; its type is inferred.
/// let breaker = CircuitBreaker::builder().build()?;
/// let answer = breaker.call(|| Ok::<_, u16>(1), |r: &_| match r {
///     Ok(_) => Outcome::Success,
///     Err(503) => Outcome::Failure(FailureKind::Unavailable),
///     Err(_) => Outcome::Ignored,
/// });
/// assert_eq!(answer, Ok(1));
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
pub trait Classify<T, E> {
    /// The outcome of one call's result.
    fn classify(&self, result: &Result<T, E>) -> Outcome;

    /// The HTTP status `result` carries, if it has one (a response's status, or the status of an
    /// error made from a response). Only what the model is told uses it: a `failed` result shows
    /// the status beside the failure kind. `None` by default, and for closures.
    fn http_status(&self, result: &Result<T, E>) -> Option<u16> {
        let _ = result;
        None
    }
}

impl<T, E, F> Classify<T, E> for F
where
    F: Fn(&Result<T, E>) -> Outcome,
{
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        self(result)
    }
}
