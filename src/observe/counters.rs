//! Per-breaker counters, striped so that counting adds no shared write to the healthy path.
//!
//! Counting is off unless a breaker is built with it. On, each thread adds to its own stripe: a
//! cache-line-padded block of counters chosen by a per-thread index, so threads on different
//! stripes never write the same line (the layout of `crossbeam-utils`' `CachePadded` slots, and of
//! the striped counters in Java's `LongAdder`). A snapshot sums the stripes.

use std::cell::Cell;
use std::sync::OnceLock;

use crossbeam_utils::CachePadded;

use crate::classify::{FailureKind, Outcome};
use crate::sync::{AtomicUsize, Ordering, RelaxedU64 as AtomicU64};
use crate::types::{State, TransitionReason};

/// One counted event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// A permit dropped without an outcome (the call was cancelled, or panicked).
    Dropped,
    Blocked,
    /// A call the cap on calls in flight refused (counted only here).
    Saturated,
    Success,
    Timeout,
    Connect,
    RateLimited,
    Unavailable,
    OtherFailure,
    Ignored,
    /// A closed admission shed by adaptive throttling.
    Throttled,
}

/// One per `Counter` variant: the last variant's index plus one (two branches that each added a
/// variant and each bumped a literal here once merged into a count one short).
const COUNTERS: usize = Counter::Throttled as usize + 1;
const REASONS: usize = 10;

impl Counter {
    /// The counter of a recorded outcome.
    #[inline(always)]
    pub(crate) fn of(outcome: &Outcome) -> Counter {
        match outcome {
            Outcome::Success => Counter::Success,
            Outcome::Ignored => Counter::Ignored,
            Outcome::Failure(kind) => match kind {
                FailureKind::Timeout => Counter::Timeout,
                FailureKind::Connect => Counter::Connect,
                FailureKind::RateLimited { .. } => Counter::RateLimited,
                FailureKind::Unavailable => Counter::Unavailable,
                FailureKind::Other => Counter::OtherFailure,
            },
        }
    }
}

impl Counter {
    /// Whether this is a counted failure's counter.
    #[inline(always)]
    pub(crate) const fn is_failure(self) -> bool {
        self.failure_kind().is_some()
    }

    /// The failure kind's name ([`FailureKind::as_str`]) of a counted failure's counter.
    #[inline(always)]
    pub(crate) const fn failure_kind(self) -> Option<&'static str> {
        match self {
            Counter::Timeout => Some(FailureKind::Timeout.as_str()),
            Counter::Connect => Some(FailureKind::Connect.as_str()),
            Counter::RateLimited => Some(FailureKind::RateLimited { retry_after: None }.as_str()),
            Counter::Unavailable => Some(FailureKind::Unavailable.as_str()),
            Counter::OtherFailure => Some(FailureKind::Other.as_str()),
            Counter::Dropped
            | Counter::Blocked
            | Counter::Saturated
            | Counter::Throttled
            | Counter::Success
            | Counter::Ignored => None,
        }
    }
}

fn reason_index(reason: TransitionReason) -> usize {
    match reason {
        TransitionReason::FailureThreshold => 0,
        TransitionReason::CooldownElapsed => 1,
        TransitionReason::ProbeSucceeded => 2,
        TransitionReason::ProbeFailed => 3,
        TransitionReason::ProbeTimedOut => 4,
        TransitionReason::Manual => 5,
        TransitionReason::Fleet => 6,
        TransitionReason::FailureRate => 7,
        TransitionReason::SlowCallRate => 8,
        TransitionReason::RetryAfter => 9,
    }
}

/// The most stripes a breaker gets: 16 × 128 B = 2 KiB per counting breaker. Threads beyond it
/// share stripes, which stays exact (the adds are atomic) and only brings back some contention.
const MAX_STRIPES: usize = 16;

/// The stripes per breaker: the machine's parallelism rounded up to a power of two, at most
/// [`MAX_STRIPES`].
pub(crate) fn stripe_count() -> usize {
    static STRIPES: OnceLock<usize> = OnceLock::new();
    *STRIPES.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .next_power_of_two()
            .min(MAX_STRIPES)
    })
}

/// This thread's index, handed out in order of first use, so consecutive threads (a runtime's
/// workers) land on different stripes.
#[inline]
pub(crate) fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        let mut i = index.get();
        if i == usize::MAX {
            // Relaxed: only distinctness matters, which every atomic add gives; nothing is
            // published through the index.
            i = NEXT.fetch_add(1, Ordering::Relaxed);
            index.set(i);
        }
        i
    })
}

#[derive(Debug, Default)]
struct Stripe([AtomicU64; COUNTERS]);

/// A breaker's counters.
#[derive(Debug)]
pub(crate) struct Counters {
    stripes: Box<[CachePadded<Stripe>]>,
    /// Transitions are rare (at most a few per cooldown), so one shared line is enough.
    transitions: [AtomicU64; REASONS],
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            stripes: (0..stripe_count())
                .map(|_| CachePadded::default())
                .collect(),
            transitions: Default::default(),
        }
    }

    /// Add one to `counter` on this thread's stripe. Relaxed: a count orders nothing.
    #[inline(always)]
    pub(crate) fn add(&self, counter: Counter) {
        // The stripe count is a power of two, so the mask picks a stripe in range.
        let stripe = &self.stripes[thread_index() & (self.stripes.len() - 1)];
        stripe.0[counter as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Count a transition. Relaxed, as `add`.
    pub(crate) fn transition(&self, reason: TransitionReason) {
        self.transitions[reason_index(reason)].fetch_add(1, Ordering::Relaxed);
    }

    /// The total over the stripes. Relaxed loads: each count is exact once its adds are done,
    /// and a snapshot taken during calls promises no more than counts read one after another.
    fn sum(&self, counter: Counter) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0[counter as usize].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    pub(crate) fn snapshot(&self, state: State) -> Metrics {
        // Relaxed, as in `sum`.
        let t = |reason| self.transitions[reason_index(reason)].load(Ordering::Relaxed);
        Metrics {
            state,
            // Counted when its permit is used up: one add per call, not two.
            admitted: [
                Counter::Success,
                Counter::Timeout,
                Counter::Connect,
                Counter::RateLimited,
                Counter::Unavailable,
                Counter::OtherFailure,
                Counter::Ignored,
                Counter::Dropped,
            ]
            .into_iter()
            .map(|counter| self.sum(counter))
            .fold(0, u64::wrapping_add),
            dropped: self.sum(Counter::Dropped),
            blocked: self.sum(Counter::Blocked),
            saturated: self.sum(Counter::Saturated),
            // The cap's readings are the breaker's: `CircuitBreaker::metrics` fills them in.
            in_flight: 0,
            concurrency_limit: None,
            successes: self.sum(Counter::Success),
            failures: FailureCounts {
                timeout: self.sum(Counter::Timeout),
                connect: self.sum(Counter::Connect),
                rate_limited: self.sum(Counter::RateLimited),
                unavailable: self.sum(Counter::Unavailable),
                other: self.sum(Counter::OtherFailure),
            },
            ignored: self.sum(Counter::Ignored),
            throttled: self.sum(Counter::Throttled),
            transitions: TransitionCounts {
                failure_threshold: t(TransitionReason::FailureThreshold),
                failure_rate: t(TransitionReason::FailureRate),
                slow_call_rate: t(TransitionReason::SlowCallRate),
                retry_after: t(TransitionReason::RetryAfter),
                cooldown_elapsed: t(TransitionReason::CooldownElapsed),
                probe_succeeded: t(TransitionReason::ProbeSucceeded),
                probe_failed: t(TransitionReason::ProbeFailed),
                probe_timed_out: t(TransitionReason::ProbeTimedOut),
                manual: t(TransitionReason::Manual),
                fleet: t(TransitionReason::Fleet),
            },
        }
    }
}

/// A snapshot of one breaker's counters, all counted since it was built.
///
/// A call is counted once, when its permit is used up: as its outcome (`successes`, `failures`,
/// `ignored`) or, when the permit is dropped unrecorded, as `dropped`; `admitted` is their sum.
/// So a call in flight is not counted yet (like an HTTP server's request counter, which counts a
/// request when it is answered), and counting costs one add per call. Outcomes recorded after
/// the breaker moved on (stale) are counted too: they are what the dependency did, even when they
/// no longer move the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Metrics {
    /// The state when the snapshot was taken.
    pub state: State,
    /// Calls admitted whose permit has been used up (recorded or dropped), probes included: the
    /// sum of `successes`, `failures`, `ignored` and `dropped`.
    pub admitted: u64,
    /// Calls blocked (not admitted): nothing was sent. A pipeline retry refused before its
    /// backoff wait (the breaker opened meanwhile) counts here too, although its call's first
    /// attempt was admitted.
    pub blocked: u64,
    /// Calls the cap on calls in flight refused
    /// ([`BlockedReason::Saturated`](crate::BlockedReason::Saturated)): counted here only, never
    /// in `blocked` or `admitted`; nothing was sent.
    pub saturated: u64,
    /// Calls holding a slot of the cap on calls in flight when the snapshot was taken (0 with
    /// no cap).
    pub in_flight: u32,
    /// The cap on calls in flight in force when the snapshot was taken, fixed or the adaptive
    /// limit's value; `None` with no cap.
    pub concurrency_limit: Option<u32>,
    /// Calls recorded as successes.
    pub successes: u64,
    /// Calls recorded as counted failures, by kind.
    pub failures: FailureCounts,
    /// Calls recorded as ignored: failed, but not because of the dependency.
    pub ignored: u64,
    /// Admitted calls whose permit was dropped without an outcome: cancelled, or panicked.
    pub dropped: u64,
    /// Calls adaptive throttling shed while closed, before sending
    /// ([`Builder::adaptive_throttling`](crate::breaker::Builder::adaptive_throttling)): not
    /// admitted, and not in `blocked`.
    pub throttled: u64,
    /// Transitions, by reason.
    pub transitions: TransitionCounts,
}

/// Counted failures by [`FailureKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct FailureCounts {
    /// [`FailureKind::Timeout`].
    pub timeout: u64,
    /// [`FailureKind::Connect`].
    pub connect: u64,
    /// [`FailureKind::RateLimited`].
    pub rate_limited: u64,
    /// [`FailureKind::Unavailable`].
    pub unavailable: u64,
    /// [`FailureKind::Other`].
    pub other: u64,
}

impl FailureCounts {
    /// All counted failures.
    pub fn total(&self) -> u64 {
        self.timeout + self.connect + self.rate_limited + self.unavailable + self.other
    }
}

/// Transitions by [`TransitionReason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct TransitionCounts {
    /// Trips by the consecutive rule: closed → open.
    pub failure_threshold: u64,
    /// Trips by the failure-rate rule.
    pub failure_rate: u64,
    /// Trips by the slow-call rule.
    pub slow_call_rate: u64,
    /// Trips at once by a rate-limited failure whose hint was longer than the cooldown
    /// ([`Builder::open_on_long_hint`](crate::breaker::Builder::open_on_long_hint)).
    pub retry_after: u64,
    /// Open → half-open, counted when a probe takes the slot.
    pub cooldown_elapsed: u64,
    /// Half-open → closed.
    pub probe_succeeded: u64,
    /// Half-open → open on a failed probe.
    pub probe_failed: u64,
    /// Half-open → open on a probe that outlived its lease.
    pub probe_timed_out: u64,
    /// Changes made by hand.
    pub manual: u64,
    /// Changes adopted from the fleet (feature `redis`).
    pub fleet: u64,
}

impl TransitionCounts {
    /// All transitions.
    pub fn total(&self) -> u64 {
        self.failure_threshold
            + self.failure_rate
            + self.slow_call_rate
            + self.retry_after
            + self.cooldown_elapsed
            + self.probe_succeeded
            + self.probe_failed
            + self.probe_timed_out
            + self.manual
            + self.fleet
    }
}
