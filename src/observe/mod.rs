//! What a breaker tells the outside world: transition listeners, counters (opt-in) and, with
//! the `tracing` feature, events; with the `metrics` feature, the counters' export.
//!
//! Events go to the `toolbreaker` target: transitions at `info` (`warn` when opening), blocked
//! calls and counted failures at `debug`. They carry the dependency's name, states, reasons,
//! failure kinds, counts and durations, and nothing from a request or response: no arguments,
//! bodies, headers, URLs or error messages, which may hold secrets. Without the feature every
//! function here is empty.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

mod counters;
#[cfg(feature = "metrics")]
mod export;

pub(crate) use self::counters::{Counter, Counters};
pub use self::counters::{FailureCounts, Metrics, TransitionCounts};

use crate::types::{Blocked, Transition};

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
pub(crate) struct Listener(Arc<Box<ListenerFn>>);

impl Listener {
    pub(crate) fn new(f: impl Fn(&TransitionEvent<'_>) + Send + Sync + 'static) -> Self {
        // Boxed inside the `Arc` so the handle is one pointer: it sits in the breaker's padded
        // block beside the word, which must stay one cache-line pair.
        Listener(Arc::new(Box::new(f)))
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
                    cooldown_ms = crate::time::millis_floor(transition.cooldown()),
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
pub(crate) fn blocked(blocked: &Blocked) {
    #[cfg(feature = "tracing")]
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        blocked_event(blocked);
    }
    #[cfg(not(feature = "tracing"))]
    let _ = blocked;
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn blocked_event(blocked: &Blocked) {
    tracing::debug!(
        target: "toolbreaker",
        dependency = blocked.dependency(),
        state = blocked.state().as_str(),
        reason = blocked.reason().as_str(),
        retry_after_ms = crate::time::millis_floor(blocked.retry_after()),
        "call blocked"
    );
}

/// A counted failure was recorded; `elapsed` is the call's duration when the caller timed it (the
/// pipeline does; a bare permit is not timed, so the healthy path reads no clock).
#[inline(always)]
pub(crate) fn failure(dependency: &str, kind: &'static str, elapsed: Option<Duration>) {
    #[cfg(feature = "tracing")]
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        failure_event(dependency, kind, elapsed);
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (dependency, kind, elapsed);
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn failure_event(dependency: &str, kind: &'static str, elapsed: Option<Duration>) {
    tracing::debug!(
        target: "toolbreaker",
        dependency,
        failure_kind = kind,
        duration_ms = elapsed.map(|d| d.as_secs_f64() * 1e3),
        "counted failure"
    );
}
