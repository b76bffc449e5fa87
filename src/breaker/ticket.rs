//! What both permits (`permit`) hold: the breaker, the generation, the probe slot, whether the
//! call is still to be counted and the slot of the cap on calls in flight; the report of an
//! outcome and what a drop gives back.

use core::ops::Deref;
use core::time::Duration;

use super::machine::CircuitBreaker;
use crate::classify::Outcome;
use crate::observe::Counter;
use crate::types::Transition;

/// What both permits hold: the breaker, the generation, whether the probe slot is held, and
/// whether the call is still to be counted (counting is on and the permit is not used up).
#[derive(Debug)]
pub(super) struct Ticket<B: Deref<Target = CircuitBreaker>> {
    pub(super) breaker: B,
    pub(super) generation: u32,
    pub(super) probe: bool,
    pub(super) counting: bool,
    /// Issued from a closed word with a rate rule.
    pub(super) rated: bool,
    /// The slot of the cap on calls in flight it holds, if any (see `Permit::capped`).
    pub(super) slot: Slot,
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
        self.breaker.permit_is_current(self.generation, self.probe)
    }

    /// Whether the call is to be timed: issued from a rated word (so a breaker without a rate
    /// rule decides it with no load) whose breaker has a slow-call rule.
    #[inline(always)]
    pub(super) fn times_call(&self) -> bool {
        (self.rated && self.breaker.times_calls()) || self.slot == Slot::Timed
    }

    #[inline(always)]
    pub(super) fn record(
        mut self,
        outcome: Outcome,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        let counter = Counter::of(&outcome);
        // The report replaces what `Drop` would do.
        let probe = core::mem::take(&mut self.probe);
        let counting = core::mem::take(&mut self.counting);
        let slot = core::mem::replace(&mut self.slot, Slot::None);
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
            if word.is_healthy(self.generation, false)
                || (word.is_healthy(self.generation, true)
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
            .record_slow(self.generation, probe, counting, counter, elapsed, hint_ms)
    }
}

impl<B: Deref<Target = CircuitBreaker>> Drop for Ticket<B> {
    #[inline]
    fn drop(&mut self) {
        if self.slot != Slot::None {
            self.breaker.release_dropped();
        }
        // Only the probe's slot needs giving back, and the call counting as dropped: an
        // unrecorded ordinary call of a breaker that does not count costs nothing to drop.
        if self.probe || self.counting {
            self.breaker
                .dropped(self.generation, self.probe, self.counting);
        }
    }
}
