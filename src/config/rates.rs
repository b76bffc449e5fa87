//! The rate rules: the [`Window`] of recent calls they judge, their validated form ([`Rates`])
//! and the settings it is validated from.

use core::time::Duration;

use super::error::{ConfigError, Problem};
use super::fields::{duration_field, ratio_field};

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
    /// [`MAX_DURATION`](super::MAX_DURATION)).
    Time(Duration),
}

/// The window a rate rule uses unless one is set: the last 100 calls, as resilience4j's default.
pub const DEFAULT_WINDOW: Window = Window::Calls(100);
/// The fewest calls a rate rule judges unless set, or the window's size if smaller: 10.
pub const DEFAULT_MINIMUM_CALLS: u32 = 10;

/// The rate rules of a [`Config`](super::Config), validated. Ratios are kept in millionths.
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

impl RateSettings {
    /// The validated rules; `None` when no rate rule is set.
    ///
    /// # Errors
    ///
    /// A ratio outside (0, 1] (`failure_rate`, `slow_call_rate`), a zero slow-call threshold
    /// (`slow_call_threshold`), a window of 0 or longer than [`MAX_DURATION`](super::MAX_DURATION)
    /// (`window`), `minimum_calls` of 0 or above a count window, and a window or minimum set
    /// without a rate rule (`window`, `minimum_calls`: [`Problem::NoRule`]).
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
