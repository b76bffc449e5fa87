//! A pool of equivalent upstreams as configured: [`PoolBuilder`] (its groups of member names in
//! priority order, its panic share, whether it fails closed), checked into the spec a
//! [`RegistryConfig`](super::RegistryConfig) keeps, and the shape a registry builds from a spec
//! (the members' breakers, group by group). The choice of a member is `crate::pool`'s.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::breaker::CircuitBreaker;
use crate::config::{ConfigError, Problem};

/// Builds a pool of equivalent upstreams over a [`Registry`](crate::Registry)'s breakers; start
/// from [`Pool::builder`](crate::pool::Pool::builder), and build with
/// [`build`](crate::pool::PoolBuilder::build) (or keep the pool in a
/// [`RegistryConfig`](super::RegistryConfig) with [`RegistryConfig::pool`](super::RegistryConfig::pool),
/// where a reload can change it).
///
/// Members come in priority groups, one [`group`](Self::group) call per group, in order: the
/// first group serves while one of its members admits, the next takes over when none does.
///
/// # Examples
///
/// ```
/// use toolbreaker::{Pool, config::Problem};
///
/// let builder = Pool::builder("search").group(["search-eu", "search-us"]).group(["search-backup"]);
/// assert_eq!(builder.name(), "search");
///
/// let dup = Pool::builder("search").group(["a", "b"]).group(["a"]).check().unwrap_err();
/// assert_eq!((dup.field(), dup.problem()), ("groups", Problem::Duplicate));
/// let share = Pool::builder("search").group(["a"]).max_ejected(1.5).check().unwrap_err();
/// assert_eq!((share.field(), share.problem()), ("max_ejected", Problem::OutOfRange));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a builder does nothing until it is built"]
pub struct PoolBuilder {
    name: String,
    groups: Vec<Vec<String>>,
    max_ejected: Option<f64>,
    fail_closed: bool,
}

impl PoolBuilder {
    /// A pool named `name` (the name a blocked result gives the model), with no group yet.
    pub fn new(name: impl Into<String>) -> Self {
        PoolBuilder {
            name: name.into(),
            groups: Vec::new(),
            max_ejected: None,
            fail_closed: false,
        }
    }

    /// The next priority group: the registry's dependency names of its members. The first call
    /// gives the group tried first.
    pub fn group<S: Into<String>>(mut self, members: impl IntoIterator<Item = S>) -> Self {
        self.groups
            .push(members.into_iter().map(Into::into).collect());
        self
    }

    /// The panic share, a fraction in [0, 1] (default: none, no panic): when no member of the
    /// whole pool admits and more than `fraction` of a group's members are open, the group is
    /// in *panic* and admits the member that tripped longest ago (as Envoy's panic threshold
    /// does), unless the pool [`fail_closed`](Self::fail_closed). See
    /// [the panic rule](crate::pool#panic) for how it meets the groups' order.
    pub fn max_ejected(mut self, fraction: f64) -> Self {
        self.max_ejected = Some(fraction);
        self
    }

    /// Never panic (default: `false`): with `true`, a pool none of whose members admits is
    /// blocked, whatever [`max_ejected`](Self::max_ejected) says.
    pub fn fail_closed(mut self, on: bool) -> Self {
        self.fail_closed = on;
        self
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Check the pool's settings without building it.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the field: `name` ([`Problem::Empty`] for an empty name or one
    /// with a control character), `groups` ([`Problem::Empty`] for a pool with no group, a group
    /// with no member or a member so named, [`Problem::Duplicate`] for a member named twice, in
    /// one group or two) or `max_ejected` ([`Problem::OutOfRange`] outside [0, 1]).
    pub fn check(&self) -> Result<(), ConfigError> {
        self.spec().map(|_| ())
    }

    /// The checked spec.
    pub(crate) fn spec(&self) -> Result<PoolSpec, ConfigError> {
        if self.name.is_empty() || self.name.chars().any(char::is_control) {
            return Err(ConfigError::new("name", Problem::Empty));
        }
        let unnamed = |member: &String| member.is_empty() || member.chars().any(char::is_control);
        if self.groups.is_empty()
            || self.groups.iter().any(Vec::is_empty)
            || self.groups.iter().flatten().any(unnamed)
        {
            return Err(ConfigError::new("groups", Problem::Empty));
        }
        let mut seen = BTreeSet::new();
        if !self
            .groups
            .iter()
            .flatten()
            .all(|m| seen.insert(m.as_str()))
        {
            return Err(ConfigError::new("groups", Problem::Duplicate));
        }
        let max_ejected = match self.max_ejected {
            None => None,
            Some(f) if (0.0..=1.0).contains(&f) => Some((f * 1_000_000.0).round() as u32),
            Some(_) => return Err(ConfigError::new("max_ejected", Problem::OutOfRange)),
        };
        Ok(PoolSpec {
            name: self.name.as_str().into(),
            groups: self
                .groups
                .iter()
                .map(|g| g.iter().map(|m| m.as_str().into()).collect())
                .collect(),
            max_ejected,
            fail_closed: self.fail_closed,
        })
    }
}

/// A checked pool: its groups of member names, in order, and its panic rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PoolSpec {
    pub(crate) name: Box<str>,
    pub(crate) groups: Vec<Box<[Box<str>]>>,
    /// The panic share in millionths; `None`: no panic.
    pub(crate) max_ejected: Option<u32>,
    pub(crate) fail_closed: bool,
}

/// A pool over a registry's breakers, as `crate::pool` chooses from it: the members in group
/// order, and where each group ends.
#[derive(Debug)]
pub(crate) struct PoolShape {
    pub(crate) name: Box<str>,
    pub(crate) members: Box<[Arc<CircuitBreaker>]>,
    /// The end (exclusive) of each group in `members`, in order.
    pub(crate) ends: Box<[usize]>,
    /// The panic share in millionths; `None` when the pool never panics (no share, or it fails
    /// closed).
    pub(crate) panic_share: Option<u32>,
    /// The spec it was built from, so a reload rebuilds only the pools it changed.
    pub(crate) spec: PoolSpec,
}

impl PoolShape {
    /// The shape of `spec`, its members' breakers from `breaker` (the registry's `get`).
    pub(crate) fn new(spec: PoolSpec, breaker: impl Fn(&str) -> Arc<CircuitBreaker>) -> Self {
        let mut members = Vec::new();
        let mut ends = Vec::with_capacity(spec.groups.len());
        for group in &spec.groups {
            members.extend(group.iter().map(|m| breaker(m)));
            ends.push(members.len());
        }
        PoolShape {
            name: spec.name.clone(),
            members: members.into(),
            ends: ends.into(),
            panic_share: spec.max_ejected.filter(|_| !spec.fail_closed),
            spec,
        }
    }
}
