//! Open times from the dependency: a counted failure's hint (`Retry-After`, `retry-after-ms`,
//! `x-ratelimit-reset-*`, `RateLimit`; see [`classify::http`](crate::classify::http)) heard and
//! kept for the open period it governs (`state::hint`), and the builder's settings for it.
//!
//! The rule: an open period lasts until the later of its cooldown's end and the end its hints
//! set, where a hint's end is the time it was heard plus the hint, capped
//! ([`Builder::max_hinted_open`]) and spread upward ([`Builder::hint_jitter`]). Nothing a
//! hint, a later hint or a re-trip does shortens an open period. (The headers' use to stay away
//! is the one agentgateway and LiteLLM make; keeping the longer deadline on a re-trip is the fix
//! LiteLLM #40130 asks for.)

use core::time::Duration;

use super::builder::Builder;
use super::machine::{CircuitBreaker, split};
use crate::state::decide;
use crate::state::word::{Kind, next_generation};
use crate::types::{Transition, TransitionReason};

impl Builder {
    /// The longest a dependency's hint keeps the breaker open (default
    /// [`DEFAULT_MAX_HINTED_OPEN`](crate::config::DEFAULT_MAX_HINTED_OPEN), 10 minutes).
    ///
    /// A counted failure whose outcome carries a hint ([`Outcome::retry_after`](crate::Outcome::retry_after):
    /// a 429's `Retry-After`, `retry-after-ms`, `x-ratelimit-reset-requests` or `-tokens`,
    /// `RateLimit-Reset` or `RateLimit`, the longest of them, as
    /// [`classify::http`](crate::classify::http) reads them) makes the open period it leads to,
    /// or the one in force, last at least until the hint's end: the time the failure was
    /// reported plus the hint, cut to `max`, then spread upward by
    /// [`hint_jitter`](Self::hint_jitter). The breaker stays open for the longer of that and
    /// the cooldown in force; a re-trip, or a later hint while open, never shortens the deadline.
    /// [`Blocked::retry_after`](crate::Blocked::retry_after) and the model's `retry_after_ms`
    /// give the hinted deadline. `Duration::ZERO` turns hints off: the cooldown alone decides.
    /// Validated by `build`: at most [`MAX_DURATION`](crate::config::MAX_DURATION)
    /// (`max_hinted_open`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
    ///
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .cooldown(Duration::from_secs(5))
    ///     .max_hinted_open(Duration::from_secs(60))
    ///     .hint_jitter(0.0)
    ///     .clock(clock)
    ///     .build()?;
    /// let limited = |secs| Outcome::Failure(FailureKind::RateLimited {
    ///     retry_after: Some(Duration::from_secs(secs)),
    /// });
    /// breaker.try_acquire().unwrap().record(limited(30)); // trips, and the hint says 30 s
    /// assert_eq!(breaker.try_acquire().unwrap_err().retry_after(), Duration::from_secs(30));
    /// mock.increment(Duration::from_secs(5)); // the cooldown alone would be over
    /// assert_eq!(breaker.state(), State::Open);
    /// mock.increment(Duration::from_secs(25));
    /// assert_eq!(breaker.state(), State::HalfOpen);
    ///
    /// breaker.try_acquire().unwrap().record(limited(3_600)); // the probe: an hour, capped
    /// assert_eq!(breaker.try_acquire().unwrap_err().retry_after(), Duration::from_secs(60));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn max_hinted_open(mut self, max: Duration) -> Self {
        self.shape.hint_cap = Some(max);
        self
    }

    /// Spread each hinted deadline upward by up to `fraction` of its hint (default
    /// [`DEFAULT_HINT_JITTER`](crate::config::DEFAULT_HINT_JITTER), 0.1), so callers the
    /// dependency told the same thing do not all come back in the same second (hermes-agent
    /// PR #109234: 19 of 20 subagents woke together and hit the limit again). Only upward: no
    /// probe goes before the dependency asked. The spread is drawn once for each open period
    /// from the breaker's own seed, so every caller reads the same deadline, and breakers of one
    /// name in separate processes differ. Validated by `build`: in [0, 1] (`hint_jitter`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .cooldown(Duration::from_secs(1))
    ///     .hint_jitter(0.5)
    ///     .build()?;
    /// let hint = Some(Duration::from_secs(20));
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::RateLimited { retry_after: hint }));
    /// let wait = breaker.try_acquire().unwrap_err().retry_after();
    /// assert!(wait > Duration::from_secs(19) && wait <= Duration::from_secs(30), "{wait:?}");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn hint_jitter(mut self, fraction: f64) -> Self {
        self.shape.hint_jitter = Some(fraction);
        self
    }

    /// Trip at once on a rate-limited failure whose hint is longer than the cooldown (default
    /// off): the dependency said it will refuse calls for longer than the breaker would stay
    /// open, so waiting for the threshold only sends calls it will refuse. The trip's reason is
    /// [`TransitionReason::RetryAfter`]. A probe's hinted failure reopens as any failed probe
    /// does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State, TransitionReason};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(5)
    ///     .cooldown(Duration::from_secs(10))
    ///     .open_on_long_hint(true)
    ///     .build()?;
    /// let limited = |secs| Outcome::Failure(FailureKind::RateLimited {
    ///     retry_after: Some(Duration::from_secs(secs)),
    /// });
    /// assert_eq!(breaker.try_acquire().unwrap().record(limited(2)), None, "shorter: counted");
    /// let trip = breaker.try_acquire().unwrap().record(limited(120)).expect("a trip");
    /// assert_eq!(trip.reason(), TransitionReason::RetryAfter);
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn open_on_long_hint(mut self, on: bool) -> Self {
        self.shape.open_on_long_hint = Some(on);
        self
    }
}

impl CircuitBreaker {
    /// Keep the hint of `hint_ms` a counted failure of a permit of `generation` carried, for the
    /// open period it governs (see `state::hint`); trip at once if the breaker is set to and the
    /// hint is longer than the cooldown. The trip, if this made one.
    #[cold]
    #[inline(never)]
    pub(super) fn hear_hint(
        &self,
        generation: u32,
        probe: bool,
        hint_ms: u64,
    ) -> Option<Transition> {
        let cooldown = &self.inner.cold.cooldown;
        let shape = cooldown.load();
        let word = self.word();
        let governs = match word.kind() {
            Kind::Open if word.is_isolated() => return None,
            Kind::Open => word.generation(),
            _ if word.generation() == generation => next_generation(generation),
            _ => return None,
        };
        let now_ms = self.now_ms();
        if !cooldown.hear(governs, now_ms, hint_ms, &shape) {
            return None;
        }
        self.inner.settings.hear();
        let limits = self.limits();
        if !(shape.open_on_long_hint && !probe && hint_ms > limits.cooldown_ms) {
            return None;
        }
        let updated = self.update(word, |word| {
            let counted = word.failures().saturating_add(1);
            split(decide::window_trip(
                word,
                generation,
                TransitionReason::RetryAfter,
                counted,
                now_ms,
                &limits,
            ))
        });
        let transition = self.shaped(updated.answer?, &limits);
        self.announce(transition);
        Some(transition)
    }
}
