//! The adaptive limit's algorithms, pure: the next [`Estimate`] from the last one, a [`Sample`]
//! of one call and the limit's settings. No atomics and no clock: the breaker's cap keeps the
//! estimate packed in one atomic word and moves it by compare-and-swap (`breaker::cap`).
//!
//! - AIMD (after Netflix concurrency-limits' `AIMDLimit`, itself TCP's congestion window):
//!   pushback (a counted failure, or a latency at or over the threshold) multiplies the limit by
//!   the backoff ratio, rounded down; a sample that finds the limit in use (in flight at least
//!   half of it) adds one; any other sample leaves it.
//! - Gradient (after Netflix's `Gradient2Limit` and Envoy's adaptive concurrency gradient
//!   controller): a baseline latency, which falls to any lower sample at once and rises toward
//!   higher ones as an exponential average over `long_window` samples, against each sample:
//!   `gradient = clamp(tolerance × baseline / sample, 0.5, 1)`, and the limit moves toward
//!   `limit × gradient + queue_size` by `smoothing`. A sample taken while fewer than half the
//!   limit are in flight leaves the limit (it is not in use); a baseline over twice a sample is
//!   cut by 5 %. (The baseline falls at once, as Envoy's minimum RTT does, so it stays near the
//!   latency of an unloaded dependency rather than chasing a queue's.)
//!
//! Both clamp the limit to `[min, max]`.

use crate::config::{Adaptive, Algorithm};

/// What one call tells the limit: its latency if timed, the calls in flight when it finished
/// (itself included), and whether it was a counted failure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sample {
    /// The call's latency in microseconds; `None` when recorded without its elapsed time.
    pub(crate) rtt_us: Option<u64>,
    /// Calls in flight as it finished, itself included.
    pub(crate) in_flight: u32,
    /// A counted failure.
    pub(crate) failed: bool,
}

/// The adaptive limit's state: the limit, fractional (the cap in force is its whole part), and
/// the gradient's baseline latency in microseconds (0: none yet; AIMD keeps 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Estimate {
    pub(crate) limit: f32,
    pub(crate) baseline_us: f32,
}

impl Estimate {
    /// The estimate an adaptive limit starts from.
    pub(crate) fn initial(adaptive: &Adaptive) -> Estimate {
        Estimate {
            limit: adaptive.initial as f32,
            baseline_us: 0.0,
        }
    }

    /// Packed in one word: the limit's bits high, the baseline's low.
    pub(crate) fn pack(self) -> u64 {
        (u64::from(self.limit.to_bits()) << 32) | u64::from(self.baseline_us.to_bits())
    }

    pub(crate) fn unpack(bits: u64) -> Estimate {
        Estimate {
            limit: f32::from_bits((bits >> 32) as u32),
            baseline_us: f32::from_bits(bits as u32),
        }
    }

    /// The cap in force: the limit's whole part, within `[min, max]`.
    pub(crate) fn whole(self, adaptive: &Adaptive) -> u32 {
        (self.limit as u32).clamp(adaptive.min, adaptive.max)
    }
}

/// The estimate after `sample` (see the module docs).
pub(crate) fn next(estimate: Estimate, sample: &Sample, adaptive: &Adaptive) -> Estimate {
    let (min, max) = (adaptive.min as f32, adaptive.max as f32);
    let limit = estimate.limit;
    let in_use = sample.in_flight as f32 * 2.0 >= limit;
    match adaptive.algorithm {
        Algorithm::Aimd {
            backoff_ppm,
            latency_threshold_us,
        } => {
            let pushback =
                sample.failed || sample.rtt_us.is_some_and(|rtt| rtt >= latency_threshold_us);
            let next = if pushback {
                (limit * (backoff_ppm as f32 / 1e6)).floor()
            } else if in_use {
                limit.floor() + 1.0
            } else {
                limit
            };
            Estimate {
                limit: next.clamp(min, max),
                baseline_us: 0.0,
            }
        }
        Algorithm::Gradient {
            tolerance_ppm,
            smoothing_ppm,
            queue_size,
            long_window,
        } => {
            let Some(rtt) = sample.rtt_us else {
                return estimate;
            };
            let rtt = rtt.max(1) as f32;
            let mut baseline = if estimate.baseline_us <= 0.0 || rtt < estimate.baseline_us {
                rtt
            } else {
                let alpha = 2.0 / (long_window as f32 + 1.0);
                estimate.baseline_us + (rtt - estimate.baseline_us) * alpha
            };
            if baseline > 2.0 * rtt {
                baseline *= 0.95;
            }
            if !in_use {
                return Estimate {
                    limit,
                    baseline_us: baseline,
                };
            }
            let tolerance = tolerance_ppm as f32 / 1e6;
            let gradient = (tolerance * baseline / rtt).clamp(0.5, 1.0);
            let smoothing = smoothing_ppm as f32 / 1e6;
            let target = limit * gradient + queue_size as f32;
            let next = limit * (1.0 - smoothing) + target * smoothing;
            Estimate {
                limit: next.clamp(min, max),
                baseline_us: baseline,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConcurrencySettings, Limit};

    fn adaptive(limit: Limit) -> Adaptive {
        let settings = ConcurrencySettings {
            max_in_flight: None,
            adaptive: Some(limit),
        };
        settings.validate().unwrap().adaptive.unwrap()
    }

    fn sample(rtt_ms: Option<u64>, in_flight: u32, failed: bool) -> Sample {
        Sample {
            rtt_us: rtt_ms.map(|ms| ms * 1000),
            in_flight,
            failed,
        }
    }

    #[test]
    fn aimd_adds_one_when_in_use_and_backs_off_on_pushback() {
        let a = adaptive(Limit::aimd(2, 30));
        let at = |limit: f32| Estimate {
            limit,
            baseline_us: 0.0,
        };
        // In use (10 of 20): one more.
        assert_eq!(next(at(20.0), &sample(Some(5), 10, false), &a).limit, 21.0);
        // Not in use (9 of 20): unchanged.
        assert_eq!(next(at(20.0), &sample(Some(5), 9, false), &a).limit, 20.0);
        // A failure, timed or not, and a latency at the threshold (5 s): × 0.9, rounded down.
        assert_eq!(next(at(20.0), &sample(None, 20, true), &a).limit, 18.0);
        assert_eq!(next(at(20.0), &sample(Some(5000), 1, false), &a).limit, 18.0);
        // Clamped both ways.
        assert_eq!(next(at(30.0), &sample(Some(1), 30, false), &a).limit, 30.0);
        assert_eq!(next(at(2.0), &sample(None, 2, true), &a).limit, 2.0);
        // A success recorded without a latency still counts as one that is not pushback.
        assert_eq!(next(at(4.0), &sample(None, 4, false), &a).limit, 5.0);
    }

    #[test]
    fn the_gradient_grows_on_flat_latency_and_shrinks_as_latency_rises() {
        let a = adaptive(Limit::gradient(1, 100));
        let mut e = Estimate::initial(&a);
        for _ in 0..50 {
            e = next(e, &sample(Some(10), e.limit as u32, false), &a);
        }
        assert!(e.limit > 40.0, "flat latency grows the limit: {e:?}");
        assert_eq!(e.baseline_us, 10_000.0);
        let grown = e.limit;
        // Latency 3× the baseline: gradient 0.5, so the limit falls.
        for _ in 0..10 {
            e = next(e, &sample(Some(30), e.limit as u32, false), &a);
        }
        assert!(e.limit < grown * 0.6, "{e:?}");
        // A failure without a latency is no sample; one not in use leaves the limit.
        assert_eq!(next(e, &sample(None, 100, true), &a), e);
        let idle = next(e, &sample(Some(10), 1, false), &a);
        assert_eq!(idle.limit, e.limit);
    }

    #[test]
    fn an_estimate_packs_into_one_word() {
        let e = Estimate {
            limit: 17.25,
            baseline_us: 1234.5,
        };
        assert_eq!(Estimate::unpack(e.pack()), e);
        let a = adaptive(Limit::gradient(4, 16));
        assert_eq!(e.whole(&a), 16);
        assert_eq!(Estimate::initial(&a).whole(&a), 16);
    }
}
