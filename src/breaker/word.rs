//! The packed state word: its layout, its named constants and its constructors.
//!
//! Nothing here touches an atomic or a clock: a [`Word`] is a plain `u64` with accessors. The
//! pure transitions that move it are in `decide`, and the one type that stores it is in `store`.
//! (The split of governor's `gcra.rs` and `state/in_memory.rs`.)
//! storage (the governor crate splits `gcra.rs` from its state store the same way).
//!
//! # Layout
//!
//! ```text
//!  63 62 61                  42 41                                         0
//! | kind | generation (20 bits) | payload (42 bits)                          |
//!
//! kind = CLOSED    payload = RATED (bit 41) | WATCH (bit 40) | consecutive counted failures (40 bits)
//! kind = OPEN      payload = opened-at, ms since the breaker's time origin; all ones: isolated
//! kind = PROBING   payload = probe-started-at, ms since the origin (the probe slot is taken)
//! kind = HALF_OPEN payload = 0 (the cooldown is over and the probe slot is free)
//! ```
//!
//! No bit is spare. The split between generation and payload is a trade: 42 bits of milliseconds
//! cover 139 years (the breaker puts its time origin 2^40 ms, about 35 years, before its
//! construction, so a clock may step back that far and still read true, and reaches the end of
//! the range after about 104 years of uptime, where time saturates), and 20 bits of generation
//! make a held permit safe across 1,048,575 generation changes. (A 16/46 split would wrap after
//! 65,536 changes, and 46 bits of milliseconds cover two millennia nobody needs.)
//!
//! # Generations
//!
//! A permit carries the generation of the word that issued it and whether it is the probe. It is
//! current only for a word of its own kind and generation: an ordinary permit for a closed word,
//! the probe's for a probing word. The generation changes on each transition that can leave a
//! permit behind: a trip, a probe's verdict (closed or reopened), and a new probe claimed after an
//! expired lease (the expired probe may still report). Claiming the probe slot of an open word, or
//! of one a probe gave back, keeps the generation, because no probe of that generation is alive.
//!
//! So the generation moves only as time passes. An open generation (entered by a trip or a failed
//! probe) lasts at least a cooldown; a closed one is always followed by an open one; a probing one
//! entered after an expired lease follows one that lasted at least a lease and a cooldown. So a
//! run of changes may come at one instant (an expired-lease claim, the new probe's success and a
//! trip), but 2^20 changes take at least 2^19 cooldowns of clock time. A permit can be mistaken
//! for a current one only if it is held that long: 8.7 minutes at the shortest cooldown (1 ms), six
//! days at 1 s, half a year at 30 s.
//!
//! Changes by hand (`force_open`, `force_closed`, `reset`) are the exception: they take a new
//! generation whenever they change the state or clear a closed count, and take no time. A permit
//! held while 2^20 of them are made (half a million `force_open`/`force_closed` pairs) could be
//! mistaken for a current one; an operator's changes come nowhere near that, but a controller
//! that toggles a breaker in a loop should not. A reset that clears a count is the one change
//! that moves the generation without a transition; half a million of them with no transition
//! between would also put a listener's order (`Transition::is_after`) past its half cycle.
//!
//! A closed word's two flags serve the rate rules (`window`): `RATED` says the breaker has one, so
//! a healthy report knows from the one load it already makes whether to count the call into the
//! window; `WATCH` says the window holds failures or slow calls that a success may have to judge
//! (a success that brings the window to its minimum). A closed word with neither flag and no
//! failures is the consecutive-only breaker's healthy word, unchanged.
//!
//! Half-open is usually not stored: it is an open word whose cooldown has elapsed, or a probing
//! word whose lease has run out plus a cooldown. It is stored only after a probe gives its slot back
//! (outcome `Ignored`, or dropped), because then there is no time to derive it from.

use crate::types::State;

/// Bits of the kind field.
pub(crate) const KIND_BITS: u32 = 2;
/// Bits of the generation field.
pub(crate) const GENERATION_BITS: u32 = 20;
/// Bits of the payload field.
pub(crate) const PAYLOAD_BITS: u32 = 64 - KIND_BITS - GENERATION_BITS;

pub(crate) const PAYLOAD_SHIFT: u32 = 0;
pub(crate) const GENERATION_SHIFT: u32 = PAYLOAD_BITS;
pub(crate) const KIND_SHIFT: u32 = PAYLOAD_BITS + GENERATION_BITS;

pub(crate) const PAYLOAD_MASK: u64 = (1 << PAYLOAD_BITS) - 1;
pub(crate) const GENERATION_MASK: u64 = (1 << GENERATION_BITS) - 1;
pub(crate) const KIND_MASK: u64 = (1 << KIND_BITS) - 1;

/// The largest generation; the next one after it is zero.
#[cfg_attr(not(any(test, fuzzing)), allow(dead_code))]
pub(crate) const MAX_GENERATION: u32 = GENERATION_MASK as u32;
/// The largest time the word holds, in milliseconds since the breaker's time origin (about 139
/// years). Later times read as this one. (The one payload above it marks an isolated breaker.)
pub(crate) const MAX_TIME_MS: u64 = PAYLOAD_MASK - 1;
/// The opened-at payload of a breaker forced open by hand: above every time, so it never cools down.
const ISOLATED_AT: u64 = PAYLOAD_MASK;
/// A closed word's flag: the breaker has a rate rule; healthy calls are counted into its window.
pub(crate) const RATED: u64 = 1 << (PAYLOAD_BITS - 1);
/// A closed word's flag: the window holds failures or slow calls, so successes are judged too.
pub(crate) const WATCH: u64 = 1 << (PAYLOAD_BITS - 2);
/// The flags of a closed word.
pub(crate) const CLOSED_FLAGS: u64 = RATED | WATCH;
/// The largest consecutive-failure count the word holds: 2^40 − 1.
pub(crate) const MAX_FAILURES: u64 = WATCH - 1;

// A transition's order (`Transition::is_after`) wraps with the generation field.
const _: () = assert!(GENERATION_BITS == crate::types::TRANSITION_GENERATION_BITS);

// Every `u32` threshold fits in the failure payload, so no threshold is ever refused for size.
const _: () = assert!(u32::MAX as u64 <= MAX_FAILURES);

const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const PROBING: u64 = 2;
const HALF_OPEN: u64 = 3;

/// The stored kind of a word. `Probing` and `HalfOpen` both read as [`State::HalfOpen`] while the
/// probe lease holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Closed,
    Open,
    Probing,
    HalfOpen,
}

/// One packed state word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

impl Word {
    /// The word a new breaker starts with: closed, generation 0, no failures.
    pub(crate) const INITIAL: Word = Word(0);

    const fn pack(kind: u64, generation: u32, payload: u64) -> Word {
        debug_assert!(payload <= PAYLOAD_MASK);
        Word(
            (kind << KIND_SHIFT)
                | ((generation as u64 & GENERATION_MASK) << GENERATION_SHIFT)
                | ((payload & PAYLOAD_MASK) << PAYLOAD_SHIFT),
        )
    }

    pub(crate) const fn closed(generation: u32, failures: u64) -> Word {
        Word::pack(CLOSED, generation, clamp(failures, MAX_FAILURES))
    }

    /// A closed word with `flags` (`RATED`, `WATCH`) beside its count.
    pub(crate) const fn closed_with(generation: u32, failures: u64, flags: u64) -> Word {
        Word::pack(
            CLOSED,
            generation,
            clamp(failures, MAX_FAILURES) | (flags & CLOSED_FLAGS),
        )
    }

    /// A closed word's consecutive counted failures (its payload without the flags).
    pub(crate) const fn failures(self) -> u64 {
        self.payload() & MAX_FAILURES
    }

    /// A closed word's flags.
    pub(crate) const fn flags(self) -> u64 {
        self.payload() & CLOSED_FLAGS
    }

    pub(crate) const fn open(generation: u32, opened_at_ms: u64) -> Word {
        Word::pack(OPEN, generation, clamp(opened_at_ms, MAX_TIME_MS))
    }

    pub(crate) const fn probing(generation: u32, started_at_ms: u64) -> Word {
        Word::pack(PROBING, generation, clamp(started_at_ms, MAX_TIME_MS))
    }

    pub(crate) const fn half_open(generation: u32) -> Word {
        Word::pack(HALF_OPEN, generation, 0)
    }

    /// Open until changed by hand (`force_open`): no cooldown ends it.
    pub(crate) const fn isolated(generation: u32) -> Word {
        Word::pack(OPEN, generation, ISOLATED_AT)
    }

    /// The state the last announced transition left this word in, read from its kind alone:
    /// time-made changes are announced only when a caller writes them down, so an open word past
    /// its cooldown whose slot no probe has claimed is still `open` to a listener.
    pub(crate) const fn announced_state(self) -> State {
        match self.kind() {
            Kind::Closed => State::Closed,
            Kind::Open => State::Open,
            Kind::Probing | Kind::HalfOpen => State::HalfOpen,
        }
    }

    pub(crate) const fn is_isolated(self) -> bool {
        matches!(self.kind(), Kind::Open) && self.payload() == ISOLATED_AT
    }

    pub(crate) const fn kind(self) -> Kind {
        match (self.0 >> KIND_SHIFT) & KIND_MASK {
            CLOSED => Kind::Closed,
            OPEN => Kind::Open,
            PROBING => Kind::Probing,
            _ => Kind::HalfOpen,
        }
    }

    pub(crate) const fn generation(self) -> u32 {
        ((self.0 >> GENERATION_SHIFT) & GENERATION_MASK) as u32
    }

    pub(crate) const fn payload(self) -> u64 {
        (self.0 >> PAYLOAD_SHIFT) & PAYLOAD_MASK
    }

    /// The generation of a closed word, or `None` for any other kind. This is the whole of the
    /// closed fast path: one shift and compare.
    #[inline(always)]
    pub(crate) const fn closed_generation(self) -> Option<u32> {
        if self.0 >> KIND_SHIFT == CLOSED {
            Some(self.generation())
        } else {
            None
        }
    }
}

impl core::fmt::Debug for Word {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Word")
            .field("kind", &self.kind())
            .field("generation", &self.generation())
            .field("payload", &self.payload())
            .finish()
    }
}

pub(crate) const fn clamp(value: u64, max: u64) -> u64 {
    if value > max { max } else { value }
}

/// The next generation, wrapping within the field.
pub(crate) const fn next_generation(generation: u32) -> u32 {
    ((generation as u64 + 1) & GENERATION_MASK) as u32
}
