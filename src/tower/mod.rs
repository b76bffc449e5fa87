//! Tower middleware (feature `tower`): a [`CircuitBreakerLayer`] in front of any
//! [`Service`](::tower::Service), such as an HTTP client or a tool's RPC stub.
//!
//! A request the breaker does not admit is answered at once with an error that carries the
//! [`Blocked`](crate::Blocked) value (downcast the [`BoxError`](::tower::BoxError) to read
//! `retry_after`); the inner service is not called, and not even polled for readiness. An
//! admitted request's result is classified by a [`Classify`](crate::Classify) implementation (a
//! closure, or `toolbreaker::classify::http::HttpClassifier` for `http::Response`s, with features
//! `tower` and `http`) and recorded on the breaker; the response, or the inner service's error
//! boxed, is passed through unchanged.
//!
//! How the service answers readiness (when it waits on the inner service, when it holds a
//! permit) is in [`CircuitBreakerService`]'s docs, section
//! [*Readiness*](CircuitBreakerService#readiness).
//!
//! # Examples
//!
//! ```
//! use std::io;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//! use toolbreaker::tower::CircuitBreakerLayer;
//! use toolbreaker::{Blocked, CircuitBreaker, FailureKind, Outcome, State};
//! use tower::{Layer, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! let (clock, mock) = toolbreaker::quanta::Clock::mock(); // production leaves `.clock` out
//! let breaker = Arc::new(
//!     CircuitBreaker::builder()
//!         .failure_threshold(2)
//!         .cooldown(Duration::from_secs(10))
//!         .clock(clock)
//!         .build()?,
//! );
//!
//! // The dependency: answers when `healthy`, fails otherwise; counts what reaches it.
//! let sent = Arc::new(AtomicUsize::new(0));
//! let dependency = service_fn({
//!     let sent = Arc::clone(&sent);
//!     move |healthy: bool| {
//!         sent.fetch_add(1, Ordering::Relaxed);
//!         async move { if healthy { Ok("hits") } else { Err(io::Error::other("unavailable")) } }
//!     }
//! });
//! let classify = |result: &Result<&'static str, io::Error>| match result {
//!     Ok(_) => Outcome::Success,
//!     Err(_) => Outcome::Failure(FailureKind::Unavailable),
//! };
//! let search = CircuitBreakerLayer::new(Arc::clone(&breaker), classify).layer(dependency);
//!
//! for _ in 0..2 {
//!     assert!(search.clone().oneshot(false).await.is_err());
//! }
//! assert_eq!(breaker.state(), State::Open);
//!
//! let error = search.clone().oneshot(true).await.unwrap_err();
//! let blocked = error.downcast_ref::<Blocked>().expect("rejected by the breaker");
//! assert_eq!(blocked.retry_after(), Duration::from_secs(10));
//! assert_eq!(sent.load(Ordering::Relaxed), 2, "the rejected request was never sent");
//!
//! mock.increment(Duration::from_secs(10)); // the cooldown passes: the next request is the probe
//! assert_eq!(search.clone().oneshot(true).await?, "hits");
//! assert_eq!(breaker.state(), State::Closed);
//! # Ok(())
//! # }
//! ```

pub mod future;
mod layer;
mod service;

pub use self::layer::CircuitBreakerLayer;
pub use self::service::CircuitBreakerService;
