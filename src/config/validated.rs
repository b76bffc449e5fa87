//! [`Config`]: a validated breaker configuration, the whole validation, its accessors, and its
//! conversion to and from the word's units.

use core::time::Duration;

use super::concurrency::{Concurrency, ConcurrencySettings, Limit};
use super::defaults::{
    DEFAULT_COOLDOWN, DEFAULT_FAILURE_THRESHOLD, DEFAULT_PROBE_TIMEOUT, MAX_PROBES,
};
use super::error::{ConfigError, Problem};
use super::fields::{MILLION, duration_field};
use super::limits::{CONSECUTIVE_OFF, Limits};
use super::rates::{DEFAULT_MINIMUM_CALLS, RateSettings, Rates, Window, WindowLimit};
use super::shape::{Shape, ShapeSettings};
use super::throttling::Throttling;
use crate::time::millis_ceil;

/// A validated breaker configuration.
///
/// Durations are kept in whole milliseconds: a duration with a fraction of a millisecond is
/// rounded up to the next one, so a cooldown never ends early. (The slow-call threshold is kept
/// as given.)
///
/// Two kinds of rule trip a closed breaker, and either or both may be set:
/// - the *consecutive* rule: `failure_threshold` counted failures in a row ([`Config::new`], and
///   the default: 5);
/// - the *rate* rules, judged over a [`Window`] of recent calls once it holds `minimum_calls`:
///   the failure rate ([`Builder::failure_rate`](crate::breaker::Builder::failure_rate)) and the
///   slow-call rate ([`Builder::slow_calls`](crate::breaker::Builder::slow_calls)).
///
/// With a rate rule set, the consecutive rule applies only if `failure_threshold` was set too;
/// see [`Builder::failure_rate`](crate::breaker::Builder::failure_rate) for the defaults.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{CircuitBreaker, Config, Window};
///
/// let config = Config::new(3, Duration::from_secs(10), Duration::from_secs(5))?;
/// assert_eq!(config.failure_threshold(), Some(3));
/// assert_eq!(config.cooldown(), Duration::from_secs(10));
/// assert_eq!(Config::default().failure_threshold(), Some(5));
/// assert_eq!(config.failure_rate(), None);
///
/// let rated = CircuitBreaker::builder().failure_rate(0.5).build_config()?;
/// assert_eq!(rated.failure_rate(), Some(0.5));
/// assert_eq!(rated.window(), Some(Window::Calls(100)));
/// assert_eq!(rated.minimum_calls(), Some(10));
/// assert_eq!(rated.failure_threshold(), None, "only the rule that was set");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// `None`: the consecutive rule is off (a rate rule is set).
    failure_threshold: Option<u32>,
    cooldown_ms: u64,
    probe_timeout_ms: u64,
    rates: Option<Rates>,
    shape: Shape,
    probes: u32,
    /// The cap on calls in flight; not part of `Limits` (the breaker keeps it with its slots).
    concurrency: Concurrency,
    /// Client-side adaptive throttling, if set (kept beside the word's limits).
    throttling: Option<Throttling>,
}

impl Config {
    /// Validate a configuration with the consecutive rule only.
    ///
    /// - `failure_threshold`: consecutive counted failures that trip the breaker (closed → open).
    /// - `cooldown`: how long the breaker stays open before it admits one probe.
    /// - `probe_timeout`: the probe's lease; a probe that has not reported within it counts as a
    ///   failed probe, and the cooldown restarts from the lease's end.
    ///
    /// Rate rules are set with the [builder](crate::CircuitBreaker::builder).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the field when `failure_threshold` is zero, or when a duration is
    /// zero or longer than [`MAX_DURATION`](super::MAX_DURATION). Nothing is clamped.
    pub fn new(
        failure_threshold: u32,
        cooldown: Duration,
        probe_timeout: Duration,
    ) -> Result<Config, ConfigError> {
        Config::with_rules(
            Some(failure_threshold),
            cooldown,
            probe_timeout,
            &RateSettings::default(),
            &ShapeSettings::default(),
            1,
        )
    }

    /// The whole validation: the consecutive rule (`None`: off, if a rate rule is set; the
    /// default if not), the durations, the rate rules.
    pub(crate) fn with_rules(
        failure_threshold: Option<u32>,
        cooldown: Duration,
        probe_timeout: Duration,
        rates: &RateSettings,
        shape: &ShapeSettings,
        probes: u32,
    ) -> Result<Config, ConfigError> {
        if probes == 0 {
            return Err(ConfigError::new("probes", Problem::Zero));
        }
        if probes > MAX_PROBES {
            return Err(ConfigError::new("probes", Problem::TooLarge));
        }
        if failure_threshold == Some(0) {
            return Err(ConfigError::new("failure_threshold", Problem::Zero));
        }
        let cooldown_ms = duration_field("cooldown", cooldown)?;
        let probe_timeout_ms = duration_field("probe_timeout", probe_timeout)?;
        let rates = rates.validate()?;
        let shape = shape.validate(cooldown_ms)?;
        let failure_threshold = match (failure_threshold, rates) {
            (Some(threshold), _) => Some(threshold),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_FAILURE_THRESHOLD),
        };
        Ok(Config {
            failure_threshold,
            cooldown_ms,
            probe_timeout_ms,
            rates,
            shape,
            probes,
            concurrency: Concurrency::default(),
            throttling: None,
        })
    }

    /// This configuration with the cap on calls in flight validated from `settings`.
    pub(crate) fn with_concurrency(
        mut self,
        settings: &ConcurrencySettings,
    ) -> Result<Config, ConfigError> {
        self.concurrency = settings.validate()?;
        Ok(self)
    }

    /// This configuration with a cap already validated (a breaker's own).
    pub(crate) const fn with_valid_concurrency(mut self, concurrency: Concurrency) -> Config {
        self.concurrency = concurrency;
        self
    }

    /// The cap on calls in flight, validated.
    pub(crate) const fn concurrency(&self) -> Concurrency {
        self.concurrency
    }

    /// The fixed cap on calls in flight
    /// ([`Builder::max_in_flight`](crate::breaker::Builder::max_in_flight)); `None` when not set.
    /// With an adaptive limit too, it bounds the adaptive one.
    pub const fn max_in_flight(&self) -> Option<u32> {
        self.concurrency.max_in_flight
    }

    /// The adaptive limit on calls in flight
    /// ([`Builder::adaptive_concurrency`](crate::breaker::Builder::adaptive_concurrency)), its
    /// ratios kept to the millionth and its latency threshold to the microsecond; `None` when
    /// not set.
    pub fn adaptive_concurrency(&self) -> Option<Limit> {
        self.concurrency.limit()
    }

    /// How many probes half-open admits (default 1): it closes when all of them succeed, and a
    /// counted failure of any one reopens it.
    pub const fn probes(&self) -> u32 {
        self.probes
    }

    /// The cooldown's backoff: the multiplier each reopen without a close applies (kept to the
    /// millionth), and the longest the cooldown grows to; `None` when the cooldown is fixed.
    pub fn cooldown_backoff(&self) -> Option<(f64, Duration)> {
        (self.shape.multiplier_ppm != 1_000_000).then(|| {
            (
                self.shape.multiplier_ppm as f64 / MILLION,
                Duration::from_millis(self.shape.max_cooldown_ms),
            )
        })
    }

    /// The fraction each cooldown is spread by, either way (kept to the millionth); 0 when not
    /// spread.
    pub fn cooldown_jitter(&self) -> f64 {
        self.shape.jitter_ppm as f64 / MILLION
    }

    /// The longest a dependency's hint keeps the breaker open, before the hint's jitter, in
    /// whole milliseconds (default [`DEFAULT_MAX_HINTED_OPEN`](super::DEFAULT_MAX_HINTED_OPEN),
    /// 10 minutes); zero when hints never lengthen an open period. See
    /// [`Builder::max_hinted_open`](crate::breaker::Builder::max_hinted_open).
    pub const fn max_hinted_open(&self) -> Duration {
        Duration::from_millis(self.shape.hint_cap_ms)
    }

    /// The largest fraction of its hint a hinted open period is lengthened by (default
    /// [`DEFAULT_HINT_JITTER`](super::DEFAULT_HINT_JITTER), kept to the millionth).
    pub fn hint_jitter(&self) -> f64 {
        self.shape.hint_jitter_ppm as f64 / MILLION
    }

    /// Whether a rate-limited failure whose hint is longer than the cooldown trips the breaker at
    /// once (default `false`).
    pub const fn opens_on_long_hint(&self) -> bool {
        self.shape.open_on_long_hint
    }

    /// The cooldown's shape as settings, for a builder starting from this configuration.
    pub(crate) fn shape_settings(&self) -> ShapeSettings {
        let fixed = Shape::FIXED;
        ShapeSettings {
            backoff: self.cooldown_backoff(),
            jitter: (self.shape.jitter_ppm != 0).then(|| self.cooldown_jitter()),
            hint_cap: (self.shape.hint_cap_ms != fixed.hint_cap_ms).then(|| self.max_hinted_open()),
            hint_jitter: (self.shape.hint_jitter_ppm != fixed.hint_jitter_ppm)
                .then(|| self.hint_jitter()),
            open_on_long_hint: self.shape.open_on_long_hint.then_some(true),
        }
    }

    /// Consecutive counted failures that trip the breaker; `None` when the consecutive rule is
    /// off (a rate rule was set and no threshold).
    pub const fn failure_threshold(&self) -> Option<u32> {
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

    /// The failure-rate rule's ratio (counted failures / judged calls that trips), kept to the
    /// millionth; `None` when not set.
    pub fn failure_rate(&self) -> Option<f64> {
        let rates = self.rates?;
        (rates.failure_ppm != 0).then(|| f64::from(rates.failure_ppm) / MILLION)
    }

    /// The slow-call rule: the threshold at or above which a call is slow, and the ratio (slow
    /// calls / judged calls, kept to the millionth) that trips; `None` when not set.
    pub fn slow_calls(&self) -> Option<(Duration, f64)> {
        let rates = self.rates?;
        (rates.slow_ppm != 0).then(|| (rates.slow_threshold, f64::from(rates.slow_ppm) / MILLION))
    }

    /// The window the rate rules judge; `None` when no rate rule is set.
    pub fn window(&self) -> Option<Window> {
        Some(match self.rates?.window {
            WindowLimit::Calls(n) => Window::Calls(n),
            WindowLimit::TimeMs(ms) => Window::Time(Duration::from_millis(ms)),
        })
    }

    /// The fewest judged calls in the window before a rate is judged; `None` when no rate rule
    /// is set.
    pub fn minimum_calls(&self) -> Option<u32> {
        Some(self.rates?.minimum_calls)
    }

    /// The rate rules as settings, for a builder starting from this configuration.
    ///
    /// A minimum equal to its window's default is left unset, so a builder (or a file's section)
    /// that changes the window gets the new window's default, as one that set the window alone
    /// would.
    pub(crate) fn rate_settings(&self) -> RateSettings {
        let default_minimum = match self.rates.map(|rates| rates.window) {
            Some(WindowLimit::Calls(n)) => Some(DEFAULT_MINIMUM_CALLS.min(n)),
            Some(WindowLimit::TimeMs(_)) => Some(DEFAULT_MINIMUM_CALLS),
            None => None,
        };
        RateSettings {
            failure_rate: self.failure_rate(),
            slow_calls: self.slow_calls(),
            window: self.window(),
            minimum_calls: self.minimum_calls().filter(|&m| Some(m) != default_minimum),
        }
    }

    /// The configuration a breaker's live settings hold; they were validated on the way in.
    pub(crate) fn from_limits(limits: Limits) -> Config {
        Config {
            failure_threshold: (limits.failure_threshold != CONSECUTIVE_OFF)
                .then(|| u32::try_from(limits.failure_threshold).unwrap_or(u32::MAX)),
            cooldown_ms: limits.cooldown_ms,
            probe_timeout_ms: limits.probe_timeout_ms,
            rates: limits.rates,
            // Whether a hint was heard is the breaker's news, not its configuration.
            shape: Shape {
                heard: false,
                ..limits.shape
            },
            probes: limits.probes,
            concurrency: Concurrency::default(),
            throttling: None,
        }
    }

    /// Client-side adaptive throttling: the multiplier `k` and the window (whole ms); `None`
    /// when off. See [`Builder::adaptive_throttling`](crate::breaker::Builder::adaptive_throttling).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, Config};
    ///
    /// let config = CircuitBreaker::builder()
    ///     .adaptive_throttling(2.0, Duration::from_micros(10_000_500))
    ///     .build_config()?;
    /// assert_eq!(config.adaptive_throttling(), Some((2.0, Duration::from_millis(10_001))));
    /// assert_eq!(Config::default().adaptive_throttling(), None);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn adaptive_throttling(&self) -> Option<(f64, Duration)> {
        self.throttling.map(|t| (t.k(), t.window()))
    }

    /// This configuration with `throttling` (validated by `Throttling::new`).
    pub(crate) const fn with_throttling(mut self, throttling: Option<Throttling>) -> Config {
        self.throttling = throttling;
        self
    }

    /// The adaptive throttling set, validated.
    pub(crate) const fn throttling(&self) -> Option<Throttling> {
        self.throttling
    }

    pub(crate) const fn limits(&self) -> Limits {
        Limits {
            failure_threshold: match self.failure_threshold {
                Some(threshold) => threshold as u64,
                None => CONSECUTIVE_OFF,
            },
            cooldown_ms: self.cooldown_ms,
            probe_timeout_ms: self.probe_timeout_ms,
            rates: self.rates,
            shape: self.shape,
            probes: self.probes,
        }
    }
}

impl Default for Config {
    /// Threshold [`DEFAULT_FAILURE_THRESHOLD`], cooldown [`DEFAULT_COOLDOWN`], probe timeout
    /// [`DEFAULT_PROBE_TIMEOUT`], no rate rule.
    fn default() -> Self {
        Config {
            failure_threshold: Some(DEFAULT_FAILURE_THRESHOLD),
            cooldown_ms: millis_ceil(DEFAULT_COOLDOWN),
            probe_timeout_ms: millis_ceil(DEFAULT_PROBE_TIMEOUT),
            rates: None,
            shape: Shape::FIXED,
            probes: 1,
            concurrency: Concurrency::default(),
            throttling: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MAX_DURATION;

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
        assert_eq!(c.failure_threshold(), Some(u32::MAX));
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
            (Some(5), Duration::from_secs(30), Duration::from_secs(30))
        );
    }
}
