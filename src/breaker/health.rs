//! Health checks (feature `tokio`): [`Builder::probe_with`] and [`Builder::build_arc`], the
//! prober's task that runs the check as the breaker's probe when the cooldown ends, and
//! [`CircuitBreaker::run_health_check`], the one step it takes, also callable by hand.
//!
//! The claim of the probe slot is the word's compare-and-swap, as any probe's (`acquire_decided`
//! with `by_prober`); the gate that keeps the slot from callers is `probe_gate`'s, and the
//! prober's state on the breaker is `prober`'s.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::sync::{Arc, Weak};

use tokio::sync::Notify;

use super::builder::Builder;
use super::machine::CircuitBreaker;
use super::permit::Permit;
use super::prober::{HealthCheck, PendingCheck, Prober};
use crate::classify::{FailureKind, Outcome};
use crate::config::{ConfigError, Problem};
use crate::types::Transition;

/// The longest the prober sleeps before it reads the breaker's deadline again. The deadline is
/// re-read at every wake (a cooldown may be lengthened meanwhile); the cap is for a clock that
/// does not follow the runtime's time (a mock clock moved by hand), which the prober then sees
/// within this interval.
pub const HEALTH_RECHECK: Duration = Duration::from_secs(1);

/// What one run of a health check as the probe did ([`CircuitBreaker::run_health_check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HealthProbe {
    /// The check's outcome; `Failure(Timeout)` if it did not finish within the probe timeout.
    pub outcome: Outcome,
    /// The transition the outcome made: closed on a success, reopened on a counted failure;
    /// `None` for an `Ignored` outcome (the slot is given back) or a stale one.
    pub transition: Option<Transition>,
}

impl Builder {
    /// Probe with `check` when the cooldown ends, in the background, instead of with the next
    /// call: a breaker with a health check is probed without waiting for traffic (so a pool can
    /// move its traffic back to the preferred member), and no user call is ever its probe.
    ///
    /// `check` is an async closure returning an [`Outcome`] or a
    /// [`Classified`](crate::Classified), or a ready-made [`HealthCheck`]. When the breaker's
    /// cooldown ends (on its clock, re-read at every wake: a cooldown lengthened meanwhile is
    /// waited out), its prober claims the probe slot through the word's compare-and-swap, as
    /// any probe is claimed, so the check runs once per cooldown however many callers race it.
    /// Callers meanwhile are blocked with `probe_in_flight` (retry after at most the
    /// [probe timeout](Self::probe_timeout)). The check's outcome is the probe's: a success closes
    /// the breaker, a counted failure reopens it (with the [backoff](Self::cooldown_backoff), if
    /// set), a check that does not finish within the probe timeout is a `Timeout` failure, and an
    /// `Ignored` outcome gives the slot back (the check runs again after
    /// [`HEALTH_RECHECK`]). If the check panics the slot is given back and the prober tries again
    /// after the probe timeout; if its runtime shuts down, the prober ends and callers take the
    /// probe slot again, as without a check. In fleet mode the check runs on the instance the
    /// fleet gives its probe to, so once per fleet.
    ///
    /// The check's probe is counted in the [metrics](Self::metrics) as a call is (admitted, and
    /// its outcome). A closed breaker's calls pay nothing for it: the prober sleeps until a
    /// transition wakes it. The prober runs on the Tokio runtime [`build_arc`](Self::build_arc)
    /// is called in (time enabled), and holds the breaker weakly between checks (a check in
    /// progress, at most the probe timeout long, holds it): it ends when the breaker is dropped. Validated by `build_arc`: inside a Tokio runtime (`probe_with`,
    /// [`Problem::NoRuntime`]), with [`probes`](Self::probes) 1 (`probe_with`,
    /// [`Problem::Conflict`]); `build` refuses it (`probe_with`, [`Problem::NotShared`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{BlockedReason, CircuitBreaker, FailureKind, Outcome, State};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), toolbreaker::ConfigError> {
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .cooldown(Duration::from_secs(5))
    ///     .probe_with(|| async { Outcome::Success }) // e.g. GET /health
    ///     .clock(clock)
    ///     .build_arc()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
    /// mock.increment(Duration::from_secs(5));
    /// // The cooldown is over: the probe is the health check's, not a caller's.
    /// let blocked = breaker.try_acquire().unwrap_err();
    /// assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
    /// // The prober wakes at the cooldown's end; here the step it takes is run by hand.
    /// breaker.run_health_check().await;
    /// assert_eq!(breaker.state(), State::Closed, "closed without a call");
    /// # Ok(()) }
    /// ```
    pub fn probe_with(mut self, check: impl Into<HealthCheck>) -> Self {
        self.health = PendingCheck(Some(check.into()));
        self
    }

    /// Build the breaker behind an `Arc` and start its health check, if one is set
    /// ([`probe_with`](Self::probe_with)).
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build); with a health check, `probe_with` when called outside a Tokio
    /// runtime ([`Problem::NoRuntime`]) or with more than one probe ([`Problem::Conflict`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, Outcome, config::Problem};
    ///
    /// let err = CircuitBreaker::builder()
    ///     .probe_with(|| async { Outcome::Success })
    ///     .build_arc()
    ///     .unwrap_err();
    /// assert_eq!((err.field(), err.problem()), ("probe_with", Problem::NoRuntime));
    /// ```
    pub fn build_arc(mut self) -> Result<Arc<CircuitBreaker>, ConfigError> {
        let check = self.health.0.take();
        let breaker = Arc::new(self.build()?);
        if let Some(check) = check {
            breaker.start_health_check(check)?;
        }
        Ok(breaker)
    }
}

impl CircuitBreaker {
    /// Start `check` as this breaker's health check, as [`Builder::probe_with`] does: for a
    /// breaker made elsewhere, such as a [`Registry`](crate::Registry)'s (in fleet mode, the
    /// check then runs once per fleet). Its prober runs on the current Tokio runtime. A registry
    /// that evicts idle breakers ([`idle_eviction`](crate::registry::RegistryBuilder::idle_eviction))
    /// may drop this one, and its prober with it: the breaker it makes next for the name has no
    /// health check. The check assumes one probe: a [`reconfigure`](Self::reconfigure) to
    /// several leaves the slots after the first to callers.
    ///
    /// # Errors
    ///
    /// `probe_with`: outside a Tokio runtime, or in one without its time driver
    /// ([`Problem::NoRuntime`]; Tokio's panic message for the missing driver is printed as it is
    /// caught), with more than one probe
    /// configured ([`Problem::Conflict`]), or when the breaker has a health check already
    /// ([`Problem::Duplicate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Outcome, Registry, config::Problem};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let registry = Registry::builder().build();
    /// let search = registry.get("search");
    /// search.start_health_check(|| async { Outcome::Success }).unwrap();
    /// let again = search.start_health_check(|| async { Outcome::Success }).unwrap_err();
    /// assert_eq!((again.field(), again.problem()), ("probe_with", Problem::Duplicate));
    /// # }
    /// ```
    pub fn start_health_check(
        self: &Arc<Self>,
        check: impl Into<HealthCheck>,
    ) -> Result<(), ConfigError> {
        let refused = |problem| Err(ConfigError::new("probe_with", problem));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return refused(Problem::NoRuntime);
        };
        // A runtime without its time driver would stop the prober at its first wait (Tokio
        // panics when a timer is made there): refused now, not found out at the first cooldown.
        let timers =
            std::panic::catch_unwind(|| drop(tokio::time::sleep(core::time::Duration::ZERO)));
        if timers.is_err() {
            return refused(Problem::NoRuntime);
        }
        if self.limits().probes != 1 {
            return refused(Problem::Conflict);
        }
        let notify = Arc::new(Notify::new());
        let wake = Arc::clone(&notify);
        let prober = Arc::new(Prober::new(check.into(), move || wake.notify_one()));
        if !self.set_prober(Arc::clone(&prober)) {
            return refused(Problem::Duplicate);
        }
        runtime.spawn(watch(Arc::downgrade(self), notify, Ended(prober)));
        Ok(())
    }

    /// The prober's one step: if the cooldown is over and the probe slot is free, claim it for
    /// the health check (through the word's compare-and-swap, and in fleet mode only with the
    /// fleet's grant), run the check under the probe timeout (on Tokio's time), and record its
    /// outcome. Returns what it did; `None` when no probe was due or claimed (no health check,
    /// closed, open, isolated, a probe in flight, or the fleet's probe is another instance's).
    ///
    /// The background prober takes this step when the cooldown ends; call it to drive a breaker
    /// on a mock clock, or to probe now. Whoever calls it, the check runs at most once per
    /// cooldown.
    ///
    /// # Panics
    ///
    /// If the check panics, the panic propagates and the probe slot is given back (its permit
    /// is dropped). A check run this way needs a Tokio runtime with time enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, TransitionReason};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), toolbreaker::ConfigError> {
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .clock(clock)
    ///     .probe_with(|| async { Outcome::Failure(FailureKind::Unavailable) })
    ///     .build_arc()?;
    /// assert_eq!(breaker.run_health_check().await, None, "closed: no probe is due");
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
    /// mock.increment(breaker.config().cooldown());
    /// let probe = breaker.run_health_check().await.expect("the cooldown is over");
    /// assert_eq!(probe.outcome, Outcome::Failure(FailureKind::Unavailable));
    /// assert_eq!(probe.transition.unwrap().reason(), TransitionReason::ProbeFailed);
    /// assert_eq!(breaker.run_health_check().await, None, "open again: the next is due later");
    /// # Ok(()) }
    /// ```
    pub async fn run_health_check(&self) -> Option<HealthProbe> {
        let check = self.prober()?.check.0.clone();
        if self.probe_due_in() != Some(Duration::ZERO) {
            return None;
        }
        let permit = self
            .acquire_decided(self.word(), None, true, |generation, probe| {
                Permit::new(self, generation, probe, self.counting())
            })
            .ok()?;
        if !permit.is_probe() {
            // Closed meanwhile: no call is made under this permit, and none is counted.
            core::mem::forget(permit);
            return None;
        }
        let timeout = self.config().probe_timeout();
        let outcome = match tokio::time::timeout(timeout, check.run()).await {
            Ok(classified) => classified.outcome(),
            Err(_elapsed) => Outcome::Failure(FailureKind::Timeout),
        };
        let transition = permit.record(outcome);
        Some(HealthProbe {
            outcome,
            transition,
        })
    }
}

/// The prober's task: sleep until the breaker admits a probe (re-reading the deadline at each
/// wake, at most [`HEALTH_RECHECK`] apart, and waiting on a wake alone while the breaker is
/// closed or isolated), take the step, and again, until the breaker is dropped. However the task
/// ends (the breaker dropped, the runtime shut down), the prober is marked ended.
/// The prober is marked ended by `ended`'s drop, with the task's future even if it never ran.
async fn watch(breaker: Weak<CircuitBreaker>, notify: Arc<Notify>, ended: Ended) {
    let _ended = ended;
    loop {
        let wait = {
            let Some(breaker) = breaker.upgrade() else {
                return;
            };
            let probe_timeout = breaker.config().probe_timeout();
            match breaker.probe_due_in() {
                Some(Duration::ZERO) => {
                    match CatchUnwind(Box::pin(breaker.run_health_check())).await {
                        // A verdict landed: the next wait is read from the new state.
                        Ok(Some(HealthProbe {
                            transition: Some(_),
                            ..
                        })) => continue,
                        // Ignored (the slot given back) or stale: not again before the recheck
                        // interval, whatever wakes the prober (callers do, while the slot is free).
                        Ok(Some(_)) => Wait::Quiet(HEALTH_RECHECK),
                        // Not claimed (a racing claim, the fleet's probe elsewhere): a wake (the
                        // fleet's grant) or the recheck interval.
                        Ok(None) => Wait::Until(HEALTH_RECHECK),
                        // The check panicked (its slot is back): not again before the probe timeout.
                        Err(()) => Wait::Quiet(probe_timeout),
                    }
                }
                Some(due) => Wait::Until(due.min(HEALTH_RECHECK)),
                None => Wait::Woken,
            }
        };
        match wait {
            Wait::Woken => notify.notified().await,
            Wait::Until(wait) => {
                let _woken_or_elapsed = tokio::time::timeout(wait, notify.notified()).await;
            }
            Wait::Quiet(wait) => tokio::time::sleep(wait).await,
        }
    }
}

/// What the prober waits for before its next look.
enum Wait {
    /// A wake alone: the breaker is closed or isolated.
    Woken,
    /// A wake or this long.
    Until(Duration),
    /// This long, whatever wakes it.
    Quiet(Duration),
}

/// Marks the prober ended when the task ends, however it ends.
struct Ended(Arc<Prober>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended();
    }
}

/// A future that catches a panic of the one it polls (the check's), so the prober outlives it.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_panic) => Poll::Ready(Err(())),
        }
    }
}
