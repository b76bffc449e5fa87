//! The breaker's side of a health check (`Builder::probe_with`, in `health`): whether a
//! background prober claims the probe slot (so no user call is given it), and how to wake it.
//!
//! A breaker with no health check never reaches here: the prober is read only where the probe
//! slot is about to be claimed and where a transition is told, never on the closed path. The
//! prober's task and its runtime (feature `tokio`) are `health`'s.

// Without feature `tokio` no prober is started (the model tests start one by hand).
#![cfg_attr(not(feature = "tokio"), allow(dead_code))]

use core::fmt;
use core::panic::AssertUnwindSafe;
use std::sync::Arc;

use once_cell::race::OnceBox;

use super::budget::RetryBudget;
use super::hook::Hook;
#[cfg(feature = "tokio")]
use crate::classify::Classified;
use crate::config::ConfigError;
#[cfg(feature = "tokio")]
use crate::config::Problem;
use crate::sync::{AtomicU64, Ordering};

/// A health check: an async function run as the breaker's probe when its cooldown ends
/// ([`Builder::probe_with`](super::Builder::probe_with)), whose [`Outcome`](crate::Outcome) (or
/// [`Classified`]) is the probe's. Cheap to clone (one `Arc`).
///
/// Made from any `Fn() -> impl Future<Output = O> + Send + 'static` with `O:
/// Into<Classified>`, through [`new`](Self::new) or `From`; ready-made ones are
/// `HealthCheck::http_get` (feature `reqwest`) and `HealthCheck::mcp_ping` (feature `mcp`).
///
/// # Examples
///
/// ```
/// use toolbreaker::{Outcome, breaker::HealthCheck};
///
/// let check = HealthCheck::new(|| async { Outcome::Success });
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(check.run().await.outcome(), Outcome::Success);
/// # });
/// ```
#[cfg(feature = "tokio")]
#[derive(Clone)]
pub struct HealthCheck {
    check: Arc<dyn Fn() -> CheckFuture + Send + Sync>,
}

/// The future of one run of a [`HealthCheck`].
#[cfg(feature = "tokio")]
type CheckFuture = core::pin::Pin<Box<dyn Future<Output = Classified> + Send>>;

#[cfg(feature = "tokio")]
impl HealthCheck {
    /// A health check that runs `check` and takes the outcome of its future.
    pub fn new<F, Fut, O>(check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: Into<Classified>,
    {
        HealthCheck {
            check: Arc::new(move || {
                let run = check();
                Box::pin(async move { run.await.into() }) as CheckFuture
            }),
        }
    }

    /// Run the check once, with no timeout (the breaker's prober applies its probe timeout).
    pub fn run(&self) -> impl Future<Output = Classified> + Send + 'static {
        (self.check)()
    }
}

#[cfg(feature = "tokio")]
impl<F, Fut, O> From<F> for HealthCheck
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = O> + Send + 'static,
    O: Into<Classified>,
{
    fn from(check: F) -> Self {
        HealthCheck::new(check)
    }
}

#[cfg(feature = "tokio")]
impl fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthCheck").finish_non_exhaustive()
    }
}

/// The builder's health check not yet started (feature `tokio`; nothing without it): `build`
/// refuses it (a breaker returned by value cannot be reached by a background task),
/// `build_arc` starts it.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingCheck(#[cfg(feature = "tokio")] pub(crate) Option<HealthCheck>);

impl PendingCheck {
    /// `Err` naming `probe_with` when a check is set: `build` cannot start it.
    pub(crate) fn refuse(&self) -> Result<(), ConfigError> {
        #[cfg(feature = "tokio")]
        if self.0.is_some() {
            return Err(ConfigError::new("probe_with", Problem::NotShared));
        }
        Ok(())
    }
}

/// What the breaker knows of its health check's task: whether it runs, its wake, and the check.
pub(crate) struct Prober {
    /// 1 while the task runs; 0 once it ended (its runtime shut down, or it was aborted), so a
    /// breaker whose prober is gone gives the probe slot to callers again.
    alive: AtomicU64,
    /// Wakes the task: a transition landed, a caller was blocked for the prober's probe, the
    /// fleet granted this instance the probe, or the breaker was dropped. Unwind-safe by
    /// assertion, as the fleet's wake is: a wake leaves nothing half-changed.
    wake: AssertUnwindSafe<Box<dyn Fn() + Send + Sync>>,
    /// The check the task runs (and `CircuitBreaker::run_health_check`).
    #[cfg(feature = "tokio")]
    pub(crate) check: AssertUnwindSafe<HealthCheck>,
}

impl fmt::Debug for Prober {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prober")
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

impl Prober {
    /// A prober running `check`, whose task runs, woken by `wake`.
    #[cfg(feature = "tokio")]
    pub(crate) fn new(check: HealthCheck, wake: impl Fn() + Send + Sync + 'static) -> Self {
        Prober {
            alive: AtomicU64::new(1),
            wake: AssertUnwindSafe(Box::new(wake)),
            check: AssertUnwindSafe(check),
        }
    }

    /// A prober with no check, for the model tests of its claim (no tokio under loom).
    #[cfg(all(loom, test))]
    pub(crate) fn without_check(wake: impl Fn() + Send + Sync + 'static) -> Self {
        Prober {
            alive: AtomicU64::new(1),
            wake: AssertUnwindSafe(Box::new(wake)),
        }
    }

    /// Whether the task still runs: while it does, the probe slot is the prober's.
    ///
    /// Acquire, paired with `ended`'s Release: a caller that reads the prober gone also sees what
    /// its task did before it ended (a probe permit it dropped gave the slot back through the
    /// word, whose own ordering covers the slot; this pair orders only the flag with it).
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire) == 1
    }

    /// The task ended: callers take the probe slot again.
    pub(crate) fn ended(&self) {
        self.alive.store(0, Ordering::Release);
    }

    /// Wake the task (a no-op once it ended).
    pub(crate) fn wake(&self) {
        (*self.wake)();
    }
}

/// What is attached to a breaker beyond its own state, behind the one pointer of `Cold::attached`
/// (set when the first is attached, so a breaker with neither has no box): the hook (fleet
/// mode's tap, given when the breaker is made) and a health check's prober (set once, when
/// started), and a registry's retry budget for the dependency (set once; its rules change in
/// place).
#[derive(Debug, Default)]
pub(crate) struct Attached {
    pub(crate) hook: Option<Arc<dyn Hook>>,
    pub(crate) prober: OnceBox<ProberSlot>,
    pub(crate) retry_budget: OnceBox<RetryBudget>,
}

impl Attached {
    /// What a breaker made with `hook` starts with: nothing attached without one.
    pub(crate) fn with_hook(hook: Option<Arc<dyn Hook>>) -> OnceBox<Attached> {
        let attached = OnceBox::new();
        if let Some(hook) = hook {
            let _ = attached.set(Box::new(Attached {
                hook: Some(hook),
                ..Attached::default()
            }));
        }
        attached
    }
}

/// The breaker's hold on its prober: dropped with the breaker, it wakes the task, which finds
/// the breaker gone and ends.
#[derive(Debug)]
pub(crate) struct ProberSlot(pub(crate) Arc<Prober>);

impl Drop for ProberSlot {
    fn drop(&mut self) {
        self.0.wake();
    }
}
