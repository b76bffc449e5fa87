//! The live settings: the threshold, cooldown, probe timeout and probes in force, one atomic per
//! field, changed by `reconfigure`; their encoding and the cell that holds them.
//!
//! Read with relaxed loads: each decision uses the value of each field at the time it is made.
//! Only the threshold takes part in a protocol with the word (a lowered threshold must trip a
//! breaker whose count a racing report just raised: see `reconfigure`), so only it is the model
//! checker's atomic under loom; the durations are read afresh by every decision and order
//! nothing, so they stay out of the explored state.
//!
//! # Layout
//!
//! ```text
//! threshold:  the failure threshold (a whole u64)
//! cooldown:   | SHAPED (bit 63) | HINTED (bit 62) | spare (21) | cooldown in ms (41 bits) |
//! lease:      | CAPPED (bit 63) | spare (2) | probes − 1 (20) | probe timeout in ms (41 bits) |
//! ```
//!
//! A duration is at most `MAX_DURATION_MS` (2^40 ms), so 41 bits hold it; `SHAPED` says the
//! cooldown backs off or spreads, or its hints are not read the default way, and `HINTED` that a
//! dependency's hint has been heard (its shape is read from the cooldown's cell only when either
//! is set). `HINTED` is news, not configuration: set once, by the first hint, and kept by every
//! later store, so an open period a hint lengthened is never read from the plain cooldown.
//! `CAPPED` says the breaker has a cap on calls in flight (its cell is in the breaker's cold
//! block): set once, when the cell is made, and kept by every later store, so a healthy call of
//! a breaker without a cap pays one load of a line it has already and a branch.

use super::pack::Field;
use crate::config::{Limits, MAX_DURATION_MS, MAX_PROBES, Rates, Shape};
use crate::sync::{AtomicU64, Ordering, RelaxedU64};

/// The settings in force (see the module docs).
#[derive(Debug)]
pub(crate) struct Settings {
    failure_threshold: AtomicU64,
    cooldown: RelaxedU64,
    lease: RelaxedU64,
}

impl Settings {
    /// A duration in ms: the cooldown's and the probe timeout's field.
    const DURATION: Field = Field::low(41);
    /// The cooldown's flag: its shape is not fixed.
    const SHAPED: Field = Field::bit(63);
    /// The cooldown's flag: a hint has been heard.
    const HINTED: Field = Field::bit(62);
    /// The probes less one, above the probe timeout.
    const PROBES: Field = Self::DURATION.above(20);
    /// The lease's flag: the breaker has a cap on calls in flight.
    const CAPPED: Field = Field::bit(63);

    /// The settings of `limits`.
    pub(crate) fn new(limits: Limits) -> Self {
        let settings = Settings {
            failure_threshold: AtomicU64::new(0),
            cooldown: RelaxedU64::new(0),
            lease: RelaxedU64::new(0),
        };
        settings.store(limits);
        settings
    }

    /// Relaxed loads: see the module docs. The rate rules live with the window, the cooldown's
    /// shape in its own cell: `shape` reads it when the cooldown is shaped.
    #[inline]
    pub(crate) fn load(&self, rates: Option<Rates>, shape: impl FnOnce() -> Shape) -> Limits {
        let cooldown = self.cooldown.load(Ordering::Relaxed);
        let lease = self.lease.load(Ordering::Relaxed);
        Limits {
            failure_threshold: self.failure_threshold.load(Ordering::Relaxed),
            cooldown_ms: Self::DURATION.get(cooldown),
            probe_timeout_ms: Self::DURATION.get(lease),
            probes: Self::PROBES.get(lease) as u32 + 1,
            rates,
            shape: if (Self::SHAPED.put(1) | Self::HINTED.put(1)) & cooldown != 0 {
                Shape {
                    heard: Self::HINTED.get(cooldown) != 0,
                    ..shape()
                }
            } else {
                Shape::FIXED
            },
        }
    }

    /// The cooldown in ms when its shape is fixed (no backoff, no jitter, no hint heard), else
    /// `None`: all an open breaker's rejection needs to know. One relaxed load.
    #[inline(always)]
    pub(crate) fn plain_cooldown_ms(&self) -> Option<u64> {
        let cooldown = self.cooldown.load(Ordering::Relaxed);
        (cooldown & !Self::DURATION.put(Self::DURATION.max()) == 0)
            .then_some(Self::DURATION.get(cooldown))
    }

    /// Mark that a hint has been heard (see the module docs). Relaxed: the hint's own cell is
    /// written first, and a caller that misses the flag misses the hint too.
    pub(crate) fn hear(&self) {
        let hinted = Self::HINTED.put(1);
        if self.cooldown.load(Ordering::Relaxed) & hinted == 0 {
            self.cooldown.fetch_or(hinted, Ordering::Relaxed);
        }
    }

    /// Relaxed stores: `reconfigure`'s read-modify-write of the word, after them, publishes them.
    pub(crate) fn store(&self, limits: Limits) {
        self.failure_threshold
            .store(limits.failure_threshold, Ordering::Relaxed);
        let configured = Shape {
            heard: false,
            ..limits.shape
        };
        let shaped = Self::SHAPED.put(u64::from(configured.is_shaped()));
        let cooldown = Self::DURATION.put(limits.cooldown_ms) | shaped;
        // A heard hint's flag is kept (see the module docs).
        let _ = self
            .cooldown
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(cooldown | (old & Self::HINTED.put(1)))
            });
        let probes = Self::PROBES.put(u64::from(limits.probes.max(1) - 1));
        let lease = Self::DURATION.put(limits.probe_timeout_ms) | probes;
        // The cap's flag is kept (see the module docs).
        let _ = self
            .lease
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(lease | (old & Self::CAPPED.put(1)))
            });
    }

    /// Whether the breaker has a cap on calls in flight (see the module docs). One relaxed
    /// load: a caller that misses a flag set this instant admits one call without a slot, as a
    /// reconfiguration's other settings may be seen late.
    #[inline(always)]
    pub(crate) fn is_capped(&self) -> bool {
        self.lease.load(Ordering::Relaxed) & Self::CAPPED.put(1) != 0
    }

    /// Mark that the breaker has a cap on calls in flight, once its cell is made; kept after.
    /// Relaxed: the flag only says where to look; the cell itself is published by its `OnceBox`
    /// (release on set, acquire on get), so a caller that sees the flag before the cell takes
    /// no slot, the one late call `is_capped` allows for.
    pub(crate) fn mark_capped(&self) {
        self.lease.fetch_or(Self::CAPPED.put(1), Ordering::Relaxed);
    }
}

// Every duration and number of probes a configuration accepts fits its field.
const _: () = assert!(MAX_DURATION_MS <= Settings::DURATION.max());
const _: () = assert!((MAX_PROBES - 1) as u64 <= Settings::PROBES.max());
const _: () = assert!(Settings::PROBES.end() <= Settings::CAPPED.shift());
const _: () = assert!(Settings::SHAPED.end() == 64 && Settings::CAPPED.end() == 64);
const _: () = assert!(Settings::DURATION.end() <= Settings::SHAPED.shift());

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::{Rates, WindowLimit};
    use core::time::Duration;

    #[test]
    fn settings_round_trip_at_the_limits_of_their_fields() {
        let shaped = Shape {
            multiplier_ppm: 2_000_000,
            max_cooldown_ms: MAX_DURATION_MS,
            jitter_ppm: 999_999,
            ..Shape::FIXED
        };
        let rates = Rates {
            failure_ppm: 500_000,
            slow_ppm: 0,
            slow_threshold: Duration::from_secs(1),
            window: WindowLimit::Calls(10),
            minimum_calls: 5,
        };
        for failure_threshold in [1, u64::from(u32::MAX), u64::MAX] {
            for duration in [1, 2, MAX_DURATION_MS] {
                for probes in [1, 2, MAX_PROBES] {
                    for (shape, rates) in [(Shape::FIXED, None), (shaped, Some(rates))] {
                        let limits = Limits {
                            failure_threshold,
                            cooldown_ms: duration,
                            probe_timeout_ms: duration,
                            rates,
                            shape,
                            probes,
                        };
                        let settings = Settings::new(limits);
                        assert_eq!(settings.load(rates, || shape), limits);
                        assert!(!settings.is_capped());
                        settings.mark_capped();
                        settings.store(limits);
                        assert!(settings.is_capped(), "kept by a store");
                        assert_eq!(settings.load(rates, || shape), limits);
                        let plain = (!shape.is_shaped()).then_some(duration);
                        assert_eq!(settings.plain_cooldown_ms(), plain);
                    }
                }
            }
        }
    }
}
