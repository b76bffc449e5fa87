//! Classification of HTTP responses (feature `http`) and `reqwest` results (feature `reqwest`).
//!
//! | response | outcome |
//! |---|---|
//! | 1xx, 2xx, 3xx | [`Outcome::Success`] for 2xx and 3xx; [`Outcome::Ignored`] for 1xx (not a final answer, and not a sign of ill health) |
//! | 408 Request Timeout, 504 Gateway Timeout | [`FailureKind::Timeout`] |
//! | 429 Too Many Requests | [`FailureKind::RateLimited`], carrying the longest wait its headers ask for ([`retry_after`]: `Retry-After`, `retry-after-ms`, `x-ratelimit-reset-requests` and `-tokens`, `RateLimit` and `RateLimit-Reset`) |
//! | 500, 502, 503 and every other 5xx | [`FailureKind::Unavailable`] (which carries no wait: a 503's `Retry-After` is not read; an override to `RateLimited` reads it) |
//! | 400, 401, 403, 404, 409, 422 and every other 4xx | [`Outcome::Ignored`]: the request was at fault, not the dependency |
//!
//! | transport error (`reqwest`) | outcome |
//! |---|---|
//! | timed out | [`FailureKind::Timeout`] |
//! | could not connect | [`FailureKind::Connect`] |
//! | the request could not be built (bad URL, bad header) | [`Outcome::Ignored`] |
//! | anything else (a broken body, a redirect loop, a decode error) | [`FailureKind::Other`] |
//!
//! A dependency whose codes mean something else overrides single statuses with
//! [`HttpClassifier::status`].

use core::time::Duration;
use std::time::SystemTime;

use http::{HeaderMap, Response, StatusCode};

#[cfg(feature = "mcp")]
pub(crate) use super::hints::parse_retry_after;

use crate::classify::{Classify, FailureKind, Outcome};

/// The outcome of a status code by the table above; a 429 carries no hint (see
/// [`classify_response`] for one that reads the response's rate-limit headers).
///
/// # Examples
///
/// ```
/// use http::StatusCode;
/// use toolbreaker::{FailureKind, Outcome, classify::http::classify_status};
///
/// assert_eq!(classify_status(StatusCode::SERVICE_UNAVAILABLE), Outcome::Failure(FailureKind::Unavailable));
/// assert_eq!(classify_status(StatusCode::BAD_REQUEST), Outcome::Ignored);
/// ```
pub fn classify_status(status: StatusCode) -> Outcome {
    match status.as_u16() {
        200..=399 => Outcome::Success,
        408 | 504 => Outcome::Failure(FailureKind::Timeout),
        429 => Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
        500..=599 => Outcome::Failure(FailureKind::Unavailable),
        // 1xx, every other 4xx, and codes outside the registered classes (600-999), which no
        // healthy-or-not reading can be taken from.
        _ => Outcome::Ignored,
    }
}

/// The outcome of a response by the table above, with a 429's rate-limit hint ([`retry_after`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{FailureKind, Outcome, classify::http::classify_response};
///
/// let response = http::Response::builder().status(429).header("retry-after", "2").body(()).unwrap();
/// assert_eq!(
///     classify_response(&response),
///     Outcome::Failure(FailureKind::RateLimited { retry_after: Some(Duration::from_secs(2)) })
/// );
/// ```
pub fn classify_response<B>(response: &Response<B>) -> Outcome {
    with_hint(
        classify_status(response.status()),
        response.headers(),
        crate::time::wall_now(),
    )
}

/// A `RateLimited` outcome with the response's rate-limit hint ([`retry_after`]): its wait when the
/// response has a valid one (the server's word is newer than any configured default), else the
/// outcome's own (`None` from the table, or an override's).
pub(super) fn with_hint(outcome: Outcome, headers: &HeaderMap, now: SystemTime) -> Outcome {
    match outcome {
        Outcome::Failure(FailureKind::RateLimited { retry_after: own }) => {
            Outcome::Failure(FailureKind::RateLimited {
                retry_after: retry_after(headers, now).or(own),
            })
        }
        other => other,
    }
}

/// The longest wait from `now` that the headers ask for before the next request, or `None` if
/// none says one it can be read from.
///
/// Read: `Retry-After` (delay-seconds, or an HTTP-date: RFC 9110, section 10.2.3; a date in the
/// past is a wait of zero), `retry-after-ms` (milliseconds, a fraction rounded up),
/// `x-ratelimit-reset-requests` and `x-ratelimit-reset-tokens` (a duration as Go writes one:
/// `1s`, `6m0s`, `20ms`), `RateLimit-Reset` (seconds) and `RateLimit` (its `t` parameter or its
/// `reset` member, in seconds: the IETF draft `draft-ietf-httpapi-ratelimit-headers`). The
/// longest wait wins: a server that sends several means the latest of its resets. A value that
/// cannot be read is left out and counted ([`ignored_hints`]).
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use http::HeaderMap;
/// use toolbreaker::classify::http::retry_after;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", "120".parse().unwrap());
/// assert_eq!(retry_after(&headers, SystemTime::now()), Some(Duration::from_secs(120)));
///
/// headers.insert("retry-after", "Thu, 01 Jan 1970 00:01:00 GMT".parse().unwrap());
/// assert_eq!(retry_after(&headers, UNIX_EPOCH), Some(Duration::from_secs(60)));
///
/// // OpenAI's reset headers, beside a shorter `Retry-After`: the longest wait.
/// headers.insert("x-ratelimit-reset-tokens", "6m0s".parse().unwrap());
/// headers.insert("retry-after-ms", "1500".parse().unwrap());
/// assert_eq!(retry_after(&headers, UNIX_EPOCH), Some(Duration::from_secs(360)));
///
/// let mut unreadable = HeaderMap::new();
/// unreadable.insert("retry-after", "soon".parse().unwrap());
/// let before = toolbreaker::classify::http::ignored_hints();
/// assert_eq!(retry_after(&unreadable, SystemTime::now()), None);
/// assert!(toolbreaker::classify::http::ignored_hints() > before, "counted");
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    super::hints::longest(headers, now)
}

/// How many rate-limit hints ([`retry_after`]'s headers) could not be read and were left out,
/// since the process started: a count for a dashboard or a test, never an error (the response
/// was classified all the same).
pub fn ignored_hints() -> u64 {
    super::hints::ignored()
}

/// HTTP classification with per-status overrides for one dependency.
///
/// # Examples
///
/// A dependency whose 404 means its index is missing, not that the query was bad:
///
/// ```
/// use http::StatusCode;
/// use toolbreaker::{FailureKind, Outcome, classify::http::HttpClassifier};
///
/// let classify = HttpClassifier::new().status(StatusCode::NOT_FOUND, Outcome::Failure(FailureKind::Unavailable));
/// let not_found = http::Response::builder().status(404).body(()).unwrap();
/// assert_eq!(classify.response(&not_found), Outcome::Failure(FailureKind::Unavailable));
/// let bad_request = http::Response::builder().status(400).body(()).unwrap();
/// assert_eq!(classify.response(&bad_request), Outcome::Ignored);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpClassifier {
    overrides: Vec<(StatusCode, Outcome)>,
}

impl HttpClassifier {
    /// The table in the module docs, with no overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Classify `status` as `outcome` instead of by the table. A later override of the same
    /// status replaces an earlier one.
    ///
    /// A `RateLimited` override's `retry_after` is a default: a response with a valid
    /// `Retry-After` header gets the header's wait instead (the server's word is the newer), and
    /// one without (or with a malformed one) keeps the override's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use http::StatusCode;
    /// use toolbreaker::{FailureKind, Outcome, classify::http::HttpClassifier};
    ///
    /// let two_seconds = Outcome::Failure(FailureKind::RateLimited { retry_after: Some(Duration::from_secs(2)) });
    /// let classify = HttpClassifier::new().status(StatusCode::TOO_MANY_REQUESTS, two_seconds);
    /// let bare = http::Response::builder().status(429).body(()).unwrap();
    /// assert_eq!(classify.response(&bare).retry_after(), Some(Duration::from_secs(2)));
    /// let told = http::Response::builder().status(429).header("retry-after", "7").body(()).unwrap();
    /// assert_eq!(classify.response(&told).retry_after(), Some(Duration::from_secs(7)));
    /// ```
    pub fn status(mut self, status: StatusCode, outcome: Outcome) -> Self {
        self.overrides.retain(|(s, _)| *s != status);
        self.overrides.push((status, outcome));
        self
    }

    /// The outcome of a status, overrides first.
    pub fn classify_status(&self, status: StatusCode) -> Outcome {
        self.overrides
            .iter()
            .find(|(s, _)| *s == status)
            .map_or_else(|| classify_status(status), |(_, outcome)| *outcome)
    }

    /// The outcome of a response, overrides first, with a 429's rate-limit hint ([`retry_after`]).
    pub fn response<B>(&self, response: &Response<B>) -> Outcome {
        with_hint(
            self.classify_status(response.status()),
            response.headers(),
            crate::time::wall_now(),
        )
    }
}

impl<B, E> Classify<Response<B>, E> for HttpClassifier {
    /// A response by status; an error from a generic HTTP service is a failure of kind `Other`,
    /// since nothing more is known about it.
    fn classify(&self, result: &Result<Response<B>, E>) -> Outcome {
        match result {
            Ok(response) => self.response(response),
            Err(_) => Outcome::Failure(FailureKind::Other),
        }
    }

    /// A response's status; nothing for an error.
    fn http_status(&self, result: &Result<Response<B>, E>) -> Option<u16> {
        result
            .as_ref()
            .ok()
            .map(|response| response.status().as_u16())
    }
}
