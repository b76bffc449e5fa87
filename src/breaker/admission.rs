//! The cap on calls in flight, the builder's side ([`Builder::max_in_flight`],
//! [`Builder::adaptive_concurrency`]), and the validation of every setting into a [`Config`]
//! (`build_config`).

use super::builder::Builder;
use crate::config::{Config, ConfigError, Limit};

impl Builder {
    /// A fixed cap on calls in flight: at most `n` calls admitted and not yet recorded or
    /// dropped at any instant, however many threads race (default: no cap). A call over it is
    /// refused as [`Saturated`](crate::BlockedReason::Saturated): the dependency is busy, not
    /// down, so the refusal is never counted as a failure, never moves the breaker, and a pool
    /// tries another member. The cap is checked after the breaker admits: an open breaker
    /// refuses without touching it, and a half-open probe needs a slot too. Validated by
    /// `build`: `n` = 0 or `u32::MAX` is a [`ConfigError`] naming `max_in_flight`.
    ///
    /// With [`adaptive_concurrency`](Self::adaptive_concurrency) too, `n` bounds the adaptive
    /// limit: the cap in force is the adaptive value, never above `n`.
    ///
    /// Costs: a capped call adds one compare-and-swap when admitted and one atomic subtraction
    /// when its permit is used up, on a cache line of their own; a breaker without a cap pays
    /// one load and a predictable branch.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{BlockedReason, CircuitBreaker, Outcome, State};
    ///
    /// let breaker = CircuitBreaker::builder().max_in_flight(2).metrics(true).build()?;
    /// let held = [breaker.try_acquire().unwrap(), breaker.try_acquire().unwrap()];
    /// let refused = breaker.try_acquire().unwrap_err();
    /// assert_eq!((refused.reason(), refused.state()), (BlockedReason::Saturated, State::Closed));
    /// for permit in held {
    ///     permit.record(Outcome::Success);
    /// }
    /// assert!(breaker.try_acquire().is_ok(), "slots given back");
    /// let metrics = breaker.metrics().unwrap();
    /// assert_eq!((metrics.saturated, metrics.blocked), (1, 0));
    /// assert_eq!(CircuitBreaker::builder().max_in_flight(0).build().unwrap_err().field(), "max_in_flight");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn max_in_flight(mut self, n: u32) -> Self {
        self.concurrency.max_in_flight = Some(n);
        self
    }

    /// An adaptive cap on calls in flight: the limit moves between its `min` and `max` from
    /// each call's outcome and latency ([`Limit`] gives the rules). Calls are then timed on the
    /// breaker's clock (`call`, `run`, `run_with_timeout`, the pipeline and the tower service
    /// do it; a bare permit is timed by recording with
    /// [`record_elapsed`](crate::Permit::record_elapsed)). Refusals are as for
    /// [`max_in_flight`](Self::max_in_flight), which bounds the adaptive limit when both are
    /// set. Validated by `build`: see [`Limit`].
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, FailureKind, Limit, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder().adaptive_concurrency(Limit::aimd(2, 64)).build()?;
    /// assert_eq!(breaker.concurrency_limit(), Some(20));
    /// // A counted failure backs AIMD off: 20 × 0.9.
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(breaker.concurrency_limit(), Some(18));
    /// assert_eq!(breaker.config().adaptive_concurrency(), Some(Limit::aimd(2, 64)));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn adaptive_concurrency(mut self, limit: Limit) -> Self {
        self.concurrency.adaptive = Some(limit);
        self
    }

    /// Validate the settings into a [`Config`] (for a [`Registry`](crate::Registry)); the clock,
    /// if set, is not part of it.
    ///
    /// # Errors
    ///
    /// As [`Config::new`], and for the rate rules: a ratio outside (0, 1] (`failure_rate`,
    /// `slow_call_rate`), a zero slow-call threshold (`slow_call_threshold`), a window of 0 or
    /// longer than [`MAX_DURATION`](crate::config::MAX_DURATION) (`window`), `minimum_calls` of 0
    /// or above a count window, and a `window` or `minimum_calls` with no rate rule; for the cap
    /// on calls in flight, a `max_in_flight` of 0 and an invalid adaptive limit (naming
    /// `adaptive_concurrency.FIELD`: see [`Limit`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::CircuitBreaker;
    ///
    /// let config = CircuitBreaker::builder()
    ///     .failure_threshold(3)
    ///     .cooldown(Duration::from_secs(10))
    ///     .build_config()?;
    /// assert_eq!(config.probe_timeout(), Duration::from_secs(30), "the default");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn build_config(&self) -> Result<Config, ConfigError> {
        self.throttled(
            Config::with_rules(
                self.failure_threshold,
                self.cooldown,
                self.probe_timeout,
                &self.rates,
                &self.shape,
                self.probes,
            )?
            .with_concurrency(&self.concurrency)?,
        )
    }
}
