//! The configuration in force: read it ([`config_for`](Registry::config_for),
//! [`configuration`](Registry::configuration)) and replace it live
//! ([`reload`](Registry::reload)), reconfiguring the breakers it changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::config::{ConfigChange, RegistryConfig, Reload};
use super::map::Registry;
use crate::breaker::CircuitBreaker;
use crate::config::Config;
use crate::observe;
use crate::sync;

impl Registry {
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
    /// - [`pools_changed`](Reload::pools_changed): the pools added, changed or taken out; each
    ///   is rebuilt over the same breakers (no member loses its state), and
    ///   [`pool`](Self::pool) gives the new one from then on.
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
        // Each breaker's retry budget follows its rule, keeping its counts (`Registry::retry_budget`).
        for (name, entry) in self.breakers.pin().iter() {
            self.sync_budget(&entry.breaker, configs.budget_rule(name));
        }
        // Listeners hear the trips after the lock is released, so they may use the registry.
        // Every trip is told even if a listener panics; the first panic is resumed afterwards.
        let pools = configs.pools_changed_from(&before);
        drop(configs);
        // The pools are rebuilt outside the lock: building one looks its members up, and a
        // first use reads the configuration.
        if !pools.is_empty() {
            self.install_pools();
        }
        observe::tell_each(
            tripped,
            |(breaker, transition): (Arc<CircuitBreaker>, _)| {
                breaker.announce(transition);
            },
        );
        Reload::new(changes, unmatched, pools)
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
