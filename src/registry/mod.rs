//! [`Registry`]: breakers per dependency, created on first use, with their configuration
//! ([`RegistryConfig`]), its live reload, (feature `toml`) its file, and its bounds
//! ([`RegistryBuilder::max_dependencies`], [`RegistryBuilder::idle_eviction`]).
//!
//! The files, bottom up, each importing only from those before it: `pool_spec` (a pool as
//! configured: [`PoolBuilder`], and the shape built from it), `config` (the configuration
//! and what a reload reports), `bounds` (the bound's error and the map's entries) and `hook` (the
//! creation hook a mode installs); `map` is the type, what it is built from and what reads its
//! map whole; `budgets` (the dependencies' retry budgets: their rules in the configuration,
//! each attached to its breaker); then its operations: `eviction` (the bound kept, idle breakers evicted), `lookup`
//! (`get`, `try_get`, `with`, a name's first use), `pools` (the pools kept in the configuration, built over the breakers),
//! `reload` and `builder`; last `toml` (the file,
//! with its error and its sections in `toml/`) and `export`.

mod bounds;
mod budgets;
mod builder;
mod config;
mod eviction;
#[cfg(feature = "metrics")]
mod export;
mod hook;
mod lookup;
mod map;
mod pool_spec;
mod pools;
mod reload;
#[cfg(feature = "toml")]
mod toml;

pub use self::bounds::{OVERFLOW_DEPENDENCY, RegistryFull};
pub use self::builder::RegistryBuilder;
pub use self::config::{ConfigChange, RegistryConfig, Reload, closest_name};
pub use self::map::Registry;
pub use self::pool_spec::PoolBuilder;
#[cfg(feature = "toml")]
pub use self::toml::ConfigFileError;

// The creation hook fleet mode installs (none without it).
#[cfg(feature = "redis")]
pub(crate) use self::hook::{Creation, Install};
// The pools' shapes, for `crate::pool` to choose from.
pub(crate) use self::pool_spec::PoolShape;
