//! The hint's cell: the earliest end a dependency's hint (`Retry-After`, `retry-after-ms`, the
//! rate-limit headers) set for an open period, and its encoding; with the pure arithmetic that
//! turns a hint into that end (capped, then spread upward).
//!
//! A hint is heard when a counted failure that carries one is reported. It is kept for the open
//! period it governs, named by the generation that period has or will have:
//! - heard while the word is open (not isolated), it governs that open period;
//! - heard by a current permit of a closed, probing or half-open word of generation `g`, it
//!   governs the open period a trip or a reopen from there enters, generation `g + 1` (every
//!   such transition enters the next generation).
//!
//! The cell keeps one period's end: a hint for the same period keeps the later end, a hint for
//! a newer period replaces it, and a hint for an older one is dropped. A success that clears a
//! closed count forgets the hint heard with it (a consecutive-only breaker's: a rate rule's window
//! still holds the failure), so a later trip on other failures is not lengthened by it. An open period then lasts
//! until the later of its cooldown's end and its hinted end, so a hint, a later one, or a re-trip
//! never shortens it. The cell is written before the compare-and-swap of a trip that it governs
//! (the report that carries the hint writes it first), so every caller that reads the open word
//! reads the hint too; a hint heard after the trip lengthens the period from then on.
//!
//! # Layout
//!
//! ```text
//!  63   62 61                 42 41                                  0
//! | spare | generation (20 bits) | earliest end, ms since origin (42) |
//! ```
//!
//! Zero (generation 0, ending at the origin) is the empty cell: it lengthens nothing.

use super::backoff;
use super::pack::Field;
use super::word::Word;
use crate::config::Shape;
use crate::sync::{Ordering, RelaxedU64};

/// One hinted end: the generation of the open period it governs, and the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hinted(u64);

impl Hinted {
    /// The earliest end, in ms since the breaker's time origin.
    const UNTIL: Field = Field::low(Word::PAYLOAD_BITS);
    /// The generation of the open period it governs.
    const GENERATION: Field = Self::UNTIL.above(Word::GENERATION_BITS);

    pub(crate) const fn new(generation: u32, until_ms: u64) -> Hinted {
        let until_ms = if until_ms > Word::MAX_TIME_MS {
            Word::MAX_TIME_MS
        } else {
            until_ms
        };
        Hinted(Self::GENERATION.put(generation as u64) | Self::UNTIL.put(until_ms))
    }

    pub(crate) const fn generation(self) -> u32 {
        Self::GENERATION.get(self.0) as u32
    }

    pub(crate) const fn until_ms(self) -> u64 {
        Self::UNTIL.get(self.0)
    }

    /// What the cell keeps when `self` is in it and `heard` arrives: the later end of one
    /// period, the newer of two periods (generations compared on their 20-bit circle: the newer
    /// is less than half a cycle ahead).
    const fn merged(self, heard: Hinted) -> Hinted {
        if heard.generation() == self.generation() {
            if heard.until_ms() > self.until_ms() {
                heard
            } else {
                self
            }
        } else {
            let ahead =
                heard.generation().wrapping_sub(self.generation()) as u64 & Word::GENERATION.max();
            if ahead <= Word::GENERATION.max() / 2 {
                heard
            } else {
                self
            }
        }
    }
}

const _: () = assert!(Hinted::GENERATION.end() <= 64);

/// The end a hint of `hint_ms` heard at `now_ms` sets for the open period of `generation`: the
/// hint capped at `shape.hint_cap_ms`, then lengthened by a fraction drawn for the generation
/// from `seed` in [0, `shape.hint_jitter_ppm`) millionths. Never earlier than the capped hint.
/// `None` when hints are off (a cap of zero) or the hint is zero.
pub(crate) fn hinted_end(
    now_ms: u64,
    hint_ms: u64,
    shape: &Shape,
    seed: u64,
    generation: u32,
) -> Option<u64> {
    let capped = hint_ms.min(shape.hint_cap_ms);
    if capped == 0 {
        return None;
    }
    let u = backoff::draw(seed, generation) % 1_000_000;
    let extra =
        u128::from(capped) * u128::from(shape.hint_jitter_ppm) * u128::from(u) / 1_000_000_000_000;
    let spread = capped.saturating_add(u64::try_from(extra).unwrap_or(u64::MAX));
    Some(now_ms.saturating_add(spread))
}

/// The cell of the hinted end (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct HintCell {
    hinted: RelaxedU64,
}

impl HintCell {
    /// The hinted end of the open period of `generation`, if a hint governs it.
    ///
    /// Relaxed: a hint heard before the trip was written before the trip's swap, which the
    /// caller's load of the word acquired; one heard later is read when it is seen.
    pub(crate) fn until_of(&self, generation: u32) -> Option<u64> {
        let hinted = Hinted(self.hinted.load(Ordering::Relaxed));
        (hinted.0 != 0 && hinted.generation() == generation).then_some(hinted.until_ms())
    }

    /// Forget the hinted end of the period of `generation`, if the cell holds it (a success
    /// cleared the count whose failures it came with). One of the cell's two read-modify-writes.
    ///
    /// Relaxed: the cell orders nothing; a reader that misses the forgetting reads a hint the
    /// success has just cleared, as a report racing the success may have left it.
    pub(crate) fn forget(&self, generation: u32) {
        let _ = self
            .hinted
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cell| {
                (cell != 0 && Hinted(cell).generation() == generation).then_some(0)
            });
    }

    /// Keep `heard` (see [`Hinted::merged`]): the other read-modify-write.
    ///
    /// Relaxed: the report that heard the hint makes its compare-and-swap of the word after this
    /// (Release), so a caller that reads the trip it governs (Acquire) reads the hint too; a hint
    /// heard after a trip needs no order with it, and the merge keeps the cell monotone per
    /// period whatever order the writers land in.
    pub(crate) fn hear(&self, heard: Hinted) {
        let _ = self
            .hinted
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cell| {
                let next = if cell == 0 {
                    heard
                } else {
                    Hinted(cell).merged(heard)
                };
                (next.0 != cell).then_some(next.0)
            });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_hinted_end_round_trips_at_the_limits_of_its_fields_and_saturates() {
        for generation in [0, 1, Word::MAX_GENERATION] {
            for until in [0, 1, Word::MAX_TIME_MS] {
                let hinted = Hinted::new(generation, until);
                assert_eq!(
                    (hinted.generation(), hinted.until_ms()),
                    (generation, until)
                );
            }
        }
        assert_eq!(Hinted::new(3, u64::MAX).until_ms(), Word::MAX_TIME_MS);
    }

    #[test]
    fn the_cell_keeps_the_later_end_of_a_period_and_the_newer_period() {
        let cell = HintCell::default();
        assert_eq!(cell.until_of(0), None, "empty");
        cell.hear(Hinted::new(5, 1_000));
        cell.hear(Hinted::new(5, 400));
        assert_eq!(
            cell.until_of(5),
            Some(1_000),
            "a shorter hint never shortens"
        );
        cell.hear(Hinted::new(5, 2_000));
        assert_eq!(cell.until_of(5), Some(2_000), "a longer one lengthens");
        cell.hear(Hinted::new(4, 9_000));
        assert_eq!(
            cell.until_of(5),
            Some(2_000),
            "an older period's hint is dropped"
        );
        cell.hear(Hinted::new(6, 100));
        assert_eq!((cell.until_of(5), cell.until_of(6)), (None, Some(100)));
        // Across the wrap of the generation: 0 is newer than the largest, and not older.
        let cell = HintCell::default();
        cell.hear(Hinted::new(Word::MAX_GENERATION, 7));
        cell.hear(Hinted::new(0, 8));
        assert_eq!(cell.until_of(0), Some(8));
        cell.hear(Hinted::new(Word::MAX_GENERATION, 9));
        assert_eq!(cell.until_of(0), Some(8));
        cell.forget(1);
        assert_eq!(cell.until_of(0), Some(8), "another period's: kept");
        cell.forget(0);
        assert_eq!(cell.until_of(0), None, "forgotten");
    }

    #[test]
    fn a_hint_is_capped_then_spread_upward_within_its_jitter() {
        let shape = Shape {
            hint_cap_ms: 60_000,
            hint_jitter_ppm: 200_000,
            ..Shape::FIXED
        };
        let mut ends = std::collections::BTreeSet::new();
        for generation in 0..2_000 {
            let end = hinted_end(1_000, 10_000, &shape, 42, generation).unwrap();
            assert!((11_000..13_000).contains(&end), "{end}");
            assert_eq!(hinted_end(1_000, 10_000, &shape, 42, generation), Some(end));
            ends.insert(end);
            let huge = hinted_end(0, u64::MAX, &shape, 42, generation).unwrap();
            assert!((60_000..72_000).contains(&huge), "capped: {huge}");
        }
        assert!(ends.len() > 1_000, "spread: {} distinct ends", ends.len());
        let fixed = Shape {
            hint_jitter_ppm: 0,
            ..shape
        };
        assert_eq!(
            hinted_end(5, 10, &fixed, 1, 1),
            Some(15),
            "no jitter: the hint"
        );
        let off = Shape {
            hint_cap_ms: 0,
            ..shape
        };
        assert_eq!(hinted_end(5, 10, &off, 1, 1), None, "hints off");
        assert_eq!(hinted_end(5, 0, &shape, 1, 1), None, "no hint");
        assert_eq!(
            hinted_end(u64::MAX, 10, &fixed, 1, 1),
            Some(u64::MAX),
            "saturates"
        );
    }
}
