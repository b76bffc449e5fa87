//! [`Pool`]: the type, what it is built from (a [`PoolBuilder`] over a [`Registry`]), its
//! accessors, and the registry's lookup of its configured pools.

use std::sync::Arc;

use crate::breaker::CircuitBreaker;
use crate::config::{ConfigError, Problem};
use crate::registry::{PoolBuilder, PoolShape, Registry};

/// A pool of equivalent upstreams, each a [`Registry`]'s breaker, in priority groups: a call is
/// sent to one member that admits it, and fails over to another when a member's breaker is
/// open. The choice rule, the panic rule and what each permit records are in the
/// [module docs](crate::pool).
///
/// A handle: cloning it is an `Arc` clone. The members are the registry's breakers
/// ([`Registry::get`]), so their configuration, live reload, metrics, listeners, tracing and
/// fleet mode apply to them as to any other; a breaker may be in several pools. The pool's own
/// groups are fixed when it is built: a pool kept in the registry's configuration
/// ([`RegistryConfig::pool`](crate::RegistryConfig::pool), or `[pools.NAME]` in its file) is
/// rebuilt by a reload that changes it, so ask [`Registry::pool`] again after a reload (a lookup
/// takes no lock); a handle held from before keeps the old groups, over the same breakers.
///
/// # Examples
///
/// ```
/// use toolbreaker::{FailureKind, Outcome, Pool, Registry};
///
/// let registry = Registry::default();
/// let pool = Pool::builder("search").group(["search-eu", "search-us"]).group(["search-backup"]).build(&registry)?;
/// assert_eq!(pool.name(), "search");
/// assert_eq!(pool.groups().map(|g| g.len()).collect::<Vec<_>>(), [2, 1]);
///
/// registry.get("search-eu").force_open(); // switched off by hand
/// for _ in 0..100 {
///     let permit = pool.try_acquire().expect("search-us admits");
///     assert_eq!(permit.member(), "search-us", "never the open member, never the backup");
///     permit.record(Outcome::Success);
/// }
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Pool {
    pub(super) shape: Arc<PoolShape>,
}

impl Pool {
    /// A builder for a pool named `name`: add its groups with [`PoolBuilder::group`], build it
    /// over a registry with [`PoolBuilder::build`].
    pub fn builder(name: impl Into<String>) -> PoolBuilder {
        PoolBuilder::new(name)
    }

    /// The pool's name: what a blocked result names ([`Blocked`](crate::Blocked) carries no
    /// name; the caller gives this one, as it gives a breaker's).
    pub fn name(&self) -> &str {
        &self.shape.name
    }

    /// The groups, in priority order, each its members' breakers in the order given.
    pub fn groups(&self) -> impl ExactSizeIterator<Item = &[Arc<CircuitBreaker>]> + '_ {
        let mut begin = 0;
        self.shape.ends.iter().map(move |&end| {
            let group = &self.shape.members[begin..end];
            begin = end;
            group
        })
    }

    /// Every member's breaker, group by group.
    pub fn members(&self) -> impl ExactSizeIterator<Item = &Arc<CircuitBreaker>> + '_ {
        self.shape.members.iter()
    }

    /// The member named `name`, if it is one.
    pub fn member(&self, name: &str) -> Option<&Arc<CircuitBreaker>> {
        self.shape.members.iter().find(|m| m.name() == name)
    }

    /// The panic share ([`PoolBuilder::max_ejected`]), a fraction; `None` when the pool never
    /// panics (none was set, or it [`fails closed`](PoolBuilder::fail_closed)).
    pub fn panic_share(&self) -> Option<f64> {
        self.shape.panic_share.map(|m| f64::from(m) / 1_000_000.0)
    }
}

impl PoolBuilder {
    /// The pool, over `registry`'s breakers: each member is `registry.get(name)`, created closed
    /// on first use (past a bounded registry's bound, its overflow breaker, as
    /// [`Registry::get`] says).
    ///
    /// A pool built here is the caller's: a reload of the registry's configuration does not
    /// change its groups (a pool kept in the configuration, [`RegistryConfig::pool`](crate::RegistryConfig::pool), is
    /// rebuilt by one).
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check): a [`ConfigError`] naming `name`, `groups` or `max_ejected`;
    /// and `groups` with [`Problem::TooLarge`] when a bounded registry
    /// ([`max_dependencies`](crate::registry::RegistryBuilder::max_dependencies)) has no room
    /// for a member's breaker (it would share the overflow breaker). A pool kept in the
    /// registry's configuration has its members counted as configured names, admitted past the
    /// bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Pool, Registry, config::Problem};
    ///
    /// let registry = Registry::default();
    /// let empty = Pool::builder("search").group(Vec::<String>::new()).build(&registry).unwrap_err();
    /// assert_eq!((empty.field(), empty.problem()), ("groups", Problem::Empty));
    /// ```
    pub fn build(&self, registry: &Registry) -> Result<Pool, ConfigError> {
        let spec = self.spec()?;
        // Each member its own breaker: past a bounded registry's bound a member would share the
        // overflow breaker with every other name, so the pool is refused instead.
        let mut breakers = std::collections::HashMap::new();
        for member in spec.groups.iter().flatten() {
            let breaker = registry
                .try_get(member)
                .map_err(|_| ConfigError::new("groups", Problem::TooLarge))?;
            breakers.insert(member.clone(), breaker);
        }
        Ok(Pool {
            shape: Arc::new(PoolShape::new(spec, |member| Arc::clone(&breakers[member]))),
        })
    }
}

impl Registry {
    /// The pool named `name` in the configuration in force ([`RegistryConfig::pool`](crate::RegistryConfig::pool), or
    /// `[pools.NAME]` in its file), built over this registry's breakers; `None` if there is none.
    ///
    /// Lock-free: a hash, a probe of the pools' map and an `Arc` clone. A reload that changes
    /// the pool's groups builds a new pool over the same breakers (their state is kept); this
    /// returns it from then on.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Pool, Registry, RegistryConfig};
    ///
    /// let config = RegistryConfig::default().pool(Pool::builder("search").group(["eu"]).group(["us"]))?;
    /// let registry = Registry::builder().config(config).build();
    /// let pool = registry.pool("search").unwrap();
    /// assert_eq!(pool.try_acquire().unwrap().member(), "eu");
    /// assert!(registry.pool("weather").is_none());
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn pool(&self, name: &str) -> Option<Pool> {
        self.pool_shape(name).map(|shape| Pool { shape })
    }
}
