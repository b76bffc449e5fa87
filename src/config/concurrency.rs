//! The cap on calls in flight: a fixed one (`max_in_flight`) and an adaptive one ([`Limit`]),
//! and their validated form ([`Concurrency`]), kept in millionths and whole microseconds so a
//! [`Config`](super::Config) stays `Eq`.

use core::time::Duration;

use super::error::{ConfigError, Problem};
use super::fields::MILLION;

/// An adaptive limit on calls in flight: the breaker moves the cap between `min` and `max` from
/// what each call's outcome and latency say about the dependency (see
/// [`Builder::adaptive_concurrency`](crate::breaker::Builder::adaptive_concurrency)).
///
/// Limits are counted in calls. Only counted outcomes (successes and counted failures) and
/// their latencies move the limit; ignored outcomes, dropped permits and every rejection
/// (blocked, saturated) never do.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::Limit;
///
/// let aimd = Limit::aimd(4, 64);
/// assert_eq!(
///     aimd,
///     Limit::Aimd {
///         initial: 20,
///         min: 4,
///         max: 64,
///         backoff_ratio: 0.9,
///         latency_threshold: Duration::from_secs(5),
///     }
/// );
/// assert_eq!((aimd.min(), aimd.max(), aimd.initial()), (4, 64, 20));
/// let gradient = Limit::gradient(1, 10);
/// assert_eq!(gradient.initial(), 10, "the default start, 20, clamped to the max");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// Additive increase, multiplicative decrease, after Netflix concurrency-limits' `AIMDLimit`
    /// and TCP's congestion avoidance: each call that finds the limit in use (calls in flight
    /// at least half the limit) and succeeds within `latency_threshold` adds `1 / limit`, so a
    /// round of calls (as many as the limit) adds one; a counted failure, or a call that took at
    /// least `latency_threshold`, multiplies it by `backoff_ratio` (rounded down), at most once
    /// per round: pushback from a call that started before the last decrease was that
    /// decrease's. Finds a capacity by pushing until the dependency pushes back, so it settles
    /// in a saw-tooth just under the concurrency at which calls start to fail or to cross the
    /// threshold.
    Aimd {
        /// The limit a new breaker (or a newly set algorithm) starts at, in calls, within
        /// `[min, max]`; default 20 clamped to them.
        initial: u32,
        /// The lowest the limit goes, in calls, at least 1.
        min: u32,
        /// The highest the limit goes, in calls, at least `min`.
        max: u32,
        /// The multiplier a decrease applies, in (0, 1); default 0.9 (kept to the millionth).
        backoff_ratio: f64,
        /// A call that takes at least this long counts as pushback for the limit, whatever its
        /// outcome (its outcome still counts as it is for the breaker); default 5 s, kept to the
        /// microsecond. A call recorded without its elapsed time pushes back only when it failed.
        latency_threshold: Duration,
    },
    /// Latency gradient, after Netflix concurrency-limits' `Gradient2Limit` and Envoy's
    /// adaptive concurrency filter: a baseline latency (the dependency's latency without a
    /// queue) against each call's, `gradient = tolerance × baseline / latency` kept within
    /// [0.5, 1]: 1 while latency stays within the tolerance of the baseline, less as calls
    /// queue. Each round of calls (as many as the limit) moves the limit toward
    /// `limit × gradient + queue_size` by the fraction `smoothing`, within `[min, max]`;
    /// `queue_size` is the headroom that lets the limit grow while latency is flat. The baseline
    /// falls to any lower latency at once and rises toward a higher one over `long_window`
    /// rounds, only from calls within the tolerance (or while the gradient is at its floor), so
    /// a queue's latency never drags it up. A call made while fewer than half the limit are in
    /// flight does not move the limit (it is not in use). A counted failure is a sample of its
    /// latency like a success; one recorded without its latency is no sample.
    Gradient {
        /// The limit a new breaker (or a newly set algorithm) starts at, in calls, within
        /// `[min, max]`; default 20 clamped to them.
        initial: u32,
        /// The lowest the limit goes, in calls, at least 1.
        min: u32,
        /// The highest the limit goes, in calls, at least `min`.
        max: u32,
        /// How far a call's latency may exceed the baseline before the limit decreases, as a
        /// factor of at least 1; default 1.5 (kept to the millionth).
        tolerance: f64,
        /// The fraction of the way to its new value the limit moves per round, in (0, 1];
        /// default 0.2 (kept to the millionth).
        smoothing: f64,
        /// The headroom the limit grows by toward each round's new value, in calls; default 4.
        queue_size: u32,
        /// The rounds of calls (as many as the limit each) the baseline's rise is averaged
        /// over, at least 1; default 600.
        long_window: u32,
    },
}

/// The start of an adaptive limit unless configured otherwise, clamped to its bounds.
const DEFAULT_INITIAL: u32 = 20;

impl Limit {
    /// AIMD between `min` and `max` calls, with the defaults: start at 20 (clamped to
    /// `[min, max]`), backoff ratio 0.9, latency threshold 5 s. Validated when the breaker is
    /// built.
    pub fn aimd(min: u32, max: u32) -> Limit {
        Limit::Aimd {
            initial: DEFAULT_INITIAL.max(min).min(max),
            min,
            max,
            backoff_ratio: 0.9,
            latency_threshold: Duration::from_secs(5),
        }
    }

    /// The latency gradient between `min` and `max` calls, with the defaults: start at 20
    /// (clamped to `[min, max]`), tolerance 1.5, smoothing 0.2, queue size 4, long window 600
    /// samples. Validated when the breaker is built.
    pub fn gradient(min: u32, max: u32) -> Limit {
        Limit::Gradient {
            initial: DEFAULT_INITIAL.max(min).min(max),
            min,
            max,
            tolerance: 1.5,
            smoothing: 0.2,
            queue_size: 4,
            long_window: 600,
        }
    }

    /// The lowest the limit goes, in calls.
    pub const fn min(&self) -> u32 {
        match *self {
            Limit::Aimd { min, .. } | Limit::Gradient { min, .. } => min,
        }
    }

    /// The highest the limit goes, in calls.
    pub const fn max(&self) -> u32 {
        match *self {
            Limit::Aimd { max, .. } | Limit::Gradient { max, .. } => max,
        }
    }

    /// The limit it starts at, in calls.
    pub const fn initial(&self) -> u32 {
        match *self {
            Limit::Aimd { initial, .. } | Limit::Gradient { initial, .. } => initial,
        }
    }

    /// The algorithm's name, as a configuration file spells it: `aimd` or `gradient`.
    pub const fn algorithm(&self) -> &'static str {
        match self {
            Limit::Aimd { .. } => "aimd",
            Limit::Gradient { .. } => "gradient",
        }
    }
}

/// The algorithm of a validated adaptive limit, its ratios in millionths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Aimd {
        /// In (0, 1e6).
        backoff_ppm: u32,
        /// At least 1 µs.
        latency_threshold_us: u64,
    },
    Gradient {
        /// At least 1e6.
        tolerance_ppm: u64,
        /// In (0, 1e6].
        smoothing_ppm: u32,
        queue_size: u32,
        long_window: u32,
    },
}

/// A validated adaptive limit: `min <= initial <= max`, `min >= 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Adaptive {
    pub(crate) initial: u32,
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) algorithm: Algorithm,
}

/// A validated cap on calls in flight. With both set, the fixed cap bounds the adaptive limit:
/// the cap in force is the adaptive value, never above `max_in_flight`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Concurrency {
    /// At least 1.
    pub(crate) max_in_flight: Option<u32>,
    pub(crate) adaptive: Option<Adaptive>,
}

/// What the cap holds before validation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ConcurrencySettings {
    pub(crate) max_in_flight: Option<u32>,
    pub(crate) adaptive: Option<Limit>,
}

impl Concurrency {
    /// Whether any cap is set.
    pub(crate) const fn is_capped(&self) -> bool {
        self.max_in_flight.is_some() || self.adaptive.is_some()
    }

    /// The adaptive limit as it was given (its ratios to the millionth).
    pub(crate) fn limit(&self) -> Option<Limit> {
        let a = self.adaptive?;
        Some(match a.algorithm {
            Algorithm::Aimd {
                backoff_ppm,
                latency_threshold_us,
            } => Limit::Aimd {
                initial: a.initial,
                min: a.min,
                max: a.max,
                backoff_ratio: f64::from(backoff_ppm) / MILLION,
                latency_threshold: Duration::from_micros(latency_threshold_us),
            },
            Algorithm::Gradient {
                tolerance_ppm,
                smoothing_ppm,
                queue_size,
                long_window,
            } => Limit::Gradient {
                initial: a.initial,
                min: a.min,
                max: a.max,
                tolerance: tolerance_ppm as f64 / MILLION,
                smoothing: f64::from(smoothing_ppm) / MILLION,
                queue_size,
                long_window,
            },
        })
    }

    pub(crate) fn settings(&self) -> ConcurrencySettings {
        ConcurrencySettings {
            max_in_flight: self.max_in_flight,
            adaptive: self.limit(),
        }
    }
}

impl ConcurrencySettings {
    /// # Errors
    ///
    /// `max_in_flight` of 0 or `u32::MAX`; for the adaptive limit, naming `adaptive_concurrency.FIELD`: a
    /// `min` of 0, a `max` below `min`, an `initial` outside `[min, max]`, a ratio out of its
    /// range, a zero `latency_threshold` or `long_window`.
    pub(crate) fn validate(&self) -> Result<Concurrency, ConfigError> {
        match self.max_in_flight {
            Some(0) => return Err(ConfigError::new("max_in_flight", Problem::Zero)),
            // All ones is the cell's "no cap".
            Some(u32::MAX) => return Err(ConfigError::new("max_in_flight", Problem::TooLarge)),
            _ => {}
        }
        let adaptive = match self.adaptive {
            Some(limit) => Some(validate_limit(&limit)?),
            None => None,
        };
        Ok(Concurrency {
            max_in_flight: self.max_in_flight,
            adaptive,
        })
    }
}

fn validate_limit(limit: &Limit) -> Result<Adaptive, ConfigError> {
    let (min, max, initial) = (limit.min(), limit.max(), limit.initial());
    if min == 0 {
        return Err(ConfigError::new("adaptive_concurrency.min", Problem::Zero));
    }
    if max == u32::MAX {
        return Err(ConfigError::new(
            "adaptive_concurrency.max",
            Problem::TooLarge,
        ));
    }
    if max < min {
        return Err(ConfigError::new(
            "adaptive_concurrency.max",
            Problem::TooShort,
        ));
    }
    if !(min..=max).contains(&initial) {
        return Err(ConfigError::new(
            "adaptive_concurrency.initial",
            Problem::OutOfRange,
        ));
    }
    let algorithm = match *limit {
        Limit::Aimd {
            backoff_ratio,
            latency_threshold,
            ..
        } => {
            if !(backoff_ratio > 0.0 && backoff_ratio < 1.0) {
                return Err(ConfigError::new(
                    "adaptive_concurrency.backoff_ratio",
                    Problem::OutOfRange,
                ));
            }
            let us = u64::try_from(latency_threshold.as_micros()).unwrap_or(u64::MAX);
            if us == 0 {
                return Err(ConfigError::new(
                    "adaptive_concurrency.latency_threshold",
                    Problem::Zero,
                ));
            }
            Algorithm::Aimd {
                backoff_ppm: ((backoff_ratio * MILLION).round() as u32).clamp(1, 999_999),
                latency_threshold_us: us,
            }
        }
        Limit::Gradient {
            tolerance,
            smoothing,
            queue_size,
            long_window,
            ..
        } => {
            if !(tolerance.is_finite() && (1.0..=1e6).contains(&tolerance)) {
                return Err(ConfigError::new(
                    "adaptive_concurrency.tolerance",
                    Problem::OutOfRange,
                ));
            }
            if !(smoothing > 0.0 && smoothing <= 1.0) {
                return Err(ConfigError::new(
                    "adaptive_concurrency.smoothing",
                    Problem::OutOfRange,
                ));
            }
            if long_window == 0 {
                return Err(ConfigError::new(
                    "adaptive_concurrency.long_window",
                    Problem::Zero,
                ));
            }
            Algorithm::Gradient {
                tolerance_ppm: (tolerance * MILLION).round() as u64,
                smoothing_ppm: ((smoothing * MILLION).round() as u32).max(1),
                queue_size,
                long_window,
            }
        }
    };
    Ok(Adaptive {
        initial,
        min,
        max,
        algorithm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(limit: Limit) -> &'static str {
        let settings = ConcurrencySettings {
            max_in_flight: None,
            adaptive: Some(limit),
        };
        settings.validate().unwrap_err().field()
    }

    #[test]
    fn each_invalid_field_is_named() {
        let zero = ConcurrencySettings {
            max_in_flight: Some(0),
            adaptive: None,
        };
        assert_eq!(zero.validate().unwrap_err().field(), "max_in_flight");
        assert_eq!(field_of(Limit::aimd(0, 4)), "adaptive_concurrency.min");
        assert_eq!(field_of(Limit::aimd(8, 4)), "adaptive_concurrency.max");
        let Limit::Aimd {
            min,
            max,
            latency_threshold,
            ..
        } = Limit::aimd(1, 8)
        else {
            unreachable!()
        };
        let aimd = |initial, backoff_ratio, latency_threshold| Limit::Aimd {
            initial,
            min,
            max,
            backoff_ratio,
            latency_threshold,
        };
        assert_eq!(
            field_of(aimd(9, 0.5, latency_threshold)),
            "adaptive_concurrency.initial"
        );
        for ratio in [0.0, 1.0, f64::NAN, -0.5] {
            assert_eq!(
                field_of(aimd(1, ratio, latency_threshold)),
                "adaptive_concurrency.backoff_ratio"
            );
        }
        assert_eq!(
            field_of(aimd(1, 0.5, Duration::ZERO)),
            "adaptive_concurrency.latency_threshold"
        );
        let gradient = |tolerance, smoothing, long_window| Limit::Gradient {
            initial: 2,
            min: 1,
            max: 8,
            tolerance,
            smoothing,
            queue_size: 0,
            long_window,
        };
        assert_eq!(
            field_of(gradient(0.9, 0.2, 1)),
            "adaptive_concurrency.tolerance"
        );
        assert_eq!(
            field_of(gradient(1.0, 0.0, 1)),
            "adaptive_concurrency.smoothing"
        );
        assert_eq!(
            field_of(gradient(1.0, 1.0, 0)),
            "adaptive_concurrency.long_window"
        );
    }

    #[test]
    fn a_valid_limit_reads_back_as_given() {
        for limit in [Limit::aimd(1, 64), Limit::gradient(2, 200)] {
            let settings = ConcurrencySettings {
                max_in_flight: Some(32),
                adaptive: Some(limit),
            };
            let valid = settings.validate().unwrap();
            assert_eq!(valid.settings(), settings);
            assert!(valid.is_capped());
        }
        assert!(!Concurrency::default().is_capped());
    }
}
