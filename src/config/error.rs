//! [`ConfigError`]: an invalid configuration, naming the field and what is wrong with it
//! ([`Problem`]), in words for the builder's names or a file's keys.

use core::fmt;

use super::defaults::{MAX_DURATION_MS, MAX_PROBES};

/// What is wrong with a configuration field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Problem {
    /// The field is zero; it must be at least 1 (1 ms for durations).
    Zero,
    /// The duration is longer than [`MAX_DURATION`](super::MAX_DURATION).
    TooLong,
    /// The text is empty, or holds a character it may not (fleet `prefix` and `instance`:
    /// whitespace or a control character; an MCP `server` name: also a `.`); a pool's `groups`
    /// hold no group, or a group no member.
    Empty,
    /// The name is given twice (an MCP gateway's `upstream`, a pool's member in `groups`).
    Duplicate,
    /// The duration is no longer than one it must exceed (an MCP gateway's `call_time_limit`,
    /// which must be longer than every upstream's per-call timeout).
    TooShort,
    /// The number is outside its range: a ratio (`failure_rate`, `slow_call_rate`) must be in
    /// (0, 1], a `cooldown_multiplier` at least 1, a `cooldown_jitter` in [0, 1), a pool's
    /// `max_ejected` in [0, 1].
    OutOfRange,
    /// The number is larger than one it may not exceed: `minimum_calls` above a count window,
    /// `probes` above [`MAX_PROBES`].
    TooLarge,
    /// The field belongs to a rule that is not set: a `window` or `minimum_calls` with neither
    /// a failure-rate nor a slow-call rule.
    NoRule,
    /// The field needs a Tokio runtime and none is current: a health check (`probe_with`) is
    /// started on the runtime its breaker is built in.
    NoRuntime,
    /// The field needs the breaker behind an `Arc`: a health check (`probe_with`) is started
    /// by `Builder::build_arc`, not `build`.
    NotShared,
    /// The field cannot be combined with another setting: a health check (`probe_with`) is the
    /// one probe, so `probes` must be 1.
    Conflict,
}

/// An invalid configuration, naming the field.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{Config, config::Problem};
///
/// let err = Config::new(0, Duration::from_secs(1), Duration::from_secs(1)).unwrap_err();
/// assert_eq!((err.field(), err.problem()), ("failure_threshold", Problem::Zero));
/// assert_eq!(err.to_string(), "invalid breaker configuration: `failure_threshold` must be at least 1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    field: &'static str,
    problem: Problem,
}

impl ConfigError {
    pub(crate) const fn new(field: &'static str, problem: Problem) -> Self {
        ConfigError { field, problem }
    }

    /// The offending field: `failure_threshold`, `cooldown`, `probe_timeout`, `failure_rate`,
    /// `slow_call_threshold`, `slow_call_rate`, `window`, `minimum_calls`,
    /// `cooldown_multiplier`, `max_cooldown`, `cooldown_jitter`, `probes`,
    /// `adaptive_throttling.k`, `adaptive_throttling.window` or `probe_with` (a
    /// health check, feature `tokio`); for a fleet (feature `redis`), `prefix`, `instance`, `fleet_failure_threshold`, `min_instances`, `window`,
    /// `sync_interval`, `command_timeout` or `probe_window`; for MCP (feature `mcp`), `server`,
    /// `upstream`, `per_call_timeout` or `call_time_limit`; for a pool, `groups` or
    /// `max_ejected`; for the cap on calls in flight, `max_in_flight` or
    /// `adaptive_concurrency.FIELD` (`initial`, `min`, `max`, `backoff_ratio`,
    /// `latency_threshold`, `tolerance`, `smoothing`, `long_window`).
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// What is wrong with it.
    pub fn problem(&self) -> Problem {
        self.problem
    }
}

impl ConfigError {
    /// What is wrong, in words: the field written as `subject`, and every other setting the
    /// words mention named by `name` (the builder's names for [`Display`](fmt::Display); a
    /// configuration file's keys for the TOML path, so a file's error never names a builder
    /// method).
    pub(crate) fn explain(
        &self,
        subject: &str,
        name: &dyn Fn(&'static str) -> &'static str,
    ) -> String {
        let field = self.field;
        match (self.problem, field) {
            (
                Problem::Zero,
                "failure_threshold"
                | "fleet_failure_threshold"
                | "min_instances"
                | "probes"
                | "max_in_flight"
                | "adaptive_concurrency.min"
                | "adaptive_concurrency.long_window",
            ) => format!("{subject} must be at least 1"),
            (Problem::TooShort, "adaptive_concurrency.max") => format!(
                "{subject} must be at least `{}`",
                name("adaptive_concurrency.min")
            ),
            (Problem::OutOfRange, "adaptive_concurrency.initial") => format!(
                "{subject} must be from `{}` to `{}`",
                name("adaptive_concurrency.min"),
                name("adaptive_concurrency.max")
            ),
            (Problem::OutOfRange, "adaptive_concurrency.backoff_ratio") => {
                format!("{subject} must be a ratio above 0 and below 1")
            }
            (Problem::OutOfRange, "adaptive_concurrency.tolerance") => {
                format!("{subject} must be a finite number of at least 1")
            }
            (Problem::Zero, "adaptive_concurrency.latency_threshold") => {
                format!("{subject} must be longer than zero")
            }
            (Problem::Empty, "groups") => format!(
                "{subject} must hold at least one group, each group at least one member, and \
                 each member a name (non-empty, no control characters)"
            ),
            (Problem::Empty, "name") => {
                format!("{subject} must be non-empty text with no control characters")
            }
            (Problem::Duplicate, "groups") => format!("{subject} must name each member once"),
            (Problem::TooLarge, "groups") => format!(
                "{subject} names a member the registry has no room for (`max_dependencies`): it \
                 would share the overflow breaker"
            ),
            (Problem::OutOfRange, "max_ejected") => {
                format!("{subject} must be a fraction of at least 0 and at most 1")
            }
            (Problem::Empty, "server") => format!(
                "{subject} must be non-empty text with no `.`, whitespace or control characters"
            ),
            (Problem::Empty, _) => {
                format!("{subject} must be non-empty text with no whitespace or control characters")
            }
            (Problem::Duplicate, "probe_with") => {
                format!("{subject}: the breaker has a health check already")
            }
            (Problem::Duplicate, _) => format!("{subject} names must be unique"),
            (Problem::NoRuntime, _) => format!(
                "{subject} needs a Tokio runtime with its time driver (`enable_time`): build the \
                 breaker inside one (its prober runs there)"
            ),
            (Problem::NotShared, _) => format!(
                "{subject} needs the breaker behind an `Arc`: build it with `build_arc`, which starts the check"
            ),
            (Problem::Conflict, _) => {
                format!("{subject} is the one probe: `{}` must be 1", name("probes"))
            }
            (Problem::TooShort, "call_time_limit") => {
                format!("{subject} must be longer than every upstream's per-call timeout")
            }
            (Problem::TooShort, "max_cooldown") => format!(
                "{subject} must be at least the cooldown (`{}`)",
                name("cooldown")
            ),
            (Problem::TooShort, _) => format!("{subject} is too short"),
            (Problem::OutOfRange, "cooldown_multiplier") => {
                format!("{subject} must be a finite number of at least 1")
            }
            (Problem::OutOfRange, "cooldown_jitter") => {
                format!("{subject} must be a fraction of at least 0 and below 1")
            }
            (Problem::OutOfRange, "retry_budget.ratio") => {
                format!("{subject} must be a number from 0 to 1000")
            }
            (Problem::OutOfRange, "adaptive_throttling.k") => {
                format!("{subject} must be a finite number of at least 1 (2 is the usual choice)")
            }
            (Problem::OutOfRange, "hint_jitter") => {
                format!("{subject} must be a fraction from 0 to 1")
            }
            (Problem::OutOfRange, _) => format!("{subject} must be a ratio above 0 and at most 1"),
            (Problem::TooLarge, "minimum_calls") => format!(
                "{subject} must be at most the window's number of calls (`{}`)",
                name("window")
            ),
            (Problem::TooLarge, "max_in_flight" | "adaptive_concurrency.max") => {
                format!("{subject} must be below {}", u32::MAX)
            }
            (Problem::TooLarge, "probes") => format!("{subject} must be at most {MAX_PROBES}"),
            (Problem::TooLarge, _) => format!("{subject} is too large"),
            (Problem::NoRule, _) => format!(
                "{subject} needs a rate rule (`{}` or `{}`)",
                name("failure_rate"),
                name("slow_calls")
            ),
            (Problem::Zero, "slow_call_threshold") => {
                format!("{subject} must be longer than zero")
            }
            (Problem::Zero, "window" | "minimum_calls") => {
                format!("{subject} must be at least 1 (1 ms for a time window)")
            }
            (Problem::Zero, _) => format!("{subject} must be at least 1 ms"),
            (Problem::TooLong, _) => {
                format!("{subject} must be at most {MAX_DURATION_MS} ms (about 35 years)")
            }
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid breaker configuration: ")?;
        f.write_str(&self.explain(&format!("`{}`", self.field), &|name| name))
    }
}

impl std::error::Error for ConfigError {}
