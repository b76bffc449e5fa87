//! A registry's bounds: at most `max_dependencies` entries ([`RegistryFull`] and the overflow
//! breaker past them), and the eviction of idle, healthy, unheld breakers (each entry's
//! last-lookup time, the sweep).

use core::fmt;
use std::sync::Arc;

use smol_str::SmolStr;

use super::{Registry, RegistryConfig};
use crate::breaker::{CircuitBreaker, Extras};
use crate::sync::{self, Ordering, RelaxedU64};

/// The name of a registry's overflow breaker: the one breaker shared by every dependency the
/// registry could not hold past its bound
/// ([`RegistryBuilder::max_dependencies`](super::RegistryBuilder::max_dependencies)); see
/// [`Registry::get`]. Its blocked calls, events and counters carry this name.
///
/// A dependency that is really called `overflow` gets a breaker of its own like any other; it
/// is not the overflow breaker.
pub const OVERFLOW_DEPENDENCY: &str = "overflow";

/// [`Registry::try_get`] refused a dependency: the registry holds its bound of breakers
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
    dependency: Box<str>,
    max_dependencies: usize,
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
    seen: RelaxedU64,
}

/// The low bit of `Entry::seen`: looked up again after the time it records, before a granule
/// had passed.
const TOUCHED: u64 = 1;

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
    period_ms: u64,
    /// The granule of an entry's last-lookup time: `period_ms / GRANULES`, at least 1.
    granule_ms: u64,
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
    fn last_lookup_ms(&self, seen: u64) -> u64 {
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

impl Registry {
    /// Record a lookup of `entry` (idle eviction only). A lookup reads the clock and the entry's
    /// time, and writes only when the time it records has moved: a new time once a granule has
    /// passed since the recorded one, or the `TOUCHED` bit once per granule for a later lookup
    /// within it. So a name looked up constantly is written at most twice per granule, and the
    /// recorded time is never earlier than the last lookup but for the `TOUCHED` bit, which the
    /// sweep reads as the granule's end: no entry is evicted before it has gone a whole period
    /// without a lookup. `fetch_max` keeps the time from moving back when lookups race.
    #[inline]
    pub(super) fn touch(&self, entry: &Entry) {
        let Some(idle) = &self.idle else {
            return;
        };
        let now = self.now_ms();
        let seen = entry.seen.load(Ordering::Relaxed);
        let at = seen >> 1;
        if now >= at.saturating_add(idle.granule_ms) {
            entry.seen.fetch_max(now << 1, Ordering::Relaxed);
        } else if now > at && seen & TOUCHED == 0 {
            entry.seen.fetch_or(TOUCHED, Ordering::Relaxed);
        }
    }

    /// The registry's clock, in ms since its construction (plus the origin's headroom), small
    /// enough to shift left by one.
    pub(super) fn now_ms(&self) -> u64 {
        self.origin.now_ms(u64::MAX >> 1)
    }

    /// Count one more entry before inserting it: always for a name with its own configuration,
    /// otherwise only below the bound. The count is exact under any race: at most
    /// `max_dependencies` entries created from the default are ever counted at once, and the
    /// map never holds more entries than are counted.
    pub(super) fn reserve(&self, configured: bool) -> Result<(), Full> {
        if configured {
            self.entries.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let max = self.max_dependencies;
        self.entries
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| Full)
    }

    /// Give back a reservation whose insertion did not happen, or count a removal.
    pub(super) fn release(&self) {
        self.entries.fetch_sub(1, Ordering::Relaxed);
    }

    /// An insertion found the registry at its bound: sweep it, at most once per granule (an
    /// insertion that finds it full within a granule of the last sweep makes no room). Returns
    /// how many entries were evicted.
    pub(super) fn make_room(&self, configs: &RegistryConfig, guard: &impl papaya::Guard) -> usize {
        let Some(idle) = self.idle else {
            return 0;
        };
        let now = self.now_ms();
        let due = self.next_sweep_ms.load(Ordering::Relaxed);
        if now < due
            || self
                .next_sweep_ms
                .compare_exchange(
                    due,
                    now.saturating_add(idle.granule_ms),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            // Swept within the granule, or another insertion is sweeping now.
            return 0;
        }
        self.sweep(&idle, configs, now, guard)
    }

    /// Evict every entry that may be evicted now (see [`evict_idle`](Self::evict_idle)).
    fn sweep(
        &self,
        idle: &Idle,
        configs: &RegistryConfig,
        now: u64,
        guard: &impl papaya::Guard,
    ) -> usize {
        let evictable = |name: &Arc<str>, entry: &Entry| {
            // Idle for the whole period (`now` may be a little older than a racing lookup's
            // write: it only keeps the entry), closed with no counted failures (so not open,
            // half-open or isolated), held by no handle (the map's own `Arc` only), and created
            // from the default (a name with its own configuration is known, not invented).
            now.saturating_sub(idle.last_lookup_ms(entry.seen.load(Ordering::Relaxed)))
                >= idle.period_ms
                && Arc::strong_count(&entry.breaker) == 1
                && entry.breaker.is_closed_and_clear()
                && !configs.has_own(name)
        };
        let mut evicted = 0;
        for (name, entry) in self.breakers.iter(guard) {
            if !evictable(name, entry) {
                continue;
            }
            // Checked again on removal, atomically with it: an entry looked up, tripped or
            // handed out since the first look is kept.
            if let Ok(Some(_)) = self.breakers.remove_if(&**name, evictable, guard) {
                self.release();
                evicted += 1;
            }
        }
        evicted
    }

    /// Evict every breaker that may be evicted now, and return how many were: meant for a
    /// timer (once a period, say), besides the sweeps of insertions that find the registry full
    /// ([`RegistryBuilder::max_dependencies`](super::RegistryBuilder::max_dependencies)).
    ///
    /// A breaker is evicted only if all of these hold when it is removed:
    /// - it has not been looked up ([`get`](Self::get), [`try_get`](Self::try_get),
    ///   [`with`](Self::with)) for the whole idle period
    ///   ([`RegistryBuilder::idle_eviction`](super::RegistryBuilder::idle_eviction)) on the
    ///   registry's clock;
    /// - it is closed with no counted failures: an open, half-open or isolated
    ///   ([`force_open`](CircuitBreaker::force_open)) breaker is never evicted, nor one counting
    ///   failures toward its threshold;
    /// - no handle holds it: the registry's own is its only `Arc` (so a handle from
    ///   [`get`](Self::get) or an [`OwnedPermit`](crate::breaker::OwnedPermit) keeps it);
    /// - its name has no configuration of its own (those are known dependencies, not a model's
    ///   invention).
    ///
    /// The next lookup of an evicted name creates a new breaker, closed, from the configuration
    /// in force: what was lost is a clean closed state (and its counters, with
    /// [`metrics`](super::RegistryBuilder::metrics) on, and any settings changed by hand with
    /// [`reconfigure`](CircuitBreaker::reconfigure)).
    ///
    /// The conditions are checked again by the map's conditional removal, so an entry that
    /// changed between the sweep's look and its removal is kept. One race remains, and it is
    /// benign: a lookup that found the entry just before its removal holds (or, in
    /// [`with`](Self::with), uses) a breaker no longer in the map. It is a working closed
    /// breaker; outcomes recorded through it are lost with it, and the next lookup of the name
    /// creates another. Without idle eviction, and in fleet mode (feature `redis`), nothing is
    /// ever evicted and this returns 0.
    ///
    /// Takes the configuration's lock for reading (a reload waits for it) and looks at every
    /// entry.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::Registry;
    ///
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let registry = Registry::builder()
    ///     .idle_eviction(Duration::from_secs(60))
    ///     .clock(clock)
    ///     .build();
    /// registry.get("made-up-tool");
    /// let search = registry.get("search"); // a held handle
    /// mock.increment(Duration::from_secs(59));
    /// assert_eq!(registry.evict_idle(), 0, "idle for 59 s of 60");
    /// mock.increment(Duration::from_secs(1));
    /// assert_eq!(registry.evict_idle(), 1);
    /// assert_eq!(registry.dependencies(), ["search"], "held by `search`");
    /// # drop(search);
    /// ```
    pub fn evict_idle(&self) -> usize {
        let Some(idle) = self.idle else {
            return 0;
        };
        let configs = sync::read(&self.configs);
        let now = self.now_ms();
        self.sweep(&idle, &configs, now, &self.breakers.guard())
    }

    /// The overflow breaker, built from the default configuration on first need.
    #[cold]
    pub(super) fn overflow(&self) -> &Arc<CircuitBreaker> {
        self.overflow.get_or_init(|| {
            // Under the lock, so a reload either sees it or is seen by it.
            let configs = sync::read(&self.configs);
            Arc::new(CircuitBreaker::with_extras(
                configs.default_config(),
                self.clock.clone(),
                Extras {
                    name: SmolStr::new_static(OVERFLOW_DEPENDENCY),
                    listener: self.listener.clone(),
                    metrics: self.metrics,
                    // Local in fleet mode: its fate is this instance's overflow, not a dependency's.
                    tap: None,
                },
            ))
        })
    }

    /// The error for `dependency` refused.
    pub(super) fn full(&self, dependency: &str) -> RegistryFull {
        RegistryFull {
            dependency: dependency.into(),
            max_dependencies: self.max_dependencies,
        }
    }
}
