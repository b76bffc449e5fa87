//! Lock-free circuit breakers for the tools an AI agent calls, one per dependency.
//!
//! When a tool's dependency is failing (timeouts, 503, 429), the agent runtime should stop sending
//! it calls, answer at once with a structured *blocked* result the model can act on, let exactly
//! one *probe* through after a *cooldown*, and close again when the dependency recovers. Only
//! failures that say the dependency is unhealthy count: bad arguments, auth errors and not-found
//! never trip a breaker.
//!
//! A breaker's state, failure count and opened-at time live in one atomic word changed only by
//! compare-and-swap. While closed and healthy, admitting a call is one atomic load and recording its
//! success is one load and no store, with no clock read.
//!
//! # Quick start
//!
//! ```
//! use std::time::Duration;
//! use toolbreaker::{CallError, Config, FailureKind, Outcome, Registry, State};
//!
//! let (clock, mock) = toolbreaker::quanta::Clock::mock(); // a real registry leaves the clock out
//! let registry = Registry::builder()
//!     .default_config(Config::new(2, Duration::from_millis(100), Duration::from_secs(1))?)
//!     .clock(clock)
//!     .build();
//! let search = registry.get("search");
//!
//! let classify = |r: &Result<&str, u16>| match r {
//!     Ok(_) => Outcome::Success,
//!     Err(503) => Outcome::Failure(FailureKind::Unavailable),
//!     Err(_) => Outcome::Ignored, // 400, 401, 404: the request's fault, never counted
//! };
//! for _ in 0..2 {
//!     let _ = search.call(|| Err(503), classify);
//! }
//! assert_eq!(search.state(), State::Open);
//!
//! let mut sent = 0;
//! let answer = search.call(|| { sent += 1; Ok("hits") }, classify);
//! assert!(matches!(answer, Err(CallError::Blocked(_))));
//! assert_eq!(sent, 0, "an open breaker sends nothing");
//!
//! mock.increment(Duration::from_millis(100)); // the cooldown passes
//! assert_eq!(search.state(), State::HalfOpen);
//! assert_eq!(search.call(|| Ok("hits"), classify), Ok("hits")); // the probe succeeds
//! assert_eq!(search.state(), State::Closed);
//! # Ok::<(), toolbreaker::ConfigError>(())
//! ```
//!
//! # Where things are
//!
//! | module | what |
//! |---|---|
//! | [`breaker`] | [`CircuitBreaker`], its [`Builder`](breaker::Builder), permits and guarded calls |
//! | [`registry`] | [`Registry`]: a breaker per dependency, its configuration, live reload |
//! | [`pool`] | [`Pool`]: equivalent upstreams in priority groups, with failover and a panic rule |
//! | [`classify`] | [`Outcome`], [`FailureKind`], [`Classify`]; `http` and `reqwest` classification |
//! | [`agent`] | [`ToolResult`], what the model sees; with `tokio`, the guard pipeline (`ToolGuard`) |
//! | [`observe`] | listeners, counters ([`Metrics`](observe::Metrics)), tracing and metrics export |
//! | [`config`] | [`Config`], [`ConfigError`] and the defaults |
//! | `tower` | the tower middleware (feature `tower`) |
//! | `fleet` | fleet mode: breaker transitions shared through Redis (feature `redis`) |
//! | `mcp` | MCP: guarded rmcp tool calls and an MCP gateway (feature `mcp`) |
//! | [`docs`] | the long-form pages: the behaviour contract, calls, configuration, fleet mode, MCP, observability, features, time, the layers, the checks, the examples |
//!
//! The values every caller meets ([`State`], [`Blocked`], [`Transition`] and their reasons) are
//! exported here.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The layers and the order of their imports: `docs::layers`.
pub mod agent;
pub mod breaker;
pub mod classify;
pub mod config;
pub mod docs;
#[cfg(feature = "redis")]
pub mod fleet;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod observe;
pub mod pool;
pub mod registry;
mod state;
mod sync;
mod time;
#[cfg(feature = "tower")]
pub mod tower;
mod types;

pub use quanta;

#[cfg(feature = "tokio")]
pub use agent::{AgentRun, RetryPolicy, ToolGuard};
pub use agent::{StopReason, ToolResult};
#[cfg(feature = "tokio")]
pub use breaker::RetryBudget;
pub use breaker::{CallError, CircuitBreaker, Permit};
#[cfg(feature = "tokio")]
pub use breaker::{HealthCheck, HealthProbe};
pub use classify::{Classified, Classify, FailureKind, Outcome};
pub use config::{Config, ConfigError, Limit, Window};
#[cfg(feature = "redis")]
pub use fleet::{Fleet, FleetError};
pub use pool::{Pool, PoolBuilder, PoolPermit};
pub use registry::{Registry, RegistryConfig, RegistryFull};
pub use types::{Blocked, BlockedReason, State, Transition, TransitionReason};

/// Internals for the fuzz targets (`fuzz/`), built only under `--cfg fuzzing`; not part of the
/// API and not covered by semver.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;

// The README's example runs as a doctest, so the front door stays true.
#[cfg(all(doctest, feature = "serde"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
