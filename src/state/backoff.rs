//! The cooldown's backoff and jitter, as pure arithmetic: the base of the next open period after
//! a reopen, the draw of a generation, and the spread drawn for it. No atomic, no clock: the cooldown's cell
//! (`cooldown`) keeps the base in force and applies these.

use crate::config::Shape;

/// The base after one more reopen: times the multiplier, up to the maximum (a base already above
/// the maximum, from before a lowered cap, comes down to it).
pub(crate) fn backed_off(base: u64, shape: &Shape) -> u64 {
    if shape.multiplier_ppm == 1_000_000 {
        return base;
    }
    let grown = u128::from(base) * u128::from(shape.multiplier_ppm) / 1_000_000;
    u64::try_from(grown)
        .unwrap_or(u64::MAX)
        .min(shape.max_cooldown_ms)
        .max(base.min(shape.max_cooldown_ms))
}

/// The draw of `generation` from `seed`: splitmix64's finaliser over the two, so every caller
/// that asks for one generation reads the same number.
pub(crate) fn draw(seed: u64, generation: u32) -> u64 {
    let mut z = seed ^ u64::from(generation).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `base` spread by the jitter drawn for `generation` from `seed`: `base × (1 + j·u)`, `u` in
/// [−1, 1) from a hash of the generation and the seed; at least 1 ms.
pub(crate) fn spread(seed: u64, generation: u32, base: u64, shape: &Shape) -> u64 {
    let jitter = shape.jitter_ppm;
    if jitter == 0 {
        return base;
    }
    // u in millionths: −1,000,000 ..= 999,999.
    let u = (draw(seed, generation) % 2_000_000) as i128 - 1_000_000;
    let delta = i128::from(base) * i128::from(jitter) * u / 1_000_000_000_000;
    u64::try_from((i128::from(base) + delta).max(1)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOUBLING: Shape = Shape {
        multiplier_ppm: 2_000_000,
        max_cooldown_ms: 1_000,
        ..Shape::FIXED
    };

    #[test]
    fn a_backoff_grows_by_its_multiplier_up_to_its_cap_and_a_fixed_shape_keeps_the_base() {
        assert_eq!(backed_off(100, &Shape::FIXED), 100);
        assert_eq!(backed_off(100, &DOUBLING), 200);
        assert_eq!(backed_off(600, &DOUBLING), 1_000, "capped");
        assert_eq!(
            backed_off(5_000, &DOUBLING),
            1_000,
            "a base above a lowered cap comes down"
        );
        assert_eq!(backed_off(u64::MAX, &DOUBLING), 1_000, "no overflow");
    }

    #[test]
    fn a_spread_stays_within_its_jitter_is_the_same_for_a_generation_and_at_least_one_ms() {
        let jitter = Shape {
            jitter_ppm: 500_000,
            ..Shape::FIXED
        };
        assert_eq!(
            spread(7, 3, 1_000, &Shape::FIXED),
            1_000,
            "no jitter: the base"
        );
        for generation in 0..1_000 {
            let spread_ms = spread(42, generation, 1_000, &jitter);
            assert!((500..1_500).contains(&spread_ms), "{spread_ms}");
            assert_eq!(spread(42, generation, 1_000, &jitter), spread_ms);
            assert!(spread(42, generation, 1, &jitter) >= 1);
        }
    }
}
