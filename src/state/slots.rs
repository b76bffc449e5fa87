//! The probe slots of a half-open breaker that admits several probes: their encoding and the
//! cell that holds them beside the word.
//!
//! The first probe is admitted by the word's compare-and-swap (open → probing, as a single probe
//! is); the others by this cell's, while the word is probing in that generation and its lease
//! holds. Whoever first finds the slots counting another generation starts them at one claimed,
//! the word's own probe, and adds its own claim if it is not that probe: so exactly `probes` are
//! admitted however the claims interleave. A success adds one succeeded; the one that makes them
//! all is the verdict, made on the word (closed, in a new generation); a counted failure reopens
//! the word at once; a probe that gives its slot back takes one claimed off. Every next value is
//! decided in `decide` (its `probes` part); this file only packs and stores them.
//!
//! # Layout
//!
//! ```text
//!  63       60 59                40 39               20 19               0
//! | spare (4) | generation (20)     | claimed (20)      | succeeded (20)    |
//! ```
//!
//! The generation is the word's (20 bits), the counts are at most `MAX_PROBES` (2^20 − 1) each;
//! the top four bits are spare.

use super::pack::Field;
use super::word::Word;
use crate::sync::{AtomicU64, Ordering};

/// One packed value of the probe slots.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slots(u64);

impl Slots {
    /// Probes of the counted generation that succeeded.
    const SUCCEEDED: Field = Field::low(20);
    /// Probes of the counted generation admitted and not given back.
    const CLAIMED: Field = Self::SUCCEEDED.above(20);
    /// The probing generation counted.
    const GENERATION: Field = Self::CLAIMED.above(Word::GENERATION_BITS);

    /// What a breaker starts with: generation 0, nothing claimed.
    pub(crate) const EMPTY: Slots = Slots(0);

    /// The slots of `generation` with `claimed` and `succeeded` (each cut to its field).
    pub(crate) const fn new(generation: u32, claimed: u64, succeeded: u64) -> Slots {
        Slots(
            Self::GENERATION.put(generation as u64)
                | Self::CLAIMED.put(claimed)
                | Self::SUCCEEDED.put(succeeded),
        )
    }

    pub(crate) const fn generation(self) -> u32 {
        Self::GENERATION.get(self.0) as u32
    }

    pub(crate) const fn claimed(self) -> u64 {
        Self::CLAIMED.get(self.0)
    }

    pub(crate) const fn succeeded(self) -> u64 {
        Self::SUCCEEDED.get(self.0)
    }
}

// The counts hold every number of probes a configuration accepts, and the fields fit.
const _: () = assert!(crate::config::MAX_PROBES as u64 <= Slots::CLAIMED.max());
const _: () = assert!(crate::config::MAX_PROBES as u64 <= Slots::SUCCEEDED.max());
const _: () = assert!(Slots::GENERATION.end() <= 64);

impl core::fmt::Debug for Slots {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Slots")
            .field("generation", &self.generation())
            .field("claimed", &self.claimed())
            .field("succeeded", &self.succeeded())
            .finish()
    }
}

/// The cell of the probe slots: the model checker's atomic under loom, as the word is.
#[derive(Debug)]
pub(crate) struct SlotsCell {
    slots: AtomicU64,
}

impl SlotsCell {
    pub(crate) fn new() -> Self {
        SlotsCell {
            slots: AtomicU64::new(Slots::EMPTY.0),
        }
    }

    /// The slots now. Acquire: pairs with the release of the write that stored them.
    pub(crate) fn load(&self) -> Slots {
        Slots(self.slots.load(Ordering::Acquire))
    }

    /// Apply `change` (a decision of `decide`) until it lands or declines; the value it replaced,
    /// or `Err` with the value it declined.
    ///
    /// AcqRel on success, Acquire on failure: the count is exact from the total order of this one
    /// atomic's read-modify-writes alone; the orderings keep a claimer's re-reading of the state
    /// word after its claim, so the admission is decided on a word read once the slot was taken
    /// (the loom model of several probes explores the claims).
    pub(crate) fn update(
        &self,
        mut change: impl FnMut(Slots) -> Option<Slots>,
    ) -> Result<Slots, Slots> {
        self.slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |seen| {
                change(Slots(seen)).map(|next| next.0)
            })
            .map(Slots)
            .map_err(Slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip_at_the_limits_of_their_fields() {
        let max_count = u64::from(crate::config::MAX_PROBES);
        for generation in [0, 1, Word::MAX_GENERATION] {
            for claimed in [0, 1, max_count] {
                for succeeded in [0, 1, max_count] {
                    let slots = Slots::new(generation, claimed, succeeded);
                    assert_eq!(
                        (slots.generation(), slots.claimed(), slots.succeeded()),
                        (generation, claimed, succeeded)
                    );
                }
            }
        }
        assert_eq!(Slots::EMPTY, Slots::new(0, 0, 0));
        let top = Slots::new(Word::MAX_GENERATION, max_count, max_count);
        assert_eq!(
            top.0 >> Slots::GENERATION.end(),
            0,
            "the spare bits stay clear"
        );
    }
}
