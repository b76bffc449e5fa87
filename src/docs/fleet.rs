//! How fleet mode works: the record in Redis, its scripts, the worker (feature `redis`). The
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
//!         .build()?;              // inside a Tokio runtime: the worker task runs on it
//!     let registry = Registry::builder().fleet(fleet).build();
//!     // Wait for Redis at start: a wrong password is an error here (`FleetError::Refused`), not
//!     // an outage; a timeout leaves the breakers working locally while the worker goes on trying.
//!     registry.fleet().unwrap().connected(std::time::Duration::from_secs(5)).await?;
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
//! - after the cooldown exactly one instance probes (a lease in Redis, `SET NX PX`, claimed by
//!   the workers when the cooldown ends, so the first call after it is the probe on the instance
//!   that won it); the others are blocked with `probe_in_flight` for the lease's remaining time;
//!   the verdict closes or reopens every instance; a health check
//!   (`Builder::probe_with`, `CircuitBreaker::start_health_check`) runs on the lease's holder
//!   only, once per fleet;
//! - each shared transition is one Lua script that checks the generation; times are the Redis
//!   server's, so instances with skewed clocks agree on when a cooldown ends;
//! - `force_open`, `force_closed` and `reset` apply to the fleet; `Registry::reload` is per instance;
//! - while Redis is down or slow, every breaker works locally (one `FleetEvent::Unreachable`), and
//!   the fleet converges on reconnect; a record it cannot read is a `FleetEvent::BadRecord` and that
//!   dependency works locally; a refusal (a wrong password, an ACL) is a configuration error
//!   (`FleetEvent::Refused`, an error-level event, `FleetError::Refused` from `connected`);
//! - a prefix may hold any character (its `:` and `%` are escaped in the keys, so no two fleets'
//!   keys meet); records of dependencies no instance uses expire after `record_ttl` (default 1
//!   day); a password in a URL is never printed (`fleet::redact`).
//!
//! # Shape
//!
//! ```text
//!  calls ──► local word (one atomic load) ──► dependency
//!               │ slow paths only: a counted failure, a cleared count, a transition,
//!               │ a call blocked waiting for the fleet's probe
//!               ▼
//!            tap (flags; wakes the worker) ──► worker task ──EVALSHA──► Redis record
//!                                                 ▲                       │ PUBLISH
//!               adopt (through the word's cell)◄──┴──── pub/sub ◄─────────┘
//!                                                 + MGET epoch every sync interval
//! ```
//!
//! One worker per registry runs on the Tokio runtime the `Fleet` was built in.
//! Its one connection (redis-rs's `ConnectionManager`, RESP3) carries the scripts and the
//! subscription, and reconnects with backoff.
//!
//! # Keys (prefix `P`, dependency `D`)
//!
//! `P` stands for the prefix as it is written in a name: its `%` as `%25` and its `:` as
//! `%3A` (percent-encoding of those two characters; a prefix with neither, such as the
//! default `toolbreaker`, is written as it is). The written prefix thus holds no `:`, so the
//! first `:` of a name ends it and the prefix can be read back: no two fleets' names meet,
//! whatever their prefixes and dependency names. After it comes the role: `breaker`,
//! `votes`, `probe` followed by `:D` (the dependency is the rest of the name, whatever it
//! holds), or `epoch`, `incarnation`, `transitions` alone. Prefix `gw:breaker` writes its
//! epoch as `gw%3Abreaker:epoch`, apart from prefix `gw`'s record of a dependency named
//! `epoch`, `gw:breaker:epoch`. The crate uses no hash tags: a fleet's scripts touch several
//! of its keys at once, so a fleet needs one Redis server (or a primary with replicas), not a
//! Cluster.
//!
//! | key | type | contents |
//! |---|---|---|
//! | `P:breaker:D` | hash, expiring after the record TTL (`FleetBuilder::record_ttl`, default 1 day) | `v` (format version, `1`), `gen` (the fleet generation), `state` (`closed`, `open`, `isolated`), `at` (server ms when the state began), `lu` (server ms when the last probe lease of this open period ends; `0` if none or given back), `hu` (server ms when the hint of a rate-limited failure lets this open period end, capped and spread where it was heard; `0` if none; a record without it reads as `0`), `m` (the id of the last change by hand, so a resend applies once) |
//! | `P:votes:D` | hash, expiring after the window | one field per instance: `count at tripped` |
//! | `P:probe:D` | string with a TTL | `gen holder`: the probe lease; the holder is the instance's name and a random token per worker, so two workers given one name by mistake never share a lease |
//! | `P:epoch` | integer | bumped by every write of any record |
//! | `P:incarnation` | string | the server's time when the keys were first written after a wipe (`FLUSHALL`, a restart with no persistence) |
//!
//! A record expires once idle: every write and every sync sets its expiry again, and each
//! worker syncs every dependency its registry holds once a third of the TTL, so a record in
//! use is kept and the record of a dependency name no instance uses any more leaves Redis
//! after the TTL (the fleet's counterpart of the registry's idle eviction, which fleet mode
//! turns off). A record that expires while in use is rebuilt from the instances, as after a
//! wipe. The epoch and incarnation keys, one each per prefix, do not expire.
//!
//! Every write publishes the record on channel `P:transitions`, one line of tab-separated
//! fields: `1 epoch gen state at now holder lease_until hinted_until dependency`.
//!
//! A dependency's hint (a 429's `Retry-After` and the rate-limit headers: see
//! [`Builder::max_hinted_open`](crate::breaker::Builder::max_hinted_open)) is the fleet's too: the
//! instance whose report trips the record, or whose probe's verdict reopens it, sends the time
//! left to its period's hinted end, the record keeps it as `hu`, every instance that adopts the
//! open record keeps it for its own open period (so its callers are told the hinted wait), and
//! the claim grants no lease before it. A longer hint heard on an instance after the record opened
//! lengthens that instance's period only; the fleet's deadline is the one set at the trip or the
//! reopen.
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
//! | claim | the cooldown ends (once per open period: from `at`, or from the last lease's end if it ran out), or a call wants the probe after it | takes the lease if the record is open, the cooldown (from `at` or the last lease's end) is over, so is the hinted end (`hu`), and no lease is held |
//! | verdict | the fleet's probe reported | closes or reopens, if the generation and the lease are the caller's |
//! | release | a granted probe slot was not used within the probe window | gives the lease back |
//! | manual | `force_open`, `force_closed`, `reset` | isolates, or closes if the generation is the one known |
//!
//! # Commands
//!
//! In the background, one `MGET` of the epoch and the incarnation per sync interval per
//! registry. The epoch counts every write and each write publishes one message, so a worker
//! that received fewer messages than the epoch moved (at two looks in a row) missed one and
//! reads every record once; so does one that finds the epoch went back (a server restored
//! from an older snapshot) or gone, or the incarnation changed or gone (a wipe). A message is
//! ordered against the worker's own replies by epoch; only a reply moves that mark, so a
//! forged message cannot cut a dependency off.
//!
//! # Refusals, timeouts and credentials
//!
//! An unreachable server (a connection refused, no answer within the command timeout, a
//! server loading or read-only) is an outage: every breaker works locally, the worker tries
//! again every sync interval, and one `FleetEvent::Unreachable` is told per outage (a
//! timeout says `no answer within the command timeout`). A refusal of this instance
//! (`WRONGPASS`, `NOAUTH`: a wrong or missing password or user; `NOPERM`: the user's ACL) is
//! a configuration error, not an outage: one `FleetEvent::Refused`, an error-level `tracing`
//! event, every breaker local, and the worker does not ask again. `FleetHandle::connected`
//! waits for the first connection at start (`Ok`), or returns `FleetError::Refused`, or
//! `FleetError::Timeout` with the last error. Every URL the crate prints or tells (in
//! `FleetError`, events, `tracing`) passes through `fleet::redact`, which replaces its
//! password with `***`.
//!
//! # Time and manual clocks
//!
//! The worker turns the server's times into a breaker's with the breaker's clock as it reads
//! when the record is applied. A test on a mock clock (`RegistryBuilder::clock`) should let
//! the worker apply a change before moving the clock, or the jump counts as time that passed
//! before it. Per shared trip
//! cycle between instances: one report (the trip), one or two claims per instance at the
//! cooldown's end (every worker claims then; one wins, the others are answered *held*, and a
//! first answer may be *wait*), one verdict (or, when no call takes the winner's grant within the
//! probe window, one release, and a claim again only when a call wants the probe), and each
//! instance's worker reacts to the messages without a command.
//! The benchmark `fleet` (package `toolbreaker-benches`) counts them with `INFO commandstats`.
