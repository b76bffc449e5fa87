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
//! # Behaviour contract
//!
//! 1. One breaker per dependency; one dependency's outage never blocks another.
//! 2. Only counted failures ([`Outcome::Failure`]) count; [`Outcome::Ignored`] neither counts nor
//!    clears the run of failures; a success clears it.
//! 3. Open rejects before any external effect with [`Blocked`], whose `retry_after` is the
//!    remaining cooldown.
//! 4. Half-open admits exactly one probe, however many callers race.
//! 5. The probe's success closes; its counted failure reopens with a fresh cooldown; its `Ignored`
//!    outcome, or dropping its permit, releases the slot for the next caller.
//! 6. A probe that does not report within the probe timeout counts as failed; the cooldown restarts
//!    from the lease's end.
//! 7. Every trip, probe verdict and change by hand starts a new *generation*; an outcome from an
//!    older one never moves the state. (Claiming the probe slot keeps it: no probe of it is alive.)
//! 8. [`CircuitBreaker::state`] never writes, and is correct from the clock alone.
//! 9. Invalid configuration is a [`ConfigError`] naming the field; nothing is clamped.
//! 10. Settings change live without losing state ([`CircuitBreaker::reconfigure`],
//!     [`Registry::reload`]): an open breaker's new cooldown counts from its original opened-at; a
//!     closed breaker keeps its count and trips at once if the new threshold is already reached.
//! 11. Changes by hand ([`force_open`](CircuitBreaker::force_open), which isolates,
//!     [`force_closed`](CircuitBreaker::force_closed), [`reset`](CircuitBreaker::reset)) are
//!     transitions with reason [`manual`](TransitionReason::Manual).
//!
//! # Observability
//!
//! Every [`Transition`] carries its reason, generation, failure count and cooldown; a listener
//! (`on_transition` on [`Builder`](breaker::Builder) or
//! [`RegistryBuilder`](registry::RegistryBuilder)) hears each one once, outside any retry
//! loop. Counting is opt-in ([`Builder::metrics`](breaker::Builder::metrics)): thread-striped counters read as a
//! [`Metrics`](observe::Metrics)
//! snapshot. Feature `tracing` adds events and pipeline spans; feature `metrics` exports the
//! counters through the `metrics` facade.
//!
//! # Features
//!
//! | feature | adds |
//! |---|---|
//! | `tokio` | `CircuitBreaker::run_with_timeout`: an async call under a per-call timeout; the guard pipeline (`ToolGuard`, `AgentRun`, `RetryPolicy`): run deadline and budgets, breaker, per-call timeout, classification, bounded retry |
//! | `serde` | `ToolResult::to_json`, the JSON the model receives; `Serialize` for [`State`] and [`BlockedReason`] |
//! | `http` | the `http` module: classification of status codes and `Retry-After` |
//! | `reqwest` | the `classify::reqwest` module: classification of `reqwest` results and transport errors (implies `http`) |
//! | `tower` | the `tower` module: `CircuitBreakerLayer`, middleware that rejects before the inner service is called or polled (with `http`: `CircuitBreakerLayer::http`) |
//! | `metrics` | `Registry::export_metrics`, `Metrics::export`: counters through the `metrics` facade, named `toolbreaker_*` and labelled by dependency |
//! | `toml` | `RegistryConfig::from_toml`/`from_file`, `Registry::reload_toml`/`reload_file`: per-dependency configuration from TOML, reloaded live; errors name the dependency and field |
//! | `tracing` | events (target `toolbreaker`) for transitions (`info`, `warn` when opening), blocked calls and counted failures (`debug`); with `tokio`, a span per `ToolGuard` call and per attempt, with the fields `tracing-opentelemetry` maps; never a request, response or error message |
//!
//! # Time
//!
//! Breakers read a [`quanta::Clock`], re-exported as [`toolbreaker::quanta`](quanta) so tests
//! use the same version: `quanta::Clock::mock()` gives a clock to advance by hand, and nothing in
//! this crate sleeps.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The layers, bottom up; each imports only from those above it in this list.
pub mod agent;
pub mod breaker;
pub mod classify;
pub mod config;
pub mod observe;
pub mod registry;
mod sync;
mod time;
#[cfg(feature = "tower")]
pub mod tower;
mod types;

pub use quanta;

#[cfg(feature = "tokio")]
pub use agent::{AgentRun, RetryPolicy, ToolGuard};
pub use agent::{StopReason, ToolResult};
pub use breaker::{CallError, CircuitBreaker, Permit};
pub use classify::{Classify, FailureKind, Outcome};
pub use config::{Config, ConfigError};
pub use registry::{Registry, RegistryConfig};
pub use types::{Blocked, BlockedReason, State, Transition, TransitionReason};

/// Internals for the fuzz targets (`fuzz/`), built only under `--cfg fuzzing`; not part of the
/// API and not covered by semver.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    use crate::breaker::fuzzing::{self as word, Kind, Word};

    /// Bits of the kind field.
    pub const KIND_BITS: u32 = word::KIND_BITS;
    /// Bits of the generation field.
    pub const GENERATION_BITS: u32 = word::GENERATION_BITS;
    /// Bits of the payload field.
    pub const PAYLOAD_BITS: u32 = word::PAYLOAD_BITS;
    /// The largest generation; the next one is 0.
    pub const MAX_GENERATION: u32 = word::MAX_GENERATION;
    /// The largest time the word holds, in ms since the breaker's origin.
    pub const MAX_TIME_MS: u64 = word::MAX_TIME_MS;
    /// How far before its construction a breaker's time origin lies, in ms.
    pub const CLOCK_HEADROOM_MS: u64 = crate::time::CLOCK_HEADROOM_MS;

    /// A word of `kind` (0 closed, 1 open, 2 probing, 3 half-open) built by its constructor.
    pub fn pack(kind: u8, generation: u32, payload: u64) -> u64 {
        match kind % 4 {
            0 => Word::closed(generation, payload),
            1 => Word::open(generation, payload),
            2 => Word::probing(generation, payload),
            _ => Word::half_open(generation),
        }
        .0
    }

    /// The word of a breaker forced open by hand.
    pub fn isolated(generation: u32) -> u64 {
        Word::isolated(generation).0
    }

    /// The fields of any 64-bit pattern: (kind 0–3, generation, payload).
    pub fn unpack(bits: u64) -> (u8, u32, u64) {
        let word = Word(bits);
        let kind = match word.kind() {
            Kind::Closed => 0,
            Kind::Open => 1,
            Kind::Probing => 2,
            Kind::HalfOpen => 3,
        };
        (kind, word.generation(), word.payload())
    }

    /// The closed fast path's reading of any 64-bit pattern.
    pub fn closed_generation(bits: u64) -> Option<u32> {
        Word(bits).closed_generation()
    }
}

// The README's example runs as a doctest, so the front door stays true.
#[cfg(all(doctest, feature = "serde"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
