//! [`Registry`]: the type, what it is built from, and what reads its map whole (`len`,
//! `dependencies`, `metrics`). Its operations are in the files above: `eviction`, `lookup`,
//! `reload`, `builder`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::bounds::{Entry, Idle};
use super::config::RegistryConfig;
use super::hook::Creation;
use super::pool_spec::PoolShape;
use crate::breaker::CircuitBreaker;
use crate::observe::{Listener, Metrics};
use crate::sync::{AtomicUsize, Mutex, RelaxedU64, RwLock};
use crate::time::Origin;

/// One breaker per dependency name, created on first use from the dependency's configuration or
/// the default.
///
/// Lookups never take a lock: the map is [`papaya`](https://docs.rs/papaya)'s, whose reads are
/// lock-free (a hash, a probe of the table, and an epoch guard), so readers never wait on each
/// other or on an insertion. It was chosen over `dashmap`, whose reads take a read lock on a
/// shard, so that readers of one shard write the same lock word and contend on it, and over
/// copy-on-write maps, whose every insertion copies the whole table. The table resizes in one go
/// when an insertion needs it (papaya's blocking mode): a registry inserts only on a
/// dependency's first use, and papaya's incremental mode would leave later reads checking two
/// tables until more writes arrived (ten times slower lookups in this crate's benchmark). Names
/// are hashed with `foldhash`, hashbrown's default hasher, seeded per registry.
///
/// A lookup hashes the name and bumps the `Arc`'s count; on the hot path, keep the handle
/// [`get`](Self::get) returns and call it directly.
///
/// # Bounds
///
/// Dependency names may come from what a model asks for, so a registry that made a breaker for
/// every name asked for could grow without end.
/// [`RegistryBuilder::max_dependencies`](super::RegistryBuilder::max_dependencies) bounds the
/// entries of the map: past it, a name with no configuration of its own gets no breaker of its own
/// ([`get`](Self::get) and [`with`](Self::with) use the shared overflow breaker,
/// [`try_get`](Self::try_get) refuses with [`RegistryFull`](super::RegistryFull)); names with their
/// own configuration are always admitted.
/// [`RegistryBuilder::idle_eviction`](super::RegistryBuilder::idle_eviction) makes room: a breaker
/// closed with no counted failures, held by no handle and not looked up for the period may be
/// evicted, by an insertion that finds the registry full or by [`evict_idle`](Self::evict_idle). By
/// default there is no bound and nothing is evicted.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{Config, FailureKind, Outcome, Registry, State};
///
/// let registry = Registry::builder()
///     .default_config(Config::new(5, Duration::from_secs(30), Duration::from_secs(30))?)
///     .dependency("search", Config::new(1, Duration::from_secs(10), Duration::from_secs(5))?)
///     .build();
///
/// let search = registry.get("search"); // keep this handle on the hot path
/// search.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
/// assert_eq!(search.state(), State::Open);
/// assert_eq!(registry.get("weather").state(), State::Closed, "one outage never blocks another");
/// assert_eq!(registry.get("weather").config().failure_threshold(), Some(5));
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct Registry {
    pub(super) breakers: papaya::HashMap<Arc<str>, Entry, foldhash::fast::RandomState>,
    /// The configuration in force. Read when a breaker is created and written by `reload`, both
    /// under this lock, so a breaker is either created from the new configuration or reconfigured
    /// by the reload; lookups of existing breakers never touch it.
    pub(super) configs: RwLock<RegistryConfig>,
    pub(super) clock: quanta::Clock,
    pub(super) listener: Option<Listener>,
    pub(super) metrics: bool,
    /// The bound on entries created from the default (`usize::MAX`: none).
    pub(super) max_dependencies: usize,
    /// The entries counted against the bound: every entry of the map, and the insertions under
    /// way (see `reserve`).
    pub(super) entries: AtomicUsize,
    /// Idle eviction, if on (never in fleet mode).
    pub(super) idle: Option<Idle>,
    /// The registry's clock in ms, for the entries' last-lookup times.
    pub(super) origin: Origin,
    /// Not before: the next sweep of an insertion that finds the registry full (ms on `origin`).
    pub(super) next_sweep_ms: RelaxedU64,
    /// The breaker shared by the names past the bound, made on first need.
    pub(super) overflow: OnceLock<Arc<CircuitBreaker>>,
    /// The creation hook, if one was installed (fleet mode); dropped with the registry.
    pub(super) creation: Option<Box<dyn Creation>>,
    /// The pools of the configuration in force, built over the breakers (`pools.rs`); read
    /// lock-free, replaced whole by a build or reload that changes them; made by the first pool.
    pub(super) pools:
        OnceLock<papaya::HashMap<Arc<str>, Arc<PoolShape>, foldhash::fast::RandomState>>,
    /// Held while the pools are rebuilt, so the last rebuild installs the newest configuration's.
    pub(super) pools_installing: Mutex<()>,
}

impl Registry {
    /// The creation hook installed at build, if any.
    pub(crate) fn creation(&self) -> Option<&dyn Creation> {
        self.creation.as_deref()
    }

    /// How many breakers the registry holds: created and not evicted (the overflow breaker is
    /// not one of them).
    pub fn len(&self) -> usize {
        self.breakers.len()
    }

    /// Whether the registry holds no breaker.
    pub fn is_empty(&self) -> bool {
        self.breakers.is_empty()
    }

    /// The names of the dependencies that have a breaker, in no particular order.
    pub fn dependencies(&self) -> Vec<String> {
        self.breakers.pin().keys().map(|k| k.to_string()).collect()
    }

    /// A snapshot of every counting breaker's metrics, keyed by dependency name (serialises as a
    /// JSON object). Empty unless the registry was built with
    /// [`metrics(true)`](super::RegistryBuilder::metrics). The overflow breaker (see
    /// [`get`](Self::get)) is no dependency's and is not among them.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Outcome, Registry};
    ///
    /// let registry = Registry::builder().metrics(true).build();
    /// registry.get("search").try_acquire().unwrap().record(Outcome::Success);
    /// registry.get("weather");
    /// let all = registry.metrics();
    /// assert_eq!((all["search"].admitted, all["search"].successes), (1, 1));
    /// assert_eq!(all["weather"].admitted, 0);
    /// ```
    pub fn metrics(&self) -> BTreeMap<String, Metrics> {
        self.breakers
            .pin()
            .iter()
            .filter_map(|(name, entry)| Some((name.to_string(), entry.breaker.metrics()?)))
            .collect()
    }
}
