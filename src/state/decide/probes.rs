//! The decider's part for a breaker that admits several probes: every next value of the probe
//! slots (`slots`), how an admission meets them, and the word of a period whose probes all gave
//! their slots back.

use crate::config::Limits;
use crate::state::decide::Admission;
use crate::state::slots::Slots;
use crate::state::word::{Kind, Word, next_generation};
use crate::types::BlockedReason;

/// Whether `limits` admit several probes, so the slots count them.
#[inline]
pub(crate) const fn uses_slots(limits: &Limits) -> bool {
    limits.probes > 1
}

/// What an admission decided on the word means for the slots, with several probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotsStep {
    /// Nothing: one probe, or an answer the slots do not change.
    Keep,
    /// The word's own probe of `generation` was admitted: it starts the slots' count.
    Start { generation: u32 },
    /// The word's probe of `generation` is in flight: another caller may claim one of the other
    /// slots; if the claim lands, it is admitted as a probe of `generation`.
    Claim { generation: u32 },
}

/// What `admission`, decided on `before`, means for the slots under `limits`.
pub(crate) fn slots_step(admission: Admission, before: Word, limits: &Limits) -> SlotsStep {
    if !uses_slots(limits) {
        return SlotsStep::Keep;
    }
    match admission {
        Admission::Admit {
            generation,
            probe: true,
        } => SlotsStep::Start { generation },
        Admission::Reject {
            reason: BlockedReason::ProbeInFlight,
            ..
        } if before.kind() == Kind::Probing => SlotsStep::Claim {
            generation: before.generation(),
        },
        _ => SlotsStep::Keep,
    }
}

/// Start the slots of `generation`, whose first probe the word's swap just admitted: unless a
/// racing claim started them first, counting this probe.
pub(crate) fn start_slots(seen: Slots, generation: u32) -> Option<Slots> {
    (seen.generation() != generation).then(|| Slots::new(generation, 1, 0))
}

/// Claim one more slot of the probing `generation`, of `probes`; `None` if all are taken.
pub(crate) fn claim_slot(seen: Slots, generation: u32, probes: u32) -> Option<Slots> {
    if seen.generation() != generation {
        // Not started yet: the word's own probe, and this one.
        return Some(Slots::new(generation, 2, 0));
    }
    (seen.claimed() < u64::from(probes))
        .then(|| Slots::new(generation, seen.claimed() + 1, seen.succeeded()))
}

/// Give back a slot of `generation`: a probe ignored or dropped, or a claim not admitted.
pub(crate) fn give_slot_back(seen: Slots, generation: u32) -> Option<Slots> {
    (seen.generation() == generation).then(|| {
        Slots::new(
            generation,
            seen.claimed().saturating_sub(1),
            seen.succeeded(),
        )
    })
}

/// One more success among the probes of `generation`.
pub(crate) fn succeed_slot(seen: Slots, generation: u32) -> Option<Slots> {
    (seen.generation() == generation)
        .then(|| Slots::new(generation, seen.claimed(), seen.succeeded() + 1))
}

/// Whether the success that replaced `before` is the last of `probes`: the verdict.
pub(crate) fn is_last_success(before: Slots, probes: u32) -> bool {
    before.succeeded() + 1 >= u64::from(probes)
}

/// `word`, or, for a breaker of several probes whose lease has run out with every slot given
/// back (each probe's outcome `Ignored`, or its permit dropped), the half-open word with its slots
/// free that it stands for: no probe failed, so the breaker does not reopen. (A single probe that
/// gives its slot back writes that word itself; several share one lease, which is only found over
/// with every slot back.) In the next generation, so the slots start afresh. `slots` loads them
/// and `current` asks whether the word's probe is still current (its lease holds); each is called
/// only when needed.
pub(crate) fn released(
    word: Word,
    limits: &Limits,
    slots: impl FnOnce() -> Slots,
    current: impl FnOnce() -> bool,
) -> Word {
    if !uses_slots(limits) || word.kind() != Kind::Probing {
        return word;
    }
    let slots = slots();
    let all_back = slots.generation() == word.generation() && slots.claimed() == 0;
    if all_back && !current() {
        Word::half_open(next_generation(word.generation()))
    } else {
        word
    }
}

/// A probe of `generation` given back (ignored or dropped) whose half-open period admitted several
/// (`probes` lowered since): the slot is freed in a new generation, so the period's other probes
/// are stale and a new claim cannot make them current again. `None` once the word has moved on.
pub(crate) fn free_lowered(word: Word, generation: u32) -> Option<Word> {
    let current = word.kind() == Kind::Probing && word.generation() == generation;
    current.then(|| Word::half_open(next_generation(generation)))
}
