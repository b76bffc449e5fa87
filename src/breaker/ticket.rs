//! What both permits (`permit`) hold: the breaker, the generation, the probe slot, whether the
//! call is still to be counted and the slot of the cap on calls in flight; the report of an
//! outcome and what a drop gives back.

use core::ops::Deref;
use core::time::Duration;

use super::machine::CircuitBreaker;
use crate::classify::Outcome;
use crate::observe::Counter;
use crate::types::Transition;

/// What both permits hold: the breaker, and in one word the generation, whether the probe slot
/// is held, whether the call is still to be counted (counting is on and the permit is not used
/// up), whether it was issued from a rated word, and the slot of the cap it holds.
///
/// Two words, a pointer and [`Bits`], so a permit is a scalar pair: it is returned and kept in
/// two registers, never built byte by byte in memory and read back whole (which costs a failed
/// store-to-load forwarding on every healthy call).
#[derive(Debug)]
pub(super) struct Ticket<B: Deref<Target = CircuitBreaker>> {
    pub(super) breaker: B,
    pub(super) bits: Bits,
}

/// A ticket's generation (low 32 bits) and its flags above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Bits(u64);

impl Bits {
    const PROBE: u64 = 1 << 32;
    const COUNTING: u64 = 1 << 33;
    /// Issued from a closed word with a rate rule.
    const RATED: u64 = 1 << 34;
    const HELD: u64 = 1 << 35;
    const TIMED: u64 = 1 << 36;
    const SLOT: u64 = Self::HELD | Self::TIMED;

    #[inline(always)]
    pub(super) const fn new(generation: u32, probe: bool, counting: bool) -> Bits {
        Bits(
            generation as u64
                | ((probe as u64) * Self::PROBE)
                | ((counting as u64) * Self::COUNTING),
        )
    }

    #[inline(always)]
    pub(super) const fn generation(self) -> u32 {
        self.0 as u32
    }

    #[inline(always)]
    pub(super) const fn probe(self) -> bool {
        self.0 & Self::PROBE != 0
    }

    #[inline(always)]
    pub(super) const fn counting(self) -> bool {
        self.0 & Self::COUNTING != 0
    }

    #[inline(always)]
    pub(super) const fn rated(self) -> bool {
        self.0 & Self::RATED != 0
    }

    /// The slot of the cap it holds.
    #[inline(always)]
    pub(super) const fn slot(self) -> Slot {
        match self.0 & Self::SLOT {
            0 => Slot::None,
            Self::HELD => Slot::Held,
            _ => Slot::Timed,
        }
    }

    #[inline(always)]
    pub(super) fn set_rated(&mut self, rated: bool) {
        self.0 = (self.0 & !Self::RATED) | ((rated as u64) * Self::RATED);
    }

    #[inline(always)]
    pub(super) fn set_slot(&mut self, slot: Slot) {
        let bits = match slot {
            Slot::None => 0,
            Slot::Held => Self::HELD,
            Slot::Timed => Self::TIMED,
        };
        self.0 = (self.0 & !Self::SLOT) | bits;
    }

    #[inline(always)]
    pub(super) fn clear_counting(&mut self) {
        self.0 &= !Self::COUNTING;
    }

    /// These bits, and what they held given away: no probe slot, nothing to count, no slot of
    /// the cap (what a report or a move to an owned permit leaves to the drop).
    #[inline(always)]
    pub(super) fn take(&mut self) -> Bits {
        let taken = *self;
        self.0 &= !(Self::PROBE | Self::COUNTING | Self::SLOT);
        taken
    }
}

/// A permit's slot of the cap on calls in flight: none, held, or held with an adaptive limit
/// (the call is then timed and its outcome sampled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    None,
    Held,
    Timed,
}

impl<B: Deref<Target = CircuitBreaker>> Ticket<B> {
    pub(super) fn is_current(&self) -> bool {
        self.breaker
            .permit_is_current(self.bits.generation(), self.bits.probe())
    }

    /// Whether the call is to be timed: issued from a rated word (so a breaker without a rate
    /// rule decides it with no load) whose breaker has a slow-call rule.
    #[inline(always)]
    pub(super) fn times_call(&self) -> bool {
        (self.bits.rated() && self.breaker.times_calls()) || self.bits.slot() == Slot::Timed
    }

    #[inline(always)]
    pub(super) fn record(
        mut self,
        outcome: Outcome,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        let counter = Counter::of(&outcome);
        // The report replaces what `Drop` would do.
        let taken = self.bits.take();
        let (generation, probe, counting) = (taken.generation(), taken.probe(), taken.counting());
        let slot = taken.slot();
        if slot != Slot::None {
            // Only counted outcomes feed an adaptive limit.
            let sample = (counter != Counter::Ignored).then_some((elapsed, counter.is_failure()));
            self.breaker.release_in_flight(slot == Slot::Timed, sample);
        }
        // The healthy path first, inline: nothing to write, and at most one count. Everything
        // else is one out-of-line call with plain arguments.
        if !probe && !counter.is_failure() {
            // One load: the consecutive-only breaker's healthy word, or a rated breaker's, whose
            // success (not slow) is counted into its window and no more.
            let word = self.breaker.word();
            if word.is_healthy(generation, false)
                || (word.is_healthy(generation, true)
                    && (counter != Counter::Success || self.breaker.count_healthy(elapsed)))
            {
                if counting {
                    self.breaker.count(counter);
                }
                self.breaker.throttle_accept();
                return None;
            }
        }
        // A dependency's hint of how long to stay away (`Retry-After`), in whole ms; 0: none.
        let hint_ms = outcome.retry_after().map_or(0, crate::time::millis_ceil);
        self.breaker
            .record_slow(generation, probe, counting, counter, elapsed, hint_ms)
    }
}

impl<B: Deref<Target = CircuitBreaker>> Drop for Ticket<B> {
    #[inline]
    fn drop(&mut self) {
        let bits = self.bits;
        if bits.slot() != Slot::None {
            self.breaker.release_dropped();
        }
        // Only the probe's slot needs giving back, and the call counting as dropped: an
        // unrecorded ordinary call of a breaker that does not count costs nothing to drop.
        if bits.probe() || bits.counting() {
            self.breaker
                .dropped(bits.generation(), bits.probe(), bits.counting());
        }
    }
}
