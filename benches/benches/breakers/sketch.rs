//! A packed-word breaker reduced to its healthy path: the floor `closed_healthy` compares
//! toolbreaker with.
//!
//! One `AtomicU64`: the top two bits are the kind of state, the other 62 its generation and a
//! payload (closed: the generation in bits 32–61, the consecutive failures in bits 0–31). A healthy
//! call is a load and a compare to admit, the operation, then a load and a compare to see that the
//! word is still `closed(generation, 0)`, with nothing to clear; anything else is out of line. Only
//! the closed path is real: a tripped sketch stays open (no clock, no cooldown, no probe), and
//! nothing is counted or heard.

use std::sync::atomic::{AtomicU64, Ordering};

const KIND_SHIFT: u32 = 62;
const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const GENERATION_SHIFT: u32 = 32;
const GENERATION_MASK: u64 = (1 << (KIND_SHIFT - GENERATION_SHIFT)) - 1;
const FAILURES_MASK: u64 = (1 << GENERATION_SHIFT) - 1;
/// Consecutive failures that trip it.
const THRESHOLD: u64 = 5;

const fn closed(generation: u64, failures: u64) -> u64 {
    (CLOSED << KIND_SHIFT) | ((generation & GENERATION_MASK) << GENERATION_SHIFT) | failures
}

const fn open(generation: u64) -> u64 {
    (OPEN << KIND_SHIFT) | ((generation & GENERATION_MASK) << GENERATION_SHIFT)
}

pub struct Sketch {
    word: AtomicU64,
}

impl Sketch {
    pub const fn new() -> Self {
        Self {
            word: AtomicU64::new(closed(0, 0)),
        }
    }

    /// Run `op` if closed: `Err(None)` when the call is rejected, `Err(Some(e))` when `op` failed.
    #[inline]
    pub fn call<T, E>(&self, op: impl FnOnce() -> Result<T, E>) -> Result<T, Option<E>> {
        let word = self.word.load(Ordering::Acquire);
        if word >> KIND_SHIFT != CLOSED {
            return Err(None);
        }
        let generation = (word >> GENERATION_SHIFT) & GENERATION_MASK;
        match op() {
            Ok(value) => {
                // Relaxed: it only tells whether to take the slow path, which decides again with a
                // compare-exchange.
                if self.word.load(Ordering::Relaxed) != closed(generation, 0) {
                    self.success_slow(generation);
                }
                Ok(value)
            }
            Err(error) => {
                self.failure(generation);
                Err(Some(error))
            }
        }
    }

    /// A success with failures to clear, or with the word moved on since admission.
    #[inline(never)]
    fn success_slow(&self, generation: u64) {
        self.update(generation, |_| closed(generation, 0));
    }

    /// A failure: one more in a row, tripping at the threshold.
    #[inline(never)]
    fn failure(&self, generation: u64) {
        self.update(generation, |failures| {
            if failures + 1 >= THRESHOLD {
                open(generation + 1)
            } else {
                closed(generation, failures + 1)
            }
        });
    }

    /// Replace the word while it is closed in `generation`; an outcome from another generation,
    /// or one that finds the sketch open, changes nothing.
    fn update(&self, generation: u64, next: impl Fn(u64) -> u64) {
        let mut word = self.word.load(Ordering::Acquire);
        while word >> KIND_SHIFT == CLOSED
            && (word >> GENERATION_SHIFT) & GENERATION_MASK == generation
        {
            let wanted = next(word & FAILURES_MASK);
            if wanted == word {
                return;
            }
            match self
                .word
                .compare_exchange_weak(word, wanted, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }
}
