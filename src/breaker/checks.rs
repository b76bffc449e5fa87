//! Ready-made health checks ([`HealthCheck`]) for
//! [`Builder::probe_with`](super::Builder::probe_with): an HTTP `GET` of a health URL (features
//! `tokio` and `reqwest`). The MCP `ping` check (feature `mcp`) is `mcp`'s, beside the MCP
//! classification it uses.

#![cfg_attr(not(feature = "reqwest"), allow(unused_imports))]

use super::prober::HealthCheck;
use crate::classify::{FailureKind, Outcome};

#[cfg(feature = "reqwest")]
impl HealthCheck {
    /// A `GET` of `url` with `client`: a 2xx answer is a success; any other answer, and a
    /// transport error, is classified as a call's would be
    /// ([`classify_reqwest`](crate::classify::reqwest::classify_reqwest): a 5xx, a timeout or
    /// a refused connection is a failure, a 429 a rate-limited one with its hint), except that
    /// an answer the classification would call a success or ignore (a 1xx or 3xx left over, a
    /// 404 of a wrong path, a 401) is a failure here (`Other`): a health URL answers 2xx, and a
    /// check that could only ever be ignored would keep the breaker half-open, its callers
    /// blocked, for good. So a wrong URL reopens the breaker at each cooldown, and the
    /// reopening says so in the transitions. The body is not read. Set the client's timeout, or
    /// rely on the breaker's probe timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, breaker::HealthCheck};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let health = "http://127.0.0.1:8080/health".parse()?;
    /// let breaker = CircuitBreaker::builder()
    ///     .name("search")
    ///     .probe_with(HealthCheck::http_get(reqwest::Client::new(), health))
    ///     .build_arc()?;
    /// assert!(breaker.try_acquire().is_ok(), "closed: the check has not run");
    /// # Ok(()) }
    /// ```
    pub fn http_get(client: reqwest::Client, url: reqwest::Url) -> Self {
        HealthCheck::new(move || {
            let answer = client.get(url.clone()).send();
            async move {
                let answer = answer.await;
                match &answer {
                    Ok(response) if response.status().is_success() => Outcome::Success,
                    _ => match crate::classify::reqwest::classify_reqwest(&answer) {
                        Outcome::Success | Outcome::Ignored => Outcome::Failure(FailureKind::Other),
                        outcome => outcome,
                    },
                }
            }
        })
    }
}
