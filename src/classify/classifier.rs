//! The [`Classify`] trait, from a call's result to an [`Outcome`], and [`with`], a classifier as
//! the function a guarded call takes.

use super::outcome::{Classified, Outcome};

/// A dependency's classification: from a call's result to an [`Outcome`].
///
/// # Closures in place, types through `with`
///
/// Every guarded call ([`CircuitBreaker::call`](crate::CircuitBreaker::call),
/// [`run`](crate::CircuitBreaker::run), `run_with_timeout`, and the pipeline's
/// `ToolGuard::call` and `call_observed` with feature `tokio`) takes its classification as a
/// function, `Fn(&Result<T, E>) -> Outcome` (or `-> Classified`). So a closure written in place
/// infers its argument from the call, as the first thing a user of a breaker writes:
/// `breaker.call(op, |_| Outcome::Ignored)`, `breaker.call(op, |r| match r { .. })`. A named
/// function works as it is.
///
/// A type that implements `Classify` (one with settings, or shared between dependencies, such
/// as `classify::http::HttpClassifier` or `mcp::McpClassifier`) is passed through
/// [`classify::with`](with): `breaker.call(op, classify::with(&classifier))`. Its function returns a
/// [`Classified`], the outcome with the type's [`http_status`](Self::http_status), so the
/// pipeline still tells the model a failure's status. (A type cannot itself be a function in
/// stable Rust, and the compiler infers a closure's argument only from an `Fn` bound, which is
/// why the calls take a function rather than `impl Classify`.) The tower layer, made before any
/// call, takes a `Classify` as it is.
///
/// Every `Fn(&Result<T, E>) -> Outcome` is a `Classify` too, through a blanket impl.
///
/// # What the model is told
///
/// [`http_status`](Self::http_status) gives the HTTP status a result carries, when there is one.
/// The pipeline's `failed` result shows it to the model beside the failure kind; it never shows an
/// error's own text unless the guard was told to (`ToolGuard::error_text`). The default is no
/// status, and a closure that returns an `Outcome` gives none.
///
/// # Examples
///
/// A search API whose client returns a status code, where 404 means the index is missing (the
/// dependency is broken) rather than the query being bad:
///
/// ```
/// use toolbreaker::{CallError, CircuitBreaker, Classify, FailureKind, Outcome, classify};
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
/// // The type goes through `classify::with`.
/// let breaker = CircuitBreaker::builder().failure_threshold(1).build()?;
/// let answer = breaker.call(|| Err::<String, u16>(400), classify::with(&SearchErrors));
/// assert!(matches!(answer, Err(CallError::Inner(400))));
/// assert!(breaker.call(|| Err::<String, u16>(503), classify::with(&SearchErrors)).is_err());
/// assert!(matches!(breaker.call(|| Ok("hit".to_string()), classify::with(&SearchErrors)), Err(CallError::Blocked(_))));
///
/// // A closure in place infers its argument's type from the call.
/// let breaker = CircuitBreaker::builder().build()?;
/// let answer = breaker.call(|| Ok::<_, u16>(1), |r| match r {
///     Ok(_) => Outcome::Success,
///     Err(503) => Outcome::Failure(FailureKind::Unavailable),
///     Err(_) => Outcome::Ignored,
/// });
/// assert_eq!(answer, Ok(1));
/// assert_eq!(breaker.call(|| Err::<u8, u16>(400), |_| Outcome::Ignored), Err(CallError::Inner(400)));
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

    /// The outcome and the HTTP status of `result`, in one value: what the function
    /// [`with`] makes returns.
    #[inline]
    fn classified(&self, result: &Result<T, E>) -> Classified {
        Classified::new(self.classify(result), self.http_status(result))
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

/// `classifier` as the function a guarded call takes (see [Closures in place, types through
/// `with`](Classify#closures-in-place-types-through-with)): it borrows the classifier and returns
/// [`Classify::classified`] for each result, the outcome and the HTTP status. The function is
/// `Copy`, so one can be kept and passed to many calls.
///
/// A function rather than a method of [`Classify`], so that a type classifying several result
/// types (`HttpClassifier` classifies both `http` and `reqwest` responses) is picked for the
/// call's result type once the call is known.
///
/// # Examples
///
/// ```
/// use toolbreaker::{CircuitBreaker, Classify, FailureKind, Outcome, classify};
///
/// struct Status;
///
/// impl Classify<u16, ()> for Status {
///     fn classify(&self, result: &Result<u16, ()>) -> Outcome {
///         match result {
///             Ok(500..) | Err(()) => Outcome::Failure(FailureKind::Unavailable),
///             Ok(_) => Outcome::Success,
///         }
///     }
///
///     fn http_status(&self, result: &Result<u16, ()>) -> Option<u16> {
///         result.ok()
///     }
/// }
///
/// let classify = classify::with(&Status);
/// assert_eq!(classify(&Ok(503)).http_status(), Some(503));
/// let breaker = CircuitBreaker::builder().failure_threshold(1).build()?;
/// assert_eq!(breaker.call(|| Ok(200), classify), Ok(200));
/// assert_eq!(breaker.call(|| Ok(503), classify), Ok(503));
/// assert!(breaker.call(|| Ok(200), classify).is_err(), "the 503 tripped it");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[inline]
pub fn with<T, E, C: Classify<T, E>>(
    classifier: &C,
) -> impl Fn(&Result<T, E>) -> Classified + Copy + '_ {
    move |result| classifier.classified(result)
}
