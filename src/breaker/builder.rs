//! [`Builder`]: a breaker's settings, clock, name, listener and counting, validated by `build`.

use core::time::Duration;

use smol_str::SmolStr;

use super::machine::{CircuitBreaker, Extras};
use crate::config::{
    ConcurrencySettings, Config, ConfigError, DEFAULT_COOLDOWN, DEFAULT_PROBE_TIMEOUT,
    RateSettings, ShapeSettings, Window,
};
use crate::observe::{Listener, TransitionEvent};

impl CircuitBreaker {
    /// A builder with the documented defaults (threshold 5, cooldown 30 s, probe timeout 30 s,
    /// the system clock, no name, no listener, no counting).
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// Builds a [`CircuitBreaker`]; start from [`CircuitBreaker::builder`].
///
/// Defaults: threshold 5, cooldown 30 s, probe timeout 30 s, the system's monotonic clock
/// (`quanta::Clock::new()`).
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    /// `None`: not set (5 unless a rate rule is set; then off).
    pub(super) failure_threshold: Option<u32>,
    pub(super) rates: RateSettings,
    pub(super) shape: ShapeSettings,
    pub(super) probes: u32,
    pub(super) throttling: Option<(f64, Duration)>,
    pub(super) cooldown: Duration,
    pub(super) probe_timeout: Duration,
    clock: Option<quanta::Clock>,
    name: SmolStr,
    listener: Option<Listener>,
    metrics: bool,
    pub(super) health: super::prober::PendingCheck,
    /// The cap on calls in flight (`admission`).
    pub(super) concurrency: ConcurrencySettings,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            failure_threshold: None,
            rates: RateSettings::default(),
            shape: ShapeSettings::default(),
            probes: 1,
            throttling: None,
            cooldown: DEFAULT_COOLDOWN,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            clock: None,
            name: SmolStr::default(),
            listener: None,
            metrics: false,
            health: Default::default(),
            concurrency: ConcurrencySettings::default(),
        }
    }
}

impl Builder {
    /// Consecutive counted failures that trip the breaker (the consecutive rule). Default 5
    /// when no rate rule is set; with a rate rule, the consecutive rule applies only if this is
    /// set. Validated by `build`.
    pub fn failure_threshold(mut self, failures: u32) -> Self {
        self.failure_threshold = Some(failures);
        self
    }

    /// The failure-rate rule: trip when counted failures / judged calls in the
    /// [window](Self::window) reach `ratio`, once the window holds
    /// [`minimum_calls`](Self::minimum_calls). Judged calls are those recorded as a success or
    /// a counted failure: `Ignored` outcomes (and dropped permits) are not judged. The ratio is
    /// kept to the millionth. Validated by `build`: it must be in (0, 1] (`failure_rate`).
    ///
    /// With only a rate rule set, the defaults are: window [`Window::Calls`]`(100)`, minimum
    /// calls 10 (or the window's size if smaller), and no consecutive rule. Set
    /// [`failure_threshold`](Self::failure_threshold) as well to keep both rules: the first
    /// that is met trips (a call that meets both trips with reason `failure_threshold`). A TOML
    /// section inherits `[default]`'s rate rule and cannot remove it; give the dependency its
    /// rules in a file whose `[default]` has none.
    ///
    /// | | toolbreaker | resilience4j 2.x | Polly v8 |
    /// |---|---|---|---|
    /// | failure ratio | none: set it | 50 % | 0.1 |
    /// | window | last 100 calls | last 100 calls | 30 s |
    /// | minimum calls | 10 | 100 | 100 |
    /// | slow calls | off: set them | 60 s, 100 % | none |
    /// | probes in half-open | 1 | 10 | 1 |
    /// | open for | 30 s | 60 s | 5 s |
    ///
    /// The window follows resilience4j (a count window, which judges a tool called a few times a
    /// minute as well as one called thousands of times). The minimum does not: an agent calls a
    /// tool a few dozen times in a run, and a minimum of 100 would never let the rule judge; 10
    /// still keeps one unlucky call from tripping the breaker. No ratio is assumed, because the
    /// two libraries disagree by five times and the right one depends on the tool.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State, TransitionReason, Window};
    ///
    /// // A dependency that fails every third call: never 5 failures in a row, but a third of
    /// // its calls.
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_rate(0.3)
    ///     .window(Window::Calls(10))
    ///     .minimum_calls(6)
    ///     .build()?;
    /// let failed = Outcome::Failure(FailureKind::Unavailable);
    /// let mut trip = None;
    /// for call in 1..=6 {
    ///     let outcome = if call % 3 == 0 { failed } else { Outcome::Success };
    ///     trip = breaker.try_acquire().unwrap().record(outcome);
    /// }
    /// assert_eq!(trip.unwrap().reason(), TransitionReason::FailureRate, "2 of 6 ≥ 30 %");
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn failure_rate(mut self, ratio: f64) -> Self {
        self.rates.failure_rate = Some(ratio);
        self
    }

    /// The slow-call rule: a call that took at least `threshold` is slow, whether it succeeded
    /// or failed; trip when slow calls / judged calls in the window reach `ratio`, under the same
    /// window and minimum as the failure rate. Calls are timed by
    /// [`CircuitBreaker::call`] and [`run`](CircuitBreaker::run) (on the breaker's clock) and by
    /// the guard pipeline (on tokio's) when this rule is set; a caller holding a permit reports
    /// the time with [`Permit::record_elapsed`](super::Permit::record_elapsed). Validated by
    /// `build`: `threshold` above zero (`slow_call_threshold`), `ratio` in (0, 1]
    /// (`slow_call_rate`).
    pub fn slow_calls(mut self, threshold: Duration, ratio: f64) -> Self {
        self.rates.slow_calls = Some((threshold, ratio));
        self
    }

    /// The window the rate rules judge (default [`Window::Calls`]`(100)`); see [`Window`] for
    /// its buckets. Validated by `build`: at least 1 call or 1 ms, and a rate rule must be set.
    pub fn window(mut self, window: Window) -> Self {
        self.rates.window = Some(window);
        self
    }

    /// The fewest judged calls in the window before a rate is judged (default 10, or a count
    /// window's size if smaller). Once the window holds this many, the rates are judged on
    /// every call, before the window fills. Validated by `build`: at least 1, at most a count
    /// window's size, and a rate rule must be set.
    pub fn minimum_calls(mut self, calls: u32) -> Self {
        self.rates.minimum_calls = Some(calls);
        self
    }

    /// How long the breaker stays open before it admits a probe (default 30 s). Validated by `build`.
    pub fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Let the cooldown back off while the dependency keeps failing its probes: each reopen
    /// that comes without a close in between (a failed or timed-out probe) multiplies the
    /// cooldown by `multiplier`, up to `max`; a close resets it to the configured
    /// [`cooldown`](Self::cooldown). A trip from closed always starts from the configured one.
    /// [`Blocked::retry_after`](crate::Blocked::retry_after), the model's `retry_after_ms` and
    /// [`Transition::cooldown`](crate::Transition::cooldown) give the cooldown in force.
    /// The multiplier is kept to the millionth, so one below 1.0000005 is no backoff. Validated
    /// by `build`: `multiplier` finite and at least 1 (`cooldown_multiplier`), `max` at least
    /// the cooldown and at most [`MAX_DURATION`](crate::config::MAX_DURATION) (`max_cooldown`).
    ///
    /// In fleet mode the probe lease the fleet grants waits out the cooldown in force on the
    /// instance that asks for it.
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
    ///     .cooldown(Duration::from_secs(1))
    ///     .cooldown_backoff(2.0, Duration::from_secs(3))
    ///     .clock(clock)
    ///     .build()?;
    /// let failed = Outcome::Failure(FailureKind::Unavailable);
    /// breaker.try_acquire().unwrap().record(failed);
    /// let mut cooldowns = vec![breaker.try_acquire().unwrap_err().retry_after()];
    /// for _ in 0..3 {
    ///     mock.increment(*cooldowns.last().unwrap());
    ///     breaker.try_acquire().expect("the probe").record(failed); // reopens
    ///     cooldowns.push(breaker.try_acquire().unwrap_err().retry_after());
    /// }
    /// let secs = |s| Duration::from_secs(s);
    /// assert_eq!(cooldowns, [secs(1), secs(2), secs(3), secs(3)], "doubled, up to the cap");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn cooldown_backoff(mut self, multiplier: f64, max: Duration) -> Self {
        self.shape.backoff = Some((multiplier, max));
        self
    }

    /// Spread each cooldown by up to ± `fraction` of itself (default 0), so that breakers that
    /// opened together do not all probe at once. The spread of an open period is fixed when it
    /// begins (every caller reads the same end) and differs from one period, and one breaker, to
    /// the next. It applies after the backoff, so a cooldown may end up to `fraction` above its
    /// `max`. Validated by `build`: `fraction` in [0, 1) (`cooldown_jitter`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .cooldown(Duration::from_secs(10))
    ///     .cooldown_jitter(0.2)
    ///     .build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// let wait = breaker.try_acquire().unwrap_err().retry_after();
    /// assert!(wait >= Duration::from_secs(8) && wait <= Duration::from_secs(12), "{wait:?}");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn cooldown_jitter(mut self, fraction: f64) -> Self {
        self.shape.jitter = Some(fraction);
        self
    }

    /// How many probes half-open admits (default 1; resilience4j's default is 10). Exactly
    /// `probes` callers are admitted however many race; the breaker closes when all of them
    /// succeed, and a counted failure of any one reopens it (the others' outcomes are then stale).
    /// A probe whose outcome is `Ignored`, or whose permit is dropped, gives its slot back to the
    /// next caller. One lease covers them all: it runs from the first probe's admission for
    /// the [probe timeout](Self::probe_timeout), and if the verdict is not in by its end the
    /// breaker reopens. Validated by `build`: 1 to [`MAX_PROBES`](crate::config::MAX_PROBES)
    /// (`probes`).
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
    ///     .probes(3)
    ///     .clock(clock)
    ///     .build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Connect));
    /// mock.increment(breaker.config().cooldown());
    /// let probes: Vec<_> = (0..3).map(|_| breaker.try_acquire().expect("a probe")).collect();
    /// assert!(breaker.try_acquire().is_err(), "three, no more");
    /// for probe in probes {
    ///     assert!(probe.is_probe());
    ///     probe.record(Outcome::Success);
    /// }
    /// assert_eq!(breaker.state(), State::Closed, "closed when all three succeeded");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn probes(mut self, probes: u32) -> Self {
        self.probes = probes;
        self
    }

    /// The probe's lease (default 30 s). Validated by `build`.
    pub fn probe_timeout(mut self, probe_timeout: Duration) -> Self {
        self.probe_timeout = probe_timeout;
        self
    }

    /// Start from a validated [`Config`].
    pub fn config(mut self, config: Config) -> Self {
        self.failure_threshold = config.failure_threshold();
        self.rates = config.rate_settings();
        self.shape = config.shape_settings();
        self.probes = config.probes();
        self.throttling = config.adaptive_throttling();
        self.cooldown = config.cooldown();
        self.probe_timeout = config.probe_timeout();
        self.concurrency = config.concurrency().settings();
        self
    }

    /// The clock the breaker reads. Tests pass `quanta::Clock::mock()` and advance it by hand.
    pub fn clock(mut self, clock: quanta::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The dependency's name, carried by the breaker's events and metrics (default: empty).
    pub fn name(mut self, name: impl AsRef<str>) -> Self {
        self.name = SmolStr::new(name);
        self
    }

    /// Call `listener` after each transition of this breaker (for alerts, a state gauge), with the
    /// dependency's name and the transition. A later call replaces an earlier listener.
    ///
    /// Transitions are heard one at a time, in the breaker's order ([`Transition::is_after`]),
    /// after the write that landed them and outside any retry loop or lock, so the listener may
    /// take its time and may use the breaker. The caller whose write landed a transition tells
    /// it, unless another thread is telling this breaker's transitions at that moment: then that
    /// thread tells it after its own, and the caller returns at once. A transition is
    /// *superseded*, and not heard, when a later one was told before it could be, or when more
    /// than 16 wait behind a listener slower than the breaker's transitions (the oldest goes); it
    /// is still counted in the [metrics](Self::metrics). So the transitions heard never go back,
    /// the last one heard is the newest, and a gauge that keeps the last state heard ends on the
    /// breaker's state. Each one heard chains on the one before (`from` is the previous `to`)
    /// unless one between was superseded. The thread telling tells until none wait: it is held
    /// while other threads land transitions faster than the listener hears them, and for at most
    /// 16 tellings after they stop. If the listener panics, the panic is resumed on that
    /// thread, from whatever call it was making (a `call` whose probe closed the breaker then
    /// unwinds and its value is lost), once every waiting transition has been told.
    ///
    /// [`Transition::is_after`]: crate::Transition::is_after
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, TransitionReason};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let breaker = CircuitBreaker::builder()
    ///     .name("search")
    ///     .failure_threshold(1)
    ///     .on_transition(move |event| {
    ///         log.lock().unwrap().push((event.dependency().to_owned(), event.transition().reason()));
    ///     })
    ///     .build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(*seen.lock().unwrap(), [("search".to_owned(), TransitionReason::FailureThreshold)]);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn on_transition(
        mut self,
        listener: impl Fn(&TransitionEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Listener::new(listener));
        self
    }

    /// Count admissions, rejections, outcomes and transitions (default: off). Read them with
    /// [`CircuitBreaker::metrics`].
    ///
    /// Counting costs one thread-striped atomic add per call, made when its permit is used up
    /// (recorded or dropped), and one per rejection; no count shares a cache line between threads
    /// that land on different stripes. See the benchmarks for the measured cost. Off, the hot
    /// path pays one predictable branch on a flag the permit carries.
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// Build the breaker, closed with no failures.
    ///
    /// # Errors
    ///
    /// As [`Config::new`]: a [`ConfigError`] naming the first invalid field (or `probe_with`).
    ///
    /// # Examples
    ///
    /// ```
    /// use {std::time::Duration, toolbreaker::CircuitBreaker};
    ///
    /// let err = CircuitBreaker::builder().cooldown(Duration::ZERO).build().unwrap_err();
    /// assert_eq!(err.field(), "cooldown");
    /// ```
    pub fn build(self) -> Result<CircuitBreaker, ConfigError> {
        self.health.refuse()?;
        Ok(CircuitBreaker::with_extras(
            self.build_config()?,
            self.clock.unwrap_or_default(),
            Extras {
                name: self.name,
                listener: self.listener,
                metrics: self.metrics,
                hook: None,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_invalid_field_is_reported_by_build() {
        let err = CircuitBreaker::builder()
            .failure_threshold(0)
            .cooldown(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err.field(), "failure_threshold");
    }
}
