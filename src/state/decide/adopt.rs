//! The decider's adoption of the fleet's news (feature `redis`): what a state learned from the
//! fleet makes of the local word.

// Without feature `redis` only the tests and the fuzz targets adopt.
#![cfg_attr(not(any(feature = "redis", test, fuzzing)), allow(dead_code))]

use crate::config::Limits;
use crate::state::decide::{Step, closed_flags, lease_end};
use crate::state::word::{Kind, Word, next_generation};
use crate::types::{State, Transition, TransitionReason};

/// A state learned from the fleet (feature `redis`), in this breaker's time.
///
/// The one copy of this type: the fleet's task hands it to the breaker, and the fuzz targets
/// (`fuzzing`, under `--cfg fuzzing`) and the model checks (`breaker::loom_tests`) use it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remote {
    /// Open since `opened_at_ms` (ms since this breaker's origin).
    Open {
        /// When the open state began, in ms since the breaker's origin.
        opened_at_ms: u64,
    },
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
            let opened_at_ms = opened_at_ms.min(Word::MAX_TIME_MS);
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
