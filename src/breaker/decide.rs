//! The pure transitions: a word and an event in, a decision and the next word out.
//!
//! Nothing here touches an atomic, reads a clock or allocates. The breaker's store applies these
//! functions with its one compare-and-swap loop; keeping them pure is what lets them be tested
//! exhaustively below and reused by other storage (the split of governor's `gcra.rs` and its
//! state store). The word's layout and the meaning of generations are in `word`.

use super::word::{Kind, RATED, WATCH, Word, next_generation};
use crate::config::Limits;
use crate::types::{BlockedReason, State, Transition, TransitionReason};

/// When the lease of a probing word's probe ends, in ms since the origin.
const fn lease_end(word: Word, limits: &Limits) -> u64 {
    word.payload().saturating_add(limits.probe_timeout_ms)
}

/// A probing word whose lease has run out, written down: open from the lease's end, in the
/// generation the next probe would have taken, so the timed-out probe's late report stays stale
/// and the next claim keeps the generation.
const fn timed_out(word: Word, limits: &Limits) -> Word {
    Word::open(next_generation(word.generation()), lease_end(word, limits))
}

/// A trip of a closed word of `generation` with `failures` counted, at `now_ms`.
fn trip(generation: u32, failures: u64, now_ms: u64, limits: &Limits) -> Step {
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

/// The flags a closed word entered by a transition starts with: `RATED` when a rate rule is set.
pub(crate) const fn closed_flags(limits: &Limits) -> u64 {
    if limits.rates.is_some() { RATED } else { 0 }
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

/// A closed word of `generation` with its `WATCH` flag set to `on`; `None` if it already is, or
/// if the word has moved on.
pub(crate) fn watch(word: Word, generation: u32, on: bool) -> Option<Word> {
    if word.closed_generation() != Some(generation) || (word.flags() & WATCH != 0) == on {
        return None;
    }
    let flags = if on {
        word.flags() | WATCH
    } else {
        word.flags() & !WATCH
    };
    Some(Word::closed_with(generation, word.failures(), flags))
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
const fn probe_timed_out(generation: u32, limits: &Limits) -> Transition {
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
            // The flags stay as they are: the window's judge sets and clears `WATCH`.
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
/// generation, with its `half-open → open` (probe timed out) transition, as [`acquire`] writes it
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

/// A state learned from the fleet (feature `redis`), in this breaker's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(any(feature = "redis", test)), allow(dead_code))]
pub(crate) enum Remote {
    /// Open since `opened_at_ms` (ms since this breaker's origin).
    Open { opened_at_ms: u64 },
    /// Closed.
    Closed,
    /// Forced open by hand on some instance.
    Isolated,
    /// This instance holds the fleet's probe: the slot is to be free for a local caller.
    ProbeHere,
}

/// Adopt `remote` into `word`. `None` means the word already agrees and nothing is written.
///
/// Every adoption that changes the state takes a new generation, so no permit issued before it
/// counts after it (a local probe or a failure racing the adoption is stale, as after a trip). The
/// rules, which keep the local word at least as cautious as the fleet's:
/// - open: a closed, half-open, isolated word, or a probing word past its lease, opens from
///   `opened_at_ms`; an open word keeps the later of its own opened-at and the fleet's (an open
///   period is never shortened, and the time shift keeps the generation, since an open word
///   issues no permits); a probing word within its lease is left as it is: its probe is this
///   instance's one probe (taken while the fleet could not be asked), and freeing its slot would
///   let a second one start while it runs; its verdict decides, and the fleet is asked again;
/// - closed: any word not closed closes with no failures; a closed word keeps its count;
/// - isolated: any word not isolated is isolated;
/// - probe here: an open word (not isolated) frees its probe slot in a new generation, and so
///   does a probing word whose lease has run out (its probe counts as failed, and a claim of
///   the slot it holds would take a new generation, not the one the fleet's grant names); a
///   half-open word or a probing word within its lease already has a free slot or a local probe
///   and is left as it is.
///
/// The transition, if the announced state changes or an isolation begins or ends (`open → open`),
/// has reason `fleet`. `now` is called only to
/// judge a probing word's lease (for `Open` and `ProbeHere`).
#[cfg_attr(not(any(feature = "redis", test)), allow(dead_code))]
pub(crate) fn adopt(
    word: Word,
    remote: Remote,
    limits: &Limits,
    mut now: impl FnMut() -> u64,
) -> Option<Step> {
    let generation = next_generation(word.generation());
    let failures = if word.kind() == Kind::Closed {
        word.failures()
    } else {
        0
    };
    let (next, to) = match remote {
        // A local probe within its lease is kept: no instance holds two probes at once.
        Remote::Open { .. } if word.kind() == Kind::Probing && now() < lease_end(word, limits) => {
            return None;
        }
        Remote::Open { opened_at_ms } => {
            let opened_at_ms = opened_at_ms.min(super::word::MAX_TIME_MS);
            if word.kind() == Kind::Open && !word.is_isolated() {
                if word.payload() >= opened_at_ms {
                    return None;
                }
                return Some(Step {
                    next: Word::open(word.generation(), opened_at_ms),
                    transition: None,
                });
            }
            (Word::open(generation, opened_at_ms), State::Open)
        }
        Remote::Closed if word.kind() == Kind::Closed => return None,
        Remote::Closed => (
            Word::closed_with(generation, 0, closed_flags(limits)),
            State::Closed,
        ),
        Remote::Isolated if word.is_isolated() => return None,
        Remote::Isolated => (Word::isolated(generation), State::Open),
        Remote::ProbeHere if word.kind() == Kind::Open && !word.is_isolated() => {
            (Word::half_open(generation), State::HalfOpen)
        }
        // The expired probe's late report stays stale: the slot is freed in a new generation.
        Remote::ProbeHere if word.kind() == Kind::Probing && now() >= lease_end(word, limits) => {
            (Word::half_open(generation), State::HalfOpen)
        }
        Remote::ProbeHere => return None,
    };
    let from = word.announced_state();
    // An isolation begun or ended is heard even though the state reads open on both sides, as
    // `force_open` from open is.
    let isolation_changed = word.is_isolated() != next.is_isolated();
    Some(Step {
        next,
        transition: (from != to || isolation_changed).then(|| {
            Transition::new(
                from,
                to,
                generation,
                TransitionReason::Fleet,
                failures,
                limits,
            )
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::super::word::*;
    use super::*;

    const LIMITS: Limits = Limits {
        failure_threshold: 3,
        cooldown_ms: 100,
        probe_timeout_ms: 1_000,
        rates: None,
        shape: crate::config::Shape::FIXED,
        probes: 1,
    };

    fn never() -> u64 {
        panic!("the clock must not be read here")
    }

    fn admit(word: Word, now: u64) -> (Admission, Option<Word>) {
        acquire(word, &LIMITS, || now)
    }

    #[test]
    fn layout_fields_are_disjoint_and_cover_the_word() {
        let kind = KIND_MASK << KIND_SHIFT;
        let generation = GENERATION_MASK << GENERATION_SHIFT;
        let payload = PAYLOAD_MASK << PAYLOAD_SHIFT;
        assert_eq!(kind & generation, 0);
        assert_eq!(kind & payload, 0);
        assert_eq!(generation & payload, 0);
        assert_eq!(kind | generation | payload, u64::MAX);
    }

    #[test]
    fn every_kind_round_trips_at_the_limits_of_its_fields() {
        for generation in [0, 1, MAX_GENERATION / 2, MAX_GENERATION] {
            for payload in [0, 1, PAYLOAD_MASK - 1, PAYLOAD_MASK] {
                // A closed payload is two flags and a count: the count saturates below them.
                let closed = Word::closed(generation, payload);
                assert_eq!(
                    (closed.kind(), closed.generation(), closed.payload()),
                    (Kind::Closed, generation, payload.min(MAX_FAILURES))
                );
                let flagged = Word::closed_with(generation, payload, payload);
                assert_eq!(
                    (flagged.failures(), flagged.flags()),
                    (payload.min(MAX_FAILURES), payload & CLOSED_FLAGS)
                );
                // Times stop at MAX_TIME_MS, one below the payload's top, which marks isolation.
                let time = payload.min(MAX_TIME_MS);
                let open = Word::open(generation, payload);
                assert_eq!(
                    (open.kind(), open.generation(), open.payload()),
                    (Kind::Open, generation, time)
                );
                assert!(!open.is_isolated(), "no time reads as isolated");
                let probing = Word::probing(generation, payload);
                assert_eq!(
                    (probing.kind(), probing.generation(), probing.payload()),
                    (Kind::Probing, generation, time)
                );
                let isolated = Word::isolated(generation);
                assert_eq!(
                    (
                        isolated.kind(),
                        isolated.generation(),
                        isolated.is_isolated()
                    ),
                    (Kind::Open, generation, true)
                );
                let half = Word::half_open(generation);
                assert_eq!(
                    (half.kind(), half.generation(), half.payload()),
                    (Kind::HalfOpen, generation, 0)
                );
            }
        }
    }

    #[test]
    fn oversized_payloads_saturate_instead_of_spilling_into_other_fields() {
        let w = Word::open(7, u64::MAX);
        assert_eq!(
            (w.kind(), w.generation(), w.payload()),
            (Kind::Open, 7, MAX_TIME_MS)
        );
        let w = Word::closed(MAX_GENERATION, u64::MAX);
        assert_eq!(
            (w.kind(), w.generation(), w.payload()),
            (Kind::Closed, MAX_GENERATION, MAX_FAILURES)
        );
    }

    #[test]
    fn generation_wraps_to_zero_within_its_field() {
        assert_eq!(next_generation(MAX_GENERATION), 0);
        assert_eq!(next_generation(0), 1);
        // A trip at the last generation opens in generation 0 and leaves the kind intact.
        let word = Word::closed(MAX_GENERATION, 2);
        let step = report(word, MAX_GENERATION, false, Report::Failure, &LIMITS, || 5).unwrap();
        assert_eq!(step.next, Word::open(0, 5));
    }

    #[test]
    fn the_initial_word_is_closed_with_no_failures() {
        assert_eq!(Word::INITIAL, Word::closed(0, 0));
        assert_eq!(view(Word::INITIAL, &LIMITS, never), View::Closed);
    }

    #[test]
    fn saturated_failure_count_still_trips_and_never_wraps() {
        let limits = Limits {
            failure_threshold: u32::MAX as u64,
            ..LIMITS
        };
        let word = Word::closed(0, u32::MAX as u64 - 1);
        let step = report(word, 0, false, Report::Failure, &limits, || 9).unwrap();
        assert_eq!(step.next, Word::open(1, 9));
        let word = Word::closed(0, MAX_FAILURES);
        let step = report(word, 0, false, Report::Failure, &limits, || 9).unwrap();
        assert_eq!(step.next.kind(), Kind::Open);
    }

    // ---- acquire, for every kind ----

    #[test]
    fn acquire_closed_admits_without_reading_the_clock_or_writing() {
        for failures in [0, 1, 2] {
            let (decision, next) = acquire(Word::closed(4, failures), &LIMITS, never);
            assert_eq!(
                decision,
                Admission::Admit {
                    generation: 4,
                    probe: false
                }
            );
            assert_eq!(next, None);
        }
    }

    #[test]
    fn acquire_open_rejects_with_remaining_cooldown_until_it_elapses() {
        let word = Word::open(1, 50);
        for (now, remaining) in [(50, 100), (51, 99), (149, 1)] {
            assert_eq!(
                admit(word, now),
                (
                    Admission::Reject {
                        state: State::Open,
                        reason: BlockedReason::DependencyOpen,
                        retry_after_ms: remaining
                    },
                    None
                )
            );
        }
        for now in [150, 151, MAX_TIME_MS] {
            assert_eq!(
                admit(word, now),
                (
                    Admission::Admit {
                        generation: 1,
                        probe: true
                    },
                    Some(Word::probing(1, now))
                )
            );
        }
    }

    #[test]
    fn acquire_open_with_the_clock_behind_the_opening_waits_a_full_cooldown_from_it() {
        let word = Word::open(1, 5_000);
        let (decision, next) = admit(word, 0);
        assert_eq!(
            decision,
            Admission::Reject {
                state: State::Open,
                reason: BlockedReason::DependencyOpen,
                retry_after_ms: 5_100
            }
        );
        assert_eq!(next, None);
    }

    #[test]
    fn acquire_half_open_takes_the_probe_slot() {
        assert_eq!(
            admit(Word::half_open(6), 7),
            (
                Admission::Admit {
                    generation: 6,
                    probe: true
                },
                Some(Word::probing(6, 7))
            )
        );
    }

    #[test]
    fn acquire_probing_rejects_during_the_lease_then_reads_open_then_half_open() {
        let word = Word::probing(2, 100);
        // During the lease: half-open, probe in flight, retry when the lease ends.
        for (now, remaining) in [(100, 1_000), (1_099, 1)] {
            assert_eq!(
                admit(word, now).0,
                Admission::Reject {
                    state: State::HalfOpen,
                    reason: BlockedReason::ProbeInFlight,
                    retry_after_ms: remaining
                }
            );
        }
        // Lease over at 1_100: a failed probe, open for a cooldown counted from the lease's end.
        // The first caller to see it writes it down: open from the lease's end, next generation.
        for (now, remaining) in [(1_100, 100), (1_199, 1)] {
            assert_eq!(
                admit(word, now),
                (
                    Admission::Reject {
                        state: State::Open,
                        reason: BlockedReason::DependencyOpen,
                        retry_after_ms: remaining
                    },
                    Some(Word::open(3, 1_100))
                )
            );
        }
        // That word decides the same way, and its claim keeps the generation.
        assert_eq!(admit(Word::open(3, 1_100), 1_199).0, admit(word, 1_199).0);
        assert_eq!(admit(Word::open(3, 1_100), 1_200), admit(word, 1_200));
        assert_eq!(
            admit(word, 1_200),
            (
                Admission::Admit {
                    generation: 3,
                    probe: true
                },
                Some(Word::probing(3, 1_200))
            )
        );
    }

    #[test]
    fn time_arithmetic_saturates_at_the_end_of_the_clock() {
        let word = Word::probing(0, MAX_TIME_MS);
        let limits = Limits {
            failure_threshold: 1,
            cooldown_ms: MAX_TIME_MS,
            probe_timeout_ms: MAX_TIME_MS,
            rates: None,
            shape: crate::config::Shape::FIXED,
            probes: 1,
        };
        assert_eq!(
            view(word, &limits, || u64::MAX),
            View::HalfOpen,
            "u64::MAX is past every saturated deadline"
        );
        assert!(matches!(
            view(word, &limits, || MAX_TIME_MS),
            View::ProbeInFlight { .. }
        ));
    }

    // ---- report, for every (kind, report) pair ----

    #[test]
    fn closed_success_clears_failures_and_writes_only_when_there_were_some() {
        assert_eq!(
            report(
                Word::closed(3, 0),
                3,
                false,
                Report::Success,
                &LIMITS,
                never
            ),
            None
        );
        assert_eq!(
            report(
                Word::closed(3, 2),
                3,
                false,
                Report::Success,
                &LIMITS,
                never
            ),
            Some(Step {
                next: Word::closed(3, 0),
                transition: None
            })
        );
    }

    #[test]
    fn closed_failure_counts_then_trips_at_the_threshold_reading_the_clock_only_to_trip() {
        assert_eq!(
            report(
                Word::closed(3, 0),
                3,
                false,
                Report::Failure,
                &LIMITS,
                never
            ),
            Some(Step {
                next: Word::closed(3, 1),
                transition: None
            })
        );
        assert_eq!(
            report(
                Word::closed(3, 1),
                3,
                false,
                Report::Failure,
                &LIMITS,
                never
            ),
            Some(Step {
                next: Word::closed(3, 2),
                transition: None
            })
        );
        assert_eq!(
            report(
                Word::closed(3, 2),
                3,
                false,
                Report::Failure,
                &LIMITS,
                || 42
            ),
            Some(Step {
                next: Word::open(4, 42),
                transition: Some(Transition::new(
                    State::Closed,
                    State::Open,
                    4,
                    TransitionReason::FailureThreshold,
                    3,
                    &LIMITS
                ))
            })
        );
    }

    #[test]
    fn closed_ignored_and_dropped_neither_count_nor_clear() {
        for r in [Report::Ignored, Report::Dropped] {
            for failures in [0, 2] {
                assert_eq!(
                    report(Word::closed(3, failures), 3, false, r, &LIMITS, never),
                    None
                );
            }
        }
    }

    #[test]
    fn probe_reports_within_the_lease_move_the_state() {
        let word = Word::probing(5, 100);
        let now = || 600;
        assert_eq!(
            report(word, 5, true, Report::Success, &LIMITS, now),
            Some(Step {
                next: Word::closed(6, 0),
                transition: Some(Transition::new(
                    State::HalfOpen,
                    State::Closed,
                    6,
                    TransitionReason::ProbeSucceeded,
                    0,
                    &LIMITS
                ))
            })
        );
        assert_eq!(
            report(word, 5, true, Report::Failure, &LIMITS, now),
            Some(Step {
                next: Word::open(6, 600),
                transition: Some(Transition::new(
                    State::HalfOpen,
                    State::Open,
                    6,
                    TransitionReason::ProbeFailed,
                    1,
                    &LIMITS
                ))
            })
        );
        for r in [Report::Ignored, Report::Dropped] {
            assert_eq!(
                report(word, 5, true, r, &LIMITS, now),
                Some(Step {
                    next: Word::half_open(5),
                    transition: None
                })
            );
        }
    }

    #[test]
    fn probe_reports_after_the_lease_change_nothing() {
        let word = Word::probing(5, 100);
        for r in [
            Report::Success,
            Report::Failure,
            Report::Ignored,
            Report::Dropped,
        ] {
            assert_eq!(report(word, 5, true, r, &LIMITS, || 1_100), None);
            assert_eq!(report(word, 5, true, r, &LIMITS, || u64::MAX), None);
        }
    }

    #[test]
    fn stale_generations_never_move_any_kind() {
        let words = [
            Word::closed(9, 0),
            Word::closed(9, 2),
            Word::open(9, 10),
            Word::probing(9, 10),
            Word::half_open(9),
        ];
        for word in words {
            for stale in [8, 10, 0, MAX_GENERATION] {
                for probe in [false, true] {
                    for r in ALL_REPORTS {
                        assert_eq!(
                            report(word, stale, probe, r, &LIMITS, never),
                            None,
                            "{word:?} {r:?}"
                        );
                    }
                }
            }
        }
    }

    const ALL_REPORTS: [Report; 4] = [
        Report::Success,
        Report::Failure,
        Report::Ignored,
        Report::Dropped,
    ];

    #[test]
    fn a_permit_of_the_other_kind_is_stale_even_with_a_matching_generation() {
        // An ordinary permit never moves a probing word, a probe's never moves a closed word,
        // and open and free half-open words issue no permits at all.
        for r in ALL_REPORTS {
            assert_eq!(
                report(Word::probing(9, 10), 9, false, r, &LIMITS, || 20),
                None
            );
            assert_eq!(report(Word::closed(9, 1), 9, true, r, &LIMITS, never), None);
            for probe in [false, true] {
                for word in [Word::open(9, 10), Word::half_open(9)] {
                    assert_eq!(report(word, 9, probe, r, &LIMITS, never), None);
                }
            }
        }
    }

    #[test]
    fn the_generation_moves_on_trips_verdicts_and_expired_leases_only() {
        // Claiming the slot of an open or released word keeps the generation.
        assert_eq!(admit(Word::open(4, 0), 100).1, Some(Word::probing(4, 100)));
        assert_eq!(admit(Word::half_open(4), 7).1, Some(Word::probing(4, 7)));
        // A release keeps it too: the released permit is consumed.
        let release = report(Word::probing(4, 7), 4, true, Report::Dropped, &LIMITS, || 8);
        assert_eq!(release.unwrap().next, Word::half_open(4));
        // A claim after an expired lease moves it: the expired probe may still report.
        assert_eq!(
            admit(Word::probing(4, 0), 1_100).1,
            Some(Word::probing(5, 1_100))
        );
        // Trips and verdicts move it.
        let trip = report(Word::closed(4, 2), 4, false, Report::Failure, &LIMITS, || 9);
        assert_eq!(trip.unwrap().next.generation(), 5);
        for r in [Report::Success, Report::Failure] {
            let verdict = report(Word::probing(4, 7), 4, true, r, &LIMITS, || 8);
            assert_eq!(verdict.unwrap().next.generation(), 5);
        }
    }

    #[test]
    fn a_permit_is_current_exactly_when_a_report_from_it_would_count() {
        let words = [
            Word::closed(4, 0),
            Word::closed(4, 2),
            Word::open(4, 10),
            Word::probing(4, 10),
            Word::half_open(4),
        ];
        for word in words {
            for generation in [3, 4, 5] {
                for probe in [false, true] {
                    for now in [10, 1_009, 1_010] {
                        let current = is_current(word, generation, probe, &LIMITS, || now);
                        // A success from a current permit moves or keeps the word; from a stale
                        // one it is refused. A closed word with no failures keeps itself.
                        let counted =
                            report(word, generation, probe, Report::Failure, &LIMITS, || now)
                                .is_some();
                        assert_eq!(
                            current, counted,
                            "{word:?} g{generation} probe {probe} t{now}"
                        );
                    }
                }
            }
        }
    }

    /// Every kind of word at a time when each effective state is reachable: closed with and
    /// without failures, open, open past its cooldown, probing, probing past its lease, half-open
    /// (slot free), isolated.
    fn every_kind(generation: u32) -> [(Word, u64); 8] {
        [
            (Word::closed(generation, 0), 0),
            (Word::closed(generation, 2), 0),
            (Word::open(generation, 10), 20),
            (Word::open(generation, 10), 110),
            (Word::probing(generation, 10), 20),
            (Word::probing(generation, 10), 1_010),
            (Word::half_open(generation), 0),
            (Word::isolated(generation), u64::MAX),
        ]
    }

    /// The state a word's last announced transition left it in: what a change by hand's `from`
    /// names (time-made changes are announced only when a caller writes them down).
    fn announced(word: Word) -> State {
        match word.kind() {
            Kind::Closed => State::Closed,
            Kind::Open => State::Open,
            Kind::Probing | Kind::HalfOpen => State::HalfOpen,
        }
    }

    #[test]
    fn isolation_rejects_at_any_time_and_issues_no_permit() {
        let word = Word::isolated(4);
        for now in [0, 1, 10_000, MAX_TIME_MS, u64::MAX] {
            assert_eq!(
                admit(word, now),
                (
                    Admission::Reject {
                        state: State::Open,
                        reason: BlockedReason::Isolated,
                        retry_after_ms: LIMITS.cooldown_ms
                    },
                    None
                )
            );
            assert_eq!(view(word, &LIMITS, || now), View::Isolated);
            for probe in [false, true] {
                assert!(!is_current(word, 4, probe, &LIMITS, || now));
                for r in [
                    Report::Success,
                    Report::Failure,
                    Report::Ignored,
                    Report::Dropped,
                ] {
                    assert_eq!(report(word, 4, probe, r, &LIMITS, || now), None);
                }
            }
        }
    }

    #[test]
    fn force_open_isolates_every_kind_in_a_new_generation() {
        for (word, _) in every_kind(7) {
            let step = manual(word, Manual::ForceOpen, &LIMITS);
            if word.is_isolated() {
                assert_eq!(step, None, "already isolated");
                continue;
            }
            let step = step.unwrap();
            assert_eq!(step.next, Word::isolated(8), "{word:?}");
            let t = step.transition.unwrap();
            assert_eq!(
                (t.from(), t.to(), t.generation(), t.reason()),
                (announced(word), State::Open, 8, TransitionReason::Manual)
            );
            let failures = if word.kind() == Kind::Closed {
                word.payload()
            } else {
                0
            };
            assert_eq!(t.failures(), failures);
        }
    }

    #[test]
    fn force_closed_and_reset_close_every_other_kind_in_a_new_generation() {
        for action in [Manual::ForceClosed, Manual::Reset] {
            for (word, _) in every_kind(MAX_GENERATION) {
                let step = manual(word, action, &LIMITS);
                match (word.kind(), action) {
                    (Kind::Closed, Manual::ForceClosed) => assert_eq!(step, None, "kept as is"),
                    (Kind::Closed, Manual::Reset) if word.payload() == 0 => {
                        assert_eq!(step, None, "nothing to clear, nothing changes")
                    }
                    (Kind::Closed, Manual::Reset) => assert_eq!(
                        step,
                        Some(Step {
                            next: Word::closed(0, 0),
                            transition: None
                        }),
                        "the count is cleared in a new generation (wrapping), with no transition"
                    ),
                    _ => {
                        let step = step.unwrap();
                        assert_eq!(step.next, Word::closed(0, 0), "{word:?} {action:?}");
                        let t = step.transition.unwrap();
                        assert_eq!(
                            (t.from(), t.to(), t.generation(), t.reason(), t.failures()),
                            (
                                announced(word),
                                State::Closed,
                                0,
                                TransitionReason::Manual,
                                0
                            )
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn only_a_probe_past_its_lease_is_written_down_as_timed_out() {
        for (word, now) in every_kind(5) {
            let step = expired_probe(word, &LIMITS, || now);
            let expired =
                word.kind() == Kind::Probing && now >= word.payload() + LIMITS.probe_timeout_ms;
            if !expired {
                assert_eq!(step, None, "{word:?} at {now}");
                continue;
            }
            let step = step.unwrap();
            assert_eq!(
                step.next,
                Word::open(6, word.payload() + LIMITS.probe_timeout_ms)
            );
            // The same word and transition an admission writes when it finds the timeout.
            let (_, written) = acquire(word, &LIMITS, || now.min(1_099));
            assert_eq!(written, Some(step.next));
            let t = step.transition.unwrap();
            assert_eq!(
                (t.from(), t.to(), t.generation(), t.reason()),
                (
                    State::HalfOpen,
                    State::Open,
                    6,
                    TransitionReason::ProbeTimedOut
                )
            );
        }
    }

    #[test]
    fn a_threshold_check_trips_only_a_closed_word_whose_count_reaches_it() {
        for (word, now) in every_kind(3) {
            for threshold in [1, 2, 3] {
                let limits = Limits {
                    failure_threshold: threshold,
                    ..LIMITS
                };
                let step = check_threshold(word, &limits, || now);
                let reached = word.kind() == Kind::Closed
                    && word.payload() > 0
                    && word.payload() >= threshold;
                if !reached {
                    assert_eq!(step, None, "{word:?} at threshold {threshold}");
                    continue;
                }
                let step = step.unwrap();
                assert_eq!(step.next, Word::open(4, now));
                let t = step.transition.unwrap();
                assert_eq!(
                    (t.from(), t.to(), t.reason(), t.failures()),
                    (
                        State::Closed,
                        State::Open,
                        TransitionReason::FailureThreshold,
                        word.payload()
                    )
                );
            }
        }
    }

    #[test]
    fn each_write_of_acquire_reports_the_transitions_time_made() {
        let reasons = |before: Word, now: u64| {
            let (_, next) = admit(before, now);
            let next = next.expect("a write");
            acquire_transitions(before, next, &LIMITS)
                .iter()
                .map(|t| (t.from(), t.to(), t.generation(), t.reason()))
                .collect::<Vec<_>>()
        };
        // Open past its cooldown: the claim is open → half-open, same generation.
        assert_eq!(
            reasons(Word::open(2, 10), 110),
            [(
                State::Open,
                State::HalfOpen,
                2,
                TransitionReason::CooldownElapsed
            )]
        );
        // A probe past its lease, found while the cooldown from the lease's end runs.
        assert_eq!(
            reasons(Word::probing(2, 10), 1_010),
            [(
                State::HalfOpen,
                State::Open,
                3,
                TransitionReason::ProbeTimedOut
            )]
        );
        // Found only after that cooldown too: both, oldest first, in the new probe's generation.
        assert_eq!(
            reasons(Word::probing(2, 10), 1_110),
            [
                (
                    State::HalfOpen,
                    State::Open,
                    3,
                    TransitionReason::ProbeTimedOut
                ),
                (
                    State::Open,
                    State::HalfOpen,
                    3,
                    TransitionReason::CooldownElapsed
                )
            ]
        );
        // A slot given back is claimed with no transition: the state was already half-open.
        assert_eq!(reasons(Word::half_open(2), 0), []);
        // Every other decision writes nothing.
        for (word, now) in [
            (Word::closed(2, 1), 0),
            (Word::open(2, 10), 20),
            (Word::probing(2, 10), 20),
            (Word::isolated(2), 0),
        ] {
            assert_eq!(admit(word, now).1, None, "{word:?}");
        }
    }

    // ---- adopt, for every (kind, remote) pair ----

    /// What the fleet's transitions tell a breaker, in `every_kind`'s time: open since before the
    /// local opening (5), since it (10) and since after it (50), at the end of the clock, closed,
    /// isolated, and the fleet's probe won here.
    const REMOTES: [Remote; 7] = [
        Remote::Open { opened_at_ms: 5 },
        Remote::Open { opened_at_ms: 10 },
        Remote::Open { opened_at_ms: 50 },
        Remote::Open {
            opened_at_ms: u64::MAX,
        },
        Remote::Closed,
        Remote::Isolated,
        Remote::ProbeHere,
    ];

    /// `adopt` at `now`, with the clock readable only for the rules that judge a lease.
    fn adopt_at(word: Word, remote: Remote, now: u64) -> Option<Step> {
        if remote == Remote::ProbeHere || matches!(remote, Remote::Open { .. }) {
            adopt(word, remote, &LIMITS, || now)
        } else {
            adopt(word, remote, &LIMITS, never)
        }
    }

    /// A step to `next` with a `fleet` transition `from → to` into `next`'s generation.
    fn fleet(next: Word, from: State, to: State, failures: u64) -> Option<Step> {
        Some(Step {
            next,
            transition: Some(Transition::new(
                from,
                to,
                next.generation(),
                TransitionReason::Fleet,
                failures,
                &LIMITS,
            )),
        })
    }

    /// A step to `next` that announces nothing.
    fn silent(next: Word) -> Option<Step> {
        Some(Step {
            next,
            transition: None,
        })
    }

    #[test]
    fn adopt_each_remote_into_every_kind_of_word() {
        use State::{Closed, HalfOpen, Open};
        let kinds = every_kind(7);
        // Open since `at`: every word not open (isolated included) opens from `at` in a new
        // generation, except a probe within its lease, which is kept (no second probe while it
        // runs); an open word keeps the later opening, in its own generation, silently.
        let open = |at: u64, kept: bool| {
            let shifted = if kept {
                None
            } else {
                silent(Word::open(7, at))
            };
            [
                fleet(Word::open(8, at), Closed, Open, 0),
                fleet(Word::open(8, at), Closed, Open, 2),
                shifted,
                shifted,
                None,
                fleet(Word::open(8, at), HalfOpen, Open, 0),
                fleet(Word::open(8, at), HalfOpen, Open, 0),
                // An isolation ended by the fleet is heard: open → open.
                fleet(Word::open(8, at), Open, Open, 0),
            ]
        };
        let expected: [[Option<Step>; 8]; 7] = [
            open(5, true),
            open(10, true),
            open(50, false),
            open(MAX_TIME_MS, false),
            // Closed: a closed word keeps its count; every other closes with none.
            [
                None,
                None,
                fleet(Word::closed(8, 0), Open, Closed, 0),
                fleet(Word::closed(8, 0), Open, Closed, 0),
                fleet(Word::closed(8, 0), HalfOpen, Closed, 0),
                fleet(Word::closed(8, 0), HalfOpen, Closed, 0),
                fleet(Word::closed(8, 0), HalfOpen, Closed, 0),
                fleet(Word::closed(8, 0), Open, Closed, 0),
            ],
            // Isolated: from open it is heard as open → open, as `force_open` from open is.
            [
                fleet(Word::isolated(8), Closed, Open, 0),
                fleet(Word::isolated(8), Closed, Open, 2),
                fleet(Word::isolated(8), Open, Open, 0),
                fleet(Word::isolated(8), Open, Open, 0),
                fleet(Word::isolated(8), HalfOpen, Open, 0),
                fleet(Word::isolated(8), HalfOpen, Open, 0),
                fleet(Word::isolated(8), HalfOpen, Open, 0),
                None,
            ],
            // Probe here: the slot is freed from open (cooling down or not) and from a probe
            // past its lease (half-open to a listener already); a probe within its lease, a free
            // slot, a closed or an isolated word are left as they are.
            [
                None,
                None,
                fleet(Word::half_open(8), Open, HalfOpen, 0),
                fleet(Word::half_open(8), Open, HalfOpen, 0),
                None,
                silent(Word::half_open(8)),
                None,
                None,
            ],
        ];
        for (remote, expected) in REMOTES.into_iter().zip(expected) {
            for ((word, now), expected) in kinds.into_iter().zip(expected) {
                assert_eq!(
                    adopt_at(word, remote, now),
                    expected,
                    "{remote:?} into {word:?} at {now}"
                );
            }
        }
    }

    #[test]
    fn every_adoption_moves_the_announced_state_as_its_transition_says_and_agrees_after() {
        for generation in [0, 7, MAX_GENERATION] {
            for (word, now) in every_kind(generation) {
                for remote in REMOTES {
                    let Some(step) = adopt_at(word, remote, now) else {
                        continue;
                    };
                    let context = format!("{remote:?} into {word:?} at {now}");
                    assert_ne!(step.next, word, "{context}: a write that changes nothing");
                    let (from, to) = (word.announced_state(), step.next.announced_state());
                    match step.transition {
                        Some(t) => {
                            assert_eq!((t.from(), t.to()), (from, to), "{context}");
                            assert!(
                                from != to || word.is_isolated() != step.next.is_isolated(),
                                "{context}: a transition that changes nothing a listener sees"
                            );
                            assert_eq!(t.reason(), TransitionReason::Fleet, "{context}");
                            assert_eq!(t.generation(), step.next.generation(), "{context}");
                        }
                        None => {
                            assert_eq!(from, to, "{context}: an unannounced change");
                            assert_eq!(
                                word.is_isolated(),
                                step.next.is_isolated(),
                                "{context}: an unannounced isolation"
                            );
                        }
                    }
                    // Only an open word's shift to a later opening keeps the generation (it
                    // issues no permits); every other change takes the next one, wrapping.
                    let shift = word.kind() == Kind::Open
                        && !word.is_isolated()
                        && step.next.kind() == Kind::Open
                        && !step.next.is_isolated();
                    let expected = if shift {
                        generation
                    } else {
                        next_generation(generation)
                    };
                    assert_eq!(step.next.generation(), expected, "{context}");
                    // No permit issued before the adoption counts after it.
                    for probe in [false, true] {
                        for at in [now, now.saturating_add(1)] {
                            assert!(
                                !is_current(step.next, generation, probe, &LIMITS, || at),
                                "{context}: a permit (probe {probe}) is current after it"
                            );
                        }
                    }
                    // The word now agrees: the same news again changes nothing.
                    assert_eq!(adopt_at(step.next, remote, now), None, "{context}, twice");
                }
            }
        }
    }

    #[test]
    fn the_fleets_probe_frees_a_local_probes_slot_exactly_when_its_lease_has_run_out() {
        let word = Word::probing(7, 10);
        let lease_end = 10 + LIMITS.probe_timeout_ms;
        for now in [0, 10, lease_end - 1] {
            assert_eq!(adopt_at(word, Remote::ProbeHere, now), None, "at {now}");
        }
        for now in [lease_end, lease_end + LIMITS.cooldown_ms, u64::MAX] {
            // The slot a local caller claims is the one freed: a claim of a released slot keeps
            // its generation, so the fleet's grant of that generation admits it.
            let step = adopt_at(word, Remote::ProbeHere, now).unwrap();
            assert_eq!(step, silent(Word::half_open(8)).unwrap(), "at {now}");
            let (admission, _) = admit(step.next, now);
            assert_eq!(
                admission,
                Admission::Admit {
                    generation: 8,
                    probe: true
                }
            );
            // The expired probe's late report stays stale.
            for r in ALL_REPORTS {
                assert_eq!(report(step.next, 7, true, r, &LIMITS, || now), None);
            }
        }
        // Without the adoption, that claim would take a generation of its own.
        let (admission, _) = admit(word, lease_end + LIMITS.cooldown_ms);
        assert_eq!(
            admission,
            Admission::Admit {
                generation: 8,
                probe: true
            }
        );
    }

    /// A partitioned instance took a local probe; the fleet's open record (another instance's
    /// probe, an opening long past its cooldown) arrives while it runs. The local probe is kept
    /// until its lease runs out, so no second probe starts beside it.
    #[test]
    fn an_adopted_opening_never_frees_a_local_probe_within_its_lease() {
        let word = Word::probing(7, 10);
        let lease_end = 10 + LIMITS.probe_timeout_ms;
        for at in [0, 5, 10, 50, lease_end, MAX_TIME_MS] {
            let remote = Remote::Open { opened_at_ms: at };
            for now in [10, 11, lease_end - 1] {
                assert_eq!(adopt_at(word, remote, now), None, "{remote:?} at {now}");
                // The next caller is blocked: the probe is in flight.
                assert!(
                    matches!(admit(word, now).0, Admission::Reject { .. }),
                    "a second probe at {now}"
                );
            }
            // Past its lease the probe is over (a failed probe): the fleet's opening is adopted.
            let step = adopt_at(word, remote, lease_end).unwrap();
            assert_eq!(step.next, Word::open(8, at.min(MAX_TIME_MS)), "{remote:?}");
        }
    }

    #[test]
    fn an_adopted_opening_is_clamped_to_the_clock_and_never_reads_as_isolated() {
        for at in [MAX_TIME_MS, MAX_TIME_MS + 1, u64::MAX] {
            let step = adopt_at(Word::closed(3, 0), Remote::Open { opened_at_ms: at }, 0).unwrap();
            assert_eq!(step.next, Word::open(4, MAX_TIME_MS));
            assert!(!step.next.is_isolated());
            assert_eq!(
                adopt_at(step.next, Remote::Open { opened_at_ms: at }, 0),
                None
            );
        }
        // An open word already at the end of the clock is never moved earlier.
        let word = Word::open(3, MAX_TIME_MS);
        assert_eq!(adopt_at(word, Remote::Open { opened_at_ms: 5 }, 0), None);
    }
}
