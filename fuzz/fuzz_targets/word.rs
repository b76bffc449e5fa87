//! The packed word: for arbitrary field values, every kind's constructor keeps its fields apart,
//! saturates an oversized payload instead of spilling it (times stop below the isolated marker),
//! masks the generation, and the closed fast path agrees with the full decode. Any 64-bit pattern
//! decodes without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolbreaker::fuzzing::{
    GENERATION_BITS, KIND_BITS, MAX_TIME_MS, PAYLOAD_BITS, closed_generation, isolated, pack,
    unpack,
};

fuzz_target!(|input: (u8, u32, u64, u64)| {
    let (kind, generation, payload, bits) = input;
    assert_eq!(KIND_BITS + GENERATION_BITS + PAYLOAD_BITS, 64);
    let max_payload = (1u64 << PAYLOAD_BITS) - 1;
    let max_generation = (1u32 << GENERATION_BITS) - 1;

    let kind = kind % 4;
    let word = pack(kind, generation, payload);
    let (k, g, p) = unpack(word);
    assert_eq!(k, kind, "kind of {word:#018x}");
    assert_eq!(g, generation & max_generation, "generation of {word:#018x}");
    // Times (open, probing) stop one below the payload's top, which marks an isolated breaker.
    let expected_payload = match kind {
        0 => payload.min(max_payload),
        1 | 2 => payload.min(MAX_TIME_MS),
        _ => 0,
    };
    assert_eq!(MAX_TIME_MS, max_payload - 1);
    assert_eq!(p, expected_payload, "payload of {word:#018x}");
    // Packing what was unpacked gives the same word back.
    assert_eq!(pack(k, g, p), word);
    assert_eq!(closed_generation(word), (kind == 0).then_some(g));
    // The isolated word is open with the top payload, and no time packs to it.
    let (k, g, p) = unpack(isolated(generation));
    assert_eq!((k, g, p), (1, generation & max_generation, max_payload));

    // Any pattern at all decodes, and re-packs to itself unless no constructor makes it: a
    // half-open word with stray payload bits, or a probing word at the top payload. An open word
    // at the top payload is the isolated word.
    let (k, g, p) = unpack(bits);
    assert!(k < 4 && g <= max_generation && p <= max_payload);
    match (k, p == max_payload) {
        (1, true) => assert_eq!(isolated(g), bits),
        (2, true) => {}
        (3, _) if p != 0 => {}
        _ => assert_eq!(pack(k, g, p), bits),
    }
    assert_eq!(closed_generation(bits), (k == 0).then_some(g));
});
