//! The decider's reports: what a permit's outcome, or its drop, makes of the word.

use crate::config::Limits;
use crate::state::decide::{closed_flags, lease_end, trip};
use crate::state::word::{Kind, Word, next_generation};
use crate::types::{State, Transition, TransitionReason};

/// What the holder of a permit reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// The call succeeded.
    Success,
    /// The call failed in a way that says the dependency is unhealthy.
    Failure,
    /// The call failed, but not because of the dependency.
    Ignored,
    /// The permit was dropped without an outcome (cancelled, panicked).
    Dropped,
}

/// The word to install for a report, and the state change it makes, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) next: Word,
    pub(crate) transition: Option<Transition>,
}

/// Apply a report from a permit of `generation` to `word`; `probe` says whether the permit held
/// the probe slot.
///
/// A permit is current only for a word of its own kind and generation: an ordinary permit for a
/// closed word, a probe's for a probing word. `None` means the report changes nothing and nothing
/// is written: a stale permit, an ignored or dropped outcome of an ordinary call, a success with no
/// failures to clear, or a probe report that arrives after its lease ran out (the probe already
/// counts as failed). `now` is called only when the report trips the breaker or comes from the
/// probe.
#[inline]
pub(crate) fn report(
    word: Word,
    generation: u32,
    probe: bool,
    report: Report,
    limits: &Limits,
    now: impl FnOnce() -> u64,
) -> Option<Step> {
    if word.generation() != generation {
        return None;
    }
    match (word.kind(), probe) {
        (Kind::Closed, false) => {
            // The flags stay as they are: the window's judge sets and clears `Word::WATCH`.
            let failures = word.failures();
            let flags = word.flags();
            match report {
                Report::Success if failures == 0 => None,
                Report::Success => Some(Step {
                    next: Word::closed_with(generation, 0, flags),
                    transition: None,
                }),
                Report::Failure => {
                    let failures = failures.saturating_add(1);
                    if failures >= limits.failure_threshold {
                        Some(trip(generation, failures, now(), limits))
                    } else {
                        Some(Step {
                            next: Word::closed_with(generation, failures, flags),
                            transition: None,
                        })
                    }
                }
                Report::Ignored | Report::Dropped => None,
            }
        }
        (Kind::Probing, true) => {
            let now_ms = now();
            if now_ms >= lease_end(word, limits) {
                return None;
            }
            let next = next_generation(generation);
            Some(match report {
                Report::Success => Step {
                    next: Word::closed_with(next, 0, closed_flags(limits)),
                    transition: Some(Transition::new(
                        State::HalfOpen,
                        State::Closed,
                        next,
                        TransitionReason::ProbeSucceeded,
                        0,
                        limits,
                    )),
                },
                Report::Failure => Step {
                    next: Word::open(next, now_ms),
                    transition: Some(Transition::new(
                        State::HalfOpen,
                        State::Open,
                        next,
                        TransitionReason::ProbeFailed,
                        1,
                        limits,
                    )),
                },
                // The slot is free again and this permit is consumed, so the next probe may
                // reuse the generation.
                Report::Ignored | Report::Dropped => Step {
                    next: Word::half_open(generation),
                    transition: None,
                },
            })
        }
        // A permit of the other kind, or a word that issues no permits (open, or half-open with
        // the slot free): stale.
        _ => None,
    }
}

/// Whether a permit of `generation` (`probe` says whether it holds the probe slot) would still
/// be judged current by [`report`]: an ordinary permit while its closed generation lasts, a probe
/// while its lease does. `now` is called only for a probe.
#[inline]
pub(crate) fn is_current(
    word: Word,
    generation: u32,
    probe: bool,
    limits: &Limits,
    now: impl FnOnce() -> u64,
) -> bool {
    if word.generation() != generation {
        return false;
    }
    match (word.kind(), probe) {
        (Kind::Closed, false) => true,
        (Kind::Probing, true) => now() < lease_end(word, limits),
        _ => false,
    }
}
