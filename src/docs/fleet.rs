//! How fleet mode works: the record in Redis, its scripts, the agent (feature `redis`). The
//! rules it keeps are in [`contract`](super::contract), 12 to 20.
//!
//! # Use
//!
//! A gateway runs as many instances behind a load balancer. With feature `redis`, one registry per
//! instance shares each dependency's breaker *transitions* through Redis — never its calls: a healthy
//! call is still admitted by one local atomic load and sends no Redis command.
//!
#![cfg_attr(feature = "redis", doc = "```rust,no_run")]
#![cfg_attr(not(feature = "redis"), doc = "```ignore")]
//! use toolbreaker::{Fleet, Registry};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let fleet = Fleet::builder("redis://127.0.0.1:6379/")
//!         .prefix("gateway")      // keys and channel under this prefix
//!         .instance("gw-1")       // unique per live instance (default: pid and a random suffix)
//!         .min_instances(2)       // one instance with a broken network opens only its own breaker
//!         .build()?;              // inside a Tokio runtime: the agent task runs on it
//!     let registry = Registry::builder().fleet(fleet).build();
//!     let search = registry.get("search");
//!     assert!(search.try_acquire().is_ok());
//!     Ok(())
//! }
//! ```
//!
//! What it does, in short (the rules are the [contract](super::contract)'s 12 to 20; the record,
//! keys and scripts are below):
//!
//! - a trip on any instance opens the dependency on every instance (pub/sub, with a read of one epoch
//!   counter every sync interval as the backstop), each hearing a transition with reason `fleet`;
//! - each instance reports its run of consecutive counted failures when it changes (batched: one
//!   report however many failures came since the last); the fleet trips when the runs within the
//!   window sum to the fleet threshold (default: the dependency's own threshold) from at least
//!   `min_instances` instances;
//! - after the cooldown exactly one instance probes (a lease in Redis, `SET NX PX`); the others are
//!   blocked with `probe_in_flight`; the verdict closes or reopens every instance;
//! - each shared transition is one Lua script that checks the generation; times are the Redis
//!   server's, so instances with skewed clocks agree on when a cooldown ends;
//! - `force_open`, `force_closed` and `reset` apply to the fleet; `Registry::reload` is per instance;
//! - while Redis is down or slow, every breaker works locally (one `FleetEvent::Unreachable`), and
//!   the fleet converges on reconnect; a record it cannot read is a `FleetEvent::BadRecord` and that
//!   dependency works locally.
//!
//! # Shape
//!
//! ```text
//!  calls ──► local word (one atomic load) ──► dependency
//!               │ slow paths only: a counted failure, a cleared count, a transition,
//!               │ a call blocked waiting for the fleet's probe
//!               ▼
//!            tap (flags; wakes the agent) ──► agent task ──EVALSHA──► Redis record
//!                                                 ▲                       │ PUBLISH
//!               adopt (through the word's cell)◄──┴──── pub/sub ◄─────────┘
//!                                                 + MGET epoch every sync interval
//! ```
//!
//! One agent per registry runs on the Tokio runtime the `Fleet` was built in.
//! Its one connection (redis-rs's `ConnectionManager`, RESP3) carries the scripts and the
//! subscription, and reconnects with backoff.
//!
//! # Keys (prefix `P`, dependency `D`)
//!
//! | key | type | contents |
//! |---|---|---|
//! | `P:breaker:D` | hash | `v` (format version, `1`), `gen` (the fleet generation), `state` (`closed`, `open`, `isolated`), `at` (server ms when the state began), `lu` (server ms when the last probe lease of this open period ends; `0` if none or given back), `m` (the id of the last change by hand, so a resend applies once) |
//! | `P:votes:D` | hash, expiring after the window | one field per instance: `count at tripped` |
//! | `P:probe:D` | string with a TTL | `gen holder`: the probe lease; the holder is the instance's name and a random token per agent, so two agents given one name by mistake never share a lease |
//! | `P:epoch` | integer | bumped by every write of any record |
//! | `P:incarnation` | string | the server's time when the keys were first written after a wipe (`FLUSHALL`, a restart with no persistence) |
//!
//! Every write publishes the record on channel `P:transitions`, one line of tab-separated
//! fields: `1 epoch gen state at now holder lease_until dependency`.
//!
//! # Scripts
//!
//! Each is one Lua script run with `EVALSHA` (loaded on a `NOSCRIPT` answer), so it is
//! atomic on the server; each reads `TIME`, checks the record's shape, and answers with the
//! record as it stands:
//!
//! | script | when | what |
//! |---|---|---|
//! | sync | a dependency's first use, each reconnect, a changed or missing epoch | reads; creates the record from the instance's state if missing |
//! | report | a closed count changed, a trip on its own | writes the instance's run; trips if the rule holds (contract 14) |
//! | claim | a call wants the probe after the cooldown | takes the lease if the record is open, the cooldown (from `at` or the last lease's end) is over and no lease is held |
//! | verdict | the fleet's probe reported | closes or reopens, if the generation and the lease are the caller's |
//! | release | a granted probe slot was not used within the probe window | gives the lease back |
//! | manual | `force_open`, `force_closed`, `reset` | isolates, or closes if the generation is the one known |
//!
//! # Commands
//!
//! In the background, one `MGET` of the epoch and the incarnation per sync interval per
//! registry. The epoch counts every write and each write publishes one message, so an agent
//! that received fewer messages than the epoch moved (at two looks in a row) missed one and
//! reads every record once; so does one that finds the epoch went back (a server restored
//! from an older snapshot) or gone, or the incarnation changed or gone (a wipe). A message is
//! ordered against the agent's own replies by epoch; only a reply moves that mark, so a
//! forged message cannot cut a dependency off.
//!
//! # Time and manual clocks
//!
//! The agent turns the server's times into a breaker's with the breaker's clock as it reads
//! when the record is applied. A test on a mock clock (`RegistryBuilder::clock`) should let
//! the agent apply a change before moving the clock, or the jump counts as time that passed
//! before it. Per shared trip
//! cycle between instances: one report (the trip), one or two claims (the first answer may be
//! *wait*), one verdict, and each instance's agent reacts to the messages without a command.
//! The benchmark `fleet` (package `toolbreaker-benches`) counts them with `INFO commandstats`.
