//! One test binary for `CircuitBreaker` itself: its contract, guarded calls, the cooldown's shape,
//! probes, rate rules, reconfiguration, the auto traits, the listeners' order, the stress runs and
//! adaptive throttling.
//! One binary links the crate once for them all; each file is a module, gated on the crate
//! features it uses, so a build with fewer features runs the files it can.

mod adaptive;
#[cfg(all(
    feature = "tokio",
    feature = "http",
    feature = "tower",
    feature = "toml"
))]
mod bounds;
mod breaker;
#[cfg(all(feature = "tokio", feature = "http"))]
mod call;
#[cfg(feature = "toml")]
mod concurrency;
#[cfg(feature = "toml")]
mod cooldown;
#[cfg(feature = "tokio")]
mod health;
#[cfg(feature = "toml")]
mod hints;
mod listener_order;
#[cfg(feature = "toml")]
mod probes;
#[cfg(feature = "toml")]
mod rates;
#[cfg(feature = "toml")]
mod reconfigure;
mod stress;
mod throttling;
