//! The adaptive limit's algorithms, pure: the next [`Estimate`] from the last one, a [`Sample`]
//! of one call and the limit's settings. No atomics and no clock: the breaker's cap keeps the
//! estimate packed in one atomic word and moves it by compare-and-swap (`breaker::cap`).
//!
//! Samples come one per call, so each applies `1 / limit` of a whole update: a round of calls
//! (as many as the limit) makes one update, as one window of samples does in Netflix's
//! `WindowedLimit` and one round trip does in TCP.
//!
//! - AIMD (after Netflix concurrency-limits' `AIMDLimit`, itself TCP's congestion avoidance):
//!   pushback (a counted failure, or a latency at or over the threshold) multiplies the limit by
//!   the backoff ratio, once per round: a call that started before the last decrease was
//!   admitted under the old limit, so its pushback is that decrease's, not news (as TCP halves
//!   its window once per round trip, not once per lost packet). A sample that finds the limit in
//!   use (in flight at least half of it) and is no pushback adds `1 / limit`: one call per
//!   round. Any other sample leaves it.
//! - Gradient (after Netflix's `Gradient2Limit` and Envoy's adaptive concurrency gradient
//!   controller): a baseline latency against each sample, `gradient = clamp(tolerance ×
//!   baseline / sample, 0.5, 1)`, and the limit moves toward `limit × gradient + queue_size` by
//!   `smoothing` per round. The baseline is the latency of the dependency without a queue, as
//!   Envoy's minimum RTT is: it falls to any lower sample at once, and rises toward a higher one
//!   as an exponential average over `long_window` rounds only when that sample is within the
//!   tolerance (no queue: the dependency itself got slower) or the gradient is at its floor (the
//!   dependency is so much slower that the limit has fallen as far as the gradient takes it, so
//!   the baseline relearns it); a sample over the tolerance is the queue's and leaves it, so a
//!   loaded dependency's latency never drags the baseline up after it (the drift of
//!   `Gradient2Limit`'s long-term average). A sample taken while fewer than half the limit are
//!   in flight leaves the limit (it is not in use); a baseline over twice a sample is cut by
//!   5 %.
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
    /// When the call started, in ms on the breaker's clock (its low 32 bits); for a call
    /// recorded without its elapsed time, when it ended.
    pub(crate) started_ms: u32,
    /// When the call ended, in ms on the breaker's clock (its low 32 bits).
    pub(crate) now_ms: u32,
}

/// The adaptive limit's state: the limit, fractional (the cap in force is its whole part), and
/// beside it the gradient's baseline latency in microseconds (an `f32`'s bits; 0: none yet), or
/// AIMD's last decrease, in ms on the breaker's clock (its low 32 bits, at least 1; 0: none yet).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Estimate {
    pub(crate) limit: f32,
    pub(crate) aux: u32,
}

impl Estimate {
    /// The estimate an adaptive limit starts from.
    pub(crate) fn initial(adaptive: &Adaptive) -> Estimate {
        Estimate {
            limit: adaptive.initial as f32,
            aux: 0,
        }
    }

    /// Packed in one word: the limit's bits high, the baseline's low.
    pub(crate) fn pack(self) -> u64 {
        (u64::from(self.limit.to_bits()) << 32) | u64::from(self.aux)
    }

    pub(crate) fn unpack(bits: u64) -> Estimate {
        Estimate {
            limit: f32::from_bits((bits >> 32) as u32),
            aux: bits as u32,
        }
    }

    /// The gradient's baseline latency, in µs.
    pub(crate) fn baseline_us(self) -> f32 {
        f32::from_bits(self.aux)
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
    // One round's share of an update.
    let share = 1.0 / limit.max(1.0);
    match adaptive.algorithm {
        Algorithm::Aimd {
            backoff_ppm,
            latency_threshold_us,
        } => {
            let pushback =
                sample.failed || sample.rtt_us.is_some_and(|rtt| rtt >= latency_threshold_us);
            let last = estimate.aux;
            // Started after the last decrease (the clock's low 32 bits, compared wrapping; a
            // decrease that reads as later than now is over 24 days old, wrapped round).
            let news = last == 0
                || (sample.started_ms.wrapping_sub(last) as i32) > 0
                || (sample.now_ms.wrapping_sub(last) as i32) < 0;
            let (next, aux) = if pushback && news {
                let lowered = (limit * (backoff_ppm as f32 / 1e6)).floor();
                (lowered, sample.now_ms.max(1))
            } else if !pushback && in_use {
                (limit + share, last)
            } else {
                (limit, last)
            };
            Estimate {
                limit: next.clamp(min, max),
                aux,
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
            let tolerance = tolerance_ppm as f32 / 1e6;
            let before = estimate.baseline_us();
            let gradient = if before > 0.0 {
                (tolerance * before / rtt).clamp(0.5, 1.0)
            } else {
                1.0
            };
            let mut baseline = if before <= 0.0 || rtt < before {
                rtt
            } else if rtt <= tolerance * before || gradient <= 0.5 {
                let alpha = 2.0 / (long_window as f32 + 1.0) * share;
                before + (rtt - before) * alpha
            } else {
                before
            };
            if baseline > 2.0 * rtt {
                baseline *= 0.95;
            }
            if !in_use {
                return Estimate {
                    limit,
                    aux: baseline.to_bits(),
                };
            }
            let gradient = (tolerance * baseline / rtt).clamp(0.5, 1.0);
            let smoothing = smoothing_ppm as f32 / 1e6;
            let target = limit * gradient + queue_size as f32;
            let next = limit + (target - limit) * smoothing * share;
            Estimate {
                limit: next.clamp(min, max),
                aux: baseline.to_bits(),
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

    /// A call of `rtt_ms` (untimed: `None`) that started at `started_ms` and ended at 1000.
    fn sample(rtt_ms: Option<u64>, in_flight: u32, failed: bool, started_ms: u32) -> Sample {
        Sample {
            rtt_us: rtt_ms.map(|ms| ms * 1000),
            in_flight,
            failed,
            started_ms,
            now_ms: 1000,
        }
    }

    #[test]
    fn aimd_adds_one_per_round_in_use_and_backs_off_once_per_round() {
        let a = adaptive(Limit::aimd(2, 30));
        let at = |limit: f32, aux| Estimate { limit, aux };
        // In use (10 of 20): 1/20 more; 20 such samples make one call.
        let grown = next(at(20.0, 0), &sample(Some(5), 10, false, 995), &a);
        assert_eq!(grown.limit, 20.05);
        // Not in use (9 of 20): unchanged.
        assert_eq!(
            next(at(20.0, 0), &sample(Some(5), 9, false, 995), &a).limit,
            20.0
        );
        // A failure, timed or not, and a latency at the threshold (5 s): × 0.9, rounded down,
        // the decrease's time kept.
        let failed = next(at(20.0, 0), &sample(None, 20, true, 1000), &a);
        assert_eq!(failed, at(18.0, 1000));
        let slow = next(at(20.0, 0), &sample(Some(5000), 1, false, 995), &a);
        assert_eq!(slow.limit, 18.0);
        // Pushback from a call that started before the last decrease is that decrease's.
        let old = next(failed, &sample(Some(5000), 20, true, 999), &a);
        assert_eq!(old, failed, "started before the decrease at 1000");
        let new = next(at(18.0, 990), &sample(Some(1), 20, true, 995), &a);
        assert_eq!(new, at(16.0, 1000), "started after the decrease at 990");
        // A decrease 2^31 ms or more ago (its low bits read as later than now) is long over.
        let wrapped = next(
            at(18.0, 1000 + (1 << 31)),
            &sample(None, 20, true, 1000),
            &a,
        );
        assert_eq!(wrapped, at(16.0, 1000));
        // Clamped both ways.
        assert_eq!(
            next(at(30.0, 0), &sample(Some(1), 30, false, 999), &a).limit,
            30.0
        );
        assert_eq!(
            next(at(2.0, 0), &sample(None, 2, true, 1000), &a).limit,
            2.0
        );
        // A success recorded without a latency still counts as one that is not pushback.
        assert_eq!(
            next(at(4.0, 0), &sample(None, 4, false, 1000), &a).limit,
            4.25
        );
    }

    #[test]
    fn the_gradient_grows_on_flat_latency_and_shrinks_as_latency_rises() {
        let a = adaptive(Limit::gradient(1, 100));
        let mut e = Estimate::initial(&a);
        for _ in 0..2_000 {
            e = next(e, &sample(Some(10), e.limit as u32, false, 990), &a);
        }
        assert!(e.limit > 40.0, "flat latency grows the limit: {e:?}");
        assert_eq!(e.baseline_us(), 10_000.0);
        let grown = e.limit;
        // Latency 3× the baseline: gradient 0.5, so the limit falls.
        for _ in 0..1_000 {
            e = next(e, &sample(Some(30), e.limit as u32, false, 970), &a);
        }
        assert!(e.limit < grown * 0.6, "{e:?}");
        // A failure without a latency is no sample; one not in use leaves the limit.
        assert_eq!(next(e, &sample(None, 100, true, 1000), &a), e);
        let idle = next(e, &sample(Some(10), 1, false, 990), &a);
        assert_eq!(idle.limit, e.limit);
    }

    #[test]
    fn an_estimate_packs_into_one_word() {
        let e = Estimate {
            limit: 17.25,
            aux: 1234.5f32.to_bits(),
        };
        assert_eq!(Estimate::unpack(e.pack()), e);
        assert_eq!(e.baseline_us(), 1234.5);
        let a = adaptive(Limit::gradient(4, 16));
        assert_eq!(e.whole(&a), 16);
        assert_eq!(Estimate::initial(&a).whole(&a), 16);
    }
}
