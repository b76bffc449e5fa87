//! The registry's pools: kept in its configuration ([`RegistryConfig::pool`]), built over its
//! breakers from the configuration in force, at build and after every reload that changes them,
//! and looked up by name without a lock.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::config::RegistryConfig;
use super::map::Registry;
use super::pool_spec::{PoolBuilder, PoolShape, PoolSpec};
use crate::config::ConfigError;
use crate::sync;

impl RegistryConfig {
    /// The same, with the pool `pool` builds (replacing any pool of its name): a registry with
    /// this configuration gives it from [`Registry::pool`](crate::Registry::pool), and a reload
    /// that changes its groups changes the pool the registry gives.
    ///
    /// # Errors
    ///
    /// The [`ConfigError`] of [`PoolBuilder::check`].
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Pool, Registry, RegistryConfig};
    ///
    /// let config = RegistryConfig::default().pool(Pool::builder("search").group(["eu", "us"]))?;
    /// assert_eq!(config.pools().collect::<Vec<_>>(), ["search"]);
    /// let registry = Registry::builder().config(config).build();
    /// assert_eq!(registry.pool("search").unwrap().members().count(), 2);
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn pool(mut self, pool: PoolBuilder) -> Result<Self, ConfigError> {
        let spec = pool.spec()?;
        self.pools.insert(spec.name.clone(), spec);
        Ok(self)
    }

    /// The names of the pools, in name order.
    pub fn pools(&self) -> impl Iterator<Item = &str> + '_ {
        self.pools.keys().map(|name| &**name)
    }

    /// The pools' specs, in name order.
    pub(crate) fn pool_specs(&self) -> impl Iterator<Item = &PoolSpec> + '_ {
        self.pools.values()
    }

    /// The names of the pools added, changed or taken out from `before` to this configuration,
    /// in name order.
    pub(crate) fn pools_changed_from(&self, before: &RegistryConfig) -> Vec<String> {
        let names: BTreeSet<&str> = self.pools().chain(before.pools()).collect();
        names
            .into_iter()
            .filter(|name| self.pools.get(*name) != before.pools.get(*name))
            .map(str::to_owned)
            .collect()
    }
}

impl Registry {
    /// Build the pools of the configuration in force over the registry's breakers (creating
    /// their members' breakers on first use), keeping every pool whose spec did not change and
    /// removing those no longer configured. A member's breaker is the registry's, so its state
    /// survives any change of the pools it is in.
    pub(super) fn install_pools(&self) {
        // One rebuild at a time, each from the configuration in force when it starts: the last
        // one installs the newest configuration's pools.
        let _installing = sync::lock(&self.pools_installing);
        let specs: Vec<_> = sync::read(&self.configs).pool_specs().cloned().collect();
        // The map is made by the first pool: a registry with none keeps no table (papaya's
        // smallest is about 18 KB).
        if specs.is_empty() && self.pools.get().is_none() {
            return;
        }
        let pools = self.pools.get_or_init(|| {
            papaya::HashMap::builder()
                .hasher(foldhash::fast::RandomState::default())
                .build()
        });
        let pools = pools.pin();
        for spec in specs.iter() {
            if pools
                .get(&*spec.name)
                .is_some_and(|shape| shape.spec == *spec)
            {
                continue;
            }
            let shape = PoolShape::new(spec.clone(), |member| self.get(member));
            pools.insert(Arc::from(&*spec.name), Arc::new(shape));
        }
        pools.retain(|name, _| specs.iter().any(|spec| *spec.name == **name));
    }

    /// The pool named `name` in the configuration in force, as built over the breakers.
    pub(crate) fn pool_shape(&self, name: &str) -> Option<Arc<PoolShape>> {
        self.pools.get()?.pin().get(name).map(Arc::clone)
    }
}
