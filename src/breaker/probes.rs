//! The breaker's side of several probes: applying the decider's slot decisions
//! (`decide::start_slots`, `claim_slot`, `give_slot_back`, `succeed_slot`) through the slots'
//! cell, and reading the word again where a claim must be confirmed.

use super::machine::CircuitBreaker;
use crate::config::Limits;
use crate::state::decide::{self, Report};

impl CircuitBreaker {
    /// Start the slots of `generation`, whose first probe the word's swap just admitted (see
    /// `decide::start_slots`).
    #[cold]
    pub(super) fn start_slots(&self, generation: u32) {
        let _ = self
            .inner
            .cold
            .slots
            .update(|seen| decide::start_slots(seen, generation));
    }

    /// Claim one more probe slot of the probing `generation`; `false` if all are taken.
    #[cold]
    pub(super) fn claim_slot(&self, generation: u32, limits: &Limits) -> bool {
        let claimed = self
            .inner
            .cold
            .slots
            .update(|seen| decide::claim_slot(seen, generation, limits.probes));
        if claimed.is_err() {
            return false;
        }
        // Admitted only if the word is still probing in its generation with its lease holding:
        // the admission is this reading. A verdict, a lease found expired or a change by hand
        // made since the rejection that led here gives the slot back (nothing is sent to a
        // dependency whose breaker reopened).
        if self.permit_is_current(generation, true) {
            return true;
        }
        self.give_slot_back(generation);
        false
    }

    /// Give back a slot of `generation`: a probe ignored or dropped, or a claim not admitted.
    pub(super) fn give_slot_back(&self, generation: u32) {
        let _ = self
            .inner
            .cold
            .slots
            .update(|seen| decide::give_slot_back(seen, generation));
    }

    /// Report a probe of several that is not a counted failure: a success adds to the succeeded
    /// (`true`: it is the last, and closes the breaker through the word); an ignored or dropped
    /// outcome gives the slot back. Nothing counts from a probe that is no longer current.
    #[cold]
    pub(super) fn report_slot(&self, generation: u32, report: Report, limits: &Limits) -> bool {
        if !self.permit_is_current(generation, true) {
            return false;
        }
        if report != Report::Success {
            self.give_slot_back(generation);
            return false;
        }
        let before = self
            .inner
            .cold
            .slots
            .update(|seen| decide::succeed_slot(seen, generation));
        before.is_ok_and(|seen| decide::is_last_success(seen, limits.probes))
    }

    /// Whether the slots still count `generation`: a probe of a period that admitted several.
    pub(super) fn slots_count(&self, generation: u32) -> bool {
        self.inner.cold.slots.load().generation() == generation
    }
}
