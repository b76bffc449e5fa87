//! The cooldown's cell: its live shape (`Builder::cooldown_backoff`, `Builder::cooldown_jitter`)
//! and the record of the cooldown in force, with its encoding.
//!
//! The cooldown of an open period is fixed when the period begins: its *base* (the configured
//! cooldown at a trip, the previous base times the multiplier, capped, at a reopen: `backoff`) is
//! recorded with the generation the period entered, and the spread is a pure function of the
//! generation and the breaker's seed, so every caller reads the same end. The record is written
//! before the compare-and-swap that enters the generation and again by the writer that landed it:
//! every writer racing into one generation reads the same previous one, so they write the same
//! base (but for a fleet's probe grant racing a probe's failure, where the landed writer's second
//! write settles it).
//!
//! # Layout of the record
//!
//! ```text
//!  63     61 60                 41 40                       0
//! | spare  | generation (20 bits) | base cooldown in ms (41) |
//! ```

use super::backoff;
use super::hint::{HintCell, Hinted, hinted_end};
use super::pack::Field;
use super::word::{Kind, Word, next_generation};
use crate::config::{Limits, MAX_DURATION_MS, Shape};
use crate::sync::{Ordering, RelaxedU64};

/// One record of the cooldown in force: the base of the open period that entered a generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record(u64);

impl Record {
    /// The base cooldown, in ms: at most `MAX_DURATION_MS`, the cap of a backoff.
    const BASE: Field = Field::low(41);
    /// The generation the period entered.
    const GENERATION: Field = Self::BASE.above(Word::GENERATION_BITS);

    pub(crate) const fn new(generation: u32, base_ms: u64) -> Record {
        Record(Self::GENERATION.put(generation as u64) | Self::BASE.put(base_ms))
    }

    pub(crate) const fn generation(self) -> u32 {
        Self::GENERATION.get(self.0) as u32
    }

    pub(crate) const fn base_ms(self) -> u64 {
        Self::BASE.get(self.0)
    }
}

const _: () = assert!(MAX_DURATION_MS <= Record::BASE.max());

/// The backoff's cap in ms and the jitter in millionths (below 1,000,000), packed in one relaxed
/// cell.
const MAX_COOLDOWN: Field = Field::low(41);
const JITTER: Field = MAX_COOLDOWN.above(20);
const _: () = assert!(MAX_DURATION_MS <= MAX_COOLDOWN.max() && 999_999 <= JITTER.max());

/// The hints' settings, packed in one relaxed cell: the cap in ms, the jitter in millionths, and
/// whether a long hint trips at once.
const HINT_CAP: Field = Field::low(41);
const HINT_JITTER: Field = HINT_CAP.above(21);
const HINT_OPENS: Field = Field::bit(63);
const _: () = assert!(HINT_JITTER.end() <= HINT_OPENS.shift() && 1_000_000 <= HINT_JITTER.max());
const _: () = assert!(Record::GENERATION.end() <= 64);

/// The cooldown's live shape, and the record of the cooldown in force (see the module docs).
/// Every field is relaxed, as the other live settings: the record is published by the word's
/// swap that enters its generation.
#[derive(Debug)]
pub(crate) struct Cooldown {
    multiplier_ppm: RelaxedU64,
    /// `MAX_COOLDOWN` and `JITTER`.
    spread: RelaxedU64,
    hints: RelaxedU64,
    in_force: RelaxedU64,
    hinted: HintCell,
    seed: u64,
}

impl Cooldown {
    /// The shape, and generation 0's base: the configured `cooldown_ms` (no open period has
    /// written one yet).
    pub(crate) fn new(shape: Shape, cooldown_ms: u64) -> Self {
        let cell = Cooldown {
            multiplier_ppm: RelaxedU64::new(0),
            spread: RelaxedU64::new(0),
            hints: RelaxedU64::new(0),
            hinted: HintCell::default(),
            in_force: RelaxedU64::new(Record::new(0, cooldown_ms).0),
            // A seed of the breaker's own, so breakers of one name in separate processes spread
            // apart too.
            seed: std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), 0u64),
        };
        cell.store(shape);
        cell
    }

    /// Relaxed, as the other live settings.
    pub(crate) fn load(&self) -> Shape {
        let hints = self.hints.load(Ordering::Relaxed);
        let spread = self.spread.load(Ordering::Relaxed);
        Shape {
            multiplier_ppm: self.multiplier_ppm.load(Ordering::Relaxed),
            max_cooldown_ms: MAX_COOLDOWN.get(spread),
            jitter_ppm: JITTER.get(spread),
            hint_cap_ms: HINT_CAP.get(hints),
            hint_jitter_ppm: HINT_JITTER.get(hints),
            open_on_long_hint: HINT_OPENS.get(hints) != 0,
            heard: false,
        }
    }

    pub(crate) fn store(&self, shape: Shape) {
        self.multiplier_ppm
            .store(shape.multiplier_ppm, Ordering::Relaxed);
        let spread = MAX_COOLDOWN.put(shape.max_cooldown_ms) | JITTER.put(shape.jitter_ppm);
        self.spread.store(spread, Ordering::Relaxed);
        let hints = HINT_CAP.put(shape.hint_cap_ms)
            | HINT_JITTER.put(shape.hint_jitter_ppm)
            | HINT_OPENS.put(u64::from(shape.open_on_long_hint));
        self.hints.store(hints, Ordering::Relaxed);
    }

    /// Keep the end a hint of `hint_ms`, heard at `now_ms`, sets for the open period of
    /// `generation` (see `hint`). Whether a hint lengthens anything: `false` when hints are off.
    pub(crate) fn hear(&self, generation: u32, now_ms: u64, hint_ms: u64, shape: &Shape) -> bool {
        let Some(until_ms) = hinted_end(now_ms, hint_ms, shape, self.seed, generation) else {
            return false;
        };
        self.hinted.hear(Hinted::new(generation, until_ms));
        true
    }

    /// The base cooldown of the open period that entered `generation`: the one recorded for it,
    /// or the configured one if none was (the first period after construction or a change of
    /// shape). Without a backoff every period's base is the configured cooldown in force, as a
    /// plain breaker's is: a reconfigured cooldown counts from the period's opened-at whatever
    /// else shapes it (a jitter, a hint).
    pub(crate) fn base_of(&self, generation: u32, limits: &Limits) -> u64 {
        if limits.shape.multiplier_ppm == Shape::FIXED.multiplier_ppm {
            return limits.cooldown_ms;
        }
        let record = Record(self.in_force.load(Ordering::Relaxed));
        if record.generation() == generation {
            record.base_ms()
        } else {
            limits.cooldown_ms
        }
    }

    /// The cooldown of the open period that entered `generation`, spread.
    pub(crate) fn of_generation(&self, generation: u32, limits: &Limits) -> u64 {
        let base = self.base_of(generation, limits);
        backoff::spread(self.seed, generation, base, &limits.shape)
    }

    /// The hinted end of the open period of `generation`, in ms since the origin, if a hint
    /// governs it.
    pub(crate) fn hinted_until(&self, generation: u32) -> Option<u64> {
        self.hinted.until_of(generation)
    }

    /// Forget the hinted end of the period of `generation` (see `hint`).
    pub(crate) fn forget_hint(&self, generation: u32) {
        self.hinted.forget(generation);
    }

    /// Keep `until_ms` as the hinted end of the open period of `generation`, as it is (a
    /// fleet's: capped and spread where it was heard).
    pub(crate) fn hear_until(&self, generation: u32, until_ms: u64) {
        self.hinted.hear(Hinted::new(generation, until_ms));
    }

    /// The cooldown in force for `word`: an open word's period's, lengthened to its hinted end
    /// if a hint governs it; a probing word's the one its
    /// lease's end would begin (a reopen); otherwise the configured one.
    pub(crate) fn cooldown_of(&self, word: Word, limits: &Limits) -> u64 {
        let generation = word.generation();
        match word.kind() {
            // The later of the cooldown's end and a hint's (`hint`): an isolated word never ends.
            Kind::Open => {
                let cooldown = self.of_generation(generation, limits);
                match self.hinted.until_of(generation) {
                    Some(until) if !word.is_isolated() => {
                        cooldown.max(until.saturating_sub(word.payload()))
                    }
                    _ => cooldown,
                }
            }
            // The reopen at the lease's end, lengthened by a hint that governs it (the probe's,
            // or a late report's).
            Kind::Probing => {
                let next = next_generation(generation);
                let base = backoff::backed_off(self.base_of(generation, limits), &limits.shape);
                let cooldown = backoff::spread(self.seed, next, base, &limits.shape);
                let lease_end = word.payload().saturating_add(limits.probe_timeout_ms);
                self.hinted.until_of(next).map_or(cooldown, |until| {
                    cooldown.max(until.saturating_sub(lease_end))
                })
            }
            Kind::Closed | Kind::HalfOpen => limits.cooldown_ms,
        }
    }

    /// The record of the period `after` enters, if it enters one: from closed, the configured
    /// cooldown; from a probe (failed, timed out, or claimed again after its lease), one more
    /// backoff; from open or half-open (a fleet's grant, an isolation), the same.
    pub(crate) fn entered(&self, before: Word, after: Word, limits: &Limits) -> Option<Record> {
        if after.generation() == before.generation() || after.kind() == Kind::Closed {
            return None;
        }
        let base = match (before.kind(), after.kind()) {
            (Kind::Closed, _) => limits.cooldown_ms,
            // Several probes that all gave their slots back: no reopen, the same period.
            (Kind::Probing, Kind::HalfOpen) => self.base_of(before.generation(), limits),
            (Kind::Probing, _) => {
                backoff::backed_off(self.base_of(before.generation(), limits), &limits.shape)
            }
            (Kind::Open | Kind::HalfOpen, _) => self.base_of(before.generation(), limits),
        };
        Some(Record::new(after.generation(), base))
    }

    /// Relaxed: written before the swap that enters the generation, whose release publishes it
    /// to every caller that reads the new word (acquire); the landed writer's second write is
    /// the same value but for the race the module docs describe.
    pub(crate) fn write(&self, record: Record) {
        self.in_force.store(record.0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_at_the_limits_of_its_fields() {
        for generation in [0, 1, Word::MAX_GENERATION] {
            for base in [0, 1, MAX_DURATION_MS] {
                let record = Record::new(generation, base);
                assert_eq!((record.generation(), record.base_ms()), (generation, base));
            }
        }
    }
}
