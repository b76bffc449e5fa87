//! Classification of `reqwest` results and transport errors (feature `reqwest`), by the tables
//! in the `http` module's docs, and [`TextResponse`], an answer read to its end for the model.

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

/// An HTTP answer read to its end as text: its status, its headers and its body.
///
/// What an HTTP tool call's attempt returns when the model is to read the body. The attempt
/// reads the body itself ([`read`](Self::read)), so the per-call timeout and the breaker cover
/// it, and [`HttpClassifier`] classifies the result as it would the response: the status table
/// and overrides, a 429's rate-limit hint (so a `failed` result keeps the hint), reqwest's errors
/// (sending or reading the body) by the error table. [`ToolResult::map`](crate::ToolResult::map)
/// with [`into_body`](Self::into_body) then gives the `ToolResult<String>` the model reads.
///
/// # Examples
///
/// ```
/// use toolbreaker::classify::{Classify, http::HttpClassifier, reqwest::TextResponse};
/// use toolbreaker::{FailureKind, Outcome};
///
/// let limited: http::Response<String> =
///     http::Response::builder().status(429).header("retry-after", "7").body("slow down".into()).unwrap();
/// let answer = TextResponse::from(limited);
/// let outcome = HttpClassifier::new().classify(&Ok::<_, reqwest::Error>(answer.clone()));
/// assert_eq!(outcome.retry_after(), Some(std::time::Duration::from_secs(7)));
/// assert!(matches!(outcome, Outcome::Failure(FailureKind::RateLimited { .. })));
/// assert_eq!((answer.status().as_u16(), answer.body()), (429, "slow down"));
/// ```
#[derive(Clone, Debug)]
pub struct TextResponse {
    status: http::StatusCode,
    headers: http::HeaderMap,
    body: String,
}

impl TextResponse {
    /// Read `response`'s body to its end, decoded as `reqwest::Response::text` decodes it (the
    /// `Content-Type`'s charset, UTF-8 by default, invalid sequences replaced).
    ///
    /// # Errors
    ///
    /// reqwest's, when the body cannot be read (the connection closed mid-body, a read timed
    /// out): classified by [`classify_reqwest_error`].
    pub async fn read(response: reqwest::Response) -> reqwest::Result<Self> {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await?;
        Ok(TextResponse {
            status,
            headers,
            body,
        })
    }

    /// The response's status.
    pub fn status(&self) -> http::StatusCode {
        self.status
    }

    /// The response's headers.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// The body, as text.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The body, as text, for the model: `ToolResult::map(TextResponse::into_body)`.
    pub fn into_body(self) -> String {
        self.body
    }
}

/// A response whose body is already text (a test's, or a tower service's).
impl From<http::Response<String>> for TextResponse {
    fn from(response: http::Response<String>) -> Self {
        let (parts, body) = response.into_parts();
        TextResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

impl Classify<TextResponse, reqwest::Error> for HttpClassifier {
    /// The answer by status (overrides first, a 429's rate-limit hint), or the transport error.
    fn classify(&self, result: &Result<TextResponse, reqwest::Error>) -> Outcome {
        match result {
            Ok(answer) => with_hint(
                self.classify_status(answer.status),
                &answer.headers,
                crate::time::wall_now(),
            ),
            Err(error) => classify_reqwest_error(error),
        }
    }

    /// The answer's status, or the status of an error made from one (`error_for_status`).
    fn http_status(&self, result: &Result<TextResponse, reqwest::Error>) -> Option<u16> {
        match result {
            Ok(answer) => Some(answer.status.as_u16()),
            Err(error) => error.status().map(|status| status.as_u16()),
        }
    }
}
