//! Admission beyond the closed fast path (`permit` has that): the open rejection answered from
//! the word, the slow path that decides and applies an admission, and the checks that ask
//! without taking a permit.

use super::machine::CircuitBreaker;
use crate::config::Limits;
use crate::observe::{self, Counter};
use crate::state::decide::{self, Admission, SlotsStep};
use crate::state::word::{Kind, Word};
use crate::types::{Blocked, BlockedReason, State};

impl CircuitBreaker {
    /// Several probes' lease over with every slot given back ([`released`](Self::released)):
    /// written down as half-open with its slots free (no transition: the state stays half-open),
    /// so what follows is decided from there. The word after it.
    pub(super) fn settle_released(&self, word: Word, limits: &Limits) -> Word {
        if self.released(word, limits) == word {
            return word;
        }
        let updated = self.update(word, |seen| {
            let next = self.released(seen, limits);
            ((next != seen).then_some(next), ())
        });
        updated.after.unwrap_or(updated.before)
    }

    /// `word`, or the half-open word it stands for when several probes' lease is over with every
    /// slot given back (see `decide::released`).
    pub(super) fn released(&self, word: Word, limits: &Limits) -> Word {
        decide::released(
            word,
            limits,
            || self.inner.cold.slots.load(),
            || self.permit_is_current(word.generation(), true),
        )
    }

    /// The retry-after of an open breaker's rejection, answered from the word, the plain cooldown
    /// and the clock alone (see `decide::open_rejection`), or `Err` with the clock's reading, if
    /// it was read, for the slow path to decide: the breaker is not plainly open, its cooldown is
    /// shaped (backoff or jitter: the cooldown in force is the open period's), or it is over.
    #[inline(always)]
    fn open_rejection(&self, word: Word) -> Result<u64, Option<u64>> {
        if word.kind() != Kind::Open {
            return Err(None);
        }
        let Some(cooldown_ms) = self.inner.settings.plain_cooldown_ms() else {
            return Err(None);
        };
        // The clock read inline: out of line it would cost the rejection a call and the
        // registers it saves.
        let now_ms = self.inner.origin.now_ms(Word::MAX_TIME_MS);
        decide::open_rejection(word, cooldown_ms, now_ms).ok_or(Some(now_ms))
    }

    /// The open rejection answered from the word ([`open_rejection`](Self::open_rejection)),
    /// counted and logged as `try_acquire` answers it: every caller that asks for a permit (the
    /// permit's own path and `call`'s) takes this one, so none builds the limits, loads the
    /// fleet's tap, clones the name or reaches the cold block to reject an open breaker. `Err` with the
    /// clock's reading, if it was read, for [`acquire_decided`](Self::acquire_decided).
    #[inline(always)]
    pub(super) fn reject_open(&self, word: Word) -> Result<Blocked, Option<u64>> {
        let retry_after_ms = self.open_rejection(word)?;
        self.count(Counter::Blocked);
        let blocked = self.blocked(State::Open, BlockedReason::DependencyOpen, retry_after_ms);
        observe::blocked(self.name(), &blocked);
        Ok(blocked)
    }

    /// Decide an admission for a word that is not closed and not plainly open (see
    /// [`reject_open`](Self::reject_open)), and apply it: settle, decide and apply the
    /// admission, and tell what it wrote. `permit` makes the permit of an admission (its
    /// generation, whether it is the probe) before anyone hears of the write: a listener that
    /// panics then unwinds through the permit, whose drop gives the probe slot back. Out of
    /// line, so an open breaker's rejection keeps a small frame; `now` is the clock's reading if
    /// it was already taken; `by_prober` for the health check's own claim (see `probe_gate`).
    #[inline(never)]
    pub(super) fn acquire_decided<P>(
        &self,
        word: Word,
        mut now: Option<u64>,
        by_prober: bool,
        permit: impl FnOnce(u32, bool) -> P,
    ) -> Result<P, Blocked> {
        let limits = self.limits();
        let word = self.settle_released(word, &limits);
        let updated = self.update(word, |word| {
            let (admission, next) = decide::acquire(word, &self.limits_at(word, &limits), || {
                *now.get_or_insert_with(|| self.now_ms())
            });
            // A health check's prober takes the probe slot, and in fleet mode the fleet says
            // which instance takes it.
            if let Some(gated) = self.probe_gate(admission, by_prober, || {
                *now.get_or_insert_with(|| self.now_ms())
            }) {
                return (None, gated);
            }
            (next, admission)
        });
        let admission = match decide::slots_step(updated.answer, updated.before, &limits) {
            SlotsStep::Keep => updated.answer,
            SlotsStep::Start { generation } => {
                self.start_slots(generation);
                updated.answer
            }
            // Another probe of a breaker that admits several, while the first one's lease holds.
            SlotsStep::Claim { generation } if self.claim_slot(generation, &limits) => {
                Admission::Admit {
                    generation,
                    probe: true,
                }
            }
            SlotsStep::Claim { .. } => updated.answer,
        };
        let answer = match admission {
            Admission::Admit { generation, probe } => Ok(permit(generation, probe)),
            Admission::Reject {
                state,
                reason,
                retry_after_ms,
            } => {
                // The prober's own claim is no call: it is not counted or logged as blocked.
                if !by_prober {
                    self.count(Counter::Blocked);
                }
                Err(self.blocked(state, reason, retry_after_ms))
            }
        };
        if let Some(after) = updated.after {
            // Only the caller whose write landed reports what it wrote.
            let landed = decide::acquire_transitions(updated.before, after, &limits);
            if landed.0.iter().any(Option::is_some) {
                self.announce_all(&landed.0.map(|t| t.map(|t| self.shaped(t, &limits))));
            }
        }
        // After the transition that explains it (a timed-out probe found by this caller).
        if let Err(blocked) = &answer
            && !by_prober
        {
            observe::blocked(self.name(), blocked);
        }
        answer
    }

    /// The rejection of a call: every `Blocked` the breaker answers is built here.
    fn blocked(&self, state: State, reason: BlockedReason, retry_after_ms: u64) -> Blocked {
        Blocked::new(state, reason, retry_after_ms)
    }

    /// Whether [`try_acquire`](Self::try_acquire) would admit a call now (closed, or half-open
    /// with the probe slot free and no health check to take it), asked without taking a permit
    /// or the slot, without writing and without counting: for a caller that must wait on
    /// something else before it can use a permit, such as the tower service waiting on its inner
    /// service's readiness. The answer may be stale by the time the caller asks for the permit,
    /// which decides.
    #[cfg(feature = "tower")]
    pub(crate) fn would_admit(&self) -> bool {
        let word = self.released(self.word(), &self.limits());
        word.closed_generation().is_some()
            || (decide::view(word, &self.limits_at(word, &self.limits()), || {
                self.now_ms()
            }) == decide::View::HalfOpen
                // A health check's prober takes the free slot, not a caller.
                && self.prober().is_none_or(|prober| !prober.is_alive()))
    }

    /// How long until a call could be admitted, as [`try_acquire`](Self::try_acquire) would
    /// answer it now: `None` when it would admit (closed, or half-open with a probe slot free),
    /// else the rejection's retry-after (whole milliseconds, never zero: the rest of the
    /// cooldown while open, the rest of the probe's lease while a probe is in flight, the
    /// cooldown while isolated).
    ///
    /// Side-effect free, as [`state`](Self::state) is: it takes no permit and no probe slot,
    /// writes nothing, counts nothing and asks no fleet, however often it is called: for a
    /// status page.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .cooldown(Duration::from_millis(100))
    ///     .clock(clock)
    ///     .build()?;
    /// assert_eq!(breaker.retry_after(), None, "closed");
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// mock.increment(Duration::from_millis(30));
    /// assert_eq!(breaker.retry_after(), Some(Duration::from_millis(70)));
    /// mock.increment(Duration::from_millis(70));
    /// for _ in 0..3 {
    ///     assert_eq!(breaker.retry_after(), None, "half-open: the slot stays free");
    /// }
    /// assert!(breaker.try_acquire().unwrap().is_probe());
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn retry_after(&self) -> Option<core::time::Duration> {
        let limits = self.limits();
        let word = self.released(self.word(), &limits);
        if word.closed_generation().is_some() {
            return None;
        }
        match decide::acquire(word, &self.limits_at(word, &limits), || self.now_ms()).0 {
            Admission::Reject { retry_after_ms, .. } => {
                Some(core::time::Duration::from_millis(retry_after_ms))
            }
            Admission::Admit { .. } => None,
        }
    }

    /// `Blocked` if the breaker is open (or isolated) now, as [`try_acquire`](Self::try_acquire)
    /// would answer, but without taking a permit or the probe slot and without writing the word:
    /// for a caller deciding whether a retry is worth waiting for. Half-open is `Ok`, probe in
    /// flight or not: the probe may have finished by the time the retry asks. A `Blocked` answer is
    /// counted and logged as a blocked call, since the caller gives up on it.
    #[cfg(feature = "tokio")]
    pub(crate) fn check_open(&self) -> Result<(), Blocked> {
        let word = self.released(self.word(), &self.limits());
        if word.closed_generation().is_some() {
            return Ok(());
        }
        match decide::acquire(word, &self.limits_at(word, &self.limits()), || {
            self.now_ms()
        })
        .0
        {
            Admission::Reject {
                state: State::Open,
                reason,
                retry_after_ms,
            } => {
                let blocked = self.blocked(State::Open, reason, retry_after_ms);
                self.count(Counter::Blocked);
                observe::blocked(self.name(), &blocked);
                Err(blocked)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(all(test, not(loom), feature = "tokio"))]
mod tests {
    use std::sync::Arc;

    use core::time::Duration;

    use super::*;
    use crate::classify::{FailureKind, Outcome};
    use crate::types::TransitionReason;

    /// The retry check reads and never claims: at any state it leaves the probe slot, the word,
    /// the admission count and the transitions as they were.
    #[test]
    fn the_open_check_never_takes_the_probe_slot_or_writes() {
        let (clock, mock) = quanta::Clock::mock();
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let breaker = CircuitBreaker::builder()
            .failure_threshold(1)
            .cooldown(Duration::from_millis(100))
            .probe_timeout(Duration::from_millis(50))
            .clock(clock)
            .metrics(true)
            .on_transition(move |e| log.lock().unwrap().push(e.transition().reason()))
            .build()
            .unwrap();
        let word = || breaker.word_bits();
        assert_eq!(breaker.check_open(), Ok(()), "closed");

        breaker
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Unavailable));
        let before = (word(), heard.lock().unwrap().len());
        let blocked = breaker.check_open().unwrap_err();
        assert_eq!(
            (blocked.state(), blocked.reason(), blocked.retry_after()),
            (
                State::Open,
                BlockedReason::DependencyOpen,
                Duration::from_millis(100)
            )
        );

        mock.increment(Duration::from_millis(100)); // half-open, slot free
        for _ in 0..3 {
            assert_eq!(breaker.check_open(), Ok(()));
        }
        assert_eq!(
            (word(), heard.lock().unwrap().len()),
            before,
            "nothing written"
        );
        let probe = breaker.try_acquire().expect("the slot is still free");
        assert!(probe.is_probe());
        assert_eq!(
            breaker.check_open(),
            Ok(()),
            "half-open with a probe in flight"
        );

        mock.increment(Duration::from_millis(50)); // the probe's lease runs out: open again
        let before = word();
        assert_eq!(breaker.check_open().unwrap_err().state(), State::Open);
        assert_eq!(
            word(),
            before,
            "the timed-out probe is left for a caller to write down"
        );
        drop(probe);

        let metrics = breaker.metrics().unwrap();
        assert_eq!(
            metrics.admitted, 2,
            "the first call and the probe, nothing else"
        );
        assert_eq!(metrics.blocked, 2, "the two open answers");
        assert_eq!(
            *heard.lock().unwrap(),
            [
                TransitionReason::FailureThreshold,
                TransitionReason::CooldownElapsed
            ]
        );
    }
}
