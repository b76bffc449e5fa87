//! Validated breaker settings: [`Config`], and [`ConfigError`] naming the field that is wrong.
//!
//! Imports nothing above the time seam: every other layer builds on it.

use core::fmt;
use core::time::Duration;

use crate::time::millis_ceil;

/// Consecutive counted failures that trip a breaker unless configured otherwise.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 5;
/// How long a breaker stays open before a probe, unless configured otherwise.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);
/// The probe's lease unless configured otherwise.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest cooldown or probe timeout a breaker accepts: 2^40 ms, about 35 years.
///
/// The state word's clock runs about 104 years past a breaker's construction before it
/// saturates; with durations up to this one, every deadline of a breaker that opens within its
/// first 35 years of life falls inside that range, so no cooldown is longer than the clock.
pub const MAX_DURATION: Duration = Duration::from_millis(MAX_DURATION_MS);
pub(crate) const MAX_DURATION_MS: u64 = 1 << 40;

/// A validated breaker configuration.
///
/// Durations are kept in whole milliseconds: a duration with a fraction of a millisecond is
/// rounded up to the next one, so a cooldown never ends early.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::Config;
///
/// let config = Config::new(3, Duration::from_secs(10), Duration::from_secs(5))?;
/// assert_eq!(config.failure_threshold(), 3);
/// assert_eq!(config.cooldown(), Duration::from_secs(10));
/// assert_eq!(Config::default().failure_threshold(), 5);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    failure_threshold: u32,
    cooldown_ms: u64,
    probe_timeout_ms: u64,
}

impl Config {
    /// Validate a configuration.
    ///
    /// - `failure_threshold`: consecutive counted failures that trip the breaker (closed → open).
    /// - `cooldown`: how long the breaker stays open before it admits one probe.
    /// - `probe_timeout`: the probe's lease; a probe that has not reported within it counts as a
    ///   failed probe, and the cooldown restarts from the lease's end.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the field when `failure_threshold` is zero, or when a duration is
    /// zero or longer than [`MAX_DURATION`]. Nothing is clamped.
    pub fn new(
        failure_threshold: u32,
        cooldown: Duration,
        probe_timeout: Duration,
    ) -> Result<Config, ConfigError> {
        if failure_threshold == 0 {
            return Err(ConfigError::new("failure_threshold", Problem::Zero));
        }
        Ok(Config {
            failure_threshold,
            cooldown_ms: duration_field("cooldown", cooldown)?,
            probe_timeout_ms: duration_field("probe_timeout", probe_timeout)?,
        })
    }

    /// Consecutive counted failures that trip the breaker.
    pub const fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// How long the breaker stays open before a probe, in whole milliseconds.
    pub const fn cooldown(&self) -> Duration {
        Duration::from_millis(self.cooldown_ms)
    }

    /// The probe's lease, in whole milliseconds.
    pub const fn probe_timeout(&self) -> Duration {
        Duration::from_millis(self.probe_timeout_ms)
    }

    /// The configuration a breaker's live settings hold; they were validated on the way in.
    pub(crate) fn from_limits(limits: Limits) -> Config {
        Config {
            failure_threshold: u32::try_from(limits.failure_threshold).unwrap_or(u32::MAX),
            cooldown_ms: limits.cooldown_ms,
            probe_timeout_ms: limits.probe_timeout_ms,
        }
    }

    pub(crate) const fn limits(&self) -> Limits {
        Limits {
            failure_threshold: self.failure_threshold as u64,
            cooldown_ms: self.cooldown_ms,
            probe_timeout_ms: self.probe_timeout_ms,
        }
    }
}

impl Default for Config {
    /// Threshold [`DEFAULT_FAILURE_THRESHOLD`], cooldown [`DEFAULT_COOLDOWN`], probe timeout
    /// [`DEFAULT_PROBE_TIMEOUT`].
    fn default() -> Self {
        Config {
            failure_threshold: DEFAULT_FAILURE_THRESHOLD,
            cooldown_ms: millis_ceil(DEFAULT_COOLDOWN),
            probe_timeout_ms: millis_ceil(DEFAULT_PROBE_TIMEOUT),
        }
    }
}

/// A validated configuration in the word's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Consecutive counted failures that trip the breaker, at least 1.
    pub(crate) failure_threshold: u64,
    /// Cooldown in ms, at least 1.
    pub(crate) cooldown_ms: u64,
    /// Probe lease in ms, at least 1.
    pub(crate) probe_timeout_ms: u64,
}

/// A name field (a fleet's `prefix` and `instance`, an MCP `server`): non-empty text with no
/// whitespace or control character, else [`Problem::Empty`] naming `field`.
#[cfg(any(feature = "redis", feature = "mcp"))]
pub(crate) fn name_field(field: &'static str, text: &str) -> Result<(), ConfigError> {
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::new(field, Problem::Empty));
    }
    Ok(())
}

/// A duration field in whole milliseconds, rounded up, else [`Problem::Zero`] or
/// [`Problem::TooLong`] naming `field`.
pub(crate) fn duration_field(field: &'static str, value: Duration) -> Result<u64, ConfigError> {
    if value.is_zero() {
        return Err(ConfigError::new(field, Problem::Zero));
    }
    Some(millis_ceil(value))
        .filter(|&ms| ms <= MAX_DURATION_MS)
        .ok_or(ConfigError::new(field, Problem::TooLong))
}

/// What is wrong with a configuration field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Problem {
    /// The field is zero; it must be at least 1 (1 ms for durations).
    Zero,
    /// The duration is longer than [`MAX_DURATION`].
    TooLong,
    /// The text is empty, or holds a character it may not (fleet `prefix` and `instance`:
    /// whitespace or a control character; an MCP `server` name: also a `.`).
    Empty,
    /// The name is given twice (an MCP gateway's `upstream`).
    Duplicate,
    /// The duration is no longer than one it must exceed (an MCP gateway's `call_time_limit`,
    /// which must be longer than every upstream's per-call timeout).
    TooShort,
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

    /// The offending field: `failure_threshold`, `cooldown` or `probe_timeout`; for a fleet
    /// (feature `redis`), `prefix`, `instance`, `fleet_failure_threshold`, `min_instances`, `window`,
    /// `sync_interval`, `command_timeout` or `probe_window`; for MCP (feature `mcp`), `server`,
    /// `upstream`, `per_call_timeout` or `call_time_limit`.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// What is wrong with it.
    pub fn problem(&self) -> Problem {
        self.problem
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid breaker configuration: ")?;
        let field = self.field;
        match (self.problem, field) {
            (Problem::Zero, "failure_threshold" | "fleet_failure_threshold" | "min_instances") => {
                write!(f, "`{field}` must be at least 1")
            }
            (Problem::Empty, "server") => write!(
                f,
                "`server` must be non-empty text with no `.`, whitespace or control characters"
            ),
            (Problem::Empty, _) => write!(
                f,
                "`{field}` must be non-empty text with no whitespace or control characters"
            ),
            (Problem::Duplicate, _) => write!(f, "`{field}` names must be unique"),
            (Problem::TooShort, "call_time_limit") => write!(
                f,
                "`call_time_limit` must be longer than every upstream's per-call timeout"
            ),
            (Problem::TooShort, _) => write!(f, "`{field}` is too short"),
            (Problem::Zero, _) => write!(f, "`{field}` must be at least 1 ms"),
            (Problem::TooLong, _) => write!(
                f,
                "`{field}` must be at most {MAX_DURATION_MS} ms (about 35 years)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn each_invalid_field_is_named_and_nothing_is_clamped() {
        let cases = [
            (Config::new(0, S, S), "failure_threshold", Problem::Zero),
            (Config::new(1, Duration::ZERO, S), "cooldown", Problem::Zero),
            (
                Config::new(1, S, Duration::ZERO),
                "probe_timeout",
                Problem::Zero,
            ),
            (
                Config::new(1, MAX_DURATION + Duration::from_millis(1), S),
                "cooldown",
                Problem::TooLong,
            ),
            (
                Config::new(1, S, Duration::MAX),
                "probe_timeout",
                Problem::TooLong,
            ),
        ];
        for (result, field, problem) in cases {
            let err = result.unwrap_err();
            assert_eq!((err.field(), err.problem()), (field, problem));
            assert!(err.to_string().contains(field), "{err}");
        }
    }

    #[test]
    fn the_limits_of_every_field_are_accepted() {
        let c = Config::new(u32::MAX, MAX_DURATION, Duration::from_millis(1)).unwrap();
        assert_eq!(c.failure_threshold(), u32::MAX);
        assert_eq!(c.cooldown(), MAX_DURATION);
        assert_eq!(c.probe_timeout(), Duration::from_millis(1));
    }

    #[test]
    fn sub_millisecond_durations_round_up_so_a_cooldown_never_ends_early() {
        let c = Config::new(1, Duration::from_nanos(1), Duration::from_micros(2_001)).unwrap();
        assert_eq!(c.cooldown(), Duration::from_millis(1));
        assert_eq!(c.probe_timeout(), Duration::from_millis(3));
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let c = Config::default();
        assert_eq!(
            (c.failure_threshold(), c.cooldown(), c.probe_timeout()),
            (5, Duration::from_secs(30), Duration::from_secs(30))
        );
    }
}
