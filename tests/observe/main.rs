//! One test binary for what the crate tells the outside world: `tracing` events and spans (each
//! test with a subscriber of its own thread, `set_default`, never a global one, installed through
//! [`subscribe`], one test at a time), a subscriber that
//! panics, the counters and their JSON, and the `metrics` export (through a recorder local to the
//! call, `with_local_recorder`, never a global one). Each file is a module, gated on the crate
//! features it uses.

#[cfg(feature = "serde")]
mod metrics;
#[cfg(feature = "metrics")]
mod metrics_export;
#[cfg(all(
    feature = "tokio",
    feature = "serde",
    feature = "reqwest",
    feature = "tower",
    feature = "tracing"
))]
mod observe;
#[cfg(feature = "tracing")]
mod panicking_subscriber;

/// A test's subscriber, installed for its thread, and its turn: dropped in that order.
#[cfg(feature = "tracing")]
pub(crate) struct Subscribed {
    _default: tracing::subscriber::DefaultGuard,
    _turn: Turn,
}

#[cfg(any(feature = "serde", feature = "metrics", feature = "tracing"))]
/// This binary's tests take turns (see [`subscribe`]); the turn is held until this is dropped.
pub(crate) struct Turn(Option<std::sync::MutexGuard<'static, ()>>);

#[cfg(any(feature = "serde", feature = "metrics", feature = "tracing"))]
std::thread_local! {
    /// Whether this thread's test holds the turn.
    static HOLDS_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(any(feature = "serde", feature = "metrics", feature = "tracing"))]
/// Wait for this test's turn; a thread that holds it already keeps it.
pub(crate) fn turn() -> Turn {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    Turn((!HOLDS_TURN.get()).then(|| {
        let held = TURN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        HOLDS_TURN.set(true);
        held
    }))
}

#[cfg(any(feature = "serde", feature = "metrics", feature = "tracing"))]
impl Drop for Turn {
    fn drop(&mut self) {
        if self.0.take().is_some() {
            HOLDS_TURN.set(false);
        }
    }
}

/// Install `subscriber` as this thread's default for as long as the answer lives, in this
/// test's turn, and have every callsite ask again whether it is wanted.
///
/// tracing caches each callsite's interest, and the level above which nothing is recorded, over
/// the subscribers alive when it computes them. A test without a subscriber that reaches a
/// callsite first, while another test installs its own, races that computation, and a `DEBUG`
/// event could go unrecorded by a subscriber that wants it (one run in three). So every test of
/// this binary takes its turn ([`turn`]), and the cache is rebuilt once a subscriber is in place.
#[cfg(feature = "tracing")]
pub(crate) fn subscribe(
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
) -> Subscribed {
    let turn = turn();
    let default = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();
    Subscribed {
        _default: default,
        _turn: turn,
    }
}
