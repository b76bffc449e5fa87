//! Validated breaker settings and the builder that makes them.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

use crate::breaker::Extras;
use crate::observe::{Listener, TransitionEvent};
use crate::state::{self, Limits};

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
const MAX_DURATION_MS: u64 = 1 << 40;

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
            cooldown_ms: DEFAULT_COOLDOWN.as_millis() as u64,
            probe_timeout_ms: DEFAULT_PROBE_TIMEOUT.as_millis() as u64,
        }
    }
}

fn duration_field(field: &'static str, value: Duration) -> Result<u64, ConfigError> {
    if value.is_zero() {
        return Err(ConfigError::new(field, Problem::Zero));
    }
    state::duration_to_ms(value)
        .filter(|&ms| ms <= MAX_DURATION_MS)
        .ok_or(ConfigError::new(field, Problem::TooLong))
}

/// Builds a [`CircuitBreaker`](crate::CircuitBreaker); start from
/// [`CircuitBreaker::builder`](crate::CircuitBreaker::builder).
///
/// Defaults: threshold 5, cooldown 30 s, probe timeout 30 s, the system's monotonic clock
/// (`quanta::Clock::new()`).
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    failure_threshold: u32,
    cooldown: Duration,
    probe_timeout: Duration,
    clock: Option<quanta::Clock>,
    name: Option<Arc<str>>,
    listener: Option<Listener>,
    metrics: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            failure_threshold: DEFAULT_FAILURE_THRESHOLD,
            cooldown: DEFAULT_COOLDOWN,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            clock: None,
            name: None,
            listener: None,
            metrics: false,
        }
    }
}

impl Builder {
    /// Consecutive counted failures that trip the breaker (default 5). Validated by `build`.
    pub fn failure_threshold(mut self, failures: u32) -> Self {
        self.failure_threshold = failures;
        self
    }

    /// How long the breaker stays open before it admits a probe (default 30 s). Validated by `build`.
    pub fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// The probe's lease (default 30 s). Validated by `build`.
    pub fn probe_timeout(mut self, probe_timeout: Duration) -> Self {
        self.probe_timeout = probe_timeout;
        self
    }

    /// Start from a validated [`Config`].
    pub fn config(mut self, config: Config) -> Self {
        self.failure_threshold = config.failure_threshold();
        self.cooldown = config.cooldown();
        self.probe_timeout = config.probe_timeout();
        self
    }

    /// The clock the breaker reads. Tests pass `quanta::Clock::mock()` and advance it by hand.
    pub fn clock(mut self, clock: quanta::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The dependency's name, carried by the breaker's events and metrics (default: empty).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(Arc::from(name.into()));
        self
    }

    /// Call `listener` after each transition of this breaker (for alerts), with the dependency's
    /// name and the transition. It is called once per transition, by the caller whose write made
    /// it, after the write and outside any retry loop, so it may take its time; but that caller
    /// is waiting on it. A later call replaces an earlier listener.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, TransitionReason};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let breaker = CircuitBreaker::builder()
    ///     .name("search")
    ///     .failure_threshold(1)
    ///     .on_transition(move |event| {
    ///         log.lock().unwrap().push((event.dependency().to_owned(), event.transition().reason()));
    ///     })
    ///     .build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(*seen.lock().unwrap(), [("search".to_owned(), TransitionReason::FailureThreshold)]);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn on_transition(
        mut self,
        listener: impl Fn(&TransitionEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Listener::new(listener));
        self
    }

    /// Count admissions, rejections, outcomes and transitions (default: off). Read them with
    /// [`CircuitBreaker::metrics`](crate::CircuitBreaker::metrics).
    ///
    /// Counting costs a thread-striped atomic add per admission and per outcome (no count shares
    /// a cache line between threads that land on different stripes); see the benchmarks for the
    /// measured cost. Off, the hot path pays one predictable branch.
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// Validate the settings into a [`Config`] (for a [`Registry`](crate::Registry)); the clock,
    /// if set, is not part of it.
    ///
    /// # Errors
    ///
    /// As [`Config::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::CircuitBreaker;
    ///
    /// let config = CircuitBreaker::builder()
    ///     .failure_threshold(3)
    ///     .cooldown(Duration::from_secs(10))
    ///     .build_config()?;
    /// assert_eq!(config.probe_timeout(), Duration::from_secs(30), "the default");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn build_config(&self) -> Result<Config, ConfigError> {
        Config::new(self.failure_threshold, self.cooldown, self.probe_timeout)
    }

    /// Build the breaker, closed with no failures.
    ///
    /// # Errors
    ///
    /// As [`Config::new`]: a [`ConfigError`] naming the first invalid field.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::CircuitBreaker;
    ///
    /// let err = CircuitBreaker::builder().cooldown(Duration::ZERO).build().unwrap_err();
    /// assert_eq!(err.field(), "cooldown");
    /// ```
    pub fn build(self) -> Result<crate::CircuitBreaker, ConfigError> {
        let config = self.build_config()?;
        Ok(crate::CircuitBreaker::with_extras(
            config,
            self.clock.unwrap_or_default(),
            Extras {
                name: self.name,
                listener: self.listener,
                metrics: self.metrics,
            },
        ))
    }
}

/// What is wrong with a configuration field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Problem {
    /// The field is zero; it must be at least 1 (1 ms for durations).
    Zero,
    /// The duration is longer than [`MAX_DURATION`].
    TooLong,
}

/// An invalid configuration, naming the field.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{Config, Problem};
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

    /// The offending field: `failure_threshold`, `cooldown` or `probe_timeout`.
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
            (Problem::Zero, "failure_threshold") => write!(f, "`{field}` must be at least 1"),
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

    #[test]
    fn the_first_invalid_field_is_reported_by_build() {
        let err = crate::CircuitBreaker::builder()
            .failure_threshold(0)
            .cooldown(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err.field(), "failure_threshold");
    }
}
