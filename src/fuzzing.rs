//! Internals for the fuzz targets (`fuzz/`), built only under `--cfg fuzzing`: the word's layout
//! and constructors, and the fleet's adoption. Not part of the API and not covered by semver.

use crate::breaker::CircuitBreaker;
use crate::state::word::{Kind, Word};
use crate::types::Transition;

pub use crate::state::decide::Remote;

/// Bits of the kind field.
pub const KIND_BITS: u32 = Word::KIND_BITS;
/// Bits of the generation field.
pub const GENERATION_BITS: u32 = Word::GENERATION_BITS;
/// Bits of the payload field.
pub const PAYLOAD_BITS: u32 = Word::PAYLOAD_BITS;
/// The largest generation; the next one is 0.
pub const MAX_GENERATION: u32 = Word::MAX_GENERATION;
/// The largest time the word holds, in ms since the breaker's origin.
pub const MAX_TIME_MS: u64 = Word::MAX_TIME_MS;
/// How far before its construction a breaker's time origin lies, in ms.
pub const CLOCK_HEADROOM_MS: u64 = crate::time::CLOCK_HEADROOM_MS;

/// A word of `kind` (0 closed, 1 open, 2 probing, 3 half-open) built by its constructor.
pub fn pack(kind: u8, generation: u32, payload: u64) -> u64 {
    match kind % 4 {
        // A closed payload is its flags and its count: any payload up to the field's top.
        0 => {
            let payload = payload.min(Word::PAYLOAD.max());
            Word::closed_with(generation, payload & Word::MAX_FAILURES, payload)
        }
        1 => Word::open(generation, payload),
        2 => Word::probing(generation, payload),
        _ => Word::half_open(generation),
    }
    .bits()
}

/// The word of a breaker forced open by hand.
pub fn isolated(generation: u32) -> u64 {
    Word::isolated(generation).bits()
}

/// The fields of any 64-bit pattern: (kind 0–3, generation, payload).
pub fn unpack(bits: u64) -> (u8, u32, u64) {
    let word = Word::from_bits(bits);
    let kind = match word.kind() {
        Kind::Closed => 0,
        Kind::Open => 1,
        Kind::Probing => 2,
        Kind::HalfOpen => 3,
    };
    (kind, word.generation(), word.payload())
}

/// The closed fast path's reading of any 64-bit pattern.
pub fn closed_generation(bits: u64) -> Option<u32> {
    Word::from_bits(bits).closed_generation()
}

/// What the fleet's task does when another instance's transition arrives: the breaker adopts it
/// (`CircuitBreaker::adopt`), times in ms since the breaker's origin. Returns the transition
/// announced, if any.
pub fn adopt(breaker: &CircuitBreaker, remote: Remote) -> Option<Transition> {
    breaker.adopt(remote).1
}
