//! One vocabulary for the packed atomics: a [`Field`] is a run of bits of a `u64`, and every
//! encoding in this folder (the state word, the probe slots, the live settings, the cooldown
//! record, the window's tags) names its fields as associated constants of this type instead of
//! free shifts and masks. (The idea of sharded-slab's `Pack` trait.)
//!
//! A field is laid out from the bottom up: [`Field::low`] starts at bit 0 and [`Field::above`]
//! starts where another ends, so fields of one encoding are disjoint by construction and a
//! `const` assertion beside the encoding checks that they fit in 64 bits.

/// A run of `bits` bits starting at bit `shift` of a `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    shift: u32,
    bits: u32,
}

impl Field {
    /// The lowest `bits` bits.
    pub(crate) const fn low(bits: u32) -> Field {
        Field { shift: 0, bits }
    }

    /// The one bit `at`: a flag.
    pub(crate) const fn bit(at: u32) -> Field {
        Field { shift: at, bits: 1 }
    }

    /// `bits` bits starting where `self` ends.
    pub(crate) const fn above(self, bits: u32) -> Field {
        Field {
            shift: self.shift + self.bits,
            bits,
        }
    }

    /// The bit this field starts at.
    pub(crate) const fn shift(self) -> u32 {
        self.shift
    }

    /// The field's width in bits.
    pub(crate) const fn bits(self) -> u32 {
        self.bits
    }

    /// The bit above the field's top one: where the next field starts.
    pub(crate) const fn end(self) -> u32 {
        self.shift + self.bits
    }

    /// The largest value the field holds.
    pub(crate) const fn max(self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1 << self.bits) - 1
        }
    }

    /// The field's bits in place: its mask within the packed value.
    #[cfg(test)]
    pub(crate) const fn mask(self) -> u64 {
        self.max() << self.shift
    }

    /// The field's value in `packed`.
    #[inline(always)]
    pub(crate) const fn get(self, packed: u64) -> u64 {
        (packed >> self.shift) & self.max()
    }

    /// `value` (cut to the field's width) in place, to be or-ed with the other fields.
    #[inline(always)]
    pub(crate) const fn put(self, value: u64) -> u64 {
        (value & self.max()) << self.shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_stack_without_overlap_and_round_trip_at_their_limits() {
        let a = Field::low(20);
        let b = a.above(24);
        let c = b.above(20);
        assert_eq!((a.shift(), b.shift(), c.shift(), c.end()), (0, 20, 44, 64));
        assert_eq!(a.mask() & b.mask(), 0);
        assert_eq!(b.mask() & c.mask(), 0);
        assert_eq!(a.mask() | b.mask() | c.mask(), u64::MAX);
        for (x, y, z) in [(0, 0, 0), (1, 1, 1), (a.max(), b.max(), c.max())] {
            let packed = a.put(x) | b.put(y) | c.put(z);
            assert_eq!((a.get(packed), b.get(packed), c.get(packed)), (x, y, z));
        }
        assert_eq!(
            a.put(a.max() + 1),
            0,
            "a value past the field is cut, never spilled"
        );
        assert_eq!(Field::low(64).max(), u64::MAX);
        let flag = Field::bit(63);
        assert_eq!(
            (flag.mask(), flag.put(1), flag.get(u64::MAX)),
            (1 << 63, 1 << 63, 1)
        );
    }
}
