//! [`Registry`]: breakers per dependency, created on first use, with their configuration
//! ([`RegistryConfig`]), its live reload, (feature `toml`) its file, and its bounds
//! ([`RegistryBuilder::max_dependencies`], [`RegistryBuilder::idle_eviction`]).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use smol_str::SmolStr;

mod bounds;
mod config;
mod eviction;
#[cfg(feature = "metrics")]
mod export;
mod hook;
#[cfg(feature = "toml")]
mod toml;

pub use self::bounds::{OVERFLOW_DEPENDENCY, RegistryFull};
pub use self::config::{ConfigChange, RegistryConfig, Reload, closest_name};
#[cfg(feature = "toml")]
pub use self::toml::ConfigFileError;

use self::bounds::{Entry, Full, Idle};
// The creation hook fleet mode installs (none without it).
pub(crate) use self::hook::{Creation, Install};
use crate::breaker::{CircuitBreaker, Extras};
use crate::config::Config;
use crate::observe::{self, Listener, Metrics, TransitionEvent};
use crate::sync::{self, AtomicUsize, RelaxedU64, RwLock};
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
/// every name asked for could grow without end. [`RegistryBuilder::max_dependencies`] bounds the entries of
/// the map: past it, a name with no configuration of its own gets no breaker of its own
/// ([`get`](Self::get) and [`with`](Self::with) use the shared overflow breaker,
/// [`try_get`](Self::try_get) refuses with [`RegistryFull`]); names with their own configuration
/// are always admitted. [`RegistryBuilder::idle_eviction`] makes room: a breaker closed with no
/// counted failures, held by no handle and not looked up for the period may be evicted, by an
/// insertion that finds the registry full or by [`evict_idle`](Self::evict_idle). By default
/// there is no bound and nothing is evicted.
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
    breakers: papaya::HashMap<Arc<str>, Entry, foldhash::fast::RandomState>,
    /// The configuration in force. Read when a breaker is created and written by `reload`, both
    /// under this lock, so a breaker is either created from the new configuration or reconfigured
    /// by the reload; lookups of existing breakers never touch it.
    configs: RwLock<RegistryConfig>,
    clock: quanta::Clock,
    listener: Option<Listener>,
    metrics: bool,
    /// The bound on entries created from the default (`usize::MAX`: none).
    max_dependencies: usize,
    /// The entries counted against the bound: every entry of the map, and the insertions under
    /// way (see `reserve`).
    entries: AtomicUsize,
    /// Idle eviction, if on (never in fleet mode).
    idle: Option<Idle>,
    /// The registry's clock in ms, for the entries' last-lookup times.
    origin: Origin,
    /// Not before: the next sweep of an insertion that finds the registry full (ms on `origin`).
    next_sweep_ms: RelaxedU64,
    /// The breaker shared by the names past the bound, made on first need.
    overflow: OnceLock<Arc<CircuitBreaker>>,
    /// The creation hook, if one was installed (fleet mode); dropped with the registry.
    creation: Option<Box<dyn Creation>>,
}

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

    /// The breaker for `dependency`, created closed on first use; past the registry's bound, the
    /// overflow breaker.
    ///
    /// Lock-free; racing first calls for one name all get the same breaker. The `Arc` clone is a
    /// write to a count shared by every holder of the handle: look a dependency up once and keep
    /// the handle, or use [`with`](Self::with) for a lookup that writes nothing. (With
    /// [`idle_eviction`](RegistryBuilder::idle_eviction) on, a lookup also reads the clock, and
    /// writes the entry's last-lookup time at most twice per sixteenth of the idle period.)
    ///
    /// # Past the bound
    ///
    /// A name not in the registry when it holds
    /// [`max_dependencies`](RegistryBuilder::max_dependencies) breakers, and with no
    /// configuration of its own, gets no breaker of its own (once a sweep for idle breakers, if
    /// [`idle_eviction`](RegistryBuilder::idle_eviction) is on, found no room): `get` returns the
    /// registry's one *overflow breaker*, named [`OVERFLOW_DEPENDENCY`], built from the default
    /// configuration and shared by every name the registry could not hold. The map does not
    /// grow, and the overflow breaker is in neither [`len`](Self::len) nor
    /// [`dependencies`](Self::dependencies).
    ///
    /// Why a shared breaker rather than none: a call through it is still guarded, so an outage
    /// behind names past the bound still trips a breaker and stops the calls, instead of every
    /// invented name sending its calls unchecked. The price is that names past the bound share
    /// its fate: their failures count together, and while it is open every one of them is
    /// blocked (the blocked result names `overflow`, not the name asked for). To refuse such a
    /// name instead, use [`try_get`](Self::try_get). A name past the bound is asked about again
    /// on each lookup: once there is room (an eviction), it gets a breaker of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolbreaker::{Registry, registry::OVERFLOW_DEPENDENCY};
    ///
    /// let registry = Registry::builder().max_dependencies(1).build();
    /// let search = registry.get("search");
    /// assert_eq!(search.name(), "search");
    ///
    /// let a = registry.get("made-up-tool");
    /// let b = registry.get("another-one");
    /// assert!(Arc::ptr_eq(&a, &b), "one overflow breaker for every name past the bound");
    /// assert_eq!(a.name(), OVERFLOW_DEPENDENCY);
    /// assert_eq!(registry.len(), 1, "the map did not grow");
    /// assert_eq!(registry.dependencies(), ["search"]);
    /// assert!(Arc::ptr_eq(&registry.get("search"), &search), "existing names keep theirs");
    /// ```
    pub fn get(&self, dependency: &str) -> Arc<CircuitBreaker> {
        match self.lookup(dependency, &self.breakers.guard()) {
            Ok(breaker) => Arc::clone(breaker),
            Err(Full) => Arc::clone(self.overflow()),
        }
    }

    /// The breaker for `dependency`, created closed on first use; past the registry's bound
    /// ([`RegistryBuilder::max_dependencies`]), an error instead of the overflow breaker
    /// [`get`](Self::get) would return.
    ///
    /// A name the registry holds always succeeds, as does a name with a configuration of its
    /// own (it is admitted even past the bound). For another name, when the registry holds its
    /// bound, an insertion first tries to make room by evicting idle breakers (with
    /// [`idle_eviction`](RegistryBuilder::idle_eviction) on; at most one such sweep per
    /// sixteenth of the idle period, so a name refused just after a sweep is refused until the
    /// next one); if there is still no room, the name is refused.
    ///
    /// # Errors
    ///
    /// [`RegistryFull`], naming the dependency and the bound, when the registry holds its bound
    /// and `dependency` is neither in it nor configured. Nothing was created.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{Config, Registry};
    ///
    /// let registry = Registry::builder()
    ///     .max_dependencies(1)
    ///     .dependency("search", Config::new(3, Duration::from_secs(10), Duration::from_secs(5))?)
    ///     .build();
    /// assert!(registry.try_get("weather").is_ok());
    /// let full = registry.try_get("made-up-tool").unwrap_err();
    /// assert_eq!(full.dependency(), "made-up-tool");
    /// assert_eq!(full.max_dependencies(), 1);
    /// assert!(registry.try_get("weather").is_ok(), "a name it holds");
    /// assert!(registry.try_get("search").is_ok(), "configured: admitted past the bound");
    /// assert_eq!(registry.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_get(&self, dependency: &str) -> Result<Arc<CircuitBreaker>, RegistryFull> {
        match self.lookup(dependency, &self.breakers.guard()) {
            Ok(breaker) => Ok(Arc::clone(breaker)),
            Err(Full) => Err(self.full(dependency)),
        }
    }

    /// Run `f` with `dependency`'s breaker (created closed on first use; past the registry's
    /// bound, the overflow breaker, as [`get`](Self::get) says), without cloning its handle: a
    /// lookup by name that writes no shared memory when the breaker exists.
    ///
    /// `f` runs inside the map's epoch guard, which holds back the reclamation of replaced table
    /// memory while it lasts: keep `f` short (ask the breaker, record an outcome) and make slow
    /// calls through a handle from [`get`](Self::get). `f` holds no handle, so with
    /// [`idle_eviction`](RegistryBuilder::idle_eviction) a call inside `f` that outlasts the idle
    /// period may find its breaker evicted and records into a breaker no longer in the map. (A breaker used through `with` is held
    /// by no handle, so with [`idle_eviction`](RegistryBuilder::idle_eviction) on, an `f` that
    /// runs longer than the idle period may find its breaker evicted meanwhile: see
    /// [`evict_idle`](Self::evict_idle).)
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Outcome, Registry, State};
    ///
    /// let registry = Registry::default();
    /// let answer = registry.with("search", |breaker| breaker.call(|| Ok::<_, ()>(3), |_: &_| Outcome::Success));
    /// assert_eq!(answer, Ok(3));
    /// assert_eq!(registry.with("search", |breaker| breaker.state()), State::Closed);
    /// ```
    pub fn with<R>(&self, dependency: &str, f: impl FnOnce(&CircuitBreaker) -> R) -> R {
        match self.lookup(dependency, &self.breakers.guard()) {
            Ok(breaker) => f(breaker),
            Err(Full) => f(self.overflow()),
        }
    }

    #[inline]
    fn lookup<'g>(
        &self,
        dependency: &str,
        guard: &'g impl papaya::Guard,
    ) -> Result<&'g Arc<CircuitBreaker>, Full> {
        if let Some(entry) = self.breakers.get(dependency, guard) {
            self.touch(entry);
            return Ok(&entry.breaker);
        }
        self.create(dependency, guard)
    }

    /// The first use of `dependency`: create its breaker from the configuration in force, if the
    /// bound leaves room.
    #[cold]
    fn create<'g>(
        &self,
        dependency: &str,
        guard: &'g impl papaya::Guard,
    ) -> Result<&'g Arc<CircuitBreaker>, Full> {
        // Held across the insertion, so a reload either sees this breaker or is seen by it.
        let configs = sync::read(&self.configs);
        if self.reserve(configs.has_own(dependency)).is_err() {
            // Full: a racing first use may have made it meanwhile; else make room if we may.
            if let Some(entry) = self.breakers.get(dependency, guard) {
                self.touch(entry);
                return Ok(&entry.breaker);
            }
            if self.make_room(&configs, guard) == 0 {
                return Err(Full);
            }
            self.reserve(false)?;
        }
        let name: Arc<str> = Arc::from(dependency);
        let breaker = Arc::new(CircuitBreaker::with_extras(
            configs.config_for(dependency),
            self.clock.clone(),
            Extras {
                name: SmolStr::new(&name),
                listener: self.listener.clone(),
                metrics: self.metrics,
                hook: self
                    .creation()
                    .and_then(|creation| creation.hook_for(dependency)),
            },
        ));
        let now = if self.idle.is_some() {
            self.now_ms()
        } else {
            0
        };
        match self
            .breakers
            .try_insert(name, Entry::new(breaker, now), guard)
        {
            Ok(entry) => {
                if let Some(creation) = self.creation() {
                    creation.created(&entry.breaker);
                }
                Ok(&entry.breaker)
            }
            // A racing first use inserted it first: its breaker is the one.
            Err(occupied) => {
                self.release();
                self.touch(occupied.current);
                Ok(&occupied.current.breaker)
            }
        }
    }

    /// The creation hook installed at build, if any.
    pub(crate) fn creation(&self) -> Option<&dyn Creation> {
        self.creation.as_deref()
    }

    /// The configuration `dependency`'s breaker has or will have.
    pub fn config_for(&self, dependency: &str) -> Config {
        sync::read(&self.configs).config_for(dependency)
    }

    /// The configuration in force: the default and each dependency's own.
    pub fn configuration(&self) -> RegistryConfig {
        sync::read(&self.configs).clone()
    }

    /// Put `config` in force: every existing breaker whose settings differ from it (including
    /// settings changed by hand with [`CircuitBreaker::reconfigure`]) is reconfigured in place
    /// without losing its state, and breakers created later use it. The overflow breaker of a
    /// bounded registry (see [`get`](Self::get)) takes the new default.
    ///
    /// Returns what it did ([`Reload`]):
    /// - [`changes`](Reload::changes): one entry per dependency whose configuration changed
    ///   (existing breakers, compared by their own settings, and dependencies named in either
    ///   configuration), plus one for the default if it changed; dependencies in name order. An
    ///   entry says which transition the change caused, if any (a lowered threshold that a
    ///   closed breaker's failures already reach trips it); listeners hear it after the
    ///   registry's lock is released.
    /// - [`unmatched`](Reload::unmatched): the dependencies with a section of their own in
    ///   `config` that have no breaker, in name order. Nothing has asked for them yet: most
    ///   often a misspelt name, whose real dependency keeps running on the default. The section
    ///   is kept, for a dependency first used later; to refuse such a configuration instead,
    ///   check it with [`RegistryConfig::unknown_dependencies`] before the reload.
    ///
    /// `config` is already valid, so nothing here can fail; to load it from a file, see
    /// `reload_toml` or `reload_file` (feature `toml`), which reject a bad file and keep the
    /// configuration in force.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{Config, Registry, RegistryConfig};
    ///
    /// let registry = Registry::default();
    /// let search = registry.get("search");
    /// let tight = Config::new(2, Duration::from_secs(5), Duration::from_secs(5))?;
    /// let reload = registry.reload(RegistryConfig::default().dependency("search", tight));
    /// assert_eq!(reload.changes().len(), 1);
    /// assert_eq!(reload.changes()[0].dependency(), Some("search"));
    /// assert!(reload.unmatched().is_empty(), "`search` has a breaker");
    /// assert_eq!(search.config(), tight, "the existing handle sees the new settings");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn reload(&self, config: RegistryConfig) -> Reload {
        let mut configs = sync::write(&self.configs);
        let before = std::mem::replace(&mut *configs, config);
        let mut names: BTreeMap<Arc<str>, Option<Arc<CircuitBreaker>>> = BTreeMap::new();
        for name in before.dependency_names().chain(configs.dependency_names()) {
            names.insert(Arc::from(name), None);
        }
        for (name, entry) in self.breakers.pin().iter() {
            names.insert(Arc::clone(name), Some(Arc::clone(&entry.breaker)));
        }
        let unmatched: Vec<String> = configs
            .dependency_names()
            .filter(|name| matches!(names.get(*name), Some(None)))
            .map(str::to_owned)
            .collect();
        let mut changes = Vec::new();
        let mut tripped = Vec::new();
        if before.default_config() != configs.default_config() {
            changes.push(ConfigChange::new(
                None,
                before.default_config(),
                configs.default_config(),
                None,
            ));
        }
        for (name, breaker) in names {
            let new = configs.config_for(&name);
            // An existing breaker's own settings are what change (they may have been set by
            // hand since the last reload); for the others, the configuration's entry.
            let old = match &breaker {
                Some(breaker) => breaker.config(),
                None => before.config_for(&name),
            };
            if old == new {
                continue;
            }
            let transition = breaker
                .as_ref()
                .and_then(|breaker| breaker.reconfigure_silently(new));
            if let (Some(breaker), Some(transition)) = (breaker, transition) {
                tripped.push((breaker, transition));
            }
            changes.push(ConfigChange::new(Some(name), old, new, transition));
        }
        // The overflow breaker follows the default (its change is the default's entry).
        if let Some(overflow) = self.overflow.get()
            && overflow.config() != configs.default_config()
            && let Some(transition) = overflow.reconfigure_silently(configs.default_config())
        {
            tripped.push((Arc::clone(overflow), transition));
        }
        // Listeners hear the trips after the lock is released, so they may use the registry.
        // Every trip is told even if a listener panics; the first panic is resumed afterwards.
        drop(configs);
        observe::tell_each(
            tripped,
            |(breaker, transition): (Arc<CircuitBreaker>, _)| {
                breaker.announce(transition);
            },
        );
        Reload::new(changes, unmatched)
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
    /// [`metrics(true)`](RegistryBuilder::metrics). The overflow breaker (see [`get`](Self::get))
    /// is no dependency's and is not among them.
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
    /// overflow breaker from [`Registry::get`] and [`Registry::with`], and [`RegistryFull`] from
    /// [`Registry::try_get`]. Names with a configuration of their own
    /// ([`dependency`](Self::dependency), the TOML file) are always admitted, even past the
    /// bound: they are known, not a model's invention, and they count toward it once in.
    /// The count is exact under races: the map never holds more than `max` entries plus those
    /// of configured names. With `max` 0, every name without its own configuration overflows.
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
        Registry {
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
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use core::time::Duration;

    /// No public path panics while the configuration's lock is held for writing (a reload's
    /// listeners run after it is released), so the lock is poisoned here by hand: every use of
    /// the registry still works, on the configuration the lock holds.
    #[test]
    fn a_registry_whose_configuration_lock_was_poisoned_still_works() {
        let config = |threshold| {
            Config::new(threshold, Duration::from_secs(1), Duration::from_secs(1)).unwrap()
        };
        let registry = Registry::builder().dependency("search", config(2)).build();
        let search = registry.get("search");
        let panicked = std::thread::scope(|s| {
            s.spawn(|| {
                let _held = registry.configs.write().unwrap();
                panic!("a writer panics while holding the configuration's lock");
            })
            .join()
        });
        assert!(panicked.is_err());
        assert!(registry.configs.is_poisoned());

        assert_eq!(registry.config_for("search"), config(2));
        assert_eq!(registry.get("weather").config(), Config::default());
        assert_eq!(registry.configuration().config_for("search"), config(2));
        let reload = registry.reload(RegistryConfig::new(config(3)));
        assert_eq!(reload.changes().len(), 3, "{reload:?}");
        assert_eq!(search.config(), config(3));
        assert_eq!(registry.get("quotes").config(), config(3));
    }
}
