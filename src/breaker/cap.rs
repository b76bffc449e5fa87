//! The cap on calls in flight: the slots' cell ([`Cap`]), beside the word as the window is, made
//! when a breaker is first configured with a cap and kept (a later configuration without one
//! makes its limit unbounded).
//!
//! # Layout
//!
//! ```text
//! slots:    | limit (32 bits; all ones: unbounded) | calls holding a slot (32 bits) |
//! estimate: | adaptive limit, f32 bits | gradient's baseline latency in µs, f32 bits |
//! ```
//!
//! A call is admitted iff the count is below the limit at the instant of its compare-and-swap,
//! which writes the count one higher: the count and the limit are one word, so a lowered limit
//! and a racing claim are ordered, and no call is ever admitted over the limit in force. A
//! claim that finds the count at the limit writes nothing (no increment to roll back, so no
//! other caller is refused by an overshoot). A release is one subtraction. Both words share a
//! cache line of their own, away from the breaker's word (which every call reads): only capped
//! calls write it. The slots are relaxed: the count is one location (every read-modify-write of
//! it is in one total order, which is all the cap's promise needs) and publishes nothing.
//!
//! The adaptive limit's estimate moves by compare-and-swap (`state::limit::next`), and its whole
//! part, bounded by the fixed cap, is then written into the slots' limit. Two samples that land
//! together may write their limits in either order; the next sample writes the newest again.
//! The settings are relaxed stores read afresh by each sample: a sample taken during a
//! reconfiguration may use some old and some new settings, as the breaker's other decisions may.

use crossbeam_utils::CachePadded;

use crate::config::{Adaptive, Algorithm, Concurrency};
use crate::state::limit::{self, Estimate, Sample};
use crate::sync::{AtomicU64, Ordering, RelaxedU64};

/// The limit that admits every call.
pub(crate) const UNBOUNDED: u32 = u32::MAX;

const COUNT: u64 = u32::MAX as u64;

/// The cap's cell (see the module docs).
#[derive(Debug)]
pub(crate) struct Cap {
    hot: CachePadded<Hot>,
    /// The settings, relaxed: `[max_in_flight | kind]`, `[min | max]`, `[initial | ppm]`,
    /// `[threshold µs or tolerance ppm]`, `[queue_size | long_window]`.
    settings: [RelaxedU64; 5],
    /// Bumped by every `set` after it stores the settings and before it publishes: a sample's
    /// publication that raced it sees the bump and publishes again from the new settings (see
    /// `publish`).
    version: RelaxedU64,
}

#[derive(Debug)]
struct Hot {
    slots: AtomicU64,
    estimate: AtomicU64,
}

const NONE: u64 = 0;
const AIMD: u64 = 1;
const GRADIENT: u64 = 2;

impl Cap {
    /// A cap with `concurrency`, no call in flight.
    pub(crate) fn new(concurrency: &Concurrency) -> Cap {
        let cap = Cap {
            hot: CachePadded::new(Hot {
                slots: AtomicU64::new(u64::from(UNBOUNDED) << 32),
                estimate: AtomicU64::new(0),
            }),
            settings: Default::default(),
            version: RelaxedU64::new(0),
        };
        cap.set(concurrency, true);
        cap
    }

    /// Take a slot if the count is below the limit; `false` writes nothing.
    #[inline]
    pub(crate) fn claim(&self) -> bool {
        let slots = &self.hot.slots;
        let mut seen = slots.load(Ordering::Relaxed);
        loop {
            if seen & COUNT >= seen >> 32 {
                return false;
            }
            match slots.compare_exchange_weak(seen, seen + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
    }

    /// Give a slot back; the calls that were in flight, this one included.
    #[inline]
    pub(crate) fn release(&self) -> u32 {
        (self.hot.slots.fetch_sub(1, Ordering::Relaxed) & COUNT) as u32
    }

    /// Calls holding a slot.
    pub(crate) fn in_flight(&self) -> u32 {
        (self.hot.slots.load(Ordering::Relaxed) & COUNT) as u32
    }

    /// The limit in force; `None` when unbounded.
    pub(crate) fn limit(&self) -> Option<u32> {
        let limit = (self.hot.slots.load(Ordering::Relaxed) >> 32) as u32;
        (limit != UNBOUNDED).then_some(limit)
    }

    /// Whether an adaptive limit is set: its calls are timed and sampled.
    #[inline]
    pub(crate) fn is_adaptive(&self) -> bool {
        self.settings[0].load(Ordering::Relaxed) >> 32 != NONE
    }

    /// Store `concurrency`; the estimate starts afresh when the adaptive limit is new or changed
    /// (or `fresh`), else it keeps its value within the new bounds. Then the limit in force is
    /// written. (Called under the breaker's reconfiguration lock.)
    pub(crate) fn set(&self, concurrency: &Concurrency, fresh: bool) {
        let fresh = fresh || self.concurrency().adaptive != concurrency.adaptive;
        let fixed = concurrency.max_in_flight.unwrap_or(UNBOUNDED);
        let s = &self.settings;
        let o = Ordering::Relaxed;
        match concurrency.adaptive {
            None => s[0].store(u64::from(fixed), o),
            Some(a) => {
                let (kind, ppm, third, fourth) = match a.algorithm {
                    Algorithm::Aimd {
                        backoff_ppm,
                        latency_threshold_us,
                    } => (AIMD, backoff_ppm, latency_threshold_us, 0),
                    Algorithm::Gradient {
                        tolerance_ppm,
                        smoothing_ppm,
                        queue_size,
                        long_window,
                    } => (
                        GRADIENT,
                        smoothing_ppm,
                        tolerance_ppm,
                        u64::from(queue_size) | (u64::from(long_window) << 32),
                    ),
                };
                s[1].store(u64::from(a.min) | (u64::from(a.max) << 32), o);
                s[2].store(u64::from(a.initial) | (u64::from(ppm) << 32), o);
                s[3].store(third, o);
                s[4].store(fourth, o);
                if fresh {
                    self.hot
                        .estimate
                        .store(Estimate::initial(&a).pack(), Ordering::Relaxed);
                }
                s[0].store(u64::from(fixed) | (kind << 32), o);
            }
        }
        self.version.fetch_add(1, Ordering::SeqCst);
        self.publish();
    }

    /// The settings stored.
    pub(crate) fn concurrency(&self) -> Concurrency {
        let o = Ordering::Relaxed;
        let s: [u64; 5] = core::array::from_fn(|i| self.settings[i].load(o));
        let fixed = s[0] as u32;
        let half = |w: u64| (w as u32, (w >> 32) as u32);
        let (min, max) = half(s[1]);
        let (initial, ppm) = half(s[2]);
        let algorithm = match s[0] >> 32 {
            AIMD => Some(Algorithm::Aimd {
                backoff_ppm: ppm,
                latency_threshold_us: s[3],
            }),
            GRADIENT => Some(Algorithm::Gradient {
                tolerance_ppm: s[3],
                smoothing_ppm: ppm,
                queue_size: half(s[4]).0,
                long_window: half(s[4]).1,
            }),
            _ => None,
        };
        Concurrency {
            max_in_flight: (fixed != UNBOUNDED).then_some(fixed),
            adaptive: algorithm.map(|algorithm| Adaptive {
                initial,
                min,
                max,
                algorithm,
            }),
        }
    }

    /// Feed one call's sample to the adaptive limit, if one is set (`in_flight` as `release`
    /// returned it); the new limit in force if it changed.
    #[inline(never)]
    pub(crate) fn sample(&self, sample: &Sample) -> Option<u32> {
        let concurrency = self.concurrency();
        let adaptive = concurrency.adaptive?;
        let estimate = &self.hot.estimate;
        let mut seen = estimate.load(Ordering::Relaxed);
        loop {
            let next = limit::next(Estimate::unpack(seen), sample, &adaptive).pack();
            if next == seen {
                return None;
            }
            match estimate.compare_exchange_weak(seen, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        }
        self.publish()
    }

    /// Write the limit in force into the slots, from the settings as they are now: the fixed
    /// cap, or the adaptive limit's whole part bounded by it. The new limit if it changed.
    ///
    /// A sample's publication may race a `set`: the settings are read afresh on every try, and
    /// if the version moved while this one published, it publishes again, so the last word is
    /// always the newest settings'. (The version's bump and the slots' compare-and-swap are
    /// sequentially consistent: either this publication sees the bump, or the `set`'s own
    /// publication, which follows its bump, sees this one's write and corrects it.)
    fn publish(&self) -> Option<u32> {
        let slots = &self.hot.slots;
        let mut changed = None;
        loop {
            let version = self.version.load(Ordering::SeqCst);
            let concurrency = self.concurrency();
            let fixed = concurrency.max_in_flight.unwrap_or(UNBOUNDED);
            let limit = match concurrency.adaptive {
                Some(a) => {
                    let e = Estimate::unpack(self.hot.estimate.load(Ordering::Relaxed));
                    e.whole(&a).min(fixed)
                }
                None => fixed,
            };
            let seen = slots.load(Ordering::SeqCst);
            if (seen >> 32) as u32 != limit {
                let next = (u64::from(limit) << 32) | (seen & COUNT);
                if slots
                    .compare_exchange_weak(seen, next, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
                {
                    continue;
                }
                changed = Some(limit);
            }
            if self.version.load(Ordering::SeqCst) == version {
                return changed;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::{ConcurrencySettings, Limit};

    fn concurrency(max_in_flight: Option<u32>, adaptive: Option<Limit>) -> Concurrency {
        ConcurrencySettings {
            max_in_flight,
            adaptive,
        }
        .validate()
        .unwrap()
    }

    #[test]
    fn claims_stop_at_the_limit_and_a_release_frees_one() {
        let cap = Cap::new(&concurrency(Some(2), None));
        assert!(cap.claim() && cap.claim());
        assert!(!cap.claim(), "the third is over the cap");
        assert_eq!((cap.in_flight(), cap.limit()), (2, Some(2)));
        assert_eq!(cap.release(), 2);
        assert!(cap.claim());
        // Lowered below the count: no claim until the count is below the new limit.
        cap.set(&concurrency(Some(1), None), false);
        assert!(!cap.claim());
        cap.release();
        assert!(!cap.claim(), "one still in flight, at the limit of 1");
        cap.release();
        assert!(cap.claim());
        // No cap: unbounded, the count still kept.
        cap.set(&Concurrency::default(), false);
        assert_eq!((cap.limit(), cap.in_flight()), (None, 1));
    }

    #[test]
    fn settings_round_trip_and_the_fixed_cap_bounds_the_adaptive_limit() {
        for c in [
            concurrency(Some(8), Some(Limit::aimd(2, 64))),
            concurrency(None, Some(Limit::gradient(1, 10))),
            concurrency(Some(3), None),
        ] {
            let cap = Cap::new(&c);
            assert_eq!(cap.concurrency(), c);
        }
        let cap = Cap::new(&concurrency(Some(8), Some(Limit::aimd(2, 64))));
        assert_eq!(
            cap.limit(),
            Some(8),
            "the initial 20, bounded by the fixed 8"
        );
        assert!(cap.is_adaptive());
        // A failure backs the estimate off (20 → 18): still above 8.
        let failure = |at: u32| Sample {
            rtt_us: None,
            in_flight: 8,
            failed: true,
            started_ms: at,
            now_ms: at,
        };
        assert_eq!(cap.sample(&failure(1)), None);
        for at in 2..30 {
            cap.sample(&failure(at));
        }
        assert_eq!(
            cap.limit(),
            Some(2),
            "the adaptive minimum, under the fixed cap"
        );
    }
}
