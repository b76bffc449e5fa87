//! One test binary for `Pool`: the choice of a member (group order, the spread, the panic rule,
//! the pool's one `Blocked`) under threads and races, its calls, its TOML and live reload, and
//! the guard pipeline's failover. Each file is a module, gated on the crate features it uses.

mod choice;
#[cfg(all(feature = "tokio", feature = "serde"))]
mod guard;
mod races;
#[cfg(feature = "toml")]
mod toml;
