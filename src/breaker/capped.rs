//! The cap on calls in flight, the breaker's side: a permit's slot taken after the breaker
//! admitted it, and given back exactly once (see `permit`); the saturated rejection; the cap's
//! readings; its settings changed by `reconfigure`.
//!
//! A saturated rejection is counted only as `saturated` and logged as a blocked call (reason
//! `saturated`): never a failure or a success, never the window, never the fleet's tap, never
//! a transition. Only counted outcomes feed an adaptive limit.

use core::time::Duration;

use super::cap::Cap;
use super::machine::CircuitBreaker;
use crate::config::Concurrency;
use crate::observe::{self, Counter};
use crate::state::limit::Sample;
use crate::types::{Blocked, BlockedReason, State};

impl CircuitBreaker {
    /// The cap, if the breaker was ever configured with one. Without: one relaxed load of the
    /// settings' flag, in the breaker's block that every call has in its cache already, and a
    /// branch; the cell itself is in the cold block.
    #[inline(always)]
    pub(super) fn cap(&self) -> Option<&Cap> {
        if !self.inner.settings.is_capped() {
            return None;
        }
        self.inner.cold.cap.get()
    }

    /// The saturated rejection, counted and logged if `counted`.
    #[cold]
    #[inline(never)]
    pub(super) fn saturated(&self, state: State, counted: bool) -> Blocked {
        let blocked = Blocked::new(state, BlockedReason::Saturated, 1);
        if counted {
            self.count(Counter::Saturated);
            observe::blocked(self.name(), &blocked);
        }
        blocked
    }

    /// Give a permit's slot back. `sample`: the call's outcome, when it was recorded and
    /// counted (a counted failure, and the call's elapsed time if it was timed), for a permit
    /// issued with an adaptive limit (`timed`).
    #[inline(always)]
    pub(super) fn release_in_flight(&self, timed: bool, sample: Option<(Option<Duration>, bool)>) {
        // A slot is held, so the cell is there: no need to read the flag.
        let Some(cap) = self.inner.cold.cap.get() else {
            return;
        };
        let in_flight = cap.release();
        if timed && let Some((elapsed, failed)) = sample {
            self.sample_limit(cap, elapsed, failed, in_flight);
        }
    }

    /// Give back the slot of a permit dropped unrecorded: out of line, so a drop stays small.
    #[cold]
    #[inline(never)]
    pub(super) fn release_dropped(&self) {
        self.release_in_flight(false, None);
    }

    /// Feed one sample to the adaptive limit; tell a change.
    #[inline(never)]
    fn sample_limit(&self, cap: &Cap, elapsed: Option<Duration>, failed: bool, in_flight: u32) {
        let now_ms = self.now_ms();
        let took_ms = elapsed.map_or(0, |e| u64::try_from(e.as_millis()).unwrap_or(u64::MAX));
        let sample = Sample {
            rtt_us: elapsed.map(|e| u64::try_from(e.as_micros()).unwrap_or(u64::MAX)),
            in_flight,
            failed,
            // The clock's low 32 bits: AIMD compares them wrapping.
            started_ms: now_ms.saturating_sub(took_ms) as u32,
            now_ms: now_ms as u32,
        };
        if let Some(limit) = cap.sample(&sample) {
            observe::limit_changed(self.name(), limit);
        }
    }

    /// Store a configuration's cap: the cell is made on the first one and kept after (with no
    /// cap its limit is unbounded). Under the reconfiguration lock.
    pub(super) fn set_concurrency(&self, concurrency: &Concurrency) {
        match self.inner.cold.cap.get() {
            Some(cap) => cap.set(concurrency, false),
            None if concurrency.is_capped() => {
                let _ = self.inner.cold.cap.set(Box::new(Cap::new(concurrency)));
                self.inner.settings.mark_capped();
            }
            None => {}
        }
    }

    /// Calls holding a slot of the cap on calls in flight: admitted, not yet recorded or
    /// dropped. 0 when the breaker has no cap (calls are then not counted in flight).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{BlockedReason, CircuitBreaker, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder().max_in_flight(1).build()?;
    /// let permit = breaker.try_acquire().expect("one slot free");
    /// assert_eq!(breaker.in_flight(), 1);
    /// assert_eq!(breaker.try_acquire().unwrap_err().reason(), BlockedReason::Saturated);
    /// permit.record(Outcome::Success);
    /// assert_eq!(breaker.in_flight(), 0);
    /// assert_eq!(CircuitBreaker::builder().build()?.in_flight(), 0);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn in_flight(&self) -> u32 {
        self.cap().map_or(0, Cap::in_flight)
    }

    /// The cap on calls in flight in force, in calls: the fixed cap, or the adaptive limit's
    /// value now (bounded by the fixed cap when both are set); `None` when there is no cap.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, Limit};
    ///
    /// let fixed = CircuitBreaker::builder().max_in_flight(8).build()?;
    /// assert_eq!(fixed.concurrency_limit(), Some(8));
    /// let adaptive = CircuitBreaker::builder().adaptive_concurrency(Limit::aimd(4, 64)).build()?;
    /// assert_eq!(adaptive.concurrency_limit(), Some(20), "AIMD starts at 20");
    /// assert_eq!(CircuitBreaker::builder().build()?.concurrency_limit(), None);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn concurrency_limit(&self) -> Option<u32> {
        self.cap().and_then(Cap::limit)
    }
}
