//! [`Pool`]: a pool of equivalent upstreams (replicas, regions, providers of the same tool),
//! each member a [`Registry`](crate::Registry)'s breaker, in priority groups, with failover.
//!
//! Build one with [`Pool::builder`] over a registry, or keep it in the registry's configuration
//! ([`RegistryConfig::pool`](crate::RegistryConfig::pool), `[pools.NAME]` in its TOML file) and
//! look it up with [`Registry::pool`](crate::Registry::pool). Ask it for a member with
//! [`Pool::try_acquire`], which gives a [`PoolPermit`] naming the member, or make the call in
//! one step with [`Pool::call`] or [`Pool::run`]; with feature `tokio`, the guard pipeline's
//! `ToolGuard::call_pool` retries a failed attempt on another member.
//!
//! # The choice rule
//!
//! 1. **Groups in order.** The first group with a member that admits serves the call; a later
//!    group is asked only when no member of every earlier one admits.
//! 2. **Spread inside a group.** The member asked first is drawn per call from a thread-local
//!    generator (a xorshift, seeded per thread), and the group's other members follow in
//!    order: calls spread evenly over the members that admit, and choosing one writes no
//!    shared memory (the draw is the thread's own; a closed member admits on one load).
//! 3. **Never a refusing member.** Each member is asked as its own
//!    [`try_acquire`](crate::CircuitBreaker::try_acquire) would answer: a member open, isolated
//!    by hand, or half-open with its probe taken refuses, and the next is asked. A half-open
//!    member whose probe slot is free admits the call as its probe when the draw reaches it,
//!    so a recovered member is probed while its group's other members keep serving. A member
//!    passed over is not counted as blocked and logs nothing; a member that loses the probe
//!    slot to a racing caller counts that one rejection as its `try_acquire` would.
//! 4. **Panic** (below), when no member of any group admits.
//! 5. **Blocked.** Otherwise one [`Blocked`](crate::Blocked) for the pool: reason
//!    [`PoolExhausted`](crate::BlockedReason::PoolExhausted) (`pool_exhausted`), state open,
//!    the earliest retry-after of its members. It carries no name, as no `Blocked` does; the
//!    pool's is [`Pool::name`], and the model's
//!    [`ToolResult::blocked`](crate::ToolResult::blocked) for it says every upstream of the pool
//!    is unavailable and when to try again. The rejection is logged (the `call blocked`
//!    tracing event) under the pool's name. When every member was refused for load, not
//!    health (its cap reached, or shed by adaptive throttling), the pool is busy, not down: the
//!    reason is [`Saturated`](crate::BlockedReason::Saturated) if any member was saturated, else
//!    [`Throttled`](crate::BlockedReason::Throttled), state closed.
//!
//! # Panic
//!
//! A pool built with [`max_ejected(fraction)`](crate::registry::PoolBuilder::max_ejected) (a
//! fraction in [0, 1]; default: none) does not block a call when a group has too few members
//! left, as Envoy's panic threshold does not: when no member of the whole pool admits, the
//! first group (in order) with more than `fraction` of its members open is in *panic* and
//! admits the one of them that tripped longest ago (its open period began first). So:
//!
//! - **Group order comes first.** A later group with a member that admits is preferred over
//!   panicking an earlier group: panic is the last resort of the whole pool, not of a group,
//!   as Envoy spills traffic to the next priority before any priority panics.
//! - Of several groups in panic, the earliest in order is chosen.
//! - Only members open by their own counts are panic-admitted: one isolated by hand
//!   ([`force_open`](crate::CircuitBreaker::force_open)) counts as open toward the share but is
//!   never admitted, and one half-open with its probe in flight counts as neither.
//! - A pool with [`fail_closed(true)`](crate::registry::PoolBuilder::fail_closed) never panics.
//!
//! A panic permit ([`PoolPermit::is_panic`]) records nothing: the member's breaker is open and
//! issued no permit, so the call's outcome neither extends its open period nor closes it; the
//! breaker leaves open by its own cooldown and probe, as it would outside the pool. A panic
//! call is not counted in the member's metrics; with feature `tracing` each is a `debug` event
//! `pool panic` (target `toolbreaker`) naming the pool and the member.
//!
//! # Retries
//!
//! A retry through `ToolGuard::call_pool` after a counted failure asks every member but the
//! one that just failed first (groups in order, the same rules); the failed member is asked
//! again only when no other admits.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use toolbreaker::{Config, FailureKind, Outcome, Pool, Registry};
//!
//! let (clock, _mock) = toolbreaker::quanta::Clock::mock();
//! let registry = Registry::builder()
//!     .default_config(Config::new(1, Duration::from_secs(30), Duration::from_secs(5))?)
//!     .clock(clock)
//!     .build();
//! let pool = Pool::builder("search")
//!     .group(["search-a", "search-b"])
//!     .group(["search-backup"])
//!     .max_ejected(0.5)
//!     .build(&registry)?;
//!
//! // search-a trips: the group's other member serves.
//! registry.get("search-a").try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
//! assert_eq!(pool.try_acquire().unwrap().member(), "search-b");
//! // search-b trips too: the backup group takes over, before any panic.
//! registry.get("search-b").try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
//! assert_eq!(pool.try_acquire().unwrap().member(), "search-backup");
//! // The backup trips: every group is open; the first group panics, admitting search-a,
//! // which tripped first.
//! registry.get("search-backup").try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
//! let panic = pool.try_acquire().unwrap();
//! assert!(panic.is_panic());
//! assert_eq!(panic.member(), "search-a");
//! assert_eq!(panic.record(Outcome::Success), None, "a panic permit records nothing");
//! # Ok::<(), toolbreaker::ConfigError>(())
//! ```

mod call;
mod choose;
mod members;
mod permit;

pub use self::members::Pool;
pub use self::permit::PoolPermit;
pub use crate::registry::PoolBuilder;
