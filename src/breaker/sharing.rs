//! Sharing a breaker's transitions with other instances: what the breaker's slow paths tell its
//! hook (transitions, count changes, resets) or ask it (the gate on the probe slot), and the
//! operations the hook's owner calls (adopting a state learned elsewhere, freeing the probe slot
//! for a grant, the readings it reports). A breaker built without a hook sees `None` and does
//! nothing here; fleet mode (`fleet`) is the one owner of a hook.

// The owner's side (`adopt`, `free_probe_slot`, the readings) is called only by a hook's owner,
// which only fleet mode (feature `redis`) compiles; without it nothing calls them.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use core::time::Duration;
use std::sync::Arc;

use super::budget::RetryBudget;
use super::hook::Hook;
use super::machine::{CircuitBreaker, split};
use super::prober::{Prober, ProberSlot};
use crate::state::decide::{self, Admission, Remote, View};
use crate::state::word::{Kind, Word};
use crate::types::{BlockedReason, State, Transition, TransitionReason};

impl CircuitBreaker {
    /// Adopt a state learned from other instances (see `decide::adopt`); returns the word after it and
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

    /// Free the probe slot for a grant: of an open word, or of a probing word past its lease, in
    /// a new generation (see `decide::adopt`; a local probe within its lease, or a slot already
    /// free, is kept). Returns the generation whose slot local callers may claim, or `None` if the
    /// word is closed or isolated (changed meanwhile).
    pub(crate) fn free_probe_slot(&self) -> Option<u32> {
        let (word, _) = self.adopt(Remote::ProbeHere);
        match word.kind() {
            Kind::HalfOpen | Kind::Probing => Some(word.generation()),
            _ => None,
        }
    }

    /// Whether the probe slot granted in `generation` is still free: no local caller took it.
    pub(crate) fn probe_slot_unused(&self, generation: u32) -> bool {
        let word = self.word();
        word.kind() == Kind::HalfOpen && word.generation() == generation
    }

    /// What other instances are told of this breaker when their record is missing: the state, whether it
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

    /// The breaker's hook, if it has one.
    pub(crate) fn hook(&self) -> Option<&dyn Hook> {
        self.inner.cold.attached.get()?.hook.as_deref()
    }

    /// The cooldown in force now: for an open breaker, its open period's; else the one the next
    /// trip would start with (the configured one, spread if jitter is set, is drawn at the trip).
    pub(crate) fn cooldown_in_force(&self) -> Duration {
        let limits = self.limits();
        Duration::from_millis(self.limits_at(self.word(), &limits).cooldown_ms)
    }

    /// The time left to the hinted end of the open period in force, in ms: 0 when the breaker is
    /// not open, or no hint governs its period (what the fleet's record keeps as `hu`).
    pub(crate) fn hinted_remaining_ms(&self) -> u64 {
        let word = self.word();
        if word.kind() != Kind::Open || word.is_isolated() {
            return 0;
        }
        let cooldown = &self.inner.cold.cooldown;
        cooldown
            .hinted_until(word.generation())
            .map_or(0, |until| until.saturating_sub(self.now_ms()))
    }

    /// Keep the fleet's hinted end, `remaining_ms` from now, for the open period in force: the
    /// period adopted from the fleet's record lasts as long there as here.
    pub(crate) fn adopt_hint(&self, remaining_ms: u64) {
        let word = self.word();
        if remaining_ms == 0 || word.kind() != Kind::Open || word.is_isolated() {
            return;
        }
        let until_ms = self.now_ms().saturating_add(remaining_ms);
        self.inner
            .cold
            .cooldown
            .hear_until(word.generation(), until_ms);
        self.inner.settings.hear();
    }

    /// The gates on the probe slot. A health check's prober (`Builder::probe_with`) takes the
    /// slot itself: while its task runs, an admission of the probe for anyone else (`by_prober`
    /// false) is turned into a rejection (`probe_in_flight`, for at most the probe timeout, the
    /// longest the prober's check may take) and the prober is woken. Then the hook's: with a hook
    /// (fleet mode) the instances agree on which one takes the slot, so an admission of the probe
    /// is turned into a rejection (`probe_in_flight`, with the hook's retry-after) unless the hook
    /// opens the gate. `None` keeps the admission. `now` is read only for a probe's admission
    /// with a hook.
    #[inline]
    pub(super) fn probe_gate(
        &self,
        admission: Admission,
        by_prober: bool,
        now: impl FnOnce() -> u64,
    ) -> Option<Admission> {
        let Admission::Admit {
            generation,
            probe: true,
        } = admission
        else {
            return None;
        };
        if !by_prober
            && let Some(prober) = self.prober()
            && prober.is_alive()
        {
            prober.wake();
            return Some(Admission::Reject {
                state: State::HalfOpen,
                reason: BlockedReason::ProbeInFlight,
                retry_after_ms: self.limits().probe_timeout_ms.max(1),
            });
        }
        let hook = self.hook()?;
        hook.gate(generation, now())
            .map(|retry_after_ms| Admission::Reject {
                state: State::HalfOpen,
                reason: BlockedReason::ProbeInFlight,
                retry_after_ms,
            })
    }

    /// The health check's prober, if one was started.
    pub(crate) fn prober(&self) -> Option<&Prober> {
        let attached = self.inner.cold.attached.get()?;
        attached.prober.get().map(|slot| &*slot.0)
    }

    /// Start `prober` as this breaker's; `false` if it already has one.
    pub(crate) fn set_prober(&self, prober: Arc<Prober>) -> bool {
        let attached = self.inner.cold.attached.get_or_init(Box::default);
        attached.prober.set(Box::new(ProberSlot(prober))).is_ok()
    }

    /// Wake the health check's prober, if any (the fleet granted this instance the probe).
    pub(crate) fn wake_prober(&self) {
        if let Some(prober) = self.prober() {
            prober.wake();
        }
    }

    /// How long until the breaker admits a probe, as its word and clock say now: `Some(ZERO)`
    /// when half-open with the slot free, the time left on an open breaker's cooldown or on a
    /// probe's lease; `None` when closed or isolated (no time ends those).
    pub(crate) fn probe_due_in(&self) -> Option<Duration> {
        let limits = self.limits();
        let word = self.released(self.word(), &limits);
        let view = decide::view(word, &self.limits_at(word, &limits), || self.now_ms());
        match view {
            View::Closed | View::Isolated => None,
            View::HalfOpen => Some(Duration::ZERO),
            View::Open { remaining_ms } | View::ProbeInFlight { remaining_ms } => {
                Some(Duration::from_millis(remaining_ms))
            }
        }
    }

    /// Tell the hook the transitions that landed here (not those adopted through it), and wake a
    /// health check's prober for any transition.
    pub(super) fn tell_transitions(&self, transitions: &[Option<Transition>]) {
        // A trip (or an adoption of open) starts the prober's wait for the cooldown's end.
        self.wake_prober();
        if let Some(hook) = self.hook() {
            for transition in transitions.iter().flatten() {
                if transition.reason() != TransitionReason::Fleet {
                    hook.transition(*transition);
                }
            }
        }
    }

    /// Tell the hook that a closed count changed (a failure counted, a count cleared).
    pub(super) fn tell_count(&self) {
        if let Some(hook) = self.hook() {
            hook.count_changed();
        }
    }

    /// Tell the hook that a reset cleared a closed count (no transition says so).
    pub(super) fn tell_reset(&self) {
        if let Some(hook) = self.hook() {
            hook.reset();
        }
    }
}

impl CircuitBreaker {
    /// The retry budget a registry attached to this breaker, while its rule is on.
    pub(crate) fn retry_budget(&self) -> Option<&RetryBudget> {
        let attached = self.inner.cold.attached.get()?;
        attached.retry_budget.get().filter(|budget| budget.is_on())
    }

    /// The retry budget attached to this breaker, on or off; `make` attaches one if none is.
    pub(crate) fn attached_budget(
        &self,
        make: Option<&dyn Fn() -> RetryBudget>,
    ) -> Option<&RetryBudget> {
        let attached = match make {
            Some(_) => self.inner.cold.attached.get_or_init(Box::default),
            None => self.inner.cold.attached.get()?,
        };
        match make {
            Some(make) => Some(attached.retry_budget.get_or_init(|| Box::new(make()))),
            None => attached.retry_budget.get(),
        }
    }
}
