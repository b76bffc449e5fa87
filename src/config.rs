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
}

/// The most probes a half-open breaker admits: 2^20 − 1.
pub const MAX_PROBES: u32 = (1 << 20) - 1;

/// How the cooldown grows and spreads: validated, in millionths and whole milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Each reopen without a close multiplies the cooldown by this, in millionths; 1,000,000:
    /// no backoff.
    pub(crate) multiplier_ppm: u64,
    /// The longest a backed-off cooldown grows, in ms (the cooldown itself without backoff).
    pub(crate) max_cooldown_ms: u64,
    /// Each cooldown is spread by ± this fraction of itself, in millionths (below 1,000,000).
    pub(crate) jitter_ppm: u64,
}

impl Shape {
    /// A cooldown that neither backs off nor spreads.
    pub(crate) const FIXED: Shape = Shape {
        multiplier_ppm: 1_000_000,
        max_cooldown_ms: 0,
        jitter_ppm: 0,
    };

    /// Whether the cooldown in force can differ from the configured one.
    pub(crate) const fn is_shaped(&self) -> bool {
        self.multiplier_ppm != 1_000_000 || self.jitter_ppm != 0
    }
}

/// What a cooldown's shape holds before validation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ShapeSettings {
    pub(crate) backoff: Option<(f64, Duration)>,
    pub(crate) jitter: Option<f64>,
}

impl ShapeSettings {
    /// # Errors
    ///
    /// A multiplier below 1 or not finite (`cooldown_multiplier`), a maximum shorter than the
    /// cooldown or longer than [`MAX_DURATION`] (`max_cooldown`), a jitter outside [0, 1)
    /// (`cooldown_jitter`).
    fn validate(&self, cooldown_ms: u64) -> Result<Shape, ConfigError> {
        let mut shape = Shape::FIXED;
        if let Some((multiplier, max)) = self.backoff {
            if !(multiplier.is_finite() && multiplier >= 1.0) {
                return Err(ConfigError::new("cooldown_multiplier", Problem::OutOfRange));
            }
            let max_ms = duration_field("max_cooldown", max)?;
            if max_ms < cooldown_ms {
                return Err(ConfigError::new("max_cooldown", Problem::TooShort));
            }
            // At most 2^53 millionths are kept exactly; a larger multiplier reaches the
            // maximum at the first reopen anyway.
            let multiplier_ppm = (multiplier * MILLION).round().min(9.0e15) as u64;
            // A multiplier of 1 (to the millionth) is no backoff: the shape stays fixed.
            if multiplier_ppm != Shape::FIXED.multiplier_ppm {
                shape.multiplier_ppm = multiplier_ppm;
                shape.max_cooldown_ms = max_ms;
            }
        }
        if let Some(jitter) = self.jitter {
            if !(0.0..1.0).contains(&jitter) {
                return Err(ConfigError::new("cooldown_jitter", Problem::OutOfRange));
            }
            shape.jitter_ppm = ((jitter * MILLION).round() as u64).min(999_999);
        }
        Ok(shape)
    }
}

/// Which recent calls a rate rule judges.
///
/// Only judged calls enter a window: those recorded as a success or a counted failure. An
/// `Ignored` outcome, a dropped permit and a probe are not judged. Every transition empties the
/// window.
///
/// - `Calls(n)`: the last `n` judged calls, counted in 32 buckets of `⌈n/32⌉` calls each. The
///   oldest bucket leaves the window whole, so a window of `n` judges between `n` and
///   `n + ⌈n/32⌉ − 1` calls once it has filled: exactly the last `n` when `n ≤ 32`.
/// - `Time(t)`: the judged calls of the last `t`, counted in 10 buckets of `w = ⌈t/10⌉` ms each
///   (the rolling windows Polly counts in), from the breaker's construction. A call leaves the
///   window when the bucket 10 after its own begins: between `9 w` and `10 w` after it was
///   recorded, so between `0.9 t` and `t` when `t` is a whole number of 10 ms, and up to 10 ms
///   for a window shorter than that (a bucket is at least 1 ms). Recording into a time window
///   reads the breaker's clock once per call.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{CircuitBreaker, Window};
///
/// let config = CircuitBreaker::builder()
///     .failure_rate(0.5)
///     .window(Window::Time(Duration::from_secs(30)))
///     .build_config()?;
/// assert_eq!(config.window(), Some(Window::Time(Duration::from_secs(30))));
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Window {
    /// The last `n` judged calls (at least 1).
    Calls(u32),
    /// The judged calls of the last duration, in whole milliseconds (at least 1 ms, at most
    /// [`MAX_DURATION`]).
    Time(Duration),
}

/// The window a rate rule uses unless one is set: the last 100 calls, as resilience4j's default.
pub const DEFAULT_WINDOW: Window = Window::Calls(100);
/// The fewest calls a rate rule judges unless set, or the window's size if smaller: 10.
pub const DEFAULT_MINIMUM_CALLS: u32 = 10;

/// The rate rules of a [`Config`], validated. Ratios are kept in millionths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rates {
    /// Trip when counted failures / judged calls reach this, in millionths; 0: no failure-rate rule.
    pub(crate) failure_ppm: u32,
    /// Trip when slow calls / judged calls reach this, in millionths; 0: no slow-call rule.
    pub(crate) slow_ppm: u32,
    /// A call that took at least this long is slow.
    pub(crate) slow_threshold: Duration,
    /// `Calls`: the count; `Time`: whole ms.
    pub(crate) window: WindowLimit,
    pub(crate) minimum_calls: u32,
}

/// A [`Window`] in the word's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowLimit {
    Calls(u32),
    TimeMs(u64),
}

impl Rates {
    /// Whether a slow-call rule is set: the calls are timed.
    pub(crate) const fn times_calls(&self) -> bool {
        self.slow_ppm != 0
    }
}

/// What a rate rule holds before validation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RateSettings {
    pub(crate) failure_rate: Option<f64>,
    pub(crate) slow_calls: Option<(Duration, f64)>,
    pub(crate) window: Option<Window>,
    pub(crate) minimum_calls: Option<u32>,
}

const MILLION: f64 = 1_000_000.0;

/// A ratio in (0, 1], in millionths (at least 1), else [`Problem::OutOfRange`] naming `field`.
fn ratio_field(field: &'static str, ratio: f64) -> Result<u32, ConfigError> {
    if !(ratio > 0.0 && ratio <= 1.0) {
        return Err(ConfigError::new(field, Problem::OutOfRange));
    }
    // In range, so the product is in (0, 1e6]: the cast cannot overflow.
    Ok(((ratio * MILLION).round() as u32).max(1))
}

impl RateSettings {
    /// The validated rules; `None` when no rate rule is set.
    ///
    /// # Errors
    ///
    /// A ratio outside (0, 1] (`failure_rate`, `slow_call_rate`), a zero slow-call threshold
    /// (`slow_call_threshold`), a window of 0 or longer than [`MAX_DURATION`] (`window`),
    /// `minimum_calls` of 0 or above a count window, and a window or minimum set without a rate
    /// rule (`window`, `minimum_calls`: [`Problem::NoRule`]).
    pub(crate) fn validate(&self) -> Result<Option<Rates>, ConfigError> {
        let failure_ppm = match self.failure_rate {
            Some(ratio) => ratio_field("failure_rate", ratio)?,
            None => 0,
        };
        let (slow_threshold, slow_ppm) = match self.slow_calls {
            Some((threshold, ratio)) => {
                if threshold.is_zero() {
                    return Err(ConfigError::new("slow_call_threshold", Problem::Zero));
                }
                (threshold, ratio_field("slow_call_rate", ratio)?)
            }
            None => (Duration::ZERO, 0),
        };
        let window = match self.window.unwrap_or(DEFAULT_WINDOW) {
            Window::Calls(0) => return Err(ConfigError::new("window", Problem::Zero)),
            Window::Calls(n) => WindowLimit::Calls(n),
            Window::Time(t) => WindowLimit::TimeMs(duration_field("window", t)?),
        };
        let minimum_calls = match (self.minimum_calls, window) {
            (Some(0), _) => return Err(ConfigError::new("minimum_calls", Problem::Zero)),
            (Some(m), WindowLimit::Calls(n)) if m > n => {
                return Err(ConfigError::new("minimum_calls", Problem::TooLarge));
            }
            (Some(m), _) => m,
            (None, WindowLimit::Calls(n)) => DEFAULT_MINIMUM_CALLS.min(n),
            (None, WindowLimit::TimeMs(_)) => DEFAULT_MINIMUM_CALLS,
        };
        if failure_ppm == 0 && slow_ppm == 0 {
            if self.window.is_some() {
                return Err(ConfigError::new("window", Problem::NoRule));
            }
            if self.minimum_calls.is_some() {
                return Err(ConfigError::new("minimum_calls", Problem::NoRule));
            }
            return Ok(None);
        }
        Ok(Some(Rates {
            failure_ppm,
            slow_ppm,
            slow_threshold,
            window,
            minimum_calls,
        }))
    }
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
    /// zero or longer than [`MAX_DURATION`]. Nothing is clamped.
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
        })
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

    /// The cooldown's shape as settings, for a builder starting from this configuration.
    pub(crate) fn shape_settings(&self) -> ShapeSettings {
        ShapeSettings {
            backoff: self.cooldown_backoff(),
            jitter: (self.shape.jitter_ppm != 0).then(|| self.cooldown_jitter()),
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
            shape: limits.shape,
            probes: limits.probes,
        }
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

/// The threshold of a breaker whose consecutive rule is off: above every count the word holds.
pub(crate) const CONSECUTIVE_OFF: u64 = u64::MAX;

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
        }
    }
}

/// A validated configuration in the word's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Consecutive counted failures that trip the breaker, at least 1; [`CONSECUTIVE_OFF`] when
    /// the consecutive rule is off.
    pub(crate) failure_threshold: u64,
    /// Cooldown in ms, at least 1.
    pub(crate) cooldown_ms: u64,
    /// Probe lease in ms, at least 1.
    pub(crate) probe_timeout_ms: u64,
    /// The rate rules, if any.
    pub(crate) rates: Option<Rates>,
    /// How the cooldown backs off and spreads.
    pub(crate) shape: Shape,
    /// Probes half-open admits, 1 to [`MAX_PROBES`].
    pub(crate) probes: u32,
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
    /// The number is outside its range: a ratio (`failure_rate`, `slow_call_rate`) must be in
    /// (0, 1], a `cooldown_multiplier` at least 1, a `cooldown_jitter` in [0, 1).
    OutOfRange,
    /// The number is larger than one it may not exceed: `minimum_calls` above a count window,
    /// `probes` above [`MAX_PROBES`].
    TooLarge,
    /// The field belongs to a rule that is not set: a `window` or `minimum_calls` with neither
    /// a failure-rate nor a slow-call rule.
    NoRule,
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
    /// `cooldown_multiplier`, `max_cooldown`, `cooldown_jitter` or `probes`; for a fleet
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
                "failure_threshold" | "fleet_failure_threshold" | "min_instances" | "probes",
            ) => format!("{subject} must be at least 1"),
            (Problem::Empty, "server") => format!(
                "{subject} must be non-empty text with no `.`, whitespace or control characters"
            ),
            (Problem::Empty, _) => {
                format!("{subject} must be non-empty text with no whitespace or control characters")
            }
            (Problem::Duplicate, _) => format!("{subject} names must be unique"),
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
            (Problem::OutOfRange, _) => format!("{subject} must be a ratio above 0 and at most 1"),
            (Problem::TooLarge, "minimum_calls") => format!(
                "{subject} must be at most the window's number of calls (`{}`)",
                name("window")
            ),
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
