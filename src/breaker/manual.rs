//! Changes made by hand: `force_open`, `force_closed`, `reset`.

use super::machine::CircuitBreaker;
use crate::state::decide::{self, Manual};
use crate::types::Transition;

impl CircuitBreaker {
    /// Apply a change made by hand to the newest word.
    fn manual(&self, action: Manual) -> Option<Transition> {
        let in_force = self.limits();
        let word = self.settle_released(self.word(), &in_force);
        let updated = self.update(word, |word| {
            let limits = self.limits_at(word, &in_force);
            // A probe that outlived its lease is written down first, in the same write, as the
            // next caller would: the change follows a transition that is heard.
            let expired = decide::expired_probe(word, &limits, || self.now_ms());
            let (base, timed_out) = match expired {
                Some(step) => (step.next, step.transition),
                None => (word, None),
            };
            match decide::manual(base, action, &limits) {
                Some(step) => (Some(step.next), [timed_out, step.transition]),
                None => (expired.map(|step| step.next), [timed_out, None]),
            }
        });
        if action == Manual::Reset && updated.after.is_some() {
            self.tell_reset();
        }
        let answer = updated.answer.map(|t| t.map(|t| self.shaped(t, &in_force)));
        // Announced once the change has landed, so a listener's panic cannot stop it.
        if answer.iter().any(Option::is_some) {
            self.announce_all(&answer);
        }
        answer[1]
    }

    /// Isolate the dependency: open now, and stay open, admitting no probe, until
    /// [`force_closed`](Self::force_closed) or [`reset`](Self::reset). Blocked calls say
    /// [`BlockedReason::Isolated`](crate::BlockedReason::Isolated) and suggest asking again after
    /// a cooldown.
    ///
    /// Returns the transition (reason `manual`), or `None` if the breaker was already isolated.
    /// From open the transition reads `open → open`: the state is the same, but no cooldown ends
    /// it now.
    /// Outcomes of calls admitted before it no longer count.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{BlockedReason, CircuitBreaker, State, TransitionReason};
    ///
    /// let breaker = CircuitBreaker::builder().build()?;
    /// let isolated = breaker.force_open().expect("it was closed");
    /// assert_eq!((isolated.from(), isolated.to()), (State::Closed, State::Open));
    /// assert_eq!(isolated.reason(), TransitionReason::Manual);
    /// assert_eq!(breaker.try_acquire().unwrap_err().reason(), BlockedReason::Isolated);
    /// assert_eq!(breaker.force_open(), None, "already isolated");
    ///
    /// breaker.force_closed().expect("it was open");
    /// assert!(breaker.try_acquire().is_ok());
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn force_open(&self) -> Option<Transition> {
        self.manual(Manual::ForceOpen)
    }

    /// Close now, from open, half-open or isolated; a closed breaker is left as it is (with its
    /// failure count). Returns the transition (reason `manual`), or `None` if it was closed.
    /// Outcomes of calls admitted before it (a probe in flight) no longer count.
    pub fn force_closed(&self) -> Option<Transition> {
        self.manual(Manual::ForceClosed)
    }

    /// Back to as built: closed with no counted failures, in a new generation, so outcomes of
    /// calls admitted before it no longer count. Returns the transition (reason `manual`) if the
    /// breaker was not closed; resetting a closed breaker changes no state, so it is no
    /// transition and returns `None` (and one with no failures to clear is left as it is).
    /// Metrics counters are not reset: they only grow.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(2).build()?;
    /// let in_flight = breaker.try_acquire().unwrap();
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(breaker.reset(), None, "closed stays closed; its one failure is cleared");
    /// assert!(!in_flight.is_current(), "a call admitted before the reset no longer counts");
    /// in_flight.record(Outcome::Failure(FailureKind::Timeout));
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(breaker.state(), State::Closed, "one failure since the reset, below 2");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn reset(&self) -> Option<Transition> {
        self.manual(Manual::Reset)
    }
}
