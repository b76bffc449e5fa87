//! Breakers per dependency, created on first use.

use std::collections::HashMap;
use std::sync::Arc;

use crate::breaker::CircuitBreaker;
use crate::config::Config;

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
/// assert_eq!(registry.get("weather").config().failure_threshold(), 5);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct Registry {
    breakers: papaya::HashMap<Box<str>, Arc<CircuitBreaker>, foldhash::fast::RandomState>,
    default: Config,
    configs: HashMap<Box<str>, Config>,
    clock: quanta::Clock,
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
    /// let answer = registry.with("search", |breaker| breaker.call(|| Ok::<_, ()>(3), |_| Outcome::Success));
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
        self.breakers.get_or_insert_with(
            dependency.into(),
            || {
                Arc::new(CircuitBreaker::new(
                    self.config_for(dependency),
                    self.clock.clone(),
                ))
            },
            guard,
        )
    }

    /// The configuration `dependency`'s breaker has or will have.
    pub fn config_for(&self, dependency: &str) -> Config {
        self.configs
            .get(dependency)
            .copied()
            .unwrap_or(self.default)
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
}

/// Builds a [`Registry`]; start from [`Registry::builder`].
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RegistryBuilder {
    default: Config,
    configs: HashMap<Box<str>, Config>,
    clock: Option<quanta::Clock>,
}

impl RegistryBuilder {
    /// The configuration of every dependency without one of its own.
    pub fn default_config(mut self, config: Config) -> Self {
        self.default = config;
        self
    }

    /// `dependency`'s own configuration. A later call for the same name replaces an earlier one.
    pub fn dependency(mut self, dependency: impl Into<String>, config: Config) -> Self {
        self.configs
            .insert(dependency.into().into_boxed_str(), config);
        self
    }

    /// The clock every breaker reads; tests pass `quanta::Clock::mock()`.
    pub fn clock(mut self, clock: quanta::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The registry, with no breakers yet.
    pub fn build(self) -> Registry {
        Registry {
            breakers: papaya::HashMap::builder()
                .hasher(foldhash::fast::RandomState::default())
                .resize_mode(papaya::ResizeMode::Blocking)
                .build(),
            default: self.default,
            configs: self.configs,
            clock: self.clock.unwrap_or_default(),
        }
    }
}
