//! The decider's changes made by hand, reconfigurations and the rate rules' trips.

use crate::config::Limits;
use crate::state::decide::{Step, closed_flags, lease_end, probe_timed_out, timed_out, trip};
use crate::state::word::{Kind, Word, next_generation};
use crate::types::{State, Transition, TransitionReason};

/// A change made by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Manual {
    /// Open until closed or reset by hand; no probe is admitted.
    ForceOpen,
    /// Closed now; a closed breaker keeps its failure count.
    ForceClosed,
    /// Closed with no failures, as built.
    Reset,
}

/// Apply a change made by hand to `word`. `None` means nothing changes and nothing is written.
///
/// Every change by hand takes a new generation, so no permit issued before it counts after it;
/// resetting a closed word with failures to clear is no change of state and reports no
/// transition, and resetting one with none changes nothing. The transition's `from` is the state as last announced, read from the stored kind:
/// an open word past its cooldown is still `open` (its `open → half-open` is announced only when
/// a probe claims the slot), so the transitions a listener hears always chain. A probing word past
/// its lease must be written down first ([`expired_probe`]).
pub(crate) fn manual(word: Word, action: Manual, limits: &Limits) -> Option<Step> {
    let generation = next_generation(word.generation());
    let (failures, to, next) = match (action, word.closed_generation()) {
        (Manual::ForceOpen, _) if word.is_isolated() => return None,
        (Manual::ForceOpen, Some(_)) => (word.failures(), State::Open, Word::isolated(generation)),
        (Manual::ForceOpen, None) => (0, State::Open, Word::isolated(generation)),
        (Manual::ForceClosed, Some(_)) => return None,
        // Nothing to clear: nothing changes, and the generation stays (it moves without a
        // transition only when there is a count to clear, so listeners' order keeps up with it).
        // A breaker with a rate rule may hold calls in its window: it always has a count to clear.
        (Manual::Reset, Some(_)) if word.payload() == 0 => return None,
        // Closed stays closed, with no failures, in a new generation: no call admitted before
        // the reset counts after it, and the window starts empty. The state does not change, so
        // it is no transition.
        (Manual::Reset, Some(_)) => {
            return Some(Step {
                next: Word::closed_with(generation, 0, closed_flags(limits)),
                transition: None,
            });
        }
        (Manual::ForceClosed | Manual::Reset, None) => (
            0,
            State::Closed,
            Word::closed_with(generation, 0, closed_flags(limits)),
        ),
    };
    Some(Step {
        next,
        transition: Some(Transition::new(
            word.announced_state(),
            to,
            generation,
            TransitionReason::Manual,
            failures,
            limits,
        )),
    })
}

/// A probing word whose lease has run out, written down: open from the lease's end, in a new
/// generation, with its `half-open → open` (probe timed out) transition, as [`acquire`](super::acquire) writes it
/// when a caller finds it. `None` for any other word. A change by hand writes this first, so the
/// transitions heard stay a chain (no `open → …` without the `half-open → open` before it).
pub(crate) fn expired_probe(
    word: Word,
    limits: &Limits,
    now: impl FnOnce() -> u64,
) -> Option<Step> {
    if word.kind() != Kind::Probing || now() < lease_end(word, limits) {
        return None;
    }
    let next = timed_out(word, limits);
    Some(Step {
        next,
        transition: Some(probe_timed_out(next.generation(), limits)),
    })
}

/// Trip a closed word whose failure count already reaches the threshold in `limits`: the check
/// made after the threshold is lowered, and after a failure counted under an older threshold.
/// `now` is called only to trip.
pub(crate) fn check_threshold(
    word: Word,
    limits: &Limits,
    now: impl FnOnce() -> u64,
) -> Option<Step> {
    let generation = word.closed_generation()?;
    let failures = word.failures();
    if failures == 0 || failures < limits.failure_threshold {
        return None;
    }
    Some(trip(generation, failures, now(), limits))
}

/// A trip decided by a rate rule's window: a closed word still of `generation` opens at `now_ms`,
/// with `reason` and the window's counted failures (or slow calls). `None` if the word has moved
/// on (another trip, a change by hand): the window judged a generation that is over.
pub(crate) fn window_trip(
    word: Word,
    generation: u32,
    reason: TransitionReason,
    counted: u64,
    now_ms: u64,
    limits: &Limits,
) -> Option<Step> {
    if word.closed_generation() != Some(generation) {
        return None;
    }
    let next = next_generation(generation);
    Some(Step {
        next: Word::open(next, now_ms),
        transition: Some(Transition::new(
            State::Closed,
            State::Open,
            next,
            reason,
            counted,
            limits,
        )),
    })
}

/// A closed word of `generation` with its `Word::WATCH` flag set to `on`; `None` if it already is, or
/// if the word has moved on.
pub(crate) fn watch(word: Word, generation: u32, on: bool) -> Option<Word> {
    if word.closed_generation() != Some(generation) || (word.flags() & Word::WATCH != 0) == on {
        return None;
    }
    let flags = if on {
        word.flags() | Word::WATCH
    } else {
        word.flags() & !Word::WATCH
    };
    Some(Word::closed_with(generation, word.failures(), flags))
}

/// What a reconfiguration changes of the rate rules (see [`reconfigure`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rules {
    /// A rate rule's window added, removed, or of another kind or size.
    pub(crate) window_changed: bool,
    /// Any rate rule changed (new ratios, a new minimum, a new slow-call threshold, or a window).
    pub(crate) changed: bool,
}

/// The write a reconfiguration makes with `limits` (the new settings, already stored) on `word`,
/// and the transition it makes. It always writes: a read-modify-write of the word even when the
/// word stays as it is, so a report whose swap reads from it sees the new settings.
///
/// - A closed word whose count reaches the new threshold trips ([`check_threshold`]).
/// - A new window starts a closed word's counting afresh, in a new generation (as a reset does,
///   and without a transition): no judgement of the old window, and no permit counted into it,
///   meets the new one. Calls in flight then no longer count, as after a reset.
/// - New ratios or a new minimum may be met by a rated window as it stands: the next judged call,
///   a success included, is judged against them (`WATCH`).
///
/// `now` is called only to trip.
pub(crate) fn reconfigure(
    word: Word,
    limits: &Limits,
    rules: Rules,
    now: impl FnOnce() -> u64,
) -> (Word, Option<Transition>) {
    if let Some(step) = check_threshold(word, limits, now) {
        return (step.next, step.transition);
    }
    let Some(generation) = word.closed_generation() else {
        return (word, None);
    };
    if rules.window_changed {
        let next = Word::closed_with(
            next_generation(generation),
            word.failures(),
            closed_flags(limits),
        );
        return (next, None);
    }
    if rules.changed && word.has(Word::RATED) {
        let next = Word::closed_with(generation, word.failures(), word.flags() | Word::WATCH);
        return (next, None);
    }
    (word, None)
}
