//! What a bounded registry does with its bound: lookups recorded for idle eviction, the sweep
//! that evicts, `try_get`, `evict_idle` and the overflow breaker. The types are in `bounds`.

use std::sync::Arc;

use smol_str::SmolStr;

use super::bounds::{Entry, Full, Idle, OVERFLOW_DEPENDENCY, RegistryFull, TOUCHED};
use super::config::RegistryConfig;
use super::map::Registry;
use crate::breaker::{CircuitBreaker, Extras};
use crate::sync::{self, Ordering};

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
                    hook: None,
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
