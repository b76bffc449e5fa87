//! Calling through a breaker: sync and async calls, classification, the tower layer, health
//! checks run as the probe, and the guard pipeline an agent runtime puts around every tool call, with what the model receives.
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
//! # Health checks: a probe that is not a user's call
//!
//! By default the probe after a cooldown is the next call: a breaker that no call reaches stays
//! open (in state, not in the dependency's health) until one does, and that call is a user's, sent
//! to a dependency that may still be down. `Builder::probe_with` (feature `tokio`) sets a health
//! check that is the probe instead: a background prober (one Tokio task per breaker, on the runtime
//! `build_arc` is called in) wakes when the cooldown ends per the breaker's clock, claims the probe
//! slot through the word's compare-and-swap like any probe (so the check runs once per cooldown
//! however many callers race), runs the check under the probe timeout (a timeout is a `Timeout`
//! failure) and records its outcome through the permit: a success closes the breaker, a counted
//! failure reopens it (with the cooldown's backoff, if set). Meanwhile callers are blocked with
//! `probe_in_flight`: a breaker with a health check never gives the probe slot to a user call. So
//! a pool sees its preferred member close as soon as it is healthy, with no traffic sent to find
//! out.
//!
//! - **Waking.** The prober sleeps until the deadline it reads from the breaker's state, and reads
//!   it again at every wake, so a cooldown lengthened meanwhile is waited out; it sleeps at most
//!   `HEALTH_RECHECK` (1 s) at a time, so a clock that does not follow Tokio's (a mock moved by
//!   hand) is seen within that. While the breaker is closed or isolated it sleeps until a
//!   transition wakes it: the healthy path does not know it exists (no load is added to
//!   `try_acquire`'s closed path). A caller blocked for the check's probe wakes it too.
//! - **Driving it by hand.** `CircuitBreaker::run_health_check` is the prober's one step: on a
//!   mock clock, move the clock and call it; it runs the check if a probe is due and the slot is
//!   free, and answers what it did (`HealthProbe`: the outcome and the transition).
//! - **Failures of the check itself.** A check that panics gives the probe slot back (its permit
//!   is dropped) and is tried again after the probe timeout; an `Ignored` outcome gives the slot
//!   back and is tried again after `HEALTH_RECHECK`. If the prober's runtime shuts down, the
//!   prober ends and callers take the probe slot again, as without a health check.
//! - **Ready-made checks.** `HealthCheck::http_get(client, url)` (feature `reqwest`): a 2xx is a
//!   success, anything else is classified as a call's would be. `HealthCheck::mcp_ping(peer)`
//!   (feature `mcp`): an MCP `ping`, its errors classified by `McpClassifier`.
//! - **Registries and fleet mode.** A registry's breaker takes one with
//!   `CircuitBreaker::start_health_check`. In fleet mode the check runs only on the instance that
//!   holds the fleet's probe lease, which the workers claim when the cooldown ends: once per
//!   fleet per cooldown ([`fleet`](super::fleet)).
//!
#![cfg_attr(feature = "tokio", doc = "```rust")]
#![cfg_attr(not(feature = "tokio"), doc = "```ignore")]
//! use std::time::Duration;
//! use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State, TransitionReason};
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), toolbreaker::ConfigError> {
//!     let (clock, mock) = toolbreaker::quanta::Clock::mock();
//!     let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
//!     let answer = std::sync::Arc::clone(&healthy);
//!     let search = CircuitBreaker::builder()
//!         .name("search")
//!         .failure_threshold(1)
//!         .cooldown(Duration::from_secs(10))
//!         .cooldown_backoff(2.0, Duration::from_secs(60))
//!         .clock(clock)
//!         .probe_with(move || {
//!             let up = answer.load(std::sync::atomic::Ordering::SeqCst);
//!             async move { if up { Outcome::Success } else { Outcome::Failure(FailureKind::Unavailable) } }
//!         })
//!         .build_arc()?;
//!     search.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
//!
//!     mock.increment(Duration::from_secs(10)); // the cooldown ends: the check is the probe
//!     let probe = search.run_health_check().await.expect("a probe was due");
//!     assert_eq!(probe.transition.unwrap().reason(), TransitionReason::ProbeFailed);
//!     assert_eq!(search.try_acquire().unwrap_err().retry_after(), Duration::from_secs(20));
//!
//!     healthy.store(true, std::sync::atomic::Ordering::SeqCst);
//!     mock.increment(Duration::from_secs(20));
//!     search.run_health_check().await.expect("due again");
//!     assert_eq!(search.state(), State::Closed, "closed without a user's call");
//!     Ok(())
//! }
//! ```
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
//! # Retry budgets: retries that cannot multiply an outage's load
//!
//! A `RetryPolicy` bounds one call's retries, but not a fleet of callers': with 3 retries, an
//! upstream that fails every call sees four times its load until the breaker opens. A retry
//! budget (`RetryBudget`, the rule of Finagle's `RetryBudget` and tower's `TpsBudget`; Envoy's
//! `retry_budget` bounds retries in flight the same way) bounds retries across calls: every call's first attempt deposits, every
//! retry must withdraw, and a retry is allowed only while the retries over a sliding window stay
//! within `ratio` of the first attempts plus a floor of `min_per_second` per second (so a caller
//! making few calls can still retry). Whatever the concurrency, the upstream sees at most
//! `(1 + ratio) × first attempts + min_per_second × window` attempts over a window: each
//! withdrawal is one compare-and-swap judged against every count before it, so concurrent
//! callers never overspend. The budget is asked last before a retry's wait, after the breaker
//! and the run (a retry that would not go anyway spends nothing); a retry to another member of
//! a pool is a retry too. A refused retry ends the call `stopped` with `stop_reason`
//! `retry_budget` and the last failure (`failed_attempts`, `last_failure`), and only that call:
//! the run goes on. Give a guard its own with `ToolGuard::retry_budget(budget)` (clones share
//! it), or give every dependency of a registry its own with `RegistryBuilder::retry_budget` or
//! the `retry_budget = { ratio = 0.2, min_per_second = 10, window_ms = 10000 }` key of a
//! configuration file; a guard without its own uses the called dependency's
//! (`Registry::retry_budget`). A reload changes a budget's rules in place and keeps its counts.
//!
//! A counted failure's message says "Do not call it again now" even while the breaker is still
//! closed (two failures of a threshold of three, say): the call's retries are spent, and calling
//! again at once only adds to a failing dependency's load. The `status` field tells the two
//! apart: `failed` means the call ran and failed (the tool may work on a later turn), `blocked`
//! that the breaker did not let it run (its `retry_after_ms` says when it may).
