//! [`Herald`]: a breaker's transitions told in their order, one thread at a time, whatever a
//! listener does.

use std::collections::VecDeque;

use super::listener::{Listener, transition};
use crate::sync::{self, Mutex};
use crate::types::Transition;

/// Tells a breaker's transitions to its trace and its listener, one at a time and in their order
/// ([`Transition::is_after`]), whichever threads landed them.
///
/// Transitions land on the breaker's word in one order, but the callers that landed them tell of
/// them afterwards, and a caller can be overtaken between its write and its telling (or by a slow
/// listener). So each landed transition is put in a queue, and one thread at a time, the
/// *deliverer*, tells the queue in order; a caller that finds a deliverer at work leaves its
/// transitions to it and returns. A transition is *superseded*, and not told, when one after it
/// was told already (its caller was overtaken between its write and its telling), or when more
/// than [`MAX_WAITING`] wait behind a slow listener (the oldest goes). So the transitions heard
/// never go back, and the last one heard, once the queue is told, is the breaker's newest: a
/// listener that keeps the last state it heard ends on the state. (Every transition was counted
/// when it landed.) A listener may use the breaker and the registry: nothing is locked while it
/// runs, and what it makes is queued behind it.
#[derive(Debug)]
pub(crate) struct Herald {
    listener: Option<Listener>,
    queue: Mutex<Queue>,
}

/// The most transitions that wait to be told while a listener is busy; beyond it the oldest
/// waiting one is superseded. A listener slower than its breaker's transitions then hears the
/// newest of them, late by at most this many tellings; the thread telling tells until the queue
/// is empty, so it is held while others land transitions faster than the listener hears them
/// and for at most this many tellings after they stop; and the waiting ones always lie within a
/// few generations of each other, where [`Transition::is_after`] is an order.
const MAX_WAITING: usize = 16;

#[derive(Debug, Default)]
struct Queue {
    /// Landed and not yet told, oldest first; at most [`MAX_WAITING`].
    waiting: VecDeque<Transition>,
    /// Whether a thread is telling the queue.
    delivering: bool,
    /// The last transition told.
    last: Option<Transition>,
}

impl Queue {
    /// Put `landed` in its place, unless a transition after it was told already; make room by
    /// superseding the oldest waiting one.
    fn push(&mut self, landed: Transition) {
        if self.last.is_some_and(|last| !landed.is_after(&last)) {
            return; // superseded: a later transition was told already
        }
        // Transitions mostly land in order, so the place is found from the back.
        let at = self
            .waiting
            .iter()
            .rposition(|waiting| landed.is_after(waiting))
            .map_or(0, |before| before + 1);
        self.waiting.insert(at, landed);
        if self.waiting.len() > MAX_WAITING {
            self.waiting.pop_front();
        }
    }
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
        for transition in landed {
            queue.push(transition);
        }
        if queue.delivering {
            return; // the deliverer tells them, after what it is telling now
        }
        queue.delivering = true;
        let mut panicked = None;
        while let Some(next) = queue.waiting.pop_front() {
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
