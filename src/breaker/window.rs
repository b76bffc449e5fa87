//! The rate rules' window: the judged calls, counted failures and slow calls of a closed
//! generation, kept beside the word.
//!
//! A healthy call writes one count to a stripe picked by its thread (the layout of the counters
//! in `observe`): no line is shared between threads on different stripes. Everything else —
//! a failure, a slow call, the judgement — is a slow path and writes a shared ring of buckets.
//! Nothing here decides a transition: the judge returns the counts and the machine trips the
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

use crate::config::{Rates, WindowLimit};
use crate::observe::{stripe_count, thread_index};
use crate::sync::{AtomicU128, Ordering, RelaxedU64 as AtomicU64};
use crate::time::CLOCK_HEADROOM_MS;

/// Buckets a count window is split into.
const CALL_BUCKETS: u64 = 32;
/// Buckets a time window is split into.
const TIME_BUCKETS: u64 = 10;
/// Shared buckets: more than a count window's 32 (plus the one its oldest edge may split).
const SLOTS: usize = 64;
/// Bits of a bucket's number in a shared bucket's tag, beside the 20 of the generation.
const NUMBER_BITS: u32 = 44;
const NUMBER_MASK: u64 = (1 << NUMBER_BITS) - 1;
/// The tag half of a stripe's time bucket.
const TAG_MASK: u64 = !(u32::MAX as u64);

/// What a judgement found in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Judged {
    /// Judged calls the minimum is compared with: for a count window, at most its size.
    pub(crate) calls: u64,
    /// Judged calls the rates are taken over (the whole buckets judged).
    pub(crate) span: u64,
    /// Counted failures among them.
    pub(crate) failures: u64,
    /// Slow calls among them.
    pub(crate) slow: u64,
}

/// One stripe: the calls of the threads that land on it.
#[derive(Debug, Default)]
struct Stripe {
    /// Count windows: every judged call ever recorded on this stripe.
    calls: AtomicU64,
    /// Time windows: bucket `k` at index `k % 10`, as `(k as u32) << 32 | calls`.
    time: [AtomicU64; TIME_BUCKETS as usize],
}

/// A breaker's window. Allocated when the breaker first has a rate rule, and kept: 64 shared
/// buckets of 16 bytes and a 128-byte stripe per thread (at most 16), so 1.5 KiB on 2 threads
/// and about 3.2 KiB on 16 (measured by `tests/memory.rs`).
#[derive(Debug)]
pub(crate) struct Windows {
    stripes: Box<[CachePadded<Stripe>]>,
    /// `(generation << 44 | number) << 64 | failures << 32 | slow`.
    slots: Box<[AtomicU128]>,
    /// The generation the window counts, and where it began: `(generation << 44 | first time
    /// bucket) << 64 | base`, the base being the stripes' sum of calls then (count windows) or
    /// their count in the first time bucket then (time windows).
    header: AtomicU128,
    /// The rate rules in force, one relaxed atomic per field, as the breaker's other live
    /// settings (kept here rather than in the breaker's block, which is one cache line pair).
    /// `failure_ppm | slow_ppm << 32`, 0 when no rate rule is set.
    rate_ppm: AtomicU64,
    /// The slow-call threshold in ns (saturating at 584 years).
    slow_ns: AtomicU64,
    /// The window: a count, or with the top bit set a duration in ms.
    window: AtomicU64,
    minimum_calls: AtomicU64,
}

const TIME_WINDOW: u64 = 1 << 63;

impl Windows {
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
            failure_ppm: ppm as u32,
            slow_ppm: (ppm >> 32) as u32,
            slow_threshold: core::time::Duration::from_nanos(self.slow_ns.load(Ordering::Relaxed)),
            window: if window & TIME_WINDOW != 0 {
                WindowLimit::TimeMs(window & !TIME_WINDOW)
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
            WindowLimit::TimeMs(ms) => ms | TIME_WINDOW,
        };
        self.window.store(window, Ordering::Relaxed);
        self.minimum_calls
            .store(u64::from(rates.minimum_calls), Ordering::Relaxed);
        self.rate_ppm.store(
            u64::from(rates.failure_ppm) | u64::from(rates.slow_ppm) << 32,
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
        let tag = (bucket as u32 as u64) << 32;
        let mut seen = slot.load(Ordering::Relaxed);
        loop {
            if seen & TAG_MASK == tag {
                // Saturates: a bucket's count on one stripe stops at 2^32 − 1 calls.
                if seen as u32 != u32::MAX {
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
        let tag = ((generation as u64) << NUMBER_BITS) | (first & NUMBER_MASK);
        // Relaxed, as every count here: the window orders nothing; the word's compare-and-swap
        // decides every trip, and a judgement that reads an older header or bucket judges fewer
        // calls, not wrong ones (a bucket or header of another generation is ignored).
        self.header
            .store(((tag as u128) << 64) | base as u128, Ordering::Relaxed);
    }

    /// The generation the header counts, its first time bucket and its base.
    fn header(&self) -> (u32, u64, u64) {
        let header = self.header.load(Ordering::Relaxed);
        let tag = (header >> 64) as u64;
        (
            (tag >> NUMBER_BITS) as u32,
            tag & NUMBER_MASK,
            header as u64,
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
        let tag = (((generation as u64) << NUMBER_BITS) | (bucket & NUMBER_MASK)) as u128;
        let slot = &self.slots[(bucket % SLOTS as u64) as usize];
        let add = |count: u32, on: bool| count.saturating_add(on as u32);
        let mut seen = slot.load(Ordering::Relaxed);
        loop {
            let (failures, slows) = if seen >> 64 == tag {
                (add((seen >> 32) as u32, failure), add(seen as u32, slow))
            } else {
                (failure as u32, slow as u32)
            };
            let next = (tag << 64) | ((failures as u128) << 32) | slows as u128;
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
        let tag = (((generation as u64) << NUMBER_BITS) | (bucket & NUMBER_MASK)) as u128;
        let seen = self.slots[(bucket % SLOTS as u64) as usize].load(Ordering::Relaxed);
        if seen >> 64 == tag {
            (u64::from((seen >> 32) as u32), u64::from(seen as u32))
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
        let tag = (bucket as u32 as u64) << 32;
        self.stripes
            .iter()
            .map(|s| {
                let seen = s.time[(bucket % TIME_BUCKETS) as usize].load(Ordering::Relaxed);
                if seen & TAG_MASK == tag {
                    seen & u32::MAX as u64
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

/// A count window's bucket width in calls: `⌈n/32⌉`.
fn call_width(n: u32) -> u64 {
    u64::from(n).div_ceil(CALL_BUCKETS)
}

/// A time window's bucket width in ms: `⌈t/10⌉`, at least 1.
fn width(window_ms: u64) -> u64 {
    window_ms.div_ceil(TIME_BUCKETS).max(1)
}

/// The time bucket `now_ms` falls in. Buckets are counted from the breaker's construction (its
/// clock's reading `CLOCK_HEADROOM_MS`), so one begins when the breaker does.
fn time_bucket(now_ms: u64, window_ms: u64) -> u64 {
    let width = width(window_ms);
    now_ms.saturating_sub(CLOCK_HEADROOM_MS % width) / width
}

/// What the rates say of a judgement: the rule that trips, with its count, if one does.
pub(crate) fn verdict(judged: &Judged, rates: &Rates) -> Option<(Rule, u64)> {
    if judged.calls < u64::from(rates.minimum_calls) || judged.span == 0 {
        return None;
    }
    let reached = |count: u64, ppm: u32| {
        ppm != 0 && u128::from(count) * 1_000_000 >= u128::from(ppm) * u128::from(judged.span)
    };
    if reached(judged.failures, rates.failure_ppm) {
        Some((Rule::FailureRate, judged.failures))
    } else if reached(judged.slow, rates.slow_ppm) {
        Some((Rule::SlowCallRate, judged.slow))
    } else {
        None
    }
}

/// Whether successes must be judged: the window holds failures or slow calls, and a success
/// may still change the verdict (an exact count window that has reached its minimum only loses
/// its oldest call to each new one, so its rate rises only with a failure or a slow call).
pub(crate) fn watch(judged: &Judged, rates: &Rates) -> bool {
    let holds = judged.failures != 0 || judged.slow != 0;
    match rates.window {
        // Exact (one call per bucket): past the minimum a success only replaces the oldest
        // call, which lowers the rate or keeps it.
        WindowLimit::Calls(n) if call_width(n) == 1 => {
            holds && judged.calls < u64::from(rates.minimum_calls)
        }
        // Whole buckets leave at once, so a success can raise the rate by pushing out a bucket
        // of successes; time windows lose calls as time passes.
        WindowLimit::Calls(_) | WindowLimit::TimeMs(_) => holds,
    }
}

/// The rule a window trip is made by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    FailureRate,
    SlowCallRate,
}
