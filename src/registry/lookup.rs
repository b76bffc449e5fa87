//! A lookup by name: [`get`](Registry::get), [`try_get`](Registry::try_get),
//! [`with`](Registry::with), and a name's first use, which creates its breaker if the bound
//! leaves room.

use std::sync::Arc;

use smol_str::SmolStr;

use super::bounds::{Entry, Full, RegistryFull};
use super::map::Registry;
use crate::breaker::{CircuitBreaker, Extras};
use crate::sync;

impl Registry {
    /// The breaker for `dependency`, created closed on first use; past the registry's bound, the
    /// overflow breaker.
    ///
    /// Lock-free; racing first calls for one name all get the same breaker. The `Arc` clone is a
    /// write to a count shared by every holder of the handle: look a dependency up once and keep
    /// the handle, or use [`with`](Self::with) for a lookup that writes nothing. (With
    /// [`idle_eviction`](super::RegistryBuilder::idle_eviction) on, a lookup also reads the clock,
    /// and writes the entry's last-lookup time at most twice per sixteenth of the idle period.)
    ///
    /// # Past the bound
    ///
    /// A name not in the registry when it holds
    /// [`max_dependencies`](super::RegistryBuilder::max_dependencies) breakers, and with no
    /// configuration of its own, gets no breaker of its own (once a sweep for idle breakers, if
    /// [`idle_eviction`](super::RegistryBuilder::idle_eviction) is on, found no room): `get`
    /// returns the registry's one *overflow breaker*, named
    /// [`OVERFLOW_DEPENDENCY`](super::OVERFLOW_DEPENDENCY), built from the default configuration
    /// and shared by every name the registry could not hold. The map does not grow, and the
    /// overflow breaker is in neither [`len`](Self::len) nor [`dependencies`](Self::dependencies).
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
    /// ([`RegistryBuilder::max_dependencies`](super::RegistryBuilder::max_dependencies)), an error
    /// instead of the overflow breaker [`get`](Self::get) would return.
    ///
    /// A name the registry holds always succeeds, as does a name with a configuration of its
    /// own (it is admitted even past the bound). For another name, when the registry holds its
    /// bound, an insertion first tries to make room by evicting idle breakers (with
    /// [`idle_eviction`](super::RegistryBuilder::idle_eviction) on; at most one such sweep per
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
    /// [`idle_eviction`](super::RegistryBuilder::idle_eviction) a call inside `f` that outlasts the
    /// idle period may find its breaker evicted and records into a breaker no longer in the map. (A
    /// breaker used through `with` is held by no handle, so with
    /// [`idle_eviction`](super::RegistryBuilder::idle_eviction) on, an `f` that runs longer than
    /// the idle period may find its breaker evicted meanwhile: see
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
        self.sync_budget(&breaker, configs.budget_rule(dependency));
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
}
