//! One test binary for what the crate tells the outside world: `tracing` events and spans (each
//! test with a subscriber of its own thread, `set_default`, never a global one), a subscriber that
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
