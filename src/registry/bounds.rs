//! A registry's bounds: at most `max_dependencies` entries ([`RegistryFull`] and the overflow
//! breaker past them), and the eviction of idle, healthy, unheld breakers (each entry's
//! last-lookup time, the sweep).

use core::fmt;
use std::sync::Arc;

use crate::breaker::CircuitBreaker;
use crate::sync::RelaxedU64;

/// The name of a registry's overflow breaker: the one breaker shared by every dependency the
/// registry could not hold past its bound
/// ([`RegistryBuilder::max_dependencies`](super::RegistryBuilder::max_dependencies)); see
/// [`Registry::get`](crate::Registry::get). Its blocked calls, events and counters carry this name.
///
/// A dependency that is really called `overflow` gets a breaker of its own like any other; it
/// is not the overflow breaker.
pub const OVERFLOW_DEPENDENCY: &str = "overflow";

/// [`Registry::try_get`](crate::Registry::try_get) refused a dependency: the registry holds its bound of breakers
/// ([`RegistryBuilder::max_dependencies`](super::RegistryBuilder::max_dependencies)), the name is
/// not among them and has no configuration of its own, and eviction (if on) found no room.
///
/// Its `Display` names the dependency refused and the bound.
///
/// # Examples
///
/// ```
/// use toolbreaker::{Registry, RegistryFull};
///
/// let registry = Registry::builder().max_dependencies(1).build();
/// registry.try_get("search")?;
/// let full: RegistryFull = registry.try_get("made-up-tool").unwrap_err();
/// assert_eq!((full.dependency(), full.max_dependencies()), ("made-up-tool", 1));
/// assert_eq!(
///     full.to_string(),
///     "no breaker for dependency \"made-up-tool\": the registry is full (max_dependencies = 1)"
/// );
/// # Ok::<(), RegistryFull>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryFull {
    pub(super) dependency: Box<str>,
    pub(super) max_dependencies: usize,
}

impl RegistryFull {
    /// The dependency refused.
    pub fn dependency(&self) -> &str {
        &self.dependency
    }

    /// The registry's bound: how many breakers it holds at most (names with a configuration of
    /// their own aside).
    pub fn max_dependencies(&self) -> usize {
        self.max_dependencies
    }
}

impl fmt::Display for RegistryFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no breaker for dependency {:?}: the registry is full (max_dependencies = {})",
            self.dependency, self.max_dependencies
        )
    }
}

impl std::error::Error for RegistryFull {}

/// One entry of the registry's map: the breaker, and (with idle eviction) when it was last
/// looked up.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) breaker: Arc<CircuitBreaker>,
    /// The last lookup recorded, in ms on the registry's clock, shifted left by one; the low bit
    /// (`TOUCHED`) says a lookup came later within the same granule. Written only with idle
    /// eviction on, and then at most twice per granule (see `Registry::touch`).
    pub(super) seen: RelaxedU64,
}

/// The low bit of `Entry::seen`: looked up again after the time it records, before a granule
/// had passed.
pub(super) const TOUCHED: u64 = 1;

impl Entry {
    pub(super) fn new(breaker: Arc<CircuitBreaker>, now_ms: u64) -> Self {
        Entry {
            breaker,
            seen: RelaxedU64::new(now_ms << 1),
        }
    }
}

/// Idle eviction's settings, in ms.
#[derive(Clone, Copy, Debug)]
pub(super) struct Idle {
    /// How long an entry must go without a lookup to be evictable; at least 1.
    pub(super) period_ms: u64,
    /// The granule of an entry's last-lookup time: `period_ms / GRANULES`, at least 1.
    pub(super) granule_ms: u64,
}

/// The last-lookup time of an entry is kept to `1 / GRANULES` of the idle period.
pub(super) const GRANULES: u64 = 16;

impl Idle {
    pub(super) fn new(period: core::time::Duration) -> Self {
        let period_ms = crate::time::millis_ceil(period).max(1);
        Idle {
            period_ms,
            granule_ms: (period_ms / GRANULES).max(1),
        }
    }

    /// The latest time a lookup of an entry whose `seen` word is `seen` can have happened.
    pub(super) fn last_lookup_ms(&self, seen: u64) -> u64 {
        let at = seen >> 1;
        if seen & TOUCHED == 0 {
            at
        } else {
            at.saturating_add(self.granule_ms - 1)
        }
    }
}

/// A failed reservation: the registry holds its bound.
pub(super) struct Full;
