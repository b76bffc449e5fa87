//! What a breaker tells the outside world: transition listeners, counters (opt-in) and, with
//! the `tracing` feature, events; with the `metrics` feature, the counters' export.
//!
//! Events go to the `toolbreaker` target: transitions at `info` (`warn` when opening), blocked
//! calls (saturated ones too), counted failures and changes of an adaptive concurrency limit at
//! `debug`. They carry the dependency's name, states, reasons,
//! failure kinds, counts and durations, and nothing from a request or response: no arguments,
//! bodies, headers, URLs or error messages, which may hold secrets. Without the feature every
//! function here is empty.

mod counters;
mod events;
#[cfg(feature = "metrics")]
mod export;
mod herald;
mod listener;

pub(crate) use self::counters::{Counter, Counters, stripe_count, thread_index};
pub use self::counters::{FailureCounts, Metrics, TransitionCounts};
pub(crate) use self::events::{blocked, failure, limit_changed, pool_panic};
pub(crate) use self::herald::{Herald, tell_each};
pub(crate) use self::listener::Listener;
pub use self::listener::TransitionEvent;
