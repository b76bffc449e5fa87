//! Classification of `reqwest` results and transport errors (feature `reqwest`), by the tables
//! in the `http` module's docs.

use super::http::{HttpClassifier, classify_status, with_hint};
use crate::classify::{Classify, FailureKind, Outcome};

/// The outcome of a `reqwest` call by the tables in the module docs.
///
/// # Examples
///
/// ```
/// use toolbreaker::{Outcome, classify::reqwest::classify_reqwest};
///
/// // A URL that cannot be parsed is the caller's fault, not the dependency's.
/// let client = reqwest::Client::new();
/// let built = client.get("not a url").build().map(|_| unreachable!());
/// assert_eq!(classify_reqwest(&built), Outcome::Ignored);
/// ```
pub fn classify_reqwest(result: &Result<reqwest::Response, reqwest::Error>) -> Outcome {
    HttpClassifier::default().reqwest(result)
}

/// The outcome of a transport error alone.
pub fn classify_reqwest_error(error: &reqwest::Error) -> Outcome {
    if error.is_timeout() {
        Outcome::Failure(FailureKind::Timeout)
    } else if error.is_connect() {
        Outcome::Failure(FailureKind::Connect)
    } else if error.is_builder() {
        Outcome::Ignored
    } else if let Some(status) = error.status() {
        classify_status(status)
    } else {
        Outcome::Failure(FailureKind::Other)
    }
}

impl HttpClassifier {
    /// The outcome of a `reqwest` call: the response by status (overrides first), or the
    /// transport error.
    pub fn reqwest(&self, result: &Result<reqwest::Response, reqwest::Error>) -> Outcome {
        match result {
            Ok(response) => with_hint(
                self.classify_status(response.status()),
                response.headers(),
                crate::time::wall_now(),
            ),
            Err(error) => classify_reqwest_error(error),
        }
    }
}

impl Classify<reqwest::Response, reqwest::Error> for HttpClassifier {
    fn classify(&self, result: &Result<reqwest::Response, reqwest::Error>) -> Outcome {
        self.reqwest(result)
    }

    /// A response's status, or the status of an error made from one (`error_for_status`).
    fn http_status(&self, result: &Result<reqwest::Response, reqwest::Error>) -> Option<u16> {
        match result {
            Ok(response) => Some(response.status().as_u16()),
            Err(error) => error.status().map(|status| status.as_u16()),
        }
    }
}
