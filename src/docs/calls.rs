//! Calling through a breaker: sync and async calls, classification, the tower layer, and the
//! guard pipeline an agent runtime puts around every tool call, with what the model receives.
//!
//! The crate's front page has the first example (a registry, a breaker tripping, the blocked result,
//! the probe); this page goes on from there.
//!
//! # Calls and classification
//!
//! Async calls use `run` (any executor) or `run_with_timeout` (tokio). HTTP results are classified by
//! `toolbreaker::classify::http` (`classify_response`, or `HttpClassifier` with per-status overrides
//! for one dependency; a `RateLimited` override's own `retry_after` holds when the response has no
//! `Retry-After`, and the header wins when it has one), and `reqwest` results by
//! `toolbreaker::classify::reqwest` (`classify_reqwest`, or `HttpClassifier::reqwest`).
//!
//! Every guarded call (`call`, `run`, `run_with_timeout`, `ToolGuard::call`) takes its
//! classification as a function: a closure written in place (`|_| Outcome::Ignored`,
//! `|r| match r { .. }`, its argument's type inferred), a named function, or a `Classify` type
//! (`HttpClassifier`, or one of your own) through `classify::with(&classifier)`, which keeps the
//! HTTP status the model is told. The tower layer takes a `Classify` type as it is.
//!
//! A tower stack takes the breaker as a layer: `CircuitBreakerLayer::new(breaker, classify)` in
//! front of an HTTP client service (`cargo run --example tower_client --features tower_client` shows one).
//!
//! # HTTP classification
//!
//! HTTP classification (feature `http`): 2xx/3xx success; 408 and 504 `Timeout`; 429 `RateLimited`
//! with the longest wait its rate-limit headers ask for (`Retry-After`, `retry-after-ms`,
//! `x-ratelimit-reset-requests` and `-tokens`, `RateLimit`, `RateLimit-Reset`: see
//! `classify::http::retry_after`); other 5xx `Unavailable`; other 4xx `Ignored`. Transport errors
//! (feature `reqwest`): connect `Connect`, timeout `Timeout`. The `Retry-After` hint is carried in the outcome
//! for the caller's retry policy; a breaker's cooldown is its own configuration and does not stretch
//! to the hint.
//!
//! # The guard pipeline: how an agent runtime calls a tool
//!
//! A breaker alone does not stop an agent from looping. `ToolGuard::call` (feature `tokio`) composes
//! the guards in one order for every tool call: the run's deadline and budgets (`AgentRun`: a call on
//! a run past its deadline or budget is `stopped`, and so is every later one), the dependency's
//! breaker (`blocked` at once, nothing sent), a per-call timeout cut to the time left, classification,
//! and a bounded retry (`RetryPolicy`: capped exponential backoff with jitter, at least the
//! `Retry-After` hint, only for counted failures of a retryable kind, never past the deadline, and
//! never once the breaker has opened). Every attempt draws on the run's tool-call budget. (This
//! example runs on tokio's paused clock, so it needs `toolbreaker`'s `tokio` feature and `tokio` with
//! the `macros`, `rt` and `test-util` features.)
//!
#![cfg_attr(all(feature = "tokio", feature = "serde"), doc = "```rust")]
#![cfg_attr(not(all(feature = "tokio", feature = "serde")), doc = "```ignore")]
//! use std::time::Duration;
//! use toolbreaker::{AgentRun, CircuitBreaker, FailureKind, Outcome, RetryPolicy, ToolGuard, ToolResult};
//!
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     let search = CircuitBreaker::builder().name("search").failure_threshold(2).build().unwrap();
//!     let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default().max_retries(5));
//!     let run = AgentRun::new("run-1", Duration::from_secs(60), 20); // id, time limit, tool-call budget
//!
//!     // The dependency answers 503 every time: the retry stops as soon as the breaker opens.
//!     let mut sent = 0;
//!     let result = guard
//!         .call(&run, &search, |r: &Result<String, u16>| match r {
//!             Ok(_) => Outcome::Success,
//!             Err(503) => Outcome::Failure(FailureKind::Unavailable),
//!             Err(_) => Outcome::Ignored,
//!         }, || {
//!             sent += 1;
//!             async { Err::<String, u16>(503) }
//!         })
//!         .await;
//!     assert_eq!(sent, 2, "two attempts tripped the breaker; the third was refused");
//!     assert!(matches!(&result, ToolResult::Blocked { dependency, .. } if dependency == "search"));
//!     // What the model receives says that the call's two attempts failed, and how the last did:
//!     // {"status":"blocked",...,"message":"search is temporarily unavailable; ... This call failed
//!     // twice before that; the last failure: unavailable.","failed_attempts":2,
//!     // "last_failure":"unavailable","attempts":2,...}
//!     let json = result.to_json().unwrap();
//!     assert!(json.contains(r#""failed_attempts":2,"last_failure":"unavailable","attempts":2,"#));
//!     println!("{json}");
//! }
//! ```
//!
//! The dependency a result names is always the breaker's (`CircuitBreaker::name`; a registry names
//! its breakers), so the model is never told about another tool. A `failed` result tells the model
//! the failure's kind and, when the classification knows it (`Classify::http_status`;
//! `HttpClassifier` does), the HTTP status: `{"status":"failed","dependency":"search","kind":"unavailable","http_status":503,"error":"unavailable (HTTP 503)",...}`.
//! It never holds an error's own text, since errors carry what the model must not read (a
//! `reqwest::Error` displays its URL, query string and any API key in it included). A guard whose
//! errors are safe to show, or that can redact them, says so:
//! `ToolGuard::new(..).error_text(|e: &ToolError| Some(e.to_string()))`.
//!
//! A counted failure's message says "Do not call it again now" even while the breaker is still
//! closed (two failures of a threshold of three, say): the call's retries are spent, and calling
//! again at once only adds to a failing dependency's load. The `status` field tells the two
//! apart: `failed` means the call ran and failed (the tool may work on a later turn), `blocked`
//! that the breaker did not let it run (its `retry_after_ms` says when it may).
