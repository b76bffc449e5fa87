//! [`RegistryBuilder`]: what a [`Registry`] is built from (its configuration, clock, listener,
//! counters, bounds and creation hook), and the registry's constructors.

use std::sync::{Arc, OnceLock};

use super::bounds::Idle;
use super::config::RegistryConfig;
use super::hook::Install;
use super::map::Registry;
use crate::config::Config;
use crate::observe::{Listener, TransitionEvent};
use crate::sync::{AtomicUsize, Mutex, RelaxedU64, RwLock};
use crate::time::Origin;

impl Default for Registry {
    fn default() -> Self {
        Registry::builder().build()
    }
}

impl Registry {
    /// A registry whose breakers all use `default` and the system clock.
    pub fn new(default: Config) -> Self {
        Registry::builder().default_config(default).build()
    }

    /// A builder: default configuration [`Config::default`], no per-dependency configurations,
    /// the system clock.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }
}

/// Builds a [`Registry`]; start from [`Registry::builder`].
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RegistryBuilder {
    config: RegistryConfig,
    clock: Option<quanta::Clock>,
    listener: Option<Listener>,
    metrics: bool,
    max_dependencies: Option<usize>,
    idle_eviction: Option<core::time::Duration>,
    /// The creation hook to start at build: set by fleet mode (`RegistryBuilder::fleet`).
    pub(crate) install: Option<Arc<dyn Install>>,
}

impl RegistryBuilder {
    /// The configuration of every dependency without one of its own.
    pub fn default_config(mut self, config: Config) -> Self {
        self.config = self.config.with_default(config);
        self
    }

    /// `dependency`'s own configuration. A later call for the same name replaces an earlier one.
    pub fn dependency(mut self, dependency: impl Into<String>, config: Config) -> Self {
        self.config = self.config.dependency(dependency, config);
        self
    }

    /// Start from a whole configuration (for example one read with
    /// `RegistryConfig::from_toml`, feature `toml`), replacing the default and every dependency's own.
    pub fn config(mut self, config: RegistryConfig) -> Self {
        self.config = config;
        self
    }

    /// Give every dependency a retry budget of its own with `budget`'s rules (its ratio, floor
    /// and window; not its counts), which the guard pipeline draws on for calls through a
    /// `ToolGuard` (feature `tokio`) with no budget of its own; read one with
    /// [`Registry::retry_budget`]. The budgets read the registry's [`clock`](Self::clock). Set
    /// it after [`config`](Self::config), which replaces it; a configuration file sets it with
    /// the `retry_budget` key.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{Registry, breaker::RetryBudget};
    ///
    /// let registry = Registry::builder()
    ///     .retry_budget(&RetryBudget::new(0.2, 10, Duration::from_secs(10))?)
    ///     .build();
    /// assert_eq!(registry.retry_budget("search").unwrap().retries_left(), 100, "the floor: 10/s × 10 s");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn retry_budget(mut self, budget: &crate::breaker::RetryBudget) -> Self {
        self.config = self.config.with_retry_budget(Some(budget));
        self
    }

    /// The clock every breaker reads; tests pass `quanta::Clock::mock()`.
    pub fn clock(mut self, clock: quanta::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Call `listener` after every transition of every breaker, with the dependency's name (see
    /// [`Builder::on_transition`](crate::breaker::Builder::on_transition)). Each breaker's
    /// transitions are told one at a time and in order; different breakers' may be told at the
    /// same time, on different threads, so the listener must be `Sync` in earnest.
    pub fn on_transition(
        mut self,
        listener: impl Fn(&TransitionEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Listener::new(listener));
        self
    }

    /// Count every breaker's admissions, rejections, outcomes and transitions (default: off); read
    /// them with [`Registry::metrics`]. See [`Builder::metrics`](crate::breaker::Builder::metrics) for the
    /// cost.
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// At most `max` breakers in the registry (default: no bound, `usize::MAX`), counting every
    /// entry of its map; past it, names created from the default configuration get the shared
    /// overflow breaker from [`Registry::get`] and [`Registry::with`], and
    /// [`RegistryFull`](super::RegistryFull) from [`Registry::try_get`]. Names with a configuration
    /// of their own ([`dependency`](Self::dependency), the TOML file) are always admitted, even
    /// past the bound: they are known, not a model's invention, and they count toward it once in.
    /// The count is exact under races: the map never holds more than `max` entries plus those of
    /// configured names. With `max` 0, every name without its own configuration overflows.
    ///
    /// A full registry makes room only with [`idle_eviction`](Self::idle_eviction); without it,
    /// the first `max` names stay for the registry's life.
    ///
    /// Memory: about 500 bytes per entry (the breaker, its name, the map's entry and slot),
    /// measured at 495 bytes per entry for 100,000 entries with names of 16 bytes by
    /// `tests/registry_bounds_memory.rs` (which fails above 560), so a bound of 10,000 holds
    /// about 5 MB at most (plus the configured names' entries). A longer name adds its length;
    /// a rate rule adds its window (see [`Window`](crate::Window)).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Registry, registry::OVERFLOW_DEPENDENCY};
    ///
    /// let registry = Registry::builder().max_dependencies(2).build();
    /// for name in ["a", "b", "c", "d"] {
    ///     registry.get(name);
    /// }
    /// assert_eq!(registry.len(), 2);
    /// assert_eq!(registry.get("e").name(), OVERFLOW_DEPENDENCY);
    /// assert!(registry.try_get("e").is_err());
    /// ```
    pub fn max_dependencies(mut self, max: usize) -> Self {
        self.max_dependencies = Some(max);
        self
    }

    /// Let the registry evict a breaker that has gone `period` without a lookup (default: never
    /// evict): one closed with no counted failures, held by no handle, and created from the
    /// default configuration. Open, half-open and isolated breakers are never evicted. The
    /// conditions, and the one benign race, are in [`Registry::evict_idle`].
    ///
    /// Eviction runs when an insertion finds the registry at its bound
    /// ([`max_dependencies`](Self::max_dependencies)), at most once per sixteenth of the period,
    /// and whenever [`Registry::evict_idle`] is called (from a timer, say). Both look at every
    /// entry.
    ///
    /// `period` is measured on the registry's [`clock`](Self::clock) in whole milliseconds
    /// (rounded up, at least 1 ms). Each entry records its last lookup to a granule of a
    /// sixteenth of the period (at least 1 ms), so that a name looked up all the time writes
    /// its entry at most twice per granule and reads it otherwise; an entry is evicted only
    /// after a whole period without a lookup, and may stay up to a granule longer than that
    /// when its last lookup came within a granule of the previous write.
    ///
    /// In fleet mode (`fleet`, feature `redis`) this setting is ignored and
    /// nothing is evicted: the fleet's agent keeps every breaker it syncs, by name, for the
    /// registry's life, so an evicted breaker's successor would not be synced with the fleet.
    /// The bound still holds there; the overflow breaker stays local, shared with no other
    /// instance. The fleet's records in Redis expire once idle instead
    /// (`FleetBuilder::record_ttl`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::Registry;
    ///
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let registry = Registry::builder()
    ///     .max_dependencies(1)
    ///     .idle_eviction(Duration::from_secs(60))
    ///     .clock(clock)
    ///     .build();
    /// registry.get("made-up-tool");
    /// assert!(registry.try_get("search").is_err(), "full, and nothing idle for 60 s");
    /// mock.increment(Duration::from_secs(60));
    /// assert!(registry.try_get("search").is_ok(), "the idle one was evicted to make room");
    /// assert_eq!(registry.dependencies(), ["search"]);
    /// ```
    pub fn idle_eviction(mut self, period: core::time::Duration) -> Self {
        self.idle_eviction = Some(period);
        self
    }

    /// The registry, with no breakers yet.
    pub fn build(self) -> Registry {
        // A hook's owner holds the breakers too: evicting one would part them.
        let evicts = self.install.is_none();
        let clock = self.clock.unwrap_or_default();
        let registry = Registry {
            breakers: papaya::HashMap::builder()
                .hasher(foldhash::fast::RandomState::default())
                .resize_mode(papaya::ResizeMode::Blocking)
                .build(),
            configs: RwLock::new(self.config),
            origin: Origin::new(clock.clone()),
            clock,
            listener: self.listener,
            metrics: self.metrics,
            max_dependencies: self.max_dependencies.unwrap_or(usize::MAX),
            entries: AtomicUsize::new(0),
            idle: self.idle_eviction.filter(|_| evicts).map(Idle::new),
            next_sweep_ms: RelaxedU64::new(0),
            overflow: OnceLock::new(),
            creation: self.install.map(|install| install.start()),
            pools: OnceLock::new(),
            pools_installing: Mutex::new(()),
        };
        registry.install_pools();
        registry
    }
}
