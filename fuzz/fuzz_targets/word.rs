//! The packed word: for arbitrary field values, every kind's constructor keeps its fields apart,
//! saturates an oversized payload instead of spilling it, masks the generation, and the closed
//! fast path agrees with the full decode. Any 64-bit pattern decodes without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolbreaker::fuzzing::{
    GENERATION_BITS, KIND_BITS, PAYLOAD_BITS, closed_generation, pack, unpack,
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
    let expected_payload = if kind == 3 {
        0
    } else {
        payload.min(max_payload)
    };
    assert_eq!(p, expected_payload, "payload of {word:#018x}");
    // Packing what was unpacked gives the same word back.
    assert_eq!(pack(k, g, p), word);
    assert_eq!(closed_generation(word), (kind == 0).then_some(g));

    // Any pattern at all decodes, and re-packs to itself unless it is a half-open word with
    // stray payload bits (which no constructor makes).
    let (k, g, p) = unpack(bits);
    assert!(k < 4 && g <= max_generation && p <= max_payload);
    if k != 3 || p == 0 {
        assert_eq!(pack(k, g, p), bits);
    }
    assert_eq!(closed_generation(bits), (k == 0).then_some(g));
});
