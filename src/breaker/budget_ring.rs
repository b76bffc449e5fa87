//! A retry budget's counts: first attempts deposited and retries withdrawn over a sliding window
//! of ten slices, in one head word (the current slice) and a ring of the slices before it.
//!
//! Every change is one compare-and-swap of the head, a `u128`: the slice's tag (the window's
//! generation and the slice's number) above its deposits and withdrawals. So all changes are
//! ordered by that one word, and a withdrawal that lands was judged against every deposit and
//! withdrawal before it: concurrent callers never overspend. When the clock enters a later
//! slice, the first caller to see it archives the head's counts into the ring (merged by
//! maximum, so a late archiver never lowers them) before it swaps in the new head; a slice's
//! counts are final once the head has left it, so a reader that sees the new head sees them.
//! Readers count the ring's slices of the head's generation less than ten slices behind it.
//!
//! A change of the window's width starts a new generation: its first head carries the previous
//! generation's live totals, and the old slices are read no more.

use crate::sync::{AtomicU128, Ordering};

/// Slices in a window: counts leave it a tenth of the window at a time.
pub(super) const SLICES: u64 = 10;

/// The slice number's bits in a tag; the generation is above them.
const SLICE_BITS: u32 = 56;
const SLICE_MASK: u64 = (1 << SLICE_BITS) - 1;

/// One slice: its tag (generation, number) and the counts made in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Slice {
    pub(super) generation: u8,
    pub(super) number: u64,
    pub(super) deposits: u32,
    pub(super) withdrawals: u32,
}

impl Slice {
    fn pack(self) -> u128 {
        let tag = (u64::from(self.generation) << SLICE_BITS) | (self.number & SLICE_MASK);
        (u128::from(tag) << 64) | (u128::from(self.deposits) << 32) | u128::from(self.withdrawals)
    }

    fn unpack(word: u128) -> Self {
        let tag = (word >> 64) as u64;
        Slice {
            generation: (tag >> SLICE_BITS) as u8,
            number: tag & SLICE_MASK,
            deposits: (word >> 32) as u32,
            withdrawals: word as u32,
        }
    }

    fn fresh(generation: u8, number: u64) -> Self {
        Slice {
            generation,
            number,
            ..Slice::default()
        }
    }
}

/// Whether generation `a` is later than `b` (they wrap).
fn later(a: u8, b: u8) -> bool {
    (a.wrapping_sub(b) as i8) > 0
}

/// The counts: the head and the ring of earlier slices (slice `n` at `n % SLICES`).
#[derive(Debug, Default)]
pub(super) struct Ring {
    head: AtomicU128,
    ring: [AtomicU128; SLICES as usize],
}

/// Where the clock is: the window's generation and the current slice's number.
#[derive(Clone, Copy, Debug)]
pub(super) struct Now {
    pub(super) generation: u8,
    pub(super) number: u64,
}

/// The head as it stood when read, and the live totals (head and ring) it was judged with.
#[derive(Clone, Copy, Debug)]
pub(super) struct Totals {
    head: Slice,
    pub(super) deposits: u64,
    pub(super) withdrawals: u64,
}

impl Ring {
    /// Add one first attempt to the current slice.
    pub(super) fn deposit(&self, now: impl Fn() -> Now) {
        loop {
            let head = self.current(&now);
            let next = Slice {
                deposits: head.deposits.saturating_add(1),
                ..head
            };
            if self.swap(head, next) {
                return;
            }
        }
    }

    /// Withdraw one retry if `allows(totals)` says the window's counts leave room for one more;
    /// the swap lands only on the head the judgement read, so no withdrawal is ever judged
    /// against stale counts. Returns the totals judged, and whether the retry was withdrawn.
    pub(super) fn withdraw(
        &self,
        now: impl Fn() -> Now,
        allows: impl Fn(&Totals) -> bool,
    ) -> (Totals, bool) {
        loop {
            let totals = self.totals(&now);
            if !allows(&totals) || totals.head.withdrawals == u32::MAX {
                return (totals, false);
            }
            let next = Slice {
                withdrawals: totals.head.withdrawals + 1,
                ..totals.head
            };
            if self.swap(totals.head, next) {
                return (totals, true);
            }
        }
    }

    /// The live totals now, the head moved to the current slice first.
    pub(super) fn totals(&self, now: &impl Fn() -> Now) -> Totals {
        let head = self.current(now);
        let (deposits, withdrawals) = self.ring_totals(head);
        Totals {
            head,
            deposits: deposits + u64::from(head.deposits),
            withdrawals: withdrawals + u64::from(head.withdrawals),
        }
    }

    /// The totals of the ring's live slices behind `head`: its generation's, fewer than
    /// `SLICES` behind it.
    fn ring_totals(&self, head: Slice) -> (u64, u64) {
        let mut totals = (0, 0);
        for slot in &self.ring {
            let slice = Slice::unpack(slot.load(Ordering::Acquire));
            let behind = head.number.wrapping_sub(slice.number) & SLICE_MASK;
            if slice.generation == head.generation && (1..SLICES).contains(&behind) {
                totals.0 += u64::from(slice.deposits);
                totals.1 += u64::from(slice.withdrawals);
            }
        }
        totals
    }

    /// The head, moved to the current slice if the clock has left its slice: its counts
    /// archived, then a fresh head swapped in (one of a new generation carries the live totals).
    fn current(&self, now: &impl Fn() -> Now) -> Slice {
        loop {
            let head = Slice::unpack(self.head.load(Ordering::Acquire));
            let now = now();
            if head.generation == now.generation {
                // A clock read before another caller's is in the head's slice still.
                let ahead = now.number.wrapping_sub(head.number) & SLICE_MASK;
                if ahead == 0 || ahead > SLICE_MASK / 2 {
                    return head;
                }
                self.archive(head);
                if self.swap(head, Slice::fresh(now.generation, now.number)) {
                    return Slice::fresh(now.generation, now.number);
                }
            } else if later(now.generation, head.generation) {
                let (deposits, withdrawals) = self.ring_totals(head);
                let carried = Slice {
                    deposits: sat32(deposits + u64::from(head.deposits)),
                    withdrawals: sat32(withdrawals + u64::from(head.withdrawals)),
                    ..Slice::fresh(now.generation, now.number)
                };
                if self.swap(head, carried) {
                    return carried;
                }
            }
            // Else the head is of a generation later than the rules read: read them again.
        }
    }

    /// Keep `slice`'s counts in its slot: merged by maximum with the same slice's (counts only
    /// grow, so the larger is the later), replacing an earlier slice's, never a later one's.
    fn archive(&self, slice: Slice) {
        let slot = &self.ring[(slice.number % SLICES) as usize];
        let mut word = slot.load(Ordering::Acquire);
        loop {
            let held = Slice::unpack(word);
            let merged = if (held.generation, held.number) == (slice.generation, slice.number) {
                Slice {
                    deposits: held.deposits.max(slice.deposits),
                    withdrawals: held.withdrawals.max(slice.withdrawals),
                    ..slice
                }
            } else if later(slice.generation, held.generation)
                || (held.generation == slice.generation && held.number < slice.number)
                || word == 0
            {
                slice
            } else {
                return;
            };
            if merged == held {
                return;
            }
            match slot.compare_exchange_weak(
                word,
                merged.pack(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }

    fn swap(&self, from: Slice, to: Slice) -> bool {
        self.head
            .compare_exchange(from.pack(), to.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

fn sat32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    #[test]
    fn a_slice_packs_and_unpacks_whole() {
        let slice = Slice {
            generation: 200,
            number: SLICE_MASK,
            deposits: u32::MAX,
            withdrawals: 7,
        };
        assert_eq!(Slice::unpack(slice.pack()), slice);
        assert!(later(0, 255) && later(3, 1) && !later(1, 3) && !later(4, 4));
    }

    /// Counts leave the window a slice at a time: ten slices after it, a slice's counts are gone.
    #[test]
    fn counts_slide_out_of_the_window_a_slice_at_a_time() {
        let ring = Ring::default();
        let clock = Cell::new(Now {
            generation: 0,
            number: 5,
        });
        let now = || clock.get();
        ring.deposit(now);
        ring.deposit(now);
        assert!(ring.withdraw(now, |_| true).1);
        for step in 1..SLICES {
            clock.set(Now {
                number: 5 + step,
                ..clock.get()
            });
            let totals = ring.totals(&now);
            assert_eq!(
                (totals.deposits, totals.withdrawals),
                (2, 1),
                "slice {step}"
            );
        }
        clock.set(Now {
            number: 5 + SLICES,
            ..clock.get()
        });
        let totals = ring.totals(&now);
        assert_eq!((totals.deposits, totals.withdrawals), (0, 0));
    }

    /// A new generation starts with the live totals of the one before; its old slices are not
    /// counted twice.
    #[test]
    fn a_new_generation_carries_the_live_totals_once() {
        let ring = Ring::default();
        let clock = Cell::new(Now {
            generation: 0,
            number: 1,
        });
        let now = || clock.get();
        ring.deposit(now);
        clock.set(Now {
            generation: 0,
            number: 2,
        });
        ring.deposit(now);
        assert!(ring.withdraw(now, |_| true).1);
        clock.set(Now {
            generation: 1,
            number: 40,
        });
        let totals = ring.totals(&now);
        assert_eq!((totals.deposits, totals.withdrawals), (2, 1));
        clock.set(Now {
            generation: 1,
            number: 41,
        });
        let totals = ring.totals(&now);
        assert_eq!((totals.deposits, totals.withdrawals), (2, 1));
    }

    /// An archiver that read an old head never overwrites a later slice in the same slot.
    #[test]
    fn a_late_archive_never_lowers_or_replaces_later_counts() {
        let ring = Ring::default();
        let later_slice = Slice {
            generation: 0,
            number: 12,
            deposits: 5,
            withdrawals: 1,
        };
        ring.archive(later_slice);
        ring.archive(Slice {
            number: 2,
            ..later_slice
        });
        ring.archive(Slice {
            deposits: 3,
            withdrawals: 0,
            ..later_slice
        });
        assert_eq!(
            Slice::unpack(ring.ring[2].load(Ordering::Relaxed)),
            later_slice
        );
    }
}
