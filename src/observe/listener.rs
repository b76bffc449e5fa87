//! [`TransitionEvent`], what a listener hears, and the listener a breaker holds; telling one
//! transition to the trace and the listener.

use core::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crate::types::Transition;

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
///
/// Held as unwind-safe, so a breaker is `RefUnwindSafe` whatever its listener captures: a
/// listener's panic is caught and resumed by the herald after every waiting transition is told,
/// and the breaker's state (its word and counters, all atomics) is never left half-written by it.
pub(crate) struct Listener(AssertUnwindSafe<Arc<ListenerFn>>);

impl Clone for Listener {
    fn clone(&self) -> Self {
        Listener(AssertUnwindSafe(Arc::clone(&self.0)))
    }
}

impl Listener {
    pub(crate) fn new(f: impl Fn(&TransitionEvent<'_>) + Send + Sync + 'static) -> Self {
        Listener(AssertUnwindSafe(Arc::new(f)))
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Listener")
    }
}

/// Tell one transition: log it, then call the listener.
pub(super) fn transition(dependency: &str, transition: &Transition, listener: Option<&Listener>) {
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
        if transition.to() == crate::types::State::Open {
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
