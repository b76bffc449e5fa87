//! The decider's exhaustive tests: every kind of word meets every event.

use super::*;
use crate::state::slots::Slots;
use crate::state::word::Word;

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
fn generation_wraps_to_zero_within_its_field() {
    assert_eq!(next_generation(Word::MAX_GENERATION), 0);
    assert_eq!(next_generation(0), 1);
    // A trip at the last generation opens in generation 0 and leaves the kind intact.
    let word = Word::closed(Word::MAX_GENERATION, 2);
    let step = report(
        word,
        Word::MAX_GENERATION,
        false,
        Report::Failure,
        &LIMITS,
        || 5,
    )
    .unwrap();
    assert_eq!(step.next, Word::open(0, 5));
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
    let word = Word::closed(0, Word::MAX_FAILURES);
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
    for now in [150, 151, Word::MAX_TIME_MS] {
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
    let word = Word::probing(0, Word::MAX_TIME_MS);
    let limits = Limits {
        failure_threshold: 1,
        cooldown_ms: Word::MAX_TIME_MS,
        probe_timeout_ms: Word::MAX_TIME_MS,
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
        view(word, &limits, || Word::MAX_TIME_MS),
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
        for stale in [8, 10, 0, Word::MAX_GENERATION] {
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
                        report(word, generation, probe, Report::Failure, &LIMITS, || now).is_some();
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
    for now in [0, 1, 10_000, Word::MAX_TIME_MS, u64::MAX] {
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
        for (word, _) in every_kind(Word::MAX_GENERATION) {
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
            let reached =
                word.kind() == Kind::Closed && word.payload() > 0 && word.payload() >= threshold;
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
        open(Word::MAX_TIME_MS, false),
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
    for generation in [0, 7, Word::MAX_GENERATION] {
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
    for at in [0, 5, 10, 50, lease_end, Word::MAX_TIME_MS] {
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
        assert_eq!(
            step.next,
            Word::open(8, at.min(Word::MAX_TIME_MS)),
            "{remote:?}"
        );
    }
}

#[test]
fn an_adopted_opening_is_clamped_to_the_clock_and_never_reads_as_isolated() {
    for at in [Word::MAX_TIME_MS, Word::MAX_TIME_MS + 1, u64::MAX] {
        let step = adopt_at(Word::closed(3, 0), Remote::Open { opened_at_ms: at }, 0).unwrap();
        assert_eq!(step.next, Word::open(4, Word::MAX_TIME_MS));
        assert!(!step.next.is_isolated());
        assert_eq!(
            adopt_at(step.next, Remote::Open { opened_at_ms: at }, 0),
            None
        );
    }
    // An open word already at the end of the clock is never moved earlier.
    let word = Word::open(3, Word::MAX_TIME_MS);
    assert_eq!(adopt_at(word, Remote::Open { opened_at_ms: 5 }, 0), None);
}

// ---- the open rejection's fast path ----

/// Wherever the fast path answers, it answers as `acquire` does with a fixed cooldown, and
/// `acquire` writes nothing; wherever it declines, `acquire` does not reject as open-with-time.
#[test]
fn the_open_rejection_from_the_word_agrees_with_acquire_for_every_kind_and_time() {
    for generation in [0, 7, Word::MAX_GENERATION] {
        for cooldown_ms in [1, 100, crate::config::MAX_DURATION_MS] {
            let limits = Limits {
                cooldown_ms,
                ..LIMITS
            };
            for (word, _) in every_kind(generation) {
                let opened = word.payload();
                for now in [
                    0,
                    1,
                    49,
                    50,
                    51,
                    opened.saturating_add(cooldown_ms).saturating_sub(1),
                    opened.saturating_add(cooldown_ms),
                    Word::MAX_TIME_MS,
                ] {
                    let (admission, next) = acquire(word, &limits, || now);
                    match open_rejection(word, cooldown_ms, now) {
                        Some(retry_after_ms) => {
                            assert_eq!(
                                (admission, next),
                                (
                                    Admission::Reject {
                                        state: State::Open,
                                        reason: BlockedReason::DependencyOpen,
                                        retry_after_ms
                                    },
                                    None
                                ),
                                "{word:?} at {now}"
                            );
                        }
                        None => assert!(
                            word.kind() != Kind::Open
                                || word.is_isolated()
                                || matches!(admission, Admission::Admit { .. }),
                            "{word:?} at {now}: {admission:?}"
                        ),
                    }
                }
            }
        }
    }
}

// ---- reconfiguration ----

#[test]
fn a_reconfiguration_trips_restarts_a_window_or_watches_and_otherwise_keeps_the_word() {
    let rated = Limits {
        rates: Some(crate::config::Rates {
            failure_ppm: 500_000,
            slow_ppm: 0,
            slow_threshold: core::time::Duration::from_secs(1),
            window: crate::config::WindowLimit::Calls(10),
            minimum_calls: 5,
        }),
        ..LIMITS
    };
    let same = Rules {
        window_changed: false,
        changed: false,
    };
    let ratios = Rules {
        window_changed: false,
        changed: true,
    };
    let window = Rules {
        window_changed: true,
        changed: true,
    };
    // At or past the new threshold: a trip, whatever else changed.
    for rules in [same, ratios, window] {
        let (next, transition) = reconfigure(Word::closed(4, 3), &LIMITS, rules, || 9);
        assert_eq!(next, Word::open(5, 9));
        assert_eq!(
            transition.map(|t| t.reason()),
            Some(TransitionReason::FailureThreshold)
        );
    }
    // A new window: the next generation, the count kept, the flags of the new rules.
    let word = Word::closed_with(4, 2, Word::RATED | Word::WATCH);
    assert_eq!(
        reconfigure(word, &LIMITS, window, never),
        (Word::closed(5, 2), None)
    );
    assert_eq!(
        reconfigure(Word::closed(4, 2), &rated, window, never),
        (Word::closed_with(5, 2, Word::RATED), None)
    );
    // New ratios of a rated breaker: watched from the next call, in the same generation.
    let word = Word::closed_with(4, 2, Word::RATED);
    assert_eq!(
        reconfigure(word, &rated, ratios, never),
        (Word::closed_with(4, 2, Word::RATED | Word::WATCH), None)
    );
    assert_eq!(
        reconfigure(Word::closed(4, 2), &rated, ratios, never),
        (Word::closed(4, 2), None),
        "an unrated word has no window to watch"
    );
    assert_eq!(reconfigure(word, &rated, same, never), (word, None));
    // Every other kind stays as it is (the write orders the reconfiguration, changes nothing).
    for rules in [same, ratios, window] {
        for (word, _) in every_kind(4) {
            if word.kind() != Kind::Closed {
                assert_eq!(reconfigure(word, &rated, rules, never), (word, None));
            }
        }
    }
}

// ---- several probes: the slots ----

const THREE: Limits = Limits {
    probes: 3,
    ..LIMITS
};

#[test]
fn exactly_the_configured_probes_claim_a_slot_whoever_starts_the_count() {
    // The word's probe starts the count, then claims fill the rest.
    let mut slots = start_slots(Slots::EMPTY, 5).unwrap();
    assert_eq!(start_slots(slots, 5), None, "started once");
    for claimed in 2..=3 {
        slots = claim_slot(slots, 5, 3).unwrap();
        assert_eq!((slots.generation(), slots.claimed()), (5, claimed));
    }
    assert_eq!(claim_slot(slots, 5, 3), None, "all three taken");
    // A claim that finds the count of another generation starts it, for the word's probe too.
    let other = Slots::new(4, 3, 1);
    assert_eq!(claim_slot(other, 5, 3), Some(Slots::new(5, 2, 0)));
    assert_eq!(
        start_slots(Slots::new(5, 2, 0), 5),
        None,
        "the claim counted the word's probe"
    );
    assert_eq!(start_slots(other, 5), Some(Slots::new(5, 1, 0)));
}

#[test]
fn a_slot_given_back_or_succeeded_counts_only_in_its_generation() {
    let slots = Slots::new(5, 2, 1);
    assert_eq!(give_slot_back(slots, 5), Some(Slots::new(5, 1, 1)));
    assert_eq!(
        give_slot_back(Slots::new(5, 0, 0), 5),
        Some(Slots::new(5, 0, 0)),
        "saturates"
    );
    assert_eq!(give_slot_back(slots, 6), None);
    assert_eq!(succeed_slot(slots, 5), Some(Slots::new(5, 2, 2)));
    assert_eq!(succeed_slot(slots, 4), None);
    assert!(!is_last_success(Slots::new(5, 3, 1), 3));
    assert!(is_last_success(Slots::new(5, 3, 2), 3));
}

#[test]
fn an_admission_starts_or_claims_slots_only_with_several_probes() {
    let probe = Admission::Admit {
        generation: 5,
        probe: true,
    };
    let in_flight = Admission::Reject {
        state: State::HalfOpen,
        reason: BlockedReason::ProbeInFlight,
        retry_after_ms: 3,
    };
    let probing = Word::probing(5, 10);
    assert_eq!(
        slots_step(probe, Word::open(5, 0), &THREE),
        SlotsStep::Start { generation: 5 }
    );
    assert_eq!(
        slots_step(in_flight, probing, &THREE),
        SlotsStep::Claim { generation: 5 }
    );
    // A fleet's gate that blocks a half-open word's claim is no probe in flight here.
    assert_eq!(
        slots_step(in_flight, Word::half_open(5), &THREE),
        SlotsStep::Keep
    );
    for (word, _) in every_kind(5) {
        for admission in [probe, in_flight] {
            assert_eq!(
                slots_step(admission, word, &LIMITS),
                SlotsStep::Keep,
                "one probe"
            );
        }
        let ordinary = Admission::Admit {
            generation: 5,
            probe: false,
        };
        assert_eq!(slots_step(ordinary, word, &THREE), SlotsStep::Keep);
        let open = Admission::Reject {
            state: State::Open,
            reason: BlockedReason::DependencyOpen,
            retry_after_ms: 3,
        };
        assert_eq!(slots_step(open, word, &THREE), SlotsStep::Keep);
    }
}

#[test]
fn a_period_whose_probes_all_gave_their_slots_back_reads_half_open_in_the_next_generation() {
    let probing = Word::probing(5, 10);
    let back = || Slots::new(5, 0, 0);
    assert_eq!(
        released(probing, &THREE, back, || false),
        Word::half_open(6)
    );
    assert_eq!(
        released(probing, &THREE, back, || true),
        probing,
        "the lease still holds"
    );
    assert_eq!(
        released(probing, &THREE, || Slots::new(5, 1, 0), || false),
        probing
    );
    assert_eq!(
        released(probing, &THREE, || Slots::new(4, 0, 0), || false),
        probing
    );
    for (word, _) in every_kind(5) {
        let expect = if word.kind() == Kind::Probing {
            Word::half_open(6)
        } else {
            word
        };
        assert_eq!(released(word, &THREE, back, || false), expect);
        assert_eq!(
            released(
                word,
                &LIMITS,
                || panic!("one probe reads no slots"),
                || false
            ),
            word
        );
    }
}

#[test]
fn a_probe_given_back_after_probes_were_lowered_frees_the_slot_in_a_new_generation() {
    assert_eq!(
        free_lowered(Word::probing(5, 10), 5),
        Some(Word::half_open(6))
    );
    assert_eq!(free_lowered(Word::probing(6, 10), 5), None, "moved on");
    for (word, _) in every_kind(5) {
        if word.kind() != Kind::Probing {
            assert_eq!(free_lowered(word, 5), None);
        }
    }
}
