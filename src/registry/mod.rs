//! [`Registry`]: breakers per dependency, created on first use, with their configuration
//! ([`RegistryConfig`]), its live reload, and (feature `toml`) its file.

use std::collections::BTreeMap;
use std::sync::Arc;

use smol_str::SmolStr;

mod config;
#[cfg(feature = "metrics")]
mod export;
#[cfg(feature = "toml")]
mod toml;

pub use self::config::{ConfigChange, RegistryConfig, Reload, closest_name};
#[cfg(feature = "toml")]
pub use self::toml::ConfigFileError;

use crate::breaker::{CircuitBreaker, Extras};
use crate::config::Config;
use crate::observe::{self, Listener, Metrics, TransitionEvent};
use crate::sync::{self, RwLock};

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
    breakers: papaya::HashMap<Arc<str>, Arc<CircuitBreaker>, foldhash::fast::RandomState>,
    /// The configuration in force. Read when a breaker is created and written by `reload`, both
    /// under this lock, so a breaker is either created from the new configuration or reconfigured
    /// by the reload; lookups of existing breakers never touch it.
    configs: RwLock<RegistryConfig>,
    clock: quanta::Clock,
    listener: Option<Listener>,
    metrics: bool,
    /// The fleet agent's link (feature `redis`); dropping the registry stops the agent.
    #[cfg(feature = "redis")]
    fleet: Option<crate::fleet::FleetLink>,
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

    /// The breaker for `dependency`, created closed on first use.
    ///
    /// Lock-free; racing first calls for one name all get the same breaker. The `Arc` clone is a
    /// write to a count shared by every holder of the handle: look a dependency up once and keep
    /// the handle, or use [`with`](Self::with) for a lookup that writes nothing.
    pub fn get(&self, dependency: &str) -> Arc<CircuitBreaker> {
        Arc::clone(self.lookup(dependency, &self.breakers.guard()))
    }

    /// Run `f` with `dependency`'s breaker (created closed on first use), without cloning its
    /// handle: a lookup by name that writes no shared memory when the breaker exists.
    ///
    /// `f` runs inside the map's epoch guard, which holds back the reclamation of replaced table
    /// memory while it lasts: keep `f` short (ask the breaker, record an outcome) and make slow
    /// calls through a handle from [`get`](Self::get).
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
        f(self.lookup(dependency, &self.breakers.guard()))
    }

    fn lookup<'g>(
        &self,
        dependency: &str,
        guard: &'g impl papaya::Guard,
    ) -> &'g Arc<CircuitBreaker> {
        if let Some(breaker) = self.breakers.get(dependency, guard) {
            return breaker;
        }
        self.create(dependency, guard)
    }

    /// The first use of `dependency`: create its breaker from the configuration in force.
    #[cold]
    fn create<'g>(
        &self,
        dependency: &str,
        guard: &'g impl papaya::Guard,
    ) -> &'g Arc<CircuitBreaker> {
        // Held across the insertion, so a reload either sees this breaker or is seen by it.
        let configs = sync::read(&self.configs);
        let name: Arc<str> = Arc::from(dependency);
        let breaker = self.breakers.get_or_insert_with(
            Arc::clone(&name),
            || {
                Arc::new(CircuitBreaker::with_extras(
                    configs.config_for(dependency),
                    self.clock.clone(),
                    Extras {
                        name: SmolStr::new(&name),
                        listener: self.listener.clone(),
                        metrics: self.metrics,
                        #[cfg(feature = "redis")]
                        tap: self.fleet.as_ref().map(|fleet| fleet.tap(dependency)),
                        #[cfg(not(feature = "redis"))]
                        tap: None,
                    },
                ))
            },
            guard,
        );
        // Racing first uses may both tell the agent; it keeps the first.
        #[cfg(feature = "redis")]
        if let Some(fleet) = &self.fleet {
            fleet.register(Arc::clone(breaker));
        }
        breaker
    }

    /// The fleet agent of a registry built with [`RegistryBuilder::fleet`] (feature `redis`):
    /// whether it reaches Redis, its counters.
    #[cfg(feature = "redis")]
    pub fn fleet(&self) -> Option<&crate::fleet::FleetHandle> {
        self.fleet.as_ref().map(|fleet| fleet.handle())
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
    /// without losing its state, and breakers created later use it.
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
        for (name, breaker) in self.breakers.pin().iter() {
            names.insert(Arc::clone(name), Some(Arc::clone(breaker)));
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

    /// How many breakers have been created.
    pub fn len(&self) -> usize {
        self.breakers.len()
    }

    /// Whether no breaker has been created yet.
    pub fn is_empty(&self) -> bool {
        self.breakers.is_empty()
    }

    /// The names of the dependencies that have a breaker, in no particular order.
    pub fn dependencies(&self) -> Vec<String> {
        self.breakers.pin().keys().map(|k| k.to_string()).collect()
    }

    /// A snapshot of every counting breaker's metrics, keyed by dependency name (serialises as a
    /// JSON object). Empty unless the registry was built with
    /// [`metrics(true)`](RegistryBuilder::metrics).
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
            .filter_map(|(name, breaker)| Some((name.to_string(), breaker.metrics()?)))
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
    #[cfg(feature = "redis")]
    fleet: Option<crate::fleet::Fleet>,
}

impl RegistryBuilder {
    /// Fleet mode (feature `redis`): share every breaker's transitions with the other instances
    /// of the gateway through Redis (see [`fleet`](crate::fleet)). `build` starts the fleet's
    /// agent on the Tokio runtime the fleet was built in; dropping the registry stops it.
    /// Admission stays local: a call never waits on Redis.
    ///
    /// With a mock [`clock`](Self::clock), let the agent apply a change from the fleet before
    /// moving the clock: it turns the server's times into the breaker's with the clock as it
    /// reads then (see [`docs::fleet`](crate::docs::fleet)).
    #[cfg(feature = "redis")]
    pub fn fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

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

    /// The registry, with no breakers yet.
    pub fn build(self) -> Registry {
        Registry {
            breakers: papaya::HashMap::builder()
                .hasher(foldhash::fast::RandomState::default())
                .resize_mode(papaya::ResizeMode::Blocking)
                .build(),
            configs: RwLock::new(self.config),
            clock: self.clock.unwrap_or_default(),
            listener: self.listener,
            metrics: self.metrics,
            #[cfg(feature = "redis")]
            fleet: self.fleet.map(crate::fleet::Fleet::start),
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
