//! What a breaker tells the outside world: transition listeners and, with the `tracing`
//! feature, events.
//!
//! Events go to the `toolbreaker` target: transitions at `info` (`warn` when opening), blocked
//! calls and counted failures at `debug`. They carry the dependency's name, states, reasons,
//! failure kinds, counts and durations, and nothing from a request or response: no arguments,
//! bodies, headers, URLs or error messages, which may hold secrets. Without the feature every
//! function here is empty.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

use crate::blocked::Blocked;
use crate::classify::FailureKind;
use crate::state::Transition;

/// A transition as a listener sees it: which dependency, and what changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransitionEvent<'a> {
    dependency: &'a str,
    transition: &'a Transition,
}

impl<'a> TransitionEvent<'a> {
    /// The breaker's name: its dependency (empty for an unnamed breaker).
    pub fn dependency(&self) -> &'a str {
        self.dependency
    }

    /// The transition: from, to, generation, reason, failures and cooldown.
    pub fn transition(&self) -> &'a Transition {
        self.transition
    }
}

type ListenerFn = dyn Fn(&TransitionEvent<'_>) + Send + Sync;

/// A registered transition listener.
#[derive(Clone)]
pub(crate) struct Listener(Arc<ListenerFn>);

impl Listener {
    pub(crate) fn new(f: impl Fn(&TransitionEvent<'_>) + Send + Sync + 'static) -> Self {
        Listener(Arc::new(f))
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Listener")
    }
}

/// Call `tell` for every item, even when one call panics, and resume the first panic once all
/// have been told: listeners are the user's code, and one failing alert hook must not lose the
/// transitions after it.
pub(crate) fn tell_each<T>(items: impl IntoIterator<Item = T>, mut tell: impl FnMut(T)) {
    let mut panicked = None;
    for item in items {
        let told = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tell(item)));
        if let Err(panic) = told {
            panicked.get_or_insert(panic);
        }
    }
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }
}

/// A transition landed: log it, then call the listener.
pub(crate) fn transition(dependency: &str, transition: &Transition, listener: Option<&Listener>) {
    #[cfg(feature = "tracing")]
    {
        macro_rules! transition_event {
            ($level:expr) => {
                tracing::event!(
                    target: "toolbreaker",
                    $level,
                    dependency,
                    from = transition.from().as_str(),
                    to = transition.to().as_str(),
                    generation = transition.generation(),
                    reason = transition.reason().as_str(),
                    failures = transition.failures(),
                    cooldown_ms = millis(transition.cooldown()),
                    "circuit breaker transition"
                )
            };
        }
        if transition.to() == crate::State::Open {
            transition_event!(tracing::Level::WARN);
        } else {
            transition_event!(tracing::Level::INFO);
        }
    }
    if let Some(Listener(listener)) = listener {
        listener(&TransitionEvent {
            dependency,
            transition,
        });
    }
}

/// A call was blocked. The level check is inline; the event, when wanted, is out of line.
#[inline(always)]
pub(crate) fn blocked(dependency: &str, blocked: &Blocked) {
    #[cfg(feature = "tracing")]
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        blocked_event(dependency, blocked);
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (dependency, blocked);
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn blocked_event(dependency: &str, blocked: &Blocked) {
    tracing::debug!(
        target: "toolbreaker",
        dependency,
        state = blocked.state().as_str(),
        reason = blocked.reason().as_str(),
        retry_after_ms = millis(blocked.retry_after()),
        "call blocked"
    );
}

/// A counted failure was recorded; `elapsed` is the call's duration when the caller timed it (the
/// pipeline does; a bare permit is not timed, so the healthy path reads no clock).
#[inline(always)]
pub(crate) fn failure(dependency: &str, kind: &FailureKind, elapsed: Option<Duration>) {
    #[cfg(feature = "tracing")]
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        failure_event(dependency, kind, elapsed);
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (dependency, kind, elapsed);
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn failure_event(dependency: &str, kind: &FailureKind, elapsed: Option<Duration>) {
    tracing::debug!(
        target: "toolbreaker",
        dependency,
        failure_kind = kind.as_str(),
        duration_ms = elapsed.map(|d| d.as_secs_f64() * 1e3),
        "counted failure"
    );
}

#[cfg(feature = "tracing")]
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
