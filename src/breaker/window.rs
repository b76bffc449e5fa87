//! The rate rules' window: the judged calls, counted failures and slow calls of a closed
//! generation, kept beside the word.
//!
//! A healthy call writes one count to a stripe picked by its thread (the layout of the counters
//! in `observe`): no line is shared between threads on different stripes. Everything else —
//! a failure, a slow call, the judgement — is a slow path and writes a shared ring of buckets.
//! Nothing here decides a transition: the judge returns the counts (`state::rates` says what
//! they mean) and the breaker trips the
//! word with one compare-and-swap fenced by generation (`decide::window_trip`).
//!
//! # Buckets
//!
//! - A count window of `n` calls numbers the generation's judged calls 1, 2, … (its *position*:
//!   the stripes' sum less the generation's base, read when the call is recorded) and counts
//!   failures and slow calls in buckets of `⌈n/32⌉` positions. It judges the buckets that the
//!   last `n` positions touch, whole.
//! - A time window of `t` ms counts in buckets of `⌈t/10⌉` ms of the breaker's clock, calls in
//!   each stripe's ring of 10, failures and slow calls in the shared ring; it judges the current
//!   bucket and the 9 before it.
//!
//! Every shared bucket is tagged with the generation and the bucket's number, so a transition
//! empties the window without a write: a judge ignores another generation's buckets. A time
//! window's stripes are tagged with the bucket's number alone, and the generation's first bucket
//! is judged from the stripes' counts at the transition on (the header's base).
//!
//! Counts read while other threads record are read one after another: a judgement racing
//! recordings may miss a call being recorded at that moment, which the next judgement counts.

use crossbeam_utils::CachePadded;
use once_cell::race::OnceBox;

use super::throttle::Throttle;

use crate::config::{Rates, WindowLimit};
use crate::observe::{stripe_count, thread_index};
use crate::state::pack::Field;
use crate::state::rates::{Judged, TIME_BUCKETS, call_width, time_bucket};
use crate::state::word::Word;
use crate::sync::{AtomicU128, Ordering, RelaxedU64 as AtomicU64};

/// Shared buckets: more than a count window's 32 (plus the one its oldest edge may split).
const SLOTS: usize = 64;

/// One stripe: the calls of the threads that land on it.
#[derive(Debug, Default)]
struct Stripe {
    /// Count windows: every judged call ever recorded on this stripe.
    calls: AtomicU64,
    /// Time windows: bucket `k` at index `k % 10`, as `Windows::STRIPE_BUCKET` (`k`'s low 32
    /// bits) above `Windows::STRIPE_CALLS`.
    time: [AtomicU64; TIME_BUCKETS as usize],
}

/// A breaker's window. Allocated when the breaker first has a rate rule, and kept: 64 shared
/// buckets of 16 bytes and a 128-byte stripe per thread (at most 16), so 1.5 KiB on 2 threads
/// and about 3.2 KiB on 16 (measured by `tests/memory.rs`).
#[derive(Debug)]
pub(crate) struct Windows {
    stripes: Box<[CachePadded<Stripe>]>,
    /// A tag (`Windows::tag`: generation, bucket number) above `Windows::FAILURES` and
    /// `Windows::SLOW`.
    slots: Box<[AtomicU128]>,
    /// The generation the window counts, and where it began: a tag of the generation and its
    /// first time bucket, above the base, the base being the stripes' sum of calls then (count windows) or
    /// their count in the first time bucket then (time windows).
    header: AtomicU128,
    /// The rate rules in force, one relaxed atomic per field, as the breaker's other live
    /// settings (kept here rather than in the breaker's block, which is one cache line pair).
    /// `Windows::FAILURE_PPM` below `Windows::SLOW_PPM`, 0 when no rate rule is set.
    rate_ppm: AtomicU64,
    /// The slow-call threshold in ns (saturating at 584 years).
    slow_ns: AtomicU64,
    /// The window: a count, or with the top bit set a duration in ms.
    window: AtomicU64,
    minimum_calls: AtomicU64,
    /// Adaptive throttling's cell, when the breaker has it (see `throttle`): kept here, one
    /// pointer, so the breaker's block stays one cache-line pair.
    pub(crate) throttle: OnceBox<Throttle>,
}

impl Windows {
    /// The live window's flag: a duration in ms, not a count of calls.
    const TIME_WINDOW: u64 = 1 << 63;
    /// A tag's bucket number: a count window's bucket or a time bucket since the origin.
    const NUMBER: Field = Field::low(64 - Word::GENERATION_BITS);
    /// A tag's generation, above the number.
    const GENERATION: Field = Self::NUMBER.above(Word::GENERATION_BITS);
    /// A shared bucket's slow calls, in the low half of its 128 bits.
    const SLOW: Field = Field::low(32);
    /// A shared bucket's counted failures.
    const FAILURES: Field = Self::SLOW.above(32);
    /// A stripe's calls in one time bucket.
    const STRIPE_CALLS: Field = Field::low(32);
    /// The time bucket a stripe's count is of (its number's low 32 bits).
    const STRIPE_BUCKET: Field = Self::STRIPE_CALLS.above(32);
    /// The failure-rate rule in millionths.
    const FAILURE_PPM: Field = Field::low(32);
    /// The slow-call-rate rule in millionths.
    const SLOW_PPM: Field = Self::FAILURE_PPM.above(32);

    /// The tag of `generation`'s bucket `number`.
    const fn tag(generation: u32, number: u64) -> u64 {
        Self::GENERATION.put(generation as u64) | Self::NUMBER.put(number)
    }

    /// A 128-bit bucket or header: `high` (a tag) above `low`.
    const fn join(high: u64, low: u64) -> u128 {
        ((high as u128) << 64) | low as u128
    }

    /// The two halves of a 128-bit bucket or header: (high, low).
    const fn halves(value: u128) -> (u64, u64) {
        ((value >> 64) as u64, value as u64)
    }

    /// The tag of a stripe's count in time bucket `bucket`, with no calls.
    const fn stripe_tag(bucket: u64) -> u64 {
        Self::STRIPE_BUCKET.put(bucket)
    }

    /// The cell of a new breaker's window: made, with `rates` from generation 0 on, when it has
    /// rate rules; empty when not.
    pub(crate) fn cell(rates: Option<Rates>) -> OnceBox<Windows> {
        let windows = OnceBox::new();
        if let Some(rates) = rates {
            let made = Box::new(Windows::new());
            made.set_rates(Some(rates));
            made.rebase(0, &rates, 0);
            let _ = windows.set(made);
        }
        windows
    }

    pub(crate) fn new() -> Self {
        Windows {
            stripes: (0..stripe_count())
                .map(|_| CachePadded::default())
                .collect(),
            slots: (0..SLOTS).map(|_| AtomicU128::new(0)).collect(),
            header: AtomicU128::new(0),
            rate_ppm: AtomicU64::new(0),
            slow_ns: AtomicU64::new(0),
            window: AtomicU64::new(0),
            minimum_calls: AtomicU64::new(0),
            throttle: OnceBox::new(),
        }
    }

    /// The rate rules in force. Relaxed: a judgement racing a reconfiguration uses the old
    /// rules or the new. New ratios or a new minimum judge the window as it stands; a new window
    /// moves a closed breaker to a new generation, so the old window is never judged as the new.
    #[inline]
    pub(crate) fn rates(&self) -> Option<Rates> {
        let ppm = self.rate_ppm.load(Ordering::Relaxed);
        if ppm == 0 {
            return None;
        }
        let window = self.window.load(Ordering::Relaxed);
        Some(Rates {
            failure_ppm: Self::FAILURE_PPM.get(ppm) as u32,
            slow_ppm: Self::SLOW_PPM.get(ppm) as u32,
            slow_threshold: core::time::Duration::from_nanos(self.slow_ns.load(Ordering::Relaxed)),
            window: if window & Self::TIME_WINDOW != 0 {
                WindowLimit::TimeMs(window & !Self::TIME_WINDOW)
            } else {
                WindowLimit::Calls(window as u32)
            },
            minimum_calls: self.minimum_calls.load(Ordering::Relaxed) as u32,
        })
    }

    /// Relaxed stores, published by the reconfiguration's read-modify-write of the word.
    pub(crate) fn set_rates(&self, rates: Option<Rates>) {
        let Some(rates) = rates else {
            self.rate_ppm.store(0, Ordering::Relaxed);
            return;
        };
        let slow_ns = u64::try_from(rates.slow_threshold.as_nanos()).unwrap_or(u64::MAX);
        self.slow_ns.store(slow_ns, Ordering::Relaxed);
        let window = match rates.window {
            WindowLimit::Calls(n) => u64::from(n),
            WindowLimit::TimeMs(ms) => ms | Self::TIME_WINDOW,
        };
        self.window.store(window, Ordering::Relaxed);
        self.minimum_calls
            .store(u64::from(rates.minimum_calls), Ordering::Relaxed);
        self.rate_ppm.store(
            Self::FAILURE_PPM.put(u64::from(rates.failure_ppm))
                | Self::SLOW_PPM.put(u64::from(rates.slow_ppm)),
            Ordering::Relaxed,
        );
    }

    #[inline(always)]
    fn stripe(&self) -> &Stripe {
        // The stripe count is a power of two, so the mask picks a stripe in range.
        &self.stripes[thread_index() & (self.stripes.len() - 1)]
    }

    /// Count one judged call on this thread's stripe: the whole of a healthy call's write.
    /// Relaxed: a count orders nothing; the judge reads whatever has landed.
    #[inline]
    pub(crate) fn add_call(&self, rates: &Rates, now_ms: impl FnOnce() -> u64) {
        match rates.window {
            WindowLimit::Calls(_) => {
                self.stripe().calls.fetch_add(1, Ordering::Relaxed);
            }
            WindowLimit::TimeMs(ms) => self.add_timed_call(time_bucket(now_ms(), ms)),
        }
    }

    fn add_timed_call(&self, bucket: u64) {
        let slot = &self.stripe().time[(bucket % TIME_BUCKETS) as usize];
        let tag = Self::stripe_tag(bucket);
        let mut seen = slot.load(Ordering::Relaxed);
        loop {
            if Self::stripe_tag(Self::STRIPE_BUCKET.get(seen)) == tag {
                // Saturates: a bucket's count on one stripe stops at 2^32 − 1 calls.
                if Self::STRIPE_CALLS.get(seen) != Self::STRIPE_CALLS.max() {
                    slot.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            // An older bucket: this call starts the new one (a thread sharing the stripe may
            // have started it first: then count on it).
            match slot.compare_exchange_weak(seen, tag | 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// Begin counting `generation` at `now_ms`: the window is empty from here on.
    pub(crate) fn rebase(&self, generation: u32, rates: &Rates, now_ms: u64) {
        let (first, base) = match rates.window {
            WindowLimit::Calls(_) => (0, self.sum_calls()),
            WindowLimit::TimeMs(ms) => {
                let bucket = time_bucket(now_ms, ms);
                (bucket, self.sum_bucket(bucket))
            }
        };
        let tag = Self::tag(generation, first);
        // Relaxed, as every count here: the window orders nothing; the word's compare-and-swap
        // decides every trip, and a judgement that reads an older header or bucket judges fewer
        // calls, not wrong ones (a bucket or header of another generation is ignored).
        self.header.store(Self::join(tag, base), Ordering::Relaxed);
    }

    /// The generation the header counts, its first time bucket and its base.
    fn header(&self) -> (u32, u64, u64) {
        let (tag, base) = Self::halves(self.header.load(Ordering::Relaxed));
        (
            Self::GENERATION.get(tag) as u32,
            Self::NUMBER.get(tag),
            base,
        )
    }

    /// Record a judged call that is a counted failure or slow (or both) and return the window's
    /// counts with it; `generation` is the permit's (current when it reported).
    pub(crate) fn record(
        &self,
        generation: u32,
        rates: &Rates,
        now_ms: u64,
        failure: bool,
        slow: bool,
    ) -> Judged {
        self.ensure(generation, rates, now_ms);
        let bucket = match rates.window {
            WindowLimit::Calls(n) => {
                self.stripe().calls.fetch_add(1, Ordering::Relaxed);
                let position = self.position().max(1);
                (position - 1) / call_width(n)
            }
            WindowLimit::TimeMs(ms) => {
                let bucket = time_bucket(now_ms, ms);
                self.add_timed_call(bucket);
                bucket
            }
        };
        if failure || slow {
            self.add_to_slot(generation, bucket, failure, slow);
        }
        self.judge(generation, rates, now_ms)
    }

    /// Rebase if the header counts another generation: a transition whose rebase has not landed
    /// (or was missed) is caught up here, with an empty window. The caller has just seen the
    /// word closed in `generation`, so a report of an older generation never rewinds it.
    fn ensure(&self, generation: u32, rates: &Rates, now_ms: u64) {
        if self.header().0 != generation {
            self.rebase(generation, rates, now_ms);
        }
    }

    /// Whether the window of `generation` holds no failure and no slow call.
    pub(crate) fn holds_nothing(&self, generation: u32, rates: &Rates, now_ms: u64) -> bool {
        let judged = self.judge(generation, rates, now_ms);
        judged.failures == 0 && judged.slow == 0
    }

    fn add_to_slot(&self, generation: u32, bucket: u64, failure: bool, slow: bool) {
        let tag = Self::tag(generation, bucket);
        let slot = &self.slots[(bucket % SLOTS as u64) as usize];
        let add = |count: u64, on: bool| (count + u64::from(on)).min(Self::FAILURES.max());
        let mut seen = slot.load(Ordering::Relaxed);
        loop {
            let (seen_tag, counts) = Self::halves(seen);
            let (failures, slows) = if seen_tag == tag {
                (
                    add(Self::FAILURES.get(counts), failure),
                    add(Self::SLOW.get(counts), slow),
                )
            } else {
                (u64::from(failure), u64::from(slow))
            };
            let next = Self::join(tag, Self::FAILURES.put(failures) | Self::SLOW.put(slows));
            // Relaxed: the tag and both counts change in this one swap, so no count is lost or
            // moved to another bucket; it publishes nothing else (see `rebase`).
            match slot.compare_exchange_weak(seen, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// The failures and slow calls of `generation`'s bucket `bucket`.
    fn slot(&self, generation: u32, bucket: u64) -> (u64, u64) {
        let tag = Self::tag(generation, bucket);
        let (seen_tag, counts) =
            Self::halves(self.slots[(bucket % SLOTS as u64) as usize].load(Ordering::Relaxed));
        if seen_tag == tag {
            (Self::FAILURES.get(counts), Self::SLOW.get(counts))
        } else {
            (0, 0)
        }
    }

    fn sum_calls(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.calls.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// The calls the stripes hold for time bucket `bucket`.
    fn sum_bucket(&self, bucket: u64) -> u64 {
        let tag = Self::stripe_tag(bucket);
        self.stripes
            .iter()
            .map(|s| {
                let seen = s.time[(bucket % TIME_BUCKETS) as usize].load(Ordering::Relaxed);
                if Self::stripe_tag(Self::STRIPE_BUCKET.get(seen)) == tag {
                    Self::STRIPE_CALLS.get(seen)
                } else {
                    0
                }
            })
            .sum()
    }

    /// The generation's judged calls so far (count windows).
    fn position(&self) -> u64 {
        self.sum_calls().wrapping_sub(self.header().2)
    }

    /// The window's counts for `generation` at `now_ms`.
    pub(crate) fn judge(&self, generation: u32, rates: &Rates, now_ms: u64) -> Judged {
        let (counted, first, base) = self.header();
        if counted != generation {
            return Judged::default();
        }
        match rates.window {
            WindowLimit::Calls(n) => {
                let n = u64::from(n);
                let position = self.sum_calls().wrapping_sub(base);
                // A sum read while another judge rebased may run behind the base: nothing yet.
                if position == 0 || position > u64::MAX / 2 {
                    return Judged::default();
                }
                let width = call_width(n as u32);
                let last = (position - 1) / width;
                let oldest = position.saturating_sub(n) / width;
                let (failures, slow) = (oldest..=last).fold((0, 0), |(f, s), bucket| {
                    let (bf, bs) = self.slot(generation, bucket);
                    (f + bf, s + bs)
                });
                Judged {
                    calls: position.min(n),
                    span: position - oldest * width,
                    failures,
                    slow,
                }
            }
            WindowLimit::TimeMs(ms) => {
                let now = time_bucket(now_ms, ms);
                let oldest = now.saturating_sub(TIME_BUCKETS - 1).max(first);
                let mut judged = Judged::default();
                for bucket in oldest..=now {
                    let mut calls = self.sum_bucket(bucket);
                    if bucket == first {
                        calls = calls.saturating_sub(base);
                    }
                    let (failures, slow) = self.slot(generation, bucket);
                    judged.calls += calls;
                    judged.failures += failures;
                    judged.slow += slow;
                }
                judged.span = judged.calls;
                judged
            }
        }
    }
}

const _: () = assert!(Windows::GENERATION.end() == 64 && Windows::FAILURES.end() == 64);
const _: () = assert!(Windows::STRIPE_BUCKET.end() == 64 && Windows::SLOW_PPM.end() == 64);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_windows_encodings_round_trip_at_the_limits_of_their_fields() {
        for generation in [0, 1, Word::MAX_GENERATION] {
            for number in [0, 1, Windows::NUMBER.max()] {
                let tag = Windows::tag(generation, number);
                assert_eq!(
                    (
                        Windows::GENERATION.get(tag) as u32,
                        Windows::NUMBER.get(tag)
                    ),
                    (generation, number)
                );
                for low in [0, 1, u64::MAX] {
                    assert_eq!(Windows::halves(Windows::join(tag, low)), (tag, low));
                }
            }
        }
        for (failures, slow) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (u64::from(u32::MAX), u64::from(u32::MAX)),
        ] {
            let counts = Windows::FAILURES.put(failures) | Windows::SLOW.put(slow);
            assert_eq!(
                (Windows::FAILURES.get(counts), Windows::SLOW.get(counts)),
                (failures, slow)
            );
        }
        for bucket in [0, 1, u64::from(u32::MAX), u64::from(u32::MAX) + 1] {
            let seen = Windows::stripe_tag(bucket) | Windows::STRIPE_CALLS.put(7);
            assert_eq!(Windows::STRIPE_CALLS.get(seen), 7);
            assert_eq!(
                Windows::stripe_tag(Windows::STRIPE_BUCKET.get(seen)),
                Windows::stripe_tag(bucket)
            );
        }
    }

    #[test]
    fn the_rules_and_the_header_round_trip_through_the_window() {
        let windows = Windows::new();
        assert_eq!(windows.rates(), None);
        for window in [
            WindowLimit::Calls(1),
            WindowLimit::Calls(u32::MAX),
            WindowLimit::TimeMs(1),
            WindowLimit::TimeMs(crate::config::MAX_DURATION_MS),
        ] {
            for (failure_ppm, slow_ppm) in [(1, 0), (0, 1), (1_000_000, 1_000_000)] {
                let rates = Rates {
                    failure_ppm,
                    slow_ppm,
                    slow_threshold: core::time::Duration::from_nanos(u64::MAX),
                    window,
                    minimum_calls: u32::MAX,
                };
                windows.set_rates(Some(rates));
                assert_eq!(windows.rates(), Some(rates));
                for generation in [0, Word::MAX_GENERATION] {
                    windows.rebase(generation, &rates, Word::MAX_TIME_MS);
                    let (counted, first, _) = windows.header();
                    assert_eq!(counted, generation);
                    let expected = match window {
                        WindowLimit::Calls(_) => 0,
                        WindowLimit::TimeMs(ms) => time_bucket(Word::MAX_TIME_MS, ms),
                    };
                    assert_eq!(first, expected);
                }
            }
        }
        windows.set_rates(None);
        assert_eq!(windows.rates(), None);
    }
}
