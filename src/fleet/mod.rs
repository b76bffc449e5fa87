//! Fleet mode (feature `redis`): one breaker state per dependency shared by every gateway
//! instance through Redis, while every call is still admitted by one local atomic load.
//!
//! The fleet shares *transitions*, not calls. A healthy call never leaves the process: no Redis
//! command is sent per call. What crosses the network is what changes a breaker's state, sent by
//! one background task per [`Registry`](crate::Registry) (the worker):
//!
//! - a trip, a probe's verdict, a change by hand (`force_open`, `force_closed`, `reset`) on any
//!   instance, each one Lua script that checks the fleet generation, published to the others;
//! - counted failures, batched: the worker reports an instance's consecutive count when it changes,
//!   one report however many failures came since the last, at most one per 5 ms (never a round
//!   trip per failure);
//! - the claim of the fleet's one probe lease when the cooldown ends (and again when a call is
//!   blocked waiting for it after a lease was given back).
//!
//! Other instances learn of a change by pub/sub, with a periodic read of one epoch counter (every
//! [`sync_interval`](FleetBuilder::sync_interval)) as the backstop for a lost message. The rules
//! (window, votes, who wins after an outage) are in the behaviour contract,
//! [`docs::contract`](crate::docs::contract), section *Fleet mode*; the keys and scripts in
//! [`docs::fleet`](crate::docs::fleet).
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use toolbreaker::{Fleet, Registry};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let fleet = Fleet::builder("redis://127.0.0.1:6379/")
//!     .prefix("gateway")
//!     .instance("gw-1")
//!     .min_instances(2)
//!     .build()?; // inside a Tokio runtime: the worker is spawned on it
//! let registry = Registry::builder().fleet(fleet).build();
//! let search = registry.get("search"); // still one atomic load per call
//! assert!(search.try_acquire().is_ok());
//! # Ok(()) }
//! ```

mod backstop;
mod builder;
mod error;
mod flush;
mod handle;
mod install;
mod keys;
mod millis;
mod reconcile;
mod redact;
mod script;
mod start;
mod status;
mod tap;
mod worker;

pub use self::builder::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_PREFIX, DEFAULT_PROBE_WINDOW, DEFAULT_RECORD_TTL,
    DEFAULT_SYNC_INTERVAL, DEFAULT_WINDOW, FleetBuilder,
};
pub use self::error::FleetError;
pub use self::handle::{FleetHandle, FleetStats};
pub use self::redact::redact;
pub use self::start::Fleet;
pub use self::status::FleetEvent;
// What a registry in fleet mode holds (`install`).
use self::start::FleetLink;
