//! The registry's pools: built over its breakers from the configuration in force, at build and
//! after every reload, and looked up by name without a lock.

use std::sync::Arc;

use super::map::Registry;
use super::pool_spec::PoolShape;
use crate::sync;

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
        let pools = self.pools.pin();
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
        self.pools.pin().get(name).map(Arc::clone)
    }
}
