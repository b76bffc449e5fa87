//! The packed state word: its layout, its named constants and its constructors.
//!
//! A [`Word`] is a plain `u64` with accessors and no clock; the pure transitions that build the
//! next one are in `decide` (the only place besides this file that calls a constructor). The one
//! atomic that holds it is the private field of [`WordCell`], at the end of this file, with the
//! word's only read-modify-write. (The split of governor's `gcra.rs` and `state/in_memory.rs`.)
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

use super::pack::Field;
use crate::sync::{AtomicU64, Ordering};
use crate::types::State;

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
pub(crate) struct Word(u64);

impl Word {
    /// The payload field: a closed word's flags and count, or a time (see the module docs).
    pub(crate) const PAYLOAD: Field = Field::low(42);
    /// The generation field.
    pub(crate) const GENERATION: Field = Self::PAYLOAD.above(20);
    /// The kind field.
    pub(crate) const KIND: Field = Self::GENERATION.above(2);

    /// Bits of the kind field.
    #[cfg(fuzzing)]
    pub(crate) const KIND_BITS: u32 = Self::KIND.bits();
    /// Bits of the generation field.
    pub(crate) const GENERATION_BITS: u32 = Self::GENERATION.bits();
    /// Bits of the payload field.
    pub(crate) const PAYLOAD_BITS: u32 = Self::PAYLOAD.bits();
    /// The largest generation; the next one after it is zero.
    #[cfg(any(test, fuzzing))]
    pub(crate) const MAX_GENERATION: u32 = Self::GENERATION.max() as u32;
    /// The largest time the word holds, in milliseconds since the breaker's time origin (about 139
    /// years). Later times read as this one. (The one payload above it marks an isolated breaker.)
    pub(crate) const MAX_TIME_MS: u64 = Self::PAYLOAD.max() - 1;
    /// The opened-at payload of a breaker forced open by hand: above every time, so it never cools
    /// down.
    const ISOLATED_AT: u64 = Self::PAYLOAD.max();
    /// A closed word's flag: the breaker has a rate rule; healthy calls are counted into its window.
    pub(crate) const RATED: u64 = 1 << (Self::PAYLOAD_BITS - 1);
    /// A closed word's flag: the window holds failures or slow calls, so successes are judged too.
    pub(crate) const WATCH: u64 = 1 << (Self::PAYLOAD_BITS - 2);
    /// The flags of a closed word.
    pub(crate) const CLOSED_FLAGS: u64 = Self::RATED | Self::WATCH;
    /// The largest consecutive-failure count the word holds: 2^40 − 1.
    pub(crate) const MAX_FAILURES: u64 = Self::WATCH - 1;

    /// The word a new breaker starts with: closed, generation 0, no failures.
    pub(crate) const INITIAL: Word = Word(0);

    /// The word a new breaker starts with: [`INITIAL`](Self::INITIAL), flagged `RATED` if it has a
    /// rate rule.
    pub(crate) const fn initial(rated: bool) -> Word {
        if rated {
            Word::closed_with(0, 0, Self::RATED)
        } else {
            Self::INITIAL
        }
    }

    const fn pack(kind: u64, generation: u32, payload: u64) -> Word {
        debug_assert!(payload <= Self::PAYLOAD.max());
        Word(
            Self::KIND.put(kind)
                | Self::GENERATION.put(generation as u64)
                | Self::PAYLOAD.put(payload),
        )
    }

    #[cfg(test)]
    pub(crate) const fn closed(generation: u32, failures: u64) -> Word {
        Word::pack(CLOSED, generation, clamp(failures, Self::MAX_FAILURES))
    }

    /// A closed word with `flags` (`RATED`, `WATCH`) beside its count.
    pub(crate) const fn closed_with(generation: u32, failures: u64, flags: u64) -> Word {
        Word::pack(
            CLOSED,
            generation,
            clamp(failures, Self::MAX_FAILURES) | (flags & Self::CLOSED_FLAGS),
        )
    }

    /// A closed word's consecutive counted failures (its payload without the flags).
    pub(crate) const fn failures(self) -> u64 {
        self.payload() & Self::MAX_FAILURES
    }

    /// A closed word's flags.
    pub(crate) const fn flags(self) -> u64 {
        self.payload() & Self::CLOSED_FLAGS
    }

    /// Whether this is a closed word with `flag` (`RATED` or `WATCH`) set.
    pub(crate) const fn has(self, flag: u64) -> bool {
        self.flags() & flag != 0
    }

    pub(crate) const fn open(generation: u32, opened_at_ms: u64) -> Word {
        Word::pack(OPEN, generation, clamp(opened_at_ms, Self::MAX_TIME_MS))
    }

    pub(crate) const fn probing(generation: u32, started_at_ms: u64) -> Word {
        Word::pack(PROBING, generation, clamp(started_at_ms, Self::MAX_TIME_MS))
    }

    pub(crate) const fn half_open(generation: u32) -> Word {
        Word::pack(HALF_OPEN, generation, 0)
    }

    /// Open until changed by hand (`force_open`): no cooldown ends it.
    pub(crate) const fn isolated(generation: u32) -> Word {
        Word::pack(OPEN, generation, Self::ISOLATED_AT)
    }

    /// Whether this is the healthy closed word of `generation`: no failures, no flag but `RATED`
    /// when `rated`. A permit's healthy report is this one comparison with the word it loads.
    #[inline(always)]
    pub(crate) const fn is_healthy(self, generation: u32, rated: bool) -> bool {
        let flags = if rated { Self::RATED } else { 0 };
        self.0 == Self::KIND.put(CLOSED) | Self::GENERATION.put(generation as u64) | flags
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
        matches!(self.kind(), Kind::Open) && self.payload() == Self::ISOLATED_AT
    }

    pub(crate) const fn kind(self) -> Kind {
        match Self::KIND.get(self.0) {
            CLOSED => Kind::Closed,
            OPEN => Kind::Open,
            PROBING => Kind::Probing,
            _ => Kind::HalfOpen,
        }
    }

    pub(crate) const fn generation(self) -> u32 {
        Self::GENERATION.get(self.0) as u32
    }

    pub(crate) const fn payload(self) -> u64 {
        Self::PAYLOAD.get(self.0)
    }

    /// The generation of a closed word, or `None` for any other kind. This is the whole of the
    /// closed fast path: one shift and compare.
    #[inline(always)]
    pub(crate) const fn closed_generation(self) -> Option<u32> {
        if self.0 >> Self::KIND.shift() == CLOSED {
            Some(self.generation())
        } else {
            None
        }
    }

    /// The word's 64 bits, as stored.
    #[cfg(any(all(test, not(loom)), fuzzing))]
    pub(crate) const fn bits(self) -> u64 {
        self.0
    }

    /// Any 64-bit pattern read as a word: for the fuzz targets, which read arbitrary patterns.
    #[cfg(fuzzing)]
    pub(crate) const fn from_bits(bits: u64) -> Word {
        Word(bits)
    }
}

// The fields fill the word.
const _: () = assert!(Word::KIND.end() == 64);

// A transition's order (`Transition::is_after`) wraps with the generation field.
const _: () = assert!(Word::GENERATION_BITS == crate::types::TRANSITION_GENERATION_BITS);

// Every `u32` threshold fits in the failure payload, so no threshold is ever refused for size.
const _: () = assert!(u32::MAX as u64 <= Word::MAX_FAILURES);

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
    ((generation as u64 + 1) & Word::GENERATION.max()) as u32
}

/// The cell of a breaker's word: the one atomic that holds it, and its one read-modify-write.
///
/// Every change of the word in the crate goes through [`WordCell::update`]: a pure decision
/// (from `decide`) is applied to the newest word with a compare-and-swap, and decided again from
/// the word that beat it until it lands or decides to write nothing. Keeping this seam one small
/// concrete type (no generics over storage, no dynamic dispatch) keeps the hot path a plain load,
/// and gives later storage (a word in memory shared between processes) one place to hook into.
/// (The ordering comments follow tokio's `batch_semaphore.rs`.)
///
/// # Memory ordering
///
/// Loads are `Acquire` and every successful write is `AcqRel`: each write is a release that
/// publishes what its caller did before it (the probe's call, a reconfiguration's stores of the
/// settings), and each read is an acquire of the newest write it sees. So whatever a caller did
/// before a write happens-before whatever a caller does after reading that write or a later one.
#[derive(Debug)]
pub(crate) struct WordCell {
    word: AtomicU64,
}

/// What [`WordCell::update`] did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Updated<R> {
    /// The word the last decision was made from.
    pub(crate) before: Word,
    /// The word written in place of `before`, or `None` if the last decision wrote nothing.
    pub(crate) after: Option<Word>,
    /// The last decision's answer: the one that holds.
    pub(crate) answer: R,
}

impl WordCell {
    pub(crate) fn new(word: Word) -> Self {
        WordCell {
            word: AtomicU64::new(word.0),
        }
    }

    /// The word now. Acquire: pairs with the release of the write that stored it (see the type's
    /// docs), so a caller that sees a new state also sees what its writer did before it.
    #[inline(always)]
    pub(crate) fn load(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    /// Apply `decide` to `word` (a word the caller loaded) and write the word it returns; if
    /// another write landed first, decide again from that one. Returns when a write lands, or when
    /// a decision writes nothing (`None`); a decision that returns the word it was given still
    /// writes it, which is how a caller orders itself after every earlier write.
    ///
    /// `decide` may run more than once; only the last answer holds. It must be pure apart from
    /// caching a clock reading.
    #[inline]
    pub(crate) fn update<R>(
        &self,
        mut word: Word,
        mut decide: impl FnMut(Word) -> (Option<Word>, R),
    ) -> Updated<R> {
        loop {
            let (next, answer) = decide(word);
            let Some(next) = next else {
                return Updated {
                    before: word,
                    after: None,
                    answer,
                };
            };
            // AcqRel on success: release publishes this write and everything its caller did
            // before it; acquire orders it after the word it replaces. Acquire on failure: the
            // caller decides again from the newer word, as if it had loaded it. Weak: a spurious
            // failure returns the same word, which is decided again, so it only costs a turn.
            match self.word.compare_exchange_weak(
                word.0,
                next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Updated {
                        before: word,
                        after: Some(next),
                        answer,
                    };
                }
                Err(actual) => word = Word(actual),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_fields_are_disjoint_and_cover_the_word() {
        let kind = Word::KIND.mask();
        let generation = Word::GENERATION.mask();
        let payload = Word::PAYLOAD.mask();
        assert_eq!(kind & generation, 0);
        assert_eq!(kind & payload, 0);
        assert_eq!(generation & payload, 0);
        assert_eq!(kind | generation | payload, u64::MAX);
    }

    #[test]
    fn every_kind_round_trips_at_the_limits_of_its_fields() {
        for generation in [0, 1, Word::MAX_GENERATION / 2, Word::MAX_GENERATION] {
            for payload in [0, 1, Word::PAYLOAD.max() - 1, Word::PAYLOAD.max()] {
                // A closed payload is two flags and a count: the count saturates below them.
                let closed = Word::closed(generation, payload);
                assert_eq!(
                    (closed.kind(), closed.generation(), closed.payload()),
                    (Kind::Closed, generation, payload.min(Word::MAX_FAILURES))
                );
                let flagged = Word::closed_with(generation, payload, payload);
                assert_eq!(
                    (flagged.failures(), flagged.flags()),
                    (
                        payload.min(Word::MAX_FAILURES),
                        payload & Word::CLOSED_FLAGS
                    )
                );
                // Times stop at Word::MAX_TIME_MS, one below the payload's top, which marks isolation.
                let time = payload.min(Word::MAX_TIME_MS);
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
            (Kind::Open, 7, Word::MAX_TIME_MS)
        );
        let w = Word::closed(Word::MAX_GENERATION, u64::MAX);
        assert_eq!(
            (w.kind(), w.generation(), w.payload()),
            (Kind::Closed, Word::MAX_GENERATION, Word::MAX_FAILURES)
        );
    }

    #[test]
    fn the_initial_word_is_closed_with_no_failures_and_rated_only_if_asked() {
        assert_eq!(Word::INITIAL, Word::closed(0, 0));
        assert_eq!(Word::initial(false), Word::INITIAL);
        assert_eq!(Word::initial(true), Word::closed_with(0, 0, Word::RATED));
    }

    #[test]
    fn generation_wraps_to_zero_within_its_field() {
        assert_eq!(next_generation(Word::MAX_GENERATION), 0);
        assert_eq!(next_generation(0), 1);
        assert_eq!(
            next_generation(Word::MAX_GENERATION - 1),
            Word::MAX_GENERATION
        );
    }

    #[test]
    fn the_healthy_word_is_exactly_closed_with_no_count_and_no_flag_but_rated() {
        for generation in [0, 1, Word::MAX_GENERATION] {
            assert!(Word::closed(generation, 0).is_healthy(generation, false));
            assert!(Word::closed_with(generation, 0, Word::RATED).is_healthy(generation, true));
            let unhealthy = [
                Word::closed(generation, 1),
                Word::closed_with(generation, 0, Word::WATCH),
                Word::closed_with(generation, 0, Word::CLOSED_FLAGS),
                Word::open(generation, 0),
                Word::half_open(generation),
                Word::closed(next_generation(generation), 0),
            ];
            for word in unhealthy {
                assert!(!word.is_healthy(generation, false), "{word:?}");
                assert!(!word.is_healthy(generation, true), "{word:?}");
            }
            assert!(!Word::closed(generation, 0).is_healthy(generation, true));
        }
    }
}
