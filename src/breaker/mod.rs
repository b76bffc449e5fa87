//! [`CircuitBreaker`]: the breaker type and its operations, each in a file of its own, over the
//! state in `crate::state` (the word, the cells, the decider).
//!
//! The files, bottom up, each importing only from those before it: `hook` (what the slow paths
//! tell and ask whoever shares the transitions: fleet mode's tap), `throttle` (adaptive
//! throttling's counts and probability, a cell of its own), `window` (the rate rules' counts,
//! beside the word, a cell of its own that also holds the throttle's pointer), `budget_ring` and `budget` (a
//! [`RetryBudget`]: its counts, then the type, which a breaker may have attached) and `cap` (the
//! slots of the cap on calls in flight, another cell beside the word); `machine` is the
//! type, what it is built from and what every operation shares (the settings read, a decision
//! applied through the word's cell, transitions told); then one file per operation: `sharing` (the hook's door on the breaker), `probes`
//! (the several probes' slots), `admit` (admission beyond the closed fast path), `report`
//! (outcomes and the window's judgement), `manual` (changes by hand), `reconfigure` and `capped`
//! (a permit's slot taken and given back, the saturated rejection, the cap's readings); then
//! `ticket` (what both permits hold, their report and their drop);
//! `permit` (the permits, and the methods that issue them), `pooled` (what a pool asks of a
//! member: a permit, or its refusal uncounted), `call` (guarded calls), `builder` and `admission` (the cap's builder settings and
//! the validation of them all); then `hint`
//! (a dependency's hint of how long to stay open: the builder's settings and the report's side),
//! `throttling` (adaptive throttling: the builder's setting, the admission's draw, the reports'
//! side),
//! and last `health` (feature `tokio`: the health check's builder methods and prober task, over
//! `prober`, the breaker's side of it, which sits below `machine`) and `checks` (ready-made
//! health checks).
//! The model checks of all of it (`loom_tests`, under `--cfg loom`) sit beside them.

mod admission;
mod admit;
mod budget;
mod budget_ring;
mod builder;
mod call;
mod cap;
mod capped;
#[cfg(feature = "tokio")]
mod checks;
#[cfg(feature = "tokio")]
mod health;
mod hint;
mod hook;
mod machine;
mod manual;
mod permit;
mod pooled;
mod prober;
mod probes;
mod reconfigure;
mod report;
mod sharing;
mod throttle;
mod throttling;
mod ticket;
mod window;

pub(crate) use self::budget::BudgetRule;
pub use self::budget::{MAX_RETRY_RATIO, RetryBudget};
pub use self::builder::Builder;
pub use self::call::{CallError, RunFuture};
#[cfg(feature = "tokio")]
pub use self::health::{HEALTH_RECHECK, HealthProbe};
pub use self::machine::CircuitBreaker;
pub(crate) use self::machine::Extras;
pub use self::permit::{OwnedPermit, Permit};
#[cfg(feature = "tokio")]
pub use self::prober::HealthCheck;
// The hook a transition-sharing owner implements (fleet mode's tap).
pub(crate) use self::hook::Hook;

#[cfg(all(test, loom))]
mod loom_tests;
