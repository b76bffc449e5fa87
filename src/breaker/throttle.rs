//! Client-side adaptive throttling's counts and probability, kept beside the word (the Google SRE
//! book, chapter "Handling Overload", section "Client-side throttling").
//!
//! Over the last window the breaker counts *requests* (its closed-state calls whose outcome was
//! recorded, and the calls this throttle shed) and *accepts* (those whose outcome was a success
//! or `Ignored`: the dependency answered), and sheds a closed admission with probability
//! `p = max(0, (requests − k·accepts) / (requests + 1))`.
//!
//! # Counts
//!
//! One `u64` per stripe holds `accepts·2^32 + requests`, cumulative and wrapping, so recording
//! an outcome is one add (an accept adds `2^32 + 1`, any other request 1) and a window's counts
//! are the wrapping difference of two sums of the stripes: exact while a window holds fewer
//! than 2^32 requests. A thread's *own* stripe: `thread_index` hands each thread an index no
//! other thread ever gets, so the stripe of index `i` below the own stripes' count is written
//! by that one thread only, with a relaxed load and a store (no lock prefix, and no count lost:
//! nobody else writes it). Threads with a larger index add to a small set of shared stripes
//! with `fetch_add`, exact too.
//!
//! # The probability
//!
//! `p` is one atomic on a line of its own that only the slow paths write: 0 while the
//! dependency accepts what is asked of it, so a healthy admission reads it and nothing else
//! here. It is computed afresh (the stripes summed) on a counted failure, on a shed call, on
//! every recorded outcome while it is above 0, and on an admission while it is above 0 that
//! finds a new time bucket (the clock is read only then).
//!
//! # The window
//!
//! A window of `t` ms is 10 buckets of `⌈t/10⌉` ms: the current one and the 9 before it, as the
//! rate rules' time windows. Each computation keeps the sum it found, with its time, as the
//! *latest* snapshot and, if it is the first in its bucket, in a ring of 10 (one per bucket,
//! tagged with the restart's epoch). The window's counts are the sum now less the sum at the
//! window's start, found from the snapshots on either side of it: the counts since the oldest
//! snapshot inside the window whole, and those between it and the newest snapshot before the
//! window (the latest, a ring's or the restart) in the share of that stretch's time that lies
//! inside, as if they came at a uniform rate. So the counts are exact when a snapshot was kept
//! at the window's start, or the counts began inside it; and when nothing was computed for a
//! while (the dependency was healthy: nothing asked), the stretch since the last computation is
//! scaled to the part of it inside the window.
//!
//! A *restart* (when the breaker closes in a new generation, and when the window changes)
//! begins the counts afresh: the sum then, with its time and a new epoch. Snapshots of an older
//! epoch are ignored, and a window that begins before the restart counts from it, exactly.

use crossbeam_utils::CachePadded;

use crate::config::Throttling;
use crate::observe::{stripe_count, thread_index};
use crate::sync::{AtomicU128, Ordering, RelaxedU64 as AtomicU64};

/// The window's buckets: the current one and the 9 before it.
const BUCKETS: u64 = 10;
/// A request's add: one in the low half.
pub(crate) const REQUEST: u64 = 1;
/// An accepted request's add: one in each half.
pub(crate) const ACCEPT: u64 = (1 << 32) | 1;
/// A snapshot's time in ms, below its epoch (the clock saturates below 2^43 ms, so it fits).
const TIME_BITS: u32 = 48;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;

/// The own stripes per breaker: four per stripe of the counters (at most 32: 4 KiB), so a
/// runtime's workers and the threads started early all write a stripe of their own.
fn own_count() -> usize {
    (stripe_count() * 4).min(32)
}

/// A snapshot of the stripes' sum, and when it was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Snapshot {
    time_ms: u64,
    sum: u64,
}

impl Snapshot {
    /// Whether this one was taken after `other`: later, or as late with more counted (the sums
    /// only grow, so a wrapping difference below 2^63 is a later one).
    fn is_after(self, other: Snapshot) -> bool {
        let more = self.sum != other.sum && self.sum.wrapping_sub(other.sum) < 1 << 63;
        self.time_ms > other.time_ms || (self.time_ms == other.time_ms && more)
    }
}

/// A breaker's throttle: made when the breaker first has adaptive throttling, and kept.
#[derive(Debug)]
pub(crate) struct Throttle {
    /// `p`'s bits, 0 when not shedding: read by every closed admission, written by the slow
    /// paths alone. Relaxed: a probability orders nothing.
    p: CachePadded<AtomicU64>,
    /// The own stripes, one per thread index below their count (see the module's docs).
    own: Box<[CachePadded<AtomicU64>]>,
    /// The stripes of the threads with larger indexes, added to by `fetch_add`.
    shared: Box<[CachePadded<AtomicU64>]>,
    /// `k`'s bits; the window in ms (0: off). Relaxed settings, as the breaker's others.
    k_bits: AtomicU64,
    window_ms: AtomicU64,
    /// The bucket the probability was last computed in (an admission's check while `p > 0`).
    computed: AtomicU64,
    /// The restart: its epoch and time (a tag) above the sum then.
    restart: AtomicU128,
    /// The first snapshot of each bucket: a tag above the sum, bucket `b` at index `b % 10`.
    ring: [AtomicU128; BUCKETS as usize],
    /// The latest computation's snapshot.
    latest: AtomicU128,
}

impl Throttle {
    pub(crate) fn new() -> Self {
        let stripes = |n| {
            (0..n)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect()
        };
        Throttle {
            p: CachePadded::new(AtomicU64::new(0)),
            own: stripes(own_count()),
            shared: stripes(stripe_count()),
            k_bits: AtomicU64::new(0),
            window_ms: AtomicU64::new(0),
            computed: AtomicU64::new(0),
            restart: AtomicU128::new(0),
            ring: Default::default(),
            latest: AtomicU128::new(0),
        }
    }

    /// The settings in force; `None` when off.
    pub(crate) fn settings(&self) -> Option<Throttling> {
        let window_ms = self.window_ms.load(Ordering::Relaxed);
        (window_ms != 0).then(|| Throttling {
            k_bits: self.k_bits.load(Ordering::Relaxed),
            window_ms,
        })
    }

    /// Store new settings (the caller restarts or recomputes as they require).
    pub(crate) fn set(&self, settings: Option<Throttling>) {
        match settings {
            Some(settings) => {
                self.k_bits.store(settings.k_bits, Ordering::Relaxed);
                self.window_ms.store(settings.window_ms, Ordering::Relaxed);
            }
            None => {
                self.window_ms.store(0, Ordering::Relaxed);
                self.p.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Whether closed admissions are being shed: one relaxed load.
    #[inline(always)]
    pub(crate) fn sheds(&self) -> bool {
        self.p.load(Ordering::Relaxed) != 0
    }

    /// The probability in force.
    #[inline]
    pub(crate) fn p(&self) -> f64 {
        f64::from_bits(self.p.load(Ordering::Relaxed))
    }

    /// Add `amount` ([`REQUEST`] or [`ACCEPT`]) to this thread's stripe.
    #[inline(always)]
    pub(crate) fn add(&self, amount: u64) {
        self.add_at(thread_index(), amount);
    }

    /// [`add`](Self::add) as the thread of index `index`: only that thread may call it.
    #[inline(always)]
    fn add_at(&self, index: usize, amount: u64) {
        match self.own.get(index) {
            // Written by this thread alone, ever (see the module's docs): load and store.
            Some(own) => own.store(
                own.load(Ordering::Relaxed).wrapping_add(amount),
                Ordering::Relaxed,
            ),
            // The shared stripes are a power of two.
            None => {
                self.shared[index & (self.shared.len() - 1)].fetch_add(amount, Ordering::Relaxed);
            }
        }
    }

    /// The stripes' sum: `accepts·2^32 + requests`, cumulative, wrapping. Relaxed loads, read
    /// one after another: a count being added now is in this sum or the next.
    pub(crate) fn sum(&self) -> u64 {
        self.own
            .iter()
            .chain(self.shared.iter())
            .map(|stripe| stripe.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// The width of a bucket of a `window_ms` window, in ms (at least 1).
    pub(crate) const fn bucket_ms(window_ms: u64) -> u64 {
        window_ms.div_ceil(BUCKETS)
    }

    /// Whether `p` is to be computed afresh before a draw at `now_ms`: `now_ms` is in a later
    /// bucket than the last computation's, or throttling is off (a computation that raced its
    /// turning off may have left a `p`; computing it again clears it).
    #[inline]
    pub(crate) fn stale(&self, now_ms: u64) -> bool {
        let window_ms = self.window_ms.load(Ordering::Relaxed);
        window_ms == 0
            || now_ms / Self::bucket_ms(window_ms) != self.computed.load(Ordering::Relaxed)
    }

    const fn tag(epoch: u64, time_ms: u64) -> u64 {
        (epoch << TIME_BITS) | (time_ms & TIME_MASK)
    }

    /// A snapshot's epoch and the snapshot.
    fn split(value: u128) -> (u64, Snapshot) {
        let tag = (value >> 64) as u64;
        let snapshot = Snapshot {
            time_ms: tag & TIME_MASK,
            sum: value as u64,
        };
        (tag >> TIME_BITS, snapshot)
    }

    const fn join(epoch: u64, snapshot: Snapshot) -> u128 {
        ((Self::tag(epoch, snapshot.time_ms) as u128) << 64) | snapshot.sum as u128
    }

    /// Begin the counts afresh at `now_ms`: the window holds nothing from here on, and `p` is 0.
    pub(crate) fn restart(&self, now_ms: u64) {
        let window_ms = self.window_ms.load(Ordering::Relaxed).max(1);
        let (epoch, _) = Self::split(self.restart.load(Ordering::Relaxed));
        let epoch = (epoch + 1) & ((1 << (64 - TIME_BITS)) - 1);
        let snapshot = Snapshot {
            time_ms: now_ms,
            sum: self.sum(),
        };
        self.restart
            .store(Self::join(epoch, snapshot), Ordering::Relaxed);
        self.computed
            .store(now_ms / Self::bucket_ms(window_ms), Ordering::Relaxed);
        self.p.store(0, Ordering::Relaxed);
    }

    /// Compute `p` at `now_ms` from the window's counts, store it, and return it; the sum is
    /// kept as the latest snapshot, and as its bucket's if it is the first computation in it.
    pub(crate) fn refresh(&self, now_ms: u64) -> f64 {
        let Some(settings) = self.settings() else {
            self.p.store(0, Ordering::Relaxed);
            return 0.0;
        };
        let bucket_ms = Self::bucket_ms(settings.window_ms);
        let now = Snapshot {
            time_ms: now_ms,
            sum: self.sum(),
        };
        let (epoch, restart) = Self::split(self.restart.load(Ordering::Relaxed));
        let (requests, accepts) = self.counts(epoch, restart, now, bucket_ms);
        self.keep(epoch, now, bucket_ms);
        self.latest.store(Self::join(epoch, now), Ordering::Relaxed);
        let p = probability(requests, accepts, settings.k());
        self.p.store(p.to_bits(), Ordering::Relaxed);
        self.computed.store(now_ms / bucket_ms, Ordering::Relaxed);
        p
    }

    /// The window's requests and accepts at `now` (exact or estimated: see the module's docs).
    fn counts(&self, epoch: u64, restart: Snapshot, now: Snapshot, bucket_ms: u64) -> (f64, f64) {
        // The window's first bucket starts at `start`.
        let start = (now.time_ms / bucket_ms).saturating_sub(BUCKETS - 1) * bucket_ms;
        if restart.time_ms >= start {
            // Counted afresh inside the window: exact.
            return split_counts(now.sum.wrapping_sub(restart.sum));
        }
        // The newest snapshot before the window, and the oldest inside it.
        let mut before = restart;
        let mut inside: Option<Snapshot> = None;
        for slot in self.ring.iter().chain([&self.latest]) {
            let (slot_epoch, snapshot) = Self::split(slot.load(Ordering::Relaxed));
            if slot_epoch != epoch
                || snapshot.time_ms < restart.time_ms
                || snapshot.time_ms > now.time_ms
            {
                continue;
            }
            if snapshot.time_ms < start {
                if snapshot.is_after(before) {
                    before = snapshot;
                }
            } else if inside.is_none_or(|inside| inside.is_after(snapshot)) {
                inside = Some(snapshot);
            }
        }
        let (older, newer, since) = match inside {
            // Whole from the oldest snapshot inside; before it, the share of the stretch from
            // the one before the window that lies inside.
            Some(inside) => (before, inside, inside.time_ms),
            // Nothing kept inside: the share of the stretch since the one before.
            None => (before, now, now.time_ms),
        };
        let share = (since - start) as f64 / (since - older.time_ms) as f64;
        let (whole_r, whole_a) = split_counts(now.sum.wrapping_sub(newer.sum));
        let (part_r, part_a) = split_counts(newer.sum.wrapping_sub(older.sum));
        (whole_r + part_r * share, whole_a + part_a * share)
    }

    /// Keep `now` as its bucket's snapshot, unless one of that bucket (or a later one) is there.
    fn keep(&self, epoch: u64, now: Snapshot, bucket_ms: u64) {
        let bucket = now.time_ms / bucket_ms;
        let slot = &self.ring[(bucket % BUCKETS) as usize];
        let mut seen = slot.load(Ordering::Relaxed);
        loop {
            let (seen_epoch, snapshot) = Self::split(seen);
            if seen_epoch == epoch && snapshot.time_ms / bucket_ms >= bucket {
                return;
            }
            // Relaxed: a snapshot orders nothing; the first computation in a bucket keeps its sum.
            match slot.compare_exchange_weak(
                seen,
                Self::join(epoch, now),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }
}

/// A difference of two sums as (requests, accepts).
fn split_counts(difference: u64) -> (f64, f64) {
    ((difference & 0xFFFF_FFFF) as f64, (difference >> 32) as f64)
}

/// The SRE book's client-side throttling: `max(0, (requests − k·accepts) / (requests + 1))`.
pub(crate) fn probability(requests: f64, accepts: f64, k: f64) -> f64 {
    ((requests - k * accepts) / (requests + 1.0)).max(0.0)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn on(throttle: &Throttle, k: f64, window_ms: u64) {
        throttle.set(Some(
            Throttling::new(k, core::time::Duration::from_millis(window_ms)).unwrap(),
        ));
        throttle.restart(0);
    }

    #[test]
    fn the_counts_split_exactly_and_the_formula_is_the_books() {
        assert_eq!(split_counts(3 * ACCEPT + 4 * REQUEST), (7.0, 3.0));
        // Cumulative requests past 2^32 carry into the high half; differences stay exact.
        let start = u64::from(u32::MAX) - 1;
        let end = start.wrapping_add(5 * REQUEST + 2 * ACCEPT);
        assert_eq!(split_counts(end.wrapping_sub(start)), (7.0, 2.0));
        assert_eq!(probability(10.0, 5.0, 2.0), 0.0);
        assert_eq!(probability(10.0, 2.0, 2.0), 6.0 / 11.0);
        assert_eq!(probability(0.0, 0.0, 2.0), 0.0);
    }

    /// The window is the last 10 buckets: exact from the restart inside it or a snapshot at its
    /// start, else estimated at a uniform rate between the snapshots on either side of its
    /// start.
    #[test]
    fn the_window_is_exact_where_snapshots_were_kept_and_estimated_where_not() {
        let throttle = Throttle::new();
        on(&throttle, 1.0, 1_000); // buckets of 100 ms
        let requests = |n| (0..n).for_each(|_| throttle.add(REQUEST));
        requests(10);
        assert_eq!(throttle.refresh(50), 10.0 / 11.0, "since the restart");

        // One request and a computation at the start of each bucket 1 to 10: at 1 000 ms the
        // window starts at bucket 1 (100 ms), whose snapshot holds 11 requests: 9 since.
        for bucket in 1..=10 {
            requests(1);
            throttle.refresh(bucket * 100);
        }
        assert_eq!(throttle.p(), 9.0 / 10.0);

        // 30 more, and nothing computed until 3 050 ms: the window starts at 2 100 ms, and the
        // latest snapshot (1 000 ms) is before it: 30 · 950 / 2 050 of them are counted.
        requests(30);
        let p = throttle.refresh(3_050);
        let counted = 30.0 * 950.0 / 2_050.0;
        assert!((p - counted / (counted + 1.0)).abs() < 1e-12, "{p}");

        // Requests all made at once, then a quiet window: the latest snapshot was taken after
        // them, so none of them is counted.
        requests(50);
        throttle.refresh(3_060);
        assert_eq!(throttle.refresh(5_000), 0.0);

        // With a snapshot inside: the counts since it whole, and the share before it.
        requests(20);
        throttle.refresh(5_450); // the first in bucket 54: kept
        requests(7);
        // At 6 350 ms the window starts at 5 400 ms: the 7 since 5 450 ms are all counted, and
        // of the 20 between 5 000 ms (the newest snapshot before it) and 5 450 ms, 50/450.
        let counted = 7.0 + 20.0 * 50.0 / 450.0;
        let p = throttle.refresh(6_350);
        assert!((p - counted / (counted + 1.0)).abs() < 1e-12, "{p}");

        // A restart counts afresh.
        throttle.restart(6_360);
        assert_eq!((throttle.p(), throttle.refresh(6_370)), (0.0, 0.0));
    }

    /// Several threads, more than there are own stripes, each add known numbers: one per own
    /// stripe (by its index, as `thread_index` hands them out: never two threads the same) and
    /// the rest on the shared stripes, several to a stripe, at once. The sum is exact.
    #[test]
    fn the_counts_are_exact_under_threads_on_own_and_shared_stripes() {
        let throttle = Throttle::new();
        let threads = own_count() + 3 * stripe_count() + 1;
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|scope| {
            for index in 0..threads {
                let (throttle, start) = (&throttle, &start);
                scope.spawn(move || {
                    start.wait();
                    for i in 0..10_000 {
                        throttle.add_at(index, if i % 3 == 0 { ACCEPT } else { REQUEST });
                    }
                });
            }
        });
        let accepts = (threads * 3_334) as f64;
        assert_eq!(
            split_counts(throttle.sum()),
            ((threads * 10_000) as f64, accepts)
        );
    }
}
