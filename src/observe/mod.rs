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

use crate::sync::{self, Mutex};
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

/// Tells a breaker's transitions to its trace and its listener, one at a time and in their order
/// ([`Transition::is_after`]), whichever threads landed them.
///
/// Transitions land on the breaker's word in one order, but the callers that landed them tell of
/// them afterwards, and a caller can be overtaken between its write and its telling (or by a slow
/// listener). So each landed transition is put in a queue, and one thread at a time, the
/// *deliverer*, tells the queue in order; a caller that finds a deliverer at work leaves its
/// transitions to it and returns. A transition older than the last one told (its caller was
/// overtaken by a later transition's telling) is *superseded*: it is not told, so the last
/// transition heard is always the breaker's newest and a listener that keeps the last state it
/// heard never goes back. (It was counted when it landed.) A listener may use the breaker and
/// the registry: nothing is locked while it runs, and what it makes is queued behind it.
#[derive(Debug)]
pub(crate) struct Herald {
    listener: Option<Listener>,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    /// Landed and not yet told, in no particular order.
    pending: Vec<Transition>,
    /// Whether a thread is telling the queue.
    delivering: bool,
    /// The last transition told.
    last: Option<Transition>,
}

impl Herald {
    pub(crate) fn new(listener: Option<Listener>) -> Self {
        Herald {
            listener,
            queue: Mutex::new(Queue::default()),
        }
    }

    /// Queue `landed` (transitions that just landed, oldest first) and, unless another thread is
    /// delivering, tell every queued transition in order. Every one is told even if a listener
    /// panics; the first panic is resumed once the queue is empty, on the delivering thread.
    #[cold]
    pub(crate) fn tell(&self, dependency: &str, landed: impl IntoIterator<Item = Transition>) {
        let mut queue = sync::lock(&self.queue);
        queue.pending.extend(landed);
        if queue.delivering {
            return; // the deliverer tells them, after what it is telling now
        }
        queue.delivering = true;
        let mut panicked = None;
        // The oldest pending transition first.
        while let Some(oldest) =
            (0..queue.pending.len()).min_by(|&a, &b| order(&queue.pending[a], &queue.pending[b]))
        {
            let next = queue.pending.swap_remove(oldest);
            if queue.last.is_some_and(|last| !next.is_after(&last)) {
                continue; // superseded: a later transition was told already
            }
            queue.last = Some(next);
            drop(queue);
            let told = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                transition(dependency, &next, self.listener.as_ref());
            }));
            if let Err(panic) = told {
                panicked.get_or_insert(panic);
            }
            queue = sync::lock(&self.queue);
        }
        queue.delivering = false;
        drop(queue);
        if let Some(panic) = panicked {
            std::panic::resume_unwind(panic);
        }
    }
}

fn order(a: &Transition, b: &Transition) -> core::cmp::Ordering {
    if a.is_after(b) {
        core::cmp::Ordering::Greater
    } else if b.is_after(a) {
        core::cmp::Ordering::Less
    } else {
        core::cmp::Ordering::Equal
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

/// Tell one transition: log it, then call the listener.
fn transition(dependency: &str, transition: &Transition, listener: Option<&Listener>) {
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
