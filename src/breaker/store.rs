//! The store seam: the one type that owns a breaker's word, and the one read-modify-write of it.
//!
//! Every change of the word in the crate goes through [`Store::update`]: a pure decision (from
//! `decide`) is applied to the newest word with a compare-and-swap, and decided again from the
//! word that beat it until it lands or decides to write nothing. Keeping this seam one small
//! concrete type (no generics over storage, no dynamic dispatch) keeps the hot path a plain load,
//! and gives later storage (a copy of the state shared with other instances, or a word in memory
//! shared between processes) one place to hook into. (The split of governor's `gcra.rs` and
//! `state/in_memory.rs`; the ordering comments follow tokio's `batch_semaphore.rs`.)
//!
//! # Memory ordering
//!
//! Loads are `Acquire` and every successful write is `AcqRel`: each write is a release that
//! publishes what its caller did before it (the probe's call, a reconfiguration's stores of the
//! settings), and each read is an acquire of the newest write it sees. So whatever a caller did
//! before a write happens-before whatever a caller does after reading that write or a later one.

use super::word::Word;
use crate::sync::{AtomicU64, Ordering};

/// A breaker's word.
#[derive(Debug)]
pub(crate) struct Store {
    word: AtomicU64,
}

/// What [`Store::update`] did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Updated<R> {
    /// The word the last decision was made from.
    pub(crate) before: Word,
    /// The word written in place of `before`, or `None` if the last decision wrote nothing.
    pub(crate) after: Option<Word>,
    /// The last decision's answer: the one that holds.
    pub(crate) answer: R,
}

impl Store {
    pub(crate) fn new(word: Word) -> Self {
        Store {
            word: AtomicU64::new(word.0),
        }
    }

    /// The word now. Acquire: pairs with the release of the write that stored it (see the module
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
