//! One test binary for `Registry`: one breaker per dependency, its bounds and idle eviction, and
//! per-dependency configuration from TOML with live reload. Each file is a module, gated on the
//! crate features it uses beyond `toml` (the binary's `required-features`).

mod registry;
#[cfg(feature = "redis")]
mod registry_bounds;
mod reload;
mod retry_budget;
