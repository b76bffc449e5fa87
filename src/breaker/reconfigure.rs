//! Reconfiguration: new settings stored, then one read-modify-write of the word that publishes
//! them and makes what they change of the state (decided by `decide::reconfigure`).

use super::machine::CircuitBreaker;
use super::window::Windows;
use crate::config::{Config, Rates};
use crate::state::decide::{self, Rules};
use crate::sync;
use crate::types::Transition;

impl CircuitBreaker {
    /// Change the settings (the threshold, cooldown and probe timeout, the rate rules, the
    /// cooldown's shape, the probes) without losing the breaker's state.
    ///
    /// - Open: stays open; the new cooldown counts from the original opened-at time (so a
    ///   shorter cooldown that has already elapsed makes it half-open at once).
    /// - Half-open with a probe in flight: the new probe timeout counts from the probe's start.
    /// - Closed: keeps its consecutive failure count, and trips at once (reason
    ///   `failure_threshold`) if the new threshold is already reached; that transition is
    ///   returned. A failure recorded while the change is made is judged against the new
    ///   threshold or, if judged against the old one, checked again against the new one, so no
    ///   interleaving leaves a closed breaker at or past its threshold.
    /// - Isolated: stays isolated.
    /// - Rate rules: new ratios, a new minimum or a new slow-call threshold judge the window as it
    ///   stands (from the next judged call). A window added, removed, or of another kind or size
    ///   starts afresh: a closed breaker moves to a new generation, as after a
    ///   [`reset`](Self::reset), so calls admitted before the change no longer count.
    /// - Cooldown's shape: an open period keeps the cooldown it began with (a lowered cap applies
    ///   from the next reopen); with the backoff and jitter removed, the configured cooldown
    ///   applies at once.
    /// - Probes: a half-open period already started admits up to the new number.
    /// - The cap on calls in flight ([`Builder::max_in_flight`](super::Builder::max_in_flight),
    ///   [`Builder::adaptive_concurrency`](super::Builder::adaptive_concurrency)): calls in
    ///   flight keep their slots; a lowered cap refuses new calls until enough of them finish,
    ///   and a removed one admits every call. A new or changed adaptive limit starts from its
    ///   `initial`; the same one keeps its value.
    /// - Adaptive throttling: turned on, or given a new window, it counts afresh; a new `k`
    ///   judges the window as it stands; turned off, nothing is shed from the next call.
    ///
    /// Reconfigurations of one breaker are serialised; each call's decisions use the settings in
    /// force when they are made. The three settings are stored one after another, so a decision
    /// or a [`config`](Self::config) read during the change may see some new and some old.
    ///
    /// # Panics
    ///
    /// If a previous reconfiguration of this breaker panicked while holding its lock (it cannot:
    /// the lock guards only stores).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, Config, FailureKind, Outcome, State};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(5).build()?;
    /// for _ in 0..3 {
    ///     breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
    /// }
    /// let trip = breaker.reconfigure(Config::new(3, Duration::from_secs(10), Duration::from_secs(5))?);
    /// assert_eq!(trip.map(|t| t.to()), Some(State::Open), "3 failures reach the new threshold");
    /// assert_eq!(breaker.config().cooldown(), Duration::from_secs(10));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: Config) -> Option<Transition> {
        let transition = self.reconfigure_silently(config);
        // After the lock is released, so a listener may reconfigure this breaker in turn.
        if let Some(transition) = transition {
            self.announce(transition);
        }
        transition
    }

    /// `reconfigure` without announcing the transition: the registry announces after releasing
    /// its own lock.
    pub(crate) fn reconfigure_silently(&self, config: Config) -> Option<Transition> {
        let _serialised = sync::lock(&self.inner.cold.reconfigure);
        let limits = config.limits();
        // A rate rule's window exists before any word says the breaker has one.
        if limits.rates.is_some() {
            self.inner.windows.get_or_init(|| Box::new(Windows::new()));
        }
        // A new window (added, removed, or of another kind or size) starts afresh; new ratios, a
        // new minimum or a new slow-call threshold judge the window as it is.
        let window_of = |rates: Option<Rates>| rates.map(|rates| rates.window);
        let rules = Rules {
            window_changed: window_of(self.rates()) != window_of(limits.rates),
            changed: self.rates() != limits.rates,
        };
        self.set_concurrency(&config.concurrency());
        self.inner.cold.cooldown.store(limits.shape);
        self.inner.settings.store(limits);
        if let Some(windows) = self.inner.windows.get() {
            windows.set_rates(limits.rates);
        }
        self.reconfigure_throttle(config.throttling());
        // A read-modify-write of the word, even when it writes the same value: it comes after the
        // stores above, so a report whose swap reads from it (or from a later write) sees the new
        // settings, and one that swapped before it is seen here (the loom model of a lowered
        // threshold fails if this is a plain load). The cell's write is the release that
        // publishes the settings.
        let mut now = None;
        let updated = self.update(self.word(), |word| {
            let (next, transition) = decide::reconfigure(word, &limits, rules, || {
                *now.get_or_insert_with(|| self.now_ms())
            });
            (Some(next), transition)
        });
        updated.answer.map(|t| self.shaped(t, &limits))
    }
}
