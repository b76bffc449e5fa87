//! `CircuitBreaker`: one atomic word, and the only compare-and-swap loops in the crate.

use core::time::Duration;

use crossbeam_utils::CachePadded;

use crate::blocked::Blocked;
use crate::config::{Builder, Config};
use std::sync::Arc;

use crate::permit::{OwnedPermit, Permit};
use crate::state::{self, Admission, MAX_TIME_MS, Report, State, Transition, Word};
use crate::sync::{AtomicU64, Ordering};

/// A lock-free circuit breaker for one dependency.
///
/// State, consecutive failure count and opened-at time live in one 64-bit word (layout in the
/// `state` module's docs) that changes only by compare-and-swap, so the probe slot is claimed
/// without a lock and a reader never sees one state with another state's timestamp.
///
/// Costs: while closed with no failures, [`try_acquire`](Self::try_acquire) is one atomic load and
/// recording a success is one load and no store; neither reads the clock. While open, a rejection
/// is one load and one clock read. A compare-and-swap happens only on a real change.
///
/// # Time
///
/// Deadlines are judged in whole milliseconds on the breaker's clock, as it reads at each call.
/// A clock that steps backwards can only delay: an open breaker stays open until the clock again
/// passes its opened-at time plus the cooldown, and a probe whose lease had run out counts as in
/// flight again until the clock passes the lease's end once more. The clock may step back up to
/// about 35 years behind the breaker's construction; it saturates about 104 years after it.
///
/// # Memory ordering
///
/// Every transition is published with release ordering and every admission decision reads the
/// word with acquire ordering. So everything a caller did before recording the outcome that moved
/// the breaker (for example, the probe that closed it) happens-before whatever a caller does after
/// a [`try_acquire`](Self::try_acquire) that observes the new state.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
///
/// let (clock, mock) = toolbreaker::quanta::Clock::mock();
/// let breaker = CircuitBreaker::builder()
///     .failure_threshold(2)
///     .cooldown(Duration::from_millis(100))
///     .clock(clock)
///     .build()?;
///
/// for _ in 0..2 {
///     let permit = breaker.try_acquire().expect("closed admits");
///     permit.record(Outcome::Failure(FailureKind::Unavailable));
/// }
/// assert_eq!(breaker.state(), State::Open);
/// let blocked = breaker.try_acquire().unwrap_err();
/// assert_eq!(blocked.retry_after(), Duration::from_millis(100));
///
/// mock.increment(Duration::from_millis(100));
/// assert_eq!(breaker.state(), State::HalfOpen);
/// let probe = breaker.try_acquire().expect("one probe after the cooldown");
/// assert!(breaker.try_acquire().is_err(), "only one probe");
/// probe.record(Outcome::Success);
/// assert_eq!(breaker.state(), State::Closed);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct CircuitBreaker {
    // The word, its read-only settings and the clock share one padded block: the non-healthy paths
    // read them together, they are never written after construction, and the padding keeps the
    // word's line away from neighbours (an `Arc`'s counts, other breakers in a map).
    inner: CachePadded<Inner>,
}

#[derive(Debug)]
struct Inner {
    word: AtomicU64,
    config: Config,
    clock: quanta::Clock,
    epoch: quanta::Instant,
}

impl CircuitBreaker {
    /// A builder with the documented defaults (threshold 5, cooldown 30 s, probe timeout 30 s,
    /// the system clock).
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A closed breaker with `config`, reading time from `clock`.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, Config, State};
    ///
    /// let breaker = CircuitBreaker::new(Config::default(), quanta::Clock::new());
    /// assert_eq!(breaker.state(), State::Closed);
    /// ```
    pub fn new(config: Config, clock: quanta::Clock) -> Self {
        let epoch = clock.now();
        CircuitBreaker {
            inner: CachePadded::new(Inner {
                word: AtomicU64::new(Word::INITIAL.0),
                config,
                clock,
                epoch,
            }),
        }
    }

    /// The configuration this breaker was built with.
    pub fn config(&self) -> Config {
        self.inner.config
    }

    /// The effective state now.
    ///
    /// Side-effect free: it writes nothing and takes no probe slot, however often it is called.
    /// An open breaker whose cooldown has elapsed reads [`State::HalfOpen`] without any call in
    /// between; a probe past its lease reads [`State::Open`]. Reads the clock only when not closed.
    #[inline]
    pub fn state(&self) -> State {
        // Acquire: pairs with the release of the transition that stored this word, so a caller
        // that sees the new state also sees what the reporter did before it.
        let word = Word(self.inner.word.load(Ordering::Acquire));
        state::view(word, &self.inner.config.limits(), || self.now_ms()).state()
    }

    /// Ask to make one call to the dependency.
    ///
    /// Closed: admitted. Open: [`Blocked`] with the remaining cooldown. Half-open: exactly one
    /// caller, however many race, is admitted as the probe; the others get [`Blocked`] with the
    /// time left on the probe's lease.
    ///
    /// # Errors
    ///
    /// [`Blocked`] when the breaker does not admit the call; nothing has been sent.
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit<'_>, Blocked> {
        // Acquire: pairs with the release of whichever transition stored this word (see
        // `# Memory ordering`).
        let word = Word(self.inner.word.load(Ordering::Acquire));
        // The healthy path, kept small enough to inline: closed admits on the one load.
        match word.closed_generation() {
            Some(generation) => Ok(Permit::new(self, generation, false)),
            None => self.try_acquire_not_closed(word),
        }
    }

    /// The rest of `try_acquire`, out of line so the closed path stays a load and a compare.
    #[inline(never)]
    fn try_acquire_not_closed(&self, mut word: Word) -> Result<Permit<'_>, Blocked> {
        let mut now = None;
        loop {
            let (admission, next) = state::acquire(word, &self.inner.config.limits(), || {
                *now.get_or_insert_with(|| self.now_ms())
            });
            if let Some(next) = next {
                // AcqRel on success: release publishes the claim of the probe slot; acquire
                // orders this probe after the transition that opened the slot. Acquire on
                // failure: we decide again from the word that beat us, as if we had loaded it.
                // Weak: a spurious failure only costs another turn of the loop.
                if let Err(actual) = self.inner.word.compare_exchange_weak(
                    word.0,
                    next.0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    word = Word(actual);
                    continue;
                }
            }
            return match admission {
                Admission::Admit { generation, probe } => Ok(Permit::new(self, generation, probe)),
                Admission::Reject {
                    state,
                    reason,
                    retry_after_ms,
                } => Err(Blocked::new(
                    state,
                    reason,
                    Duration::from_millis(retry_after_ms),
                )),
            };
        }
    }

    /// [`try_acquire`](Self::try_acquire) for a breaker behind an `Arc`: the permit holds the
    /// `Arc`, so it can move into a task or a response future.
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    #[inline]
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedPermit, Blocked> {
        self.try_acquire()
            .map(|permit| permit.into_owned(Arc::clone(self)))
    }

    /// Whether a permit of `generation` would still count (see `state::is_current`).
    pub(crate) fn permit_is_current(&self, generation: u32, probe: bool) -> bool {
        // Acquire: as in `try_acquire`; the answer is judged against the newest transition.
        let word = Word(self.inner.word.load(Ordering::Acquire));
        state::is_current(word, generation, probe, &self.inner.config.limits(), || {
            self.now_ms()
        })
    }

    /// Apply a permit's report. Returns the state change it caused, if any.
    #[inline]
    pub(crate) fn report(
        &self,
        generation: u32,
        probe: bool,
        report: Report,
    ) -> Option<Transition> {
        // Acquire: as in `try_acquire`; this report is judged against the newest transition.
        let word = Word(self.inner.word.load(Ordering::Acquire));
        // The healthy path: closed in the permit's generation with no failures to clear, and
        // nothing to count. One load, no store, no clock read.
        if !probe && word == Word::closed(generation, 0) && report != Report::Failure {
            return None;
        }
        self.report_slow(word, generation, probe, report)
    }

    /// The rest of `report`, out of line: counting, clearing, transitions, stale reports.
    #[inline(never)]
    fn report_slow(
        &self,
        mut word: Word,
        generation: u32,
        probe: bool,
        report: Report,
    ) -> Option<Transition> {
        let mut now = None;
        loop {
            let step = state::report(
                word,
                generation,
                probe,
                report,
                &self.inner.config.limits(),
                || *now.get_or_insert_with(|| self.now_ms()),
            )?;
            // AcqRel on success: release publishes this outcome (and everything its caller did
            // before reporting) to every later reader; acquire orders it after the word it
            // replaces. Acquire on failure: the report is judged again against the newer word,
            // which may make it stale. Weak: a spurious failure only costs another turn.
            match self.inner.word.compare_exchange_weak(
                word.0,
                step.next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return step.transition,
                Err(actual) => word = Word(actual),
            }
        }
    }

    /// The clock's reading in the word's unit: milliseconds since the word's origin, which lies
    /// [`CLOCK_HEADROOM_MS`] before the clock's reading at construction. So the clock may step back
    /// that far (about 35 years) and every deadline still reads true; readings clamp at 0 before
    /// that and at [`MAX_TIME_MS`] after about 104 years.
    fn now_ms(&self) -> u64 {
        let now = self.inner.clock.now();
        let epoch = self.inner.epoch;
        let ms = match now.checked_duration_since(epoch) {
            Some(ahead) => CLOCK_HEADROOM_MS.saturating_add(millis_floor(ahead)),
            // Behind the construction time: round away from it, so time stays floor-rounded.
            None => CLOCK_HEADROOM_MS.saturating_sub(millis_ceil(epoch.duration_since(now))),
        };
        ms.min(MAX_TIME_MS)
    }
}

/// How far before its construction a breaker's time origin lies, in ms (2^40 ms, about 35 years):
/// the room a clock has to step backwards before its readings clamp.
pub const CLOCK_HEADROOM_MS: u64 = 1 << 40;

fn millis_floor(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn millis_ceil(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}
