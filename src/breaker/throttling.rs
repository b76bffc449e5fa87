//! Client-side adaptive throttling on the breaker (the counts and the probability are the
//! `throttle` cell's): the builder's setting, the draw of a closed admission while the
//! probability is above 0, the outcomes counted, the restart when the breaker closes, the
//! reconfiguration and the probability read.

use core::time::Duration;

use super::builder::Builder;
use super::machine::CircuitBreaker;
use super::throttle::{ACCEPT, REQUEST, Throttle};
use super::window::Windows;
use crate::config::{Config, ConfigError, Throttling};
use crate::observe::{self, Counter};
use crate::state::word::Word;
use crate::types::{Blocked, BlockedReason, State};

impl Builder {
    /// Client-side adaptive throttling (the Google SRE book, chapter "Handling Overload",
    /// section "Client-side throttling"): a closed breaker sheds a call locally, before sending
    /// it, with probability
    ///
    /// `p = max(0, (requests − k·accepts) / (requests + 1))`
    ///
    /// over the last `window`, where *requests* are the calls made through this breaker while
    /// closed whose outcome was recorded, and the calls the throttle shed; *accepts* are those
    /// whose outcome was a success or [`Ignored`](crate::Outcome::Ignored) (the dependency
    /// answered; a counted failure is not an accept). A probe is never shed and never counted,
    /// nor is a permit dropped unrecorded (nobody knows whether the dependency accepted it).
    ///
    /// So the breaker sheds a growing share of the calls as the dependency fails more of them,
    /// before a rule trips it: at `k = 2` (the book's choice) nothing is shed while at least half
    /// the calls are accepted. A larger `k` sheds later and less; `k` below 1 is refused, since it
    /// would shed calls from a dependency that accepts every one (`(1 − k)·requests > 0`).
    ///
    /// A shed call is [`Blocked`](crate::Blocked) with reason
    /// [`Throttled`](crate::BlockedReason::Throttled), state closed and a retry-after of a tenth
    /// of the window (when the probability is next computed afresh). It is counted only in
    /// [`Metrics::throttled`](crate::observe::Metrics::throttled) and logged as a blocked call:
    /// it is never a failure or a success, never in a rate rule's window, never a transition,
    /// never sent to the fleet, and a pool tries another member for it, as for any block,
    /// without counting the member ejected. When the breaker closes in a new generation (a
    /// probe's success, a change by hand) the counts start afresh, so a recovered dependency is
    /// not shed for a window over its old failures. Changed live by
    /// [`CircuitBreaker::reconfigure`](super::CircuitBreaker::reconfigure) and
    /// [`Registry::reload`](crate::Registry::reload) (`adaptive_throttling` in a file).
    ///
    /// The window is counted in 10 buckets of a tenth of it (see [`docs::configuration`]).
    /// It costs a healthy call one load when it is admitted, and one add when its outcome is
    /// recorded: to a stripe only this thread ever writes, a load and a store with no lock
    /// prefix (threads past the first few dozen to use the crate share a few stripes, with an
    /// atomic add); the clock is read and the stripes summed only while the probability is
    /// above 0, or at a counted failure. It takes about 3 KiB per breaker on 2 cores, and at
    /// most about 10 KiB (16 cores or more), the rate rules' window cell that holds it included
    /// (made for it when the breaker has no rate rule); measured by `tests/memory.rs`.
    ///
    /// Validated by `build`: `k` finite and at least 1 (`adaptive_throttling.k`), `window`
    /// from 1 ms to [`MAX_DURATION`](crate::config::MAX_DURATION)
    /// (`adaptive_throttling.window`).
    ///
    /// [`docs::configuration`]: crate::docs::configuration#adaptive-throttling
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{BlockedReason, CircuitBreaker, FailureKind, Outcome, State};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1_000)
    ///     .adaptive_throttling(2.0, Duration::from_secs(10))
    ///     .metrics(true)
    ///     .build()?;
    /// // 4 calls accepted, then 5 answered with a 503: 9 requests, 4 accepts.
    /// for call in 0..9 {
    ///     let outcome = if call < 4 { Outcome::Success } else { Outcome::Failure(FailureKind::Unavailable) };
    ///     breaker.try_acquire().expect("nothing shed while p is 0").record(outcome);
    /// }
    /// assert_eq!(breaker.throttle_probability(), (9.0 - 2.0 * 4.0) / (9.0 + 1.0));
    ///
    /// let shed = (0..1_000)
    ///     .filter(|_| breaker.try_acquire().is_err_and(|b| b.reason() == BlockedReason::Throttled))
    ///     .count();
    /// assert!(shed > 0);
    /// assert_eq!(breaker.state(), State::Closed, "shedding never trips");
    /// assert_eq!(breaker.metrics().unwrap().throttled, shed as u64);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn adaptive_throttling(mut self, k: f64, window: Duration) -> Self {
        self.throttling = Some((k, window));
        self
    }

    /// `config` with this builder's adaptive throttling, validated.
    pub(super) fn throttled(&self, config: Config) -> Result<Config, ConfigError> {
        let throttling = self
            .throttling
            .map(|(k, window)| Throttling::new(k, window))
            .transpose()?;
        Ok(config.with_throttling(throttling))
    }
}

impl CircuitBreaker {
    /// The probability that adaptive throttling sheds the next closed admission
    /// ([`Builder::adaptive_throttling`](super::Builder::adaptive_throttling)), from 0 to below
    /// 1; 0.0 when throttling is off.
    ///
    /// Side-effect free: it reads the probability computed at the latest counted failure, shed
    /// call, or (while above 0) recorded outcome or admission in a new tenth of the window, and
    /// computes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .adaptive_throttling(2.0, Duration::from_secs(10))
    ///     .build()?;
    /// assert_eq!(breaker.throttle_probability(), 0.0);
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(breaker.throttle_probability(), 0.5, "1 request, no accept: 1 / 2");
    /// assert_eq!(CircuitBreaker::builder().build()?.throttle_probability(), 0.0, "off");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn throttle_probability(&self) -> f64 {
        self.throttle().map_or(0.0, Throttle::p)
    }

    /// The throttle's cell, if the breaker has had adaptive throttling: behind the window's
    /// pointer (made for it if the breaker has no rate rule).
    #[inline(always)]
    fn throttle(&self) -> Option<&Throttle> {
        self.inner.windows.get()?.throttle.get()
    }

    /// The adaptive throttling in force, if any.
    pub(super) fn throttling(&self) -> Option<Throttling> {
        self.throttle()?.settings()
    }

    /// Whether a closed admission takes the throttle's draw: one load, of a line only the slow
    /// paths write, when throttling is set.
    #[inline(always)]
    pub(super) fn sheds(&self) -> bool {
        self.throttle().is_some_and(Throttle::sheds)
    }

    /// The throttle's draw for a closed admission while the probability is above 0: the
    /// probability computed afresh if the window's bucket moved, then a shed call `Blocked`
    /// (counted as a request, the probability computed afresh, counted and logged).
    #[cold]
    #[inline(never)]
    pub(super) fn throttle_gate(&self) -> Result<(), Blocked> {
        let Some(throttle) = self.throttle() else {
            return Ok(());
        };
        let now_ms = self.now_ms();
        let mut p = throttle.p();
        if throttle.stale(now_ms) {
            p = throttle.refresh(now_ms);
        }
        // A thread-local generator, no lock; drawn only while shedding.
        if p <= 0.0 || fastrand::f64() >= p {
            return Ok(());
        }
        throttle.add(REQUEST);
        throttle.refresh(now_ms);
        self.count(Counter::Throttled);
        let retry_after_ms = throttle
            .settings()
            .map_or(1, |settings| Throttle::bucket_ms(settings.window_ms));
        let blocked = Blocked::new(State::Closed, BlockedReason::Throttled, retry_after_ms);
        observe::blocked(self.name(), &blocked);
        Err(blocked)
    }

    /// A healthy report of an ordinary permit (a success or `Ignored`, closed, its generation
    /// current): an accept; the probability computed afresh only while above 0.
    #[inline(always)]
    pub(super) fn throttle_accept(&self) {
        if let Some(throttle) = self.throttle() {
            throttle.add(ACCEPT);
            if throttle.sheds() {
                self.throttle_refresh(throttle);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn throttle_refresh(&self, throttle: &Throttle) {
        throttle.refresh(self.now_ms());
    }

    /// The slow report's side, for an ordinary permit: a request of the current closed
    /// generation, accepted unless a counted failure; the probability computed afresh on a
    /// failure, or while above 0.
    pub(super) fn throttle_record(&self, generation: u32, counter: Counter) {
        let Some(throttle) = self.throttle() else {
            return;
        };
        if self.word().closed_generation() != Some(generation) {
            return;
        }
        let failure = counter.is_failure();
        throttle.add(if failure { REQUEST } else { ACCEPT });
        if failure || throttle.sheds() {
            throttle.refresh(self.now_ms());
        }
    }

    /// A write that landed a closed word of a new generation restarts the throttle's window.
    #[inline]
    pub(super) fn throttle_on_update(&self, before: Word, after: Option<Word>) {
        if let Some(throttle) = self.throttle()
            && let Some(generation) = after.and_then(Word::closed_generation)
            && before.closed_generation() != Some(generation)
        {
            throttle.restart(self.now_ms());
        }
    }

    /// Reconfiguration's part: throttling turned on or off, a new window starting afresh, a new
    /// `k` judging the window as it stands. Called under the reconfiguration's lock.
    pub(super) fn reconfigure_throttle(&self, settings: Option<Throttling>) {
        let before = self.throttling();
        if before == settings {
            return;
        }
        let Some(settings) = settings else {
            if let Some(throttle) = self.throttle() {
                throttle.set(None);
            }
            return;
        };
        let throttle = self
            .inner
            .windows
            .get_or_init(|| Box::new(Windows::new()))
            .throttle
            .get_or_init(|| Box::new(Throttle::new()));
        throttle.set(Some(settings));
        let now_ms = self.now_ms();
        if before.map(|before| before.window_ms) == Some(settings.window_ms) {
            throttle.refresh(now_ms);
        } else {
            throttle.restart(now_ms);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::classify::{FailureKind, Outcome};

    /// A shed call writes nothing the state is made of: the word (state, generation, count,
    /// flags) is the same bits before and after thousands of them.
    #[test]
    fn a_shed_call_leaves_the_word_as_it_was() {
        let (clock, _mock) = quanta::Clock::mock();
        let breaker = CircuitBreaker::builder()
            .failure_threshold(3)
            .failure_rate(0.9)
            .minimum_calls(50)
            .adaptive_throttling(2.0, Duration::from_secs(10))
            .clock(clock)
            .build()
            .unwrap();
        let failed = Outcome::Failure(FailureKind::Unavailable);
        breaker.try_acquire().unwrap().record(failed);
        let word = breaker.word_bits();
        let mut shed = 0;
        for _ in 0..5_000 {
            match breaker.try_acquire() {
                Ok(permit) => drop(permit),
                Err(blocked) => {
                    assert_eq!(blocked.reason(), BlockedReason::Throttled);
                    assert_eq!(blocked.retry_after(), Duration::from_secs(1), "a tenth");
                    shed += 1;
                    assert_eq!(breaker.word_bits(), word);
                }
            }
        }
        assert!(shed > 4_000, "{shed}");
    }
}
