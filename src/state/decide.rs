//! The decider: the pure transitions, a word and an event in, a decision and the next word out.
//!
//! Nothing here touches an atomic, reads a clock or allocates. Only the decider builds a next
//! state word or a next value of the probe slots; the breaker loads, asks, and applies the answer
//! through the cell (`word::WordCell`, `slots::SlotsCell`). Keeping it pure is what lets it be
//! tested exhaustively (`decide/tests.rs`) and reused by other storage (the split of governor's
//! `gcra.rs` and its state store). The word's layout and the meaning of generations are in
//! `word`. This file decides admissions; `report` decides a permit's report; `change` decides changes by hand,
//! reconfigurations and the rate rules' trips, `probes` the several probes' slots, and `adopt`
//! what the fleet's news makes of the word.

mod adopt;
mod change;
mod probes;
mod report;

// `pub`: the fuzz targets' internals (`fuzzing`) re-export it.
pub use self::adopt::Remote;
#[cfg_attr(not(any(feature = "redis", test, fuzzing)), allow(unused_imports))]
pub(crate) use self::adopt::adopt;
pub(crate) use self::change::{
    Manual, Rules, check_threshold, expired_probe, manual, reconfigure, watch, window_trip,
};
pub(crate) use self::probes::{
    SlotsStep, claim_slot, free_lowered, give_slot_back, is_last_success, released, slots_step,
    start_slots, succeed_slot, uses_slots,
};
pub(crate) use self::report::{Report, Step, is_current, report};

use super::word::{Kind, Word, next_generation};
use crate::config::Limits;
use crate::types::{BlockedReason, State, Transition, TransitionReason};

/// When the lease of a probing word's probe ends, in ms since the origin.
pub(crate) const fn lease_end(word: Word, limits: &Limits) -> u64 {
    word.payload().saturating_add(limits.probe_timeout_ms)
}

/// A probing word whose lease has run out, written down: open from the lease's end, in the
/// generation the next probe would have taken, so the timed-out probe's late report stays stale
/// and the next claim keeps the generation.
pub(crate) const fn timed_out(word: Word, limits: &Limits) -> Word {
    Word::open(next_generation(word.generation()), lease_end(word, limits))
}

/// A trip of a closed word of `generation` with `failures` counted, at `now_ms`.
pub(crate) fn trip(generation: u32, failures: u64, now_ms: u64, limits: &Limits) -> Step {
    let next = next_generation(generation);
    Step {
        next: Word::open(next, now_ms),
        transition: Some(Transition::new(
            State::Closed,
            State::Open,
            next,
            TransitionReason::FailureThreshold,
            failures,
            limits,
        )),
    }
}

/// The flags a closed word entered by a transition starts with: `Word::RATED` when a rate rule is set.
pub(crate) const fn closed_flags(limits: &Limits) -> u64 {
    if limits.rates.is_some() {
        Word::RATED
    } else {
        0
    }
}

/// The effective state of a word at a time, with what a caller needs to know about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// Closed: admit.
    Closed,
    /// Open: reject for `remaining_ms` more (at least 1).
    Open { remaining_ms: u64 },
    /// Half-open with the probe slot free: the next caller becomes the probe.
    HalfOpen,
    /// Half-open with a probe in flight whose lease ends in `remaining_ms` (at least 1).
    ProbeInFlight { remaining_ms: u64 },
    /// Forced open by hand: no cooldown ends it.
    Isolated,
}

impl View {
    pub(crate) const fn state(self) -> State {
        match self {
            View::Closed => State::Closed,
            View::Open { .. } | View::Isolated => State::Open,
            View::HalfOpen | View::ProbeInFlight { .. } => State::HalfOpen,
        }
    }
}

/// Where an open period that began at `opened_at_ms` stands at `now_ms`.
///
/// Saturating: a clock that reads earlier than the opening keeps the breaker open for the whole
/// cooldown counted from the opening, so a backwards step delays the probe and never admits it early.
const fn open_view(opened_at_ms: u64, now_ms: u64, limits: &Limits) -> View {
    let ready_at = opened_at_ms.saturating_add(limits.cooldown_ms);
    if now_ms >= ready_at {
        View::HalfOpen
    } else {
        View::Open {
            remaining_ms: ready_at - now_ms,
        }
    }
}

/// The effective state of `word` at `now_ms`. `now` is called only when the word is not closed.
#[inline]
pub(crate) fn view(word: Word, limits: &Limits, now: impl FnOnce() -> u64) -> View {
    match word.kind() {
        Kind::Closed => View::Closed,
        Kind::HalfOpen => View::HalfOpen,
        Kind::Open if word.is_isolated() => View::Isolated,
        Kind::Open => open_view(word.payload(), now(), limits),
        Kind::Probing => {
            let now_ms = now();
            let lease_end = lease_end(word, limits);
            if now_ms < lease_end {
                View::ProbeInFlight {
                    remaining_ms: lease_end - now_ms,
                }
            } else {
                // A probe that outlived its lease failed: open, with the cooldown counted from the
                // lease's end (behaviour contract 6 in the crate docs).
                open_view(lease_end, now_ms, limits)
            }
        }
    }
}

/// The retry-after of an open breaker's rejection at `now_ms`, decided from the word and a
/// plain cooldown alone (no backoff or jitter: the cooldown configured is the one in force):
/// `Some` when `word` is open, not isolated, and `cooldown_ms` has not passed since it opened.
/// Then [`acquire`] would reject with [`BlockedReason::DependencyOpen`] and write nothing; `None`
/// for every other word, which [`acquire`] decides.
#[inline(always)]
pub(crate) const fn open_rejection(word: Word, cooldown_ms: u64, now_ms: u64) -> Option<u64> {
    if !matches!(word.kind(), Kind::Open) || word.is_isolated() {
        return None;
    }
    let ready_at = word.payload().saturating_add(cooldown_ms);
    if now_ms < ready_at {
        Some(ready_at - now_ms)
    } else {
        None
    }
}

/// The answer to one admission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Admitted; the permit carries `generation`; `probe` says it holds the probe slot.
    Admit { generation: u32, probe: bool },
    /// Not admitted.
    Reject {
        state: State,
        reason: BlockedReason,
        retry_after_ms: u64,
    },
}

/// Decide one admission request.
///
/// Returns the decision and, when the decision writes, the word to install with a
/// compare-and-swap; the decision holds only if that swap succeeds. Two decisions write: taking
/// the probe slot, and the first rejection after a probe's lease ran out, which records the probe's
/// failure (a new generation, open from the lease's end) so that exactly one caller reports it
/// (see [`acquire_transitions`]). `now` is called only when the word is not closed.
#[inline]
pub(crate) fn acquire(
    word: Word,
    limits: &Limits,
    now: impl FnOnce() -> u64,
) -> (Admission, Option<Word>) {
    if let Some(generation) = word.closed_generation() {
        return (
            Admission::Admit {
                generation,
                probe: false,
            },
            None,
        );
    }
    // Every other kind needs the time: to judge the cooldown or lease, or to start the probe's.
    let now_ms = now();
    match view(word, limits, || now_ms) {
        View::Closed => unreachable!("closed words return above"),
        View::HalfOpen => {
            // A new probe after an expired lease takes a new generation, because the expired
            // probe may still report. Claiming the slot of an open word, or of one a probe gave
            // back, keeps it: no probe permit of that generation is alive (see `report`).
            let generation = match word.kind() {
                Kind::Probing => next_generation(word.generation()),
                _ => word.generation(),
            };
            (
                Admission::Admit {
                    generation,
                    probe: true,
                },
                Some(Word::probing(generation, now_ms)),
            )
        }
        View::Open { remaining_ms } => {
            // A probing word that reads open: its lease ran out and no one has recorded that yet.
            let next = match word.kind() {
                Kind::Probing => Some(timed_out(word, limits)),
                _ => None,
            };
            (
                Admission::Reject {
                    state: State::Open,
                    reason: BlockedReason::DependencyOpen,
                    retry_after_ms: remaining_ms,
                },
                next,
            )
        }
        View::ProbeInFlight { remaining_ms } => (
            Admission::Reject {
                state: State::HalfOpen,
                reason: BlockedReason::ProbeInFlight,
                retry_after_ms: remaining_ms,
            },
            None,
        ),
        // No time is known for an isolation's end; the cooldown is the interval to ask again.
        View::Isolated => (
            Admission::Reject {
                state: State::Open,
                reason: BlockedReason::Isolated,
                retry_after_ms: limits.cooldown_ms,
            },
            None,
        ),
    }
}

/// The transitions an admission's write records, oldest first: the write of [`acquire`] that
/// replaced `before` with `after` (each reports at most two).
///
/// Time alone moves a breaker from open to half-open and ends a probe's lease; nothing is written
/// at that moment. The first caller that finds the change writes it, and reports it here: a
/// claim of the probe slot from an open word is `open → half-open` (cooldown elapsed); a
/// timed-out probe found by a rejection is `half-open → open` (probe timed out); a claim after a
/// timed-out probe is both.
pub(crate) fn acquire_transitions(before: Word, after: Word, limits: &Limits) -> Transitions {
    let generation = after.generation();
    let timed_out = probe_timed_out(generation, limits);
    let cooldown_elapsed = Transition::new(
        State::Open,
        State::HalfOpen,
        generation,
        TransitionReason::CooldownElapsed,
        0,
        limits,
    );
    match (before.kind(), after.kind()) {
        (Kind::Probing, Kind::Open) => Transitions([Some(timed_out), None]),
        (Kind::Probing, Kind::Probing) => Transitions([Some(timed_out), Some(cooldown_elapsed)]),
        (Kind::Open, Kind::Probing) => Transitions([Some(cooldown_elapsed), None]),
        _ => Transitions([None, None]),
    }
}

/// `half-open → open` for a probe that outlived its lease, entering `generation`.
pub(crate) const fn probe_timed_out(generation: u32, limits: &Limits) -> Transition {
    Transition::new(
        State::HalfOpen,
        State::Open,
        generation,
        TransitionReason::ProbeTimedOut,
        1,
        limits,
    )
}

/// Up to two transitions, oldest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Transitions(pub(crate) [Option<Transition>; 2]);

impl Transitions {
    #[cfg(test)]
    pub(crate) fn iter(self) -> impl Iterator<Item = Transition> {
        self.0.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests;
