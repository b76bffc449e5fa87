//! The registry's creation hook: what a registry calls as it makes each breaker, so a mode that
//! shares breakers' transitions (fleet mode, `fleet`) can give each new breaker its hook and hear
//! of it, without the registry naming that mode's types.
//!
//! A builder holds the hook not yet started ([`Install`]); `build` starts it and the registry
//! holds what it returns ([`Creation`]) for its lifetime, dropping it with the registry.

use core::any::Any;
use std::sync::Arc;

use crate::breaker::{CircuitBreaker, Hook};

/// A creation hook not yet started, held by a `RegistryBuilder` (cloned with it).
pub(crate) trait Install: Send + Sync + core::fmt::Debug {
    /// Start the hook: called once, by `RegistryBuilder::build`.
    fn start(&self) -> Box<dyn Creation>;
}

/// A started creation hook, held by the registry. A registry with one does not evict idle
/// breakers: the hook's owner holds them too.
pub(crate) trait Creation: Any + Send + Sync + core::fmt::Debug {
    /// The hook of a new breaker of `dependency`, before it is made.
    fn hook_for(&self, dependency: &str) -> Option<Arc<dyn Hook>>;

    /// `breaker` was made and inserted: the registry's breaker of its name from now on.
    fn created(&self, breaker: &Arc<CircuitBreaker>);
}
