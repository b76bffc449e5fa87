//! Configuring breakers: the rules that trip them (consecutive failures, a failure rate, slow
//! calls), the cooldown's shape, several probes, their defaults beside resilience4j's and Polly's,
//! a registry's configuration from a TOML file, live reload, and changes by hand.
//!
//! The guarantees these keep are the [contract](super::contract)'s rules 9 to 11 and 25 to 32.
//!
//! # Rate rules
//!
//! A breaker trips on `failure_threshold` consecutive counted failures (5 by default). A rate
//! rule trips it on a share of the judged calls in a window instead, or as well: counted
//! failures ([`Builder::failure_rate`](crate::breaker::Builder::failure_rate)), or calls that
//! took too long ([`Builder::slow_calls`](crate::breaker::Builder::slow_calls)), over the last
//! `n` calls or the last `t` of time ([`Window`](crate::Window)), once `minimum_calls` are in it.
//! The cooldown can back off and spread
//! ([`cooldown_backoff`](crate::breaker::Builder::cooldown_backoff),
//! [`cooldown_jitter`](crate::breaker::Builder::cooldown_jitter)), and half-open can admit
//! several probes ([`probes`](crate::breaker::Builder::probes)).
//!
//! ```rust
//! use std::time::Duration;
//! use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State, Window};
//!
//! fn main() -> Result<(), toolbreaker::ConfigError> {
//!     // A dependency that fails every third call never fails 5 times in a row; a rate rule sees it.
//!     let breaker = CircuitBreaker::builder()
//!         .failure_rate(0.3) // trip at 30 % counted failures…
//!         .window(Window::Calls(20)) // …of the last 20 judged calls…
//!         .minimum_calls(6) // …once at least 6 are in the window
//!         .slow_calls(Duration::from_secs(5), 0.5) // and at half the calls taking 5 s or more
//!         .build()?;
//!     for call in 1..=6 {
//!         let outcome = match call % 3 {
//!             0 => Outcome::Failure(FailureKind::Unavailable),
//!             _ => Outcome::Success,
//!         };
//!         breaker.try_acquire().expect("closed").record(outcome);
//!     }
//!     assert_eq!(breaker.state(), State::Open);
//!     Ok(())
//! }
//! ```
//!
//! # Defaults, beside resilience4j's and Polly's
//!
//! | default | toolbreaker | resilience4j 2.x | Polly v8 |
//! |---|---|---|---|
//! | failure ratio | none: set it | 50 % | 0.1 |
//! | window | last 100 calls | last 100 calls | 30 s |
//! | minimum calls | 10 (at most the window) | 100 | 100 |
//! | slow calls | off: set threshold and ratio | 60 s, 100 % | – |
//! | probes in half-open | 1 | 10 | 1 |
//! | open for (cooldown) | 30 s | 60 s | 5 s |
//! | cooldown backoff | off (`cooldown_backoff`) | off (an interval function) | off (a break-duration generator) |
//! | cooldown jitter | off (`cooldown_jitter`) | – | – |
//! | open time from the dependency's hint | up to 10 min, +0–10 % (`max_hinted_open`, `hint_jitter`) | – | – |
//!
//! The window follows resilience4j's count window. The minimum does not: an agent calls a tool a
//! few dozen times a run, and at 100 the rule would never judge (the fault of a proxy that could not
//! open before its 100-call window filled); 10 still keeps one unlucky call from tripping. No ratio
//! is assumed: the two libraries' defaults differ fivefold. A breaker with only a rate rule has no
//! consecutive rule; set `failure_threshold` too to keep both. One probe follows Polly: a probe is a
//! call sent to a dependency that was failing, and an agent's tool call may have effects, so
//! admitting ten at once (resilience4j) is the user's choice. The cooldown stays fixed unless asked,
//! as in both libraries.
//!
//! # Open time from the dependency
//!
//! A rate-limited failure often says how long to stay away: `Retry-After`, `retry-after-ms`,
//! `x-ratelimit-reset-requests`/`-tokens` (OpenAI's `6m0s` form), and the IETF `RateLimit` and
//! `RateLimit-Reset` fields; [`classify::http`](crate::classify::http) reads them all into
//! [`FailureKind::RateLimited`](crate::FailureKind::RateLimited) and keeps the longest. The
//! breaker then stays open for the longer of its cooldown and the hint, capped at
//! [`max_hinted_open`](crate::breaker::Builder::max_hinted_open) (10 minutes by default) and
//! spread upward by [`hint_jitter`](crate::breaker::Builder::hint_jitter) (0 to +10 %), so that
//! callers told the same thing do not come back in the same second. A re-trip, or a later hint
//! while open, never shortens the deadline; failures counted before the trip lend it their hints
//! too. [`open_on_long_hint`](crate::breaker::Builder::open_on_long_hint) (off by default) trips
//! at once on a hint longer than the cooldown. In fleet mode the deadline is the fleet's.
//!
//! # Adaptive throttling
//!
//! A dependency that starts failing part of its calls (an overloaded upstream answering some of
//! them with 503) is often made worse by a client that keeps sending all of them until its
//! breaker trips. [`Builder::adaptive_throttling`](crate::breaker::Builder::adaptive_throttling)
//! adds the client-side throttling of the Google SRE book (chapter "Handling Overload", section
//! "Client-side throttling"): while closed, a call is shed locally, before anything is sent, with
//! probability `max(0, (requests − k·accepts) / (requests + 1))` over the last window, where
//! requests are the closed-state calls whose outcome was recorded plus the calls shed, and
//! accepts those the dependency answered (a success or `Ignored`; a counted failure is not an
//! accept). With the book's `k = 2`, nothing is shed while at least half the calls are
//! accepted; past that, a growing share is shed as the failures grow, before a rule trips. A
//! shed call is `Blocked` with reason `throttled`, state closed, and a retry-after of a tenth of
//! the window; it is counted only in `Metrics::throttled` and logged as a blocked call, never a
//! failure or a success, never in a rate rule's window, never a transition, never sent to the
//! fleet, never a pool's judgement of a member's health. A probe is never shed.
//!
//! The window is counted in 10 buckets of a tenth of it, from snapshots of the counts taken
//! whenever the probability is computed (at a counted failure, a shed call, and, while shedding,
//! each outcome and the first admission of each bucket). When none was taken at the window's
//! start (the dependency was healthy, so nothing was computed), the counts between the snapshots
//! on either side of it are taken as spread evenly in time. Calls shed are requests too, so once
//! the dependency recovers the probability falls over a few windows (at each, to about `2p − 1`
//! with `k = 2`), as the book's throttle does; a close after a probe starts the window afresh, so
//! a dependency that recovered while the breaker was open is not shed over its old failures.
//!
//! In a file: `adaptive_throttling = { k = 2.0, window_ms = 10000 }` in `[default]` or a
//! dependency's section, or `adaptive_throttling = false` to turn off what `[default]` set; an
//! error names `adaptive_throttling.k` or `adaptive_throttling.window_ms`. A reload that changes
//! the window starts it afresh; one that changes `k` judges the window as it stands.
//!
//! # Live configuration and changes by hand
//!
//! ```toml
//! # breakers.toml — every key optional; a section's missing keys come from [default]
//! [default]
//! failure_threshold = 5     # consecutive counted failures that trip the breaker
//! cooldown_ms = 30000       # ms open before a probe
//! probe_timeout_ms = 30000  # ms a probe may take before it counts as failed
//! # Each dependency's own retry budget: retries at most 20 % of first attempts over 10 s, plus
//! # 10 per second (keys left out take these values; a section's own table replaces this one,
//! # and `retry_budget = false` gives a dependency none). See `RetryBudget`.
//! retry_budget = { ratio = 0.2, min_per_second = 10, window_ms = 10000 }
//!
//! [dependencies.search]
//! failure_threshold = 3
//! cooldown_ms = 2000
//!
//! [dependencies.quotes]
//! failure_rate = 0.5            # the rate rule: 50 % of the judged calls…
//! window_calls = 20             # …of the last 20 (or window_ms = 30000: of the last 30 s)
//! minimum_calls = 10            # judged once the window holds 10
//! slow_call_threshold_ms = 2000 # a call of 2 s or more is slow…
//! slow_call_rate = 0.8          # …and 80 % slow calls trip it too
//! cooldown_multiplier = 2       # each reopen without a close doubles the cooldown…
//! max_cooldown_ms = 60000       # …up to a minute
//! cooldown_jitter = 0.1         # each cooldown spread by ±10 %
//! probes = 3                    # half-open admits 3 probes; all must succeed to close
//! max_hinted_open_ms = 300000   # a 429's Retry-After keeps it open up to 5 min (0: ignore hints)
//! hint_jitter = 0.2             # a hinted deadline spread by 0 to +20 % of its hint
//! open_on_long_hint = true      # a 429 asking for longer than the cooldown trips at once
//! max_in_flight = 8             # at most 8 calls in flight; more are refused as saturated
//! adaptive_concurrency = { algorithm = "aimd", min = 2, max = 8, backoff_ratio = 0.9, latency_threshold_ms = 3000 }
//! adaptive_throttling = { k = 2.0, window_ms = 10000 }  # shed calls as 503s outgrow accepts
//!
//! # A pool of equivalent upstreams (`Registry::pool("search-any")`): its members are
//! # dependencies above, each with its own breaker, in priority groups tried in order.
//! [pools.search-any]
//! groups = [["search-eu", "search-us"], ["search"]]  # required: groups of dependency names
//! max_ejected = 0.5             # optional: past half of a group open, panic (default: never)
//! fail_closed = false           # optional: true never panics, whatever max_ejected says
//! ```
//!
//! `RegistryConfig::from_file` reads it (feature `toml`); `Registry::reload_file` puts a new version
//! in force without a restart and returns a `Reload`: what changed, one `ConfigChange` per dependency
//! (its `Display` is one line for an operator: `search: failure_threshold 3 -> 5, cooldown_ms 2000 ->
//! 1000`), and `unmatched()`, the sections no breaker uses yet. A file that does not parse or
//! validate — a misspelt key, a zero, a negative, a number too large (the error gives the largest
//! accepted), a string where a number belongs, or nothing at all (an empty file) — is refused with a
//! `ConfigFileError` naming the dependency, the field (by the file's key, `slow_call_rate`,
//! never the builder's `slow_calls`) and (for syntax) the line, and the
//! configuration in force stays in force. A misspelt *section* (`[dependencies.serch]`) is valid
//! TOML for a dependency nothing has asked for, while `search` keeps the default: a program that
//! knows its dependencies refuses it before putting the file in force, with
//! `RegistryConfig::unknown_dependencies(known)` and `registry::closest_name` for the "did you
//! mean" (the gateway example does, at start and on reload). A file cut short can still be valid TOML (a missing section means "use the default"),
//! and no parser can tell: replace the file by writing the new one beside it and renaming it into
//! place, so a reload never reads it half-written. A `[pools.NAME]` table takes only `groups`,
//! `max_ejected` (a fraction from 0 to 1) and `fail_closed`; an empty group, a member named
//! twice or an unknown key is refused with a `ConfigFileError` naming the pool (`pool()`) and
//! the key. A reload that changes a pool's groups builds a new pool over the same breakers, so
//! no member's state is lost; `Registry::pool` gives it from then on (a handle from before keeps
//! the old groups). The choice of a member, the panic rule and failover are in
//! [`pool`](crate::pool). `force_open`,
//! `force_closed` and `reset` on a dependency's breaker isolate it, close it, or clear it.
