//! The breaker's fleet hooks (feature `redis`), gathered behind one door: what the fleet's
//! background task calls (adopting a state learned from the fleet, taking the fleet's probe, the
//! records it reads), and what the breaker's slow paths tell it through the tap (transitions,
//! count changes, resets) or ask it (the gate on the probe slot). A breaker built without a fleet
//! has no tap: every hook here sees `None` and does nothing.

// Without feature `redis` nothing calls the fleet's side of these hooks.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use core::time::Duration;

use super::machine::{CircuitBreaker, split};
use super::tap::{Gate, Tap};
use crate::state::decide::{self, Admission, Remote};
use crate::state::word::{Kind, Word};
use crate::types::{BlockedReason, State, Transition, TransitionReason};

impl CircuitBreaker {
    /// Adopt a state learned from the fleet (see `decide::adopt`); returns the word after it and
    /// the transition it made, if any, announced with reason `fleet`.
    pub(crate) fn adopt(&self, remote: Remote) -> (Word, Option<Transition>) {
        let limits = self.limits();
        let mut now = None;
        let updated = self.update(self.word(), |word| {
            split(decide::adopt(word, remote, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            }))
        });
        let answer = updated.answer.map(|t| self.shaped(t, &limits));
        if let Some(transition) = answer {
            self.announce(transition);
        }
        (updated.after.unwrap_or(updated.before), answer)
    }

    /// [`adopt`](Self::adopt), but only while the word is still in local `generation` (read by
    /// the caller before it took the tap's news): a local change made since (a change by hand, a
    /// trip, a probe's verdict) is not overwritten, and `Err` says so; the caller hears of the
    /// change from the tap and decides again. `Ok` gives the word's generation after the
    /// adoption and its transition.
    pub(crate) fn adopt_in(
        &self,
        remote: Remote,
        generation: u32,
    ) -> Result<(u32, Option<Transition>), ()> {
        let limits = self.limits();
        let mut now = None;
        let updated = self.update(self.word(), |word| {
            if word.generation() != generation {
                return (None, Err(()));
            }
            let (next, transition) = split(decide::adopt(word, remote, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            }));
            (next, Ok(transition))
        });
        let transition = updated.answer?.map(|t| self.shaped(t, &limits));
        if let Some(transition) = transition {
            self.announce(transition);
        }
        let word = updated.after.unwrap_or(updated.before);
        Ok((word.generation(), transition))
    }

    /// The generation of the word now.
    pub(crate) fn generation(&self) -> u32 {
        self.word().generation()
    }

    /// Take the fleet's probe: free the probe slot of an open word, or of a probing word past its
    /// lease, in a new generation (see `decide::adopt`; a local probe within its lease, or a slot
    /// already free, is kept) and let local callers claim it for `window_ms`. Returns the
    /// generation granted, or `None` if the word is closed or isolated (changed meanwhile).
    pub(crate) fn take_fleet_probe(&self, window_ms: u64) -> Option<u32> {
        let tap = self.inner.cold.tap.as_deref()?;
        let (word, _) = self.adopt(Remote::ProbeHere);
        match word.kind() {
            Kind::HalfOpen | Kind::Probing => {
                let generation = word.generation();
                tap.grant(generation, self.now_ms().saturating_add(window_ms));
                Some(generation)
            }
            _ => None,
        }
    }

    /// Whether the probe slot the fleet granted in `generation` is still free: no local caller
    /// took it.
    pub(crate) fn fleet_probe_unused(&self, generation: u32) -> bool {
        let word = self.word();
        word.kind() == Kind::HalfOpen && word.generation() == generation
    }

    /// What the fleet is told of this breaker when its record is missing: the state, whether it
    /// is isolated, and how long ago (ms) an open state began.
    pub(crate) fn local_record(&self) -> (State, bool, u64) {
        let word = self.word();
        let state = self.state();
        let elapsed = match word.kind() {
            Kind::Open if !word.is_isolated() => self.now_ms().saturating_sub(word.payload()),
            _ => 0,
        };
        (state, word.is_isolated(), elapsed)
    }

    /// The consecutive counted failures of a closed word; `None` when not closed.
    pub(crate) fn closed_failures(&self) -> Option<u64> {
        let word = self.word();
        word.closed_generation().map(|_| word.failures())
    }

    /// The fleet's tap, if this breaker has one.
    pub(crate) fn tap(&self) -> Option<&Tap> {
        self.inner.cold.tap.as_deref()
    }

    /// The cooldown in force now: for an open breaker, its open period's; else the one the next
    /// trip would start with (the configured one, spread if jitter is set, is drawn at the trip).
    pub(crate) fn cooldown_in_force(&self) -> Duration {
        let limits = self.limits();
        Duration::from_millis(self.limits_at(self.word(), &limits).cooldown_ms)
    }

    /// The fleet's gate on the probe slot: in fleet mode the fleet says which instance takes it,
    /// so an admission of the probe is turned into a rejection (`probe_in_flight`, with the
    /// fleet's retry-after) unless this instance holds the fleet's grant. `None` keeps the
    /// admission. `now` is read only for a probe's admission with a tap.
    #[inline]
    pub(super) fn fleet_gate(
        &self,
        admission: Admission,
        now: impl FnOnce() -> u64,
    ) -> Option<Admission> {
        let Admission::Admit {
            generation,
            probe: true,
        } = admission
        else {
            return None;
        };
        let tap = self.inner.cold.tap.as_deref()?;
        match tap.gate(generation, now()) {
            Gate::Open => None,
            Gate::Closed { retry_after_ms } => Some(Admission::Reject {
                state: State::HalfOpen,
                reason: BlockedReason::ProbeInFlight,
                retry_after_ms,
            }),
        }
    }

    /// Tell the fleet the transitions that landed here (not those adopted from it).
    pub(super) fn tell_fleet(&self, transitions: &[Option<Transition>]) {
        if let Some(tap) = self.inner.cold.tap.as_deref() {
            for transition in transitions.iter().flatten() {
                if transition.reason() != TransitionReason::Fleet {
                    tap.transition(*transition);
                }
            }
        }
    }

    /// Tell the fleet that a closed count changed (a failure counted, a count cleared).
    pub(super) fn tell_fleet_count(&self) {
        if let Some(tap) = self.inner.cold.tap.as_deref() {
            tap.count_changed();
        }
    }

    /// Tell the fleet that a reset cleared a closed count (no transition says so).
    pub(super) fn tell_fleet_reset(&self) {
        if let Some(tap) = self.inner.cold.tap.as_deref() {
            tap.reset();
        }
    }
}
