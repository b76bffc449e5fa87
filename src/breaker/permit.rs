//! The generation-tagged permits, and the methods of [`CircuitBreaker`] that hand them out.

use core::time::Duration;
use std::sync::Arc;

use super::cap::Cap;
use super::machine::CircuitBreaker;
use super::ticket::{Bits, Slot, Ticket};
use crate::classify::Outcome;
use crate::state::word::Word;
use crate::types::{Blocked, State, Transition};

impl CircuitBreaker {
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
        let word = self.word();
        // The healthy path, kept small enough to inline: closed admits on the one load.
        // A breaker with a cap takes its slot out of line, so this stays small to inline.
        if !self.inner.settings.is_capped()
            && let Some(permit) = self.closed_permit(word)
        {
            return Ok(permit);
        }
        self.try_acquire_not_closed(word)
    }

    /// The permit of a closed word, or `None` for any other: `try_acquire`'s and `call`'s
    /// healthy path, the one load already taken.
    #[inline(always)]
    pub(super) fn closed_permit(&self, word: Word) -> Option<Permit<'_>> {
        let generation = word.closed_generation()?;
        // Adaptive throttling, when set: one load, 0 while the dependency accepts its calls.
        if self.sheds() {
            return None;
        }
        Some(self.permit_of_closed(word, generation))
    }

    /// The permit of closed word `word` of `generation`, admitted.
    #[inline(always)]
    fn permit_of_closed(&self, word: Word, generation: u32) -> Permit<'_> {
        Permit::new(self, generation, false, self.counting()).rated(word.has(Word::RATED))
    }

    /// The rest of `try_acquire`, out of line so the closed path stays a load and a compare: a
    /// closed breaker with a cap (its slot taken), the open rejection from the word, else the
    /// decided admission.
    #[inline(never)]
    fn try_acquire_not_closed(&self, word: Word) -> Result<Permit<'_>, Blocked> {
        if let Some(permit) = self.closed_permit(word) {
            return permit.capped();
        }
        match self.reject_open(word) {
            Ok(blocked) => Err(blocked),
            Err(now) => self.acquire_past_open(word, now),
        }
    }

    /// The admission of a word that is not closed and not plainly open (`reject_open` said
    /// no): decided and applied, then a slot of the cap on calls in flight taken, out of line,
    /// one copy for `try_acquire` and `call`. `now` is the clock's reading if it was already
    /// taken.
    #[inline]
    pub(super) fn acquire_past_open(
        &self,
        word: Word,
        now: Option<u64>,
    ) -> Result<Permit<'_>, Blocked> {
        self.acquire_past_open_if_counted(word, now, true)
    }

    /// [`acquire_past_open`](Self::acquire_past_open); a refusal by the cap on calls in flight
    /// is counted and logged only if `counted` (a pool passing over a member counts nothing).
    #[inline(never)]
    pub(super) fn acquire_past_open_if_counted(
        &self,
        word: Word,
        now: Option<u64>,
        counted: bool,
    ) -> Result<Permit<'_>, Blocked> {
        // A closed word comes here only while adaptive throttling sheds: its draw decides.
        // Then, admitted, the cap's slot: throttling comes before the cap.
        if let Some(generation) = word.closed_generation() {
            self.throttle_gate()?;
            return self
                .permit_of_closed(word, generation)
                .capped_if_counted(counted);
        }
        self.acquire_decided(word, now, false, |generation, probe| {
            Permit::new(self, generation, probe, self.counting())
        })?
        .capped_if_counted(counted)
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
}

/// Permission to make one call to the dependency; report how it went with [`record`](Self::record).
///
/// The permit carries the generation it was issued in, so an outcome that arrives after the
/// breaker has moved on (tripped, probed, closed again) changes nothing.
///
/// Dropping a permit without recording (the call was cancelled, or panicked) moves nothing and
/// counts toward no threshold (with counting on it is counted as
/// [`dropped`](crate::observe::Metrics::dropped)); if the permit held the probe slot, the slot is
/// released so the next caller becomes the probe.
///
/// Generations are 20 bits and wrap, but they move only as time passes (2^20 changes take at
/// least 2^19 cooldowns), so a permit would have to be held for 2^19 cooldowns — 8.7 minutes at
/// the shortest cooldown of 1 ms, six days at 1 s — before it could be mistaken for a current one.
/// Changes by hand take no time: a permit held across 2^20 of them could be mistaken too.
///
/// # Examples
///
/// ```
/// use toolbreaker::{CircuitBreaker, Outcome};
///
/// let breaker = CircuitBreaker::builder().build()?;
/// let permit = breaker.try_acquire().expect("a new breaker is closed");
/// assert!(!permit.is_probe());
/// assert_eq!(permit.record(Outcome::Success), None, "a success while closed changes nothing");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[must_use = "a permit must be used to make the call and then recorded; dropping it records no outcome"]
#[derive(Debug)]
pub struct Permit<'a> {
    ticket: Ticket<&'a CircuitBreaker>,
}

impl<'a> Permit<'a> {
    #[inline(always)]
    pub(crate) fn new(
        breaker: &'a CircuitBreaker,
        generation: u32,
        probe: bool,
        counting: bool,
    ) -> Self {
        Permit {
            ticket: Ticket {
                breaker,
                bits: Bits::new(generation, probe, counting),
            },
        }
    }

    /// This permit with a slot of the breaker's cap on calls in flight, if it has one; else the
    /// permit vanishes without a trace (not counted as dropped; a probe gives its slot back)
    /// and the call is refused as saturated. A breaker without a cap pays one load and a branch.
    #[inline(always)]
    pub(crate) fn capped(self) -> Result<Self, Blocked> {
        self.capped_if_counted(true)
    }

    /// [`capped`](Self::capped); a refusal is counted and logged only if `counted` (a pool
    /// passing over a member counts nothing).
    #[inline(always)]
    pub(crate) fn capped_if_counted(self, counted: bool) -> Result<Self, Blocked> {
        match self.ticket.breaker.cap() {
            None => Ok(self),
            Some(cap) => self.take_slot(cap, counted),
        }
    }

    /// `capped_if_counted` of a breaker with a cap: the claim inline, so the permit stays in
    /// registers; the refusal out of line.
    #[inline(always)]
    pub(super) fn take_slot(mut self, cap: &Cap, counted: bool) -> Result<Self, Blocked> {
        if cap.claim() {
            let slot = [Slot::Held, Slot::Timed][usize::from(cap.is_adaptive())];
            self.ticket.bits.set_slot(slot);
            return Ok(self);
        }
        Err(self.refused_by_cap(counted))
    }

    /// The saturated refusal of a permit the breaker issued: it vanishes without a trace (not
    /// counted as dropped; a probe gives its probe slot back).
    #[cold]
    #[inline(never)]
    fn refused_by_cap(mut self, counted: bool) -> Blocked {
        let state = [State::Closed, State::HalfOpen][usize::from(self.ticket.bits.probe())];
        self.ticket.bits.clear_counting();
        self.ticket.breaker.saturated(state, counted)
    }

    /// The permit of a closed word with a rate rule (`RATED`): its call may be timed.
    #[inline(always)]
    fn rated(mut self, rated: bool) -> Self {
        self.ticket.bits.set_rated(rated);
        self
    }

    /// Whether the call is to be timed: the permit came from a breaker with a slow-call rule.
    /// Read from the word the permit was issued from, so a breaker without a rate rule decides it
    /// with no load.
    #[inline(always)]
    pub(crate) fn times_call(&self) -> bool {
        self.ticket.times_call()
    }

    /// The generation the permit was issued in (20 bits: it wraps to 0 after 1,048,575).
    pub fn generation(&self) -> u32 {
        self.ticket.bits.generation()
    }

    /// Whether this permit holds the half-open probe slot.
    pub fn is_probe(&self) -> bool {
        self.ticket.bits.probe()
    }

    /// Whether an outcome recorded now would still count: the breaker has not moved on since the
    /// permit was issued (an ordinary permit's closed period goes on; a probe's lease has not
    /// run out). A permit held for a while before its call (a reservation) should be checked, and
    /// dropped for a new one when stale, rather than used to send a call the breaker would no
    /// longer admit.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(1).build()?;
    /// let reserved = breaker.try_acquire().unwrap();
    /// assert!(reserved.is_current());
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
    /// assert!(!reserved.is_current(), "the breaker opened since");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn is_current(&self) -> bool {
        self.ticket.is_current()
    }

    /// Report the call's outcome, consuming the permit.
    ///
    /// Returns the state change the outcome caused: a counted failure at the threshold trips the
    /// breaker (`closed → open`), a probe's success closes it, a probe's counted failure reopens
    /// it. An outcome from an older generation, or from a probe whose lease has run out, changes
    /// nothing and returns `None`.
    #[inline]
    pub fn record(self, outcome: Outcome) -> Option<Transition> {
        self.ticket.record(outcome, None)
    }

    /// [`record`](Self::record) for a call that took `elapsed`: a slow-call rule
    /// ([`Builder::slow_calls`](super::Builder::slow_calls)) judges the call slow when `elapsed`
    /// is at least its threshold, whether it succeeded or failed, and a counted failure's event
    /// carries `elapsed`. (An outcome recorded with [`record`](Self::record) is never slow.)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, Outcome, State, TransitionReason, Window};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .slow_calls(Duration::from_secs(2), 0.5)
    ///     .window(Window::Calls(4))
    ///     .minimum_calls(4)
    ///     .build()?;
    /// let fast = Duration::from_millis(300);
    /// let slow = Duration::from_secs(2);
    /// for elapsed in [fast, slow, fast] {
    ///     assert_eq!(breaker.try_acquire().unwrap().record_elapsed(Outcome::Success, elapsed), None);
    /// }
    /// // The fourth call reaches the minimum: 2 slow of 4 is the rule's 50 %.
    /// let trip = breaker.try_acquire().unwrap().record_elapsed(Outcome::Success, slow).unwrap();
    /// assert_eq!(trip.reason(), TransitionReason::SlowCallRate);
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    #[inline]
    pub fn record_elapsed(self, outcome: Outcome, elapsed: Duration) -> Option<Transition> {
        self.ticket.record(outcome, Some(elapsed))
    }

    /// [`record`](Self::record), or [`record_elapsed`](Self::record_elapsed) for a call that was
    /// timed.
    #[inline(always)]
    pub(crate) fn record_elapsed_if(
        self,
        outcome: Outcome,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        self.ticket.record(outcome, elapsed)
    }

    /// [`record_elapsed`](Self::record_elapsed), for the crate's own timed calls.
    #[cfg(feature = "tokio")]
    pub(crate) fn record_timed(self, outcome: Outcome, elapsed: Duration) -> Option<Transition> {
        self.record_elapsed(outcome, elapsed)
    }

    /// The same permit, holding its breaker by `Arc` so it can outlive this borrow (move into a
    /// task, a response future). `breaker` must be the breaker that issued it.
    ///
    /// # Panics
    ///
    /// If `breaker` is not the breaker that issued the permit.
    pub fn into_owned(self, breaker: Arc<CircuitBreaker>) -> OwnedPermit {
        assert!(
            core::ptr::eq(self.ticket.breaker, &*breaker),
            "a permit belongs to the breaker that issued it"
        );
        let mut ticket = self.ticket;
        OwnedPermit {
            ticket: Ticket {
                breaker,
                // The slots, if any, and the count now belong to the owned permit.
                bits: ticket.bits.take(),
            },
        }
    }
}

/// A [`Permit`] that holds its breaker by `Arc`, for calls that outlive a borrow (a spawned task,
/// a tower response future). Issued by [`CircuitBreaker::try_acquire_owned`]; the same rules
/// apply.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use toolbreaker::{CircuitBreaker, Outcome};
///
/// let breaker = Arc::new(CircuitBreaker::builder().build()?);
/// let permit = breaker.try_acquire_owned().expect("closed");
/// let answer = std::thread::spawn(move || permit.record(Outcome::Success)).join().unwrap();
/// assert_eq!(answer, None);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[must_use = "a permit must be used to make the call and then recorded; dropping it records no outcome"]
#[derive(Debug)]
pub struct OwnedPermit {
    ticket: Ticket<Arc<CircuitBreaker>>,
}

impl OwnedPermit {
    /// As [`Permit::generation`].
    pub fn generation(&self) -> u32 {
        self.ticket.bits.generation()
    }

    /// As [`Permit::is_probe`].
    pub fn is_probe(&self) -> bool {
        self.ticket.bits.probe()
    }

    /// As [`Permit::record`].
    #[inline]
    pub fn record(self, outcome: Outcome) -> Option<Transition> {
        self.ticket.record(outcome, None)
    }

    /// As [`Permit::record_elapsed`].
    #[inline]
    pub fn record_elapsed(self, outcome: Outcome, elapsed: Duration) -> Option<Transition> {
        self.ticket.record(outcome, Some(elapsed))
    }

    /// As [`Permit::is_current`].
    pub fn is_current(&self) -> bool {
        self.ticket.is_current()
    }

    /// As `Permit::times_call`.
    #[cfg(feature = "tower")]
    pub(crate) fn times_call(&self) -> bool {
        self.ticket.times_call()
    }

    /// [`record`](Self::record), or [`record_elapsed`](Self::record_elapsed) for a call that was
    /// timed.
    #[cfg(feature = "tower")]
    pub(crate) fn record_elapsed_if(
        self,
        outcome: Outcome,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        self.ticket.record(outcome, elapsed)
    }

    /// The breaker that issued this permit.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.ticket.breaker
    }
}
