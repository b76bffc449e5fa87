//! Fleet mode's door into the registry: the fleet is the registry's creation hook
//! (`registry::hook`), which gives each new breaker its tap as the breaker's hook and tells the
//! worker of it, and the two public methods that install it and reach it again.

use core::any::Any;
use std::sync::Arc;

use smol_str::SmolStr;

use super::tap::Tap;
use super::{Fleet, FleetHandle, FleetLink};
use crate::breaker::{CircuitBreaker, Hook};
use crate::registry::{Creation, Install, Registry, RegistryBuilder};

impl Install for Fleet {
    fn start(&self) -> Box<dyn Creation> {
        Box::new(self.clone().start())
    }
}

impl Creation for FleetLink {
    fn hook_for(&self, dependency: &str) -> Option<Arc<dyn Hook>> {
        Some(Arc::new(Tap::new(
            SmolStr::new(dependency),
            Arc::clone(&self.outbox),
            self.handle.settings.command_timeout_ms,
        )))
    }

    fn created(&self, breaker: &Arc<CircuitBreaker>) {
        // The worker ends only when this link is dropped, so the send cannot fail before.
        let _ = self.register.send(Arc::clone(breaker));
    }
}

impl RegistryBuilder {
    /// Fleet mode (feature `redis`): share every breaker's transitions with the other instances
    /// of the gateway through Redis (see [`fleet`](crate::fleet)). `build` starts the fleet's
    /// worker on the Tokio runtime the fleet was built in; dropping the registry stops it.
    /// Admission stays local: a call never waits on Redis.
    ///
    /// With a mock [`clock`](Self::clock), let the worker apply a change from the fleet before
    /// moving the clock: it turns the server's times into the breaker's with the clock as it
    /// reads then (see [`docs::fleet`](crate::docs::fleet)).
    pub fn fleet(mut self, fleet: Fleet) -> Self {
        self.install = Some(Arc::new(fleet));
        self
    }
}

impl Registry {
    /// The fleet worker of a registry built with [`RegistryBuilder::fleet`] (feature `redis`):
    /// whether it reaches Redis, its counters.
    pub fn fleet(&self) -> Option<&FleetHandle> {
        let creation: &dyn Any = self.creation()?;
        creation.downcast_ref::<FleetLink>().map(FleetLink::handle)
    }
}
