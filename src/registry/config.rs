//! The configuration a registry holds ([`RegistryConfig`]), what a reload changed ([`Reload`],
//! [`ConfigChange`]), and the check of its dependency names against the known ones
//! ([`RegistryConfig::unknown_dependencies`], [`closest_name`]). Loading it from TOML (feature
//! `toml`) is in `toml`.

use core::fmt;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::pool_spec::PoolSpec;
use crate::breaker::BudgetRule;
use crate::config::Config;
use crate::time::millis_floor;
use crate::types::Transition;

/// A registry's configuration: a default, each dependency's own, and the pools of equivalent
/// upstreams built over the dependencies' breakers ([`pool`](Self::pool)).
///
/// Built in code ([`dependency`](Self::dependency)) or read from TOML
/// (`from_toml` and `from_file`, feature `toml`); put in force with
/// [`RegistryBuilder::config`](crate::registry::RegistryBuilder::config) or
/// [`Registry::reload`](crate::Registry::reload).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{Config, RegistryConfig};
///
/// let search = Config::new(3, Duration::from_secs(2), Duration::from_secs(1))?;
/// let config = RegistryConfig::default().dependency("search", search);
/// assert_eq!(config.config_for("search"), search);
/// assert_eq!(config.config_for("weather"), Config::default(), "no section: the default");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistryConfig {
    default: Config,
    dependencies: BTreeMap<Box<str>, Config>,
    /// The pools, by name (their methods are in `pools.rs`).
    pub(super) pools: BTreeMap<Box<str>, PoolSpec>,
    /// The retry budgets' rules: the default's, and each dependency's own (`None`: off for it);
    /// their methods are in `budgets.rs`.
    pub(super) budgets: (Option<BudgetRule>, BTreeMap<Box<str>, Option<BudgetRule>>),
}

impl RegistryConfig {
    /// `default` for every dependency, and no dependency with its own.
    pub fn new(default: Config) -> Self {
        RegistryConfig {
            default,
            dependencies: BTreeMap::new(),
            pools: BTreeMap::new(),
            budgets: (None, BTreeMap::new()),
        }
    }

    /// The same, with `default` for every dependency without its own.
    #[must_use]
    pub fn with_default(mut self, default: Config) -> Self {
        self.default = default;
        self
    }

    /// The same, with `config` as `dependency`'s own (replacing any it had).
    #[must_use]
    pub fn dependency(mut self, dependency: impl Into<String>, config: Config) -> Self {
        self.dependencies
            .insert(dependency.into().into_boxed_str(), config);
        self
    }

    /// The configuration of every dependency without its own.
    pub fn default_config(&self) -> Config {
        self.default
    }

    /// `dependency`'s configuration: its own, or the default.
    pub fn config_for(&self, dependency: &str) -> Config {
        self.dependencies
            .get(dependency)
            .copied()
            .unwrap_or(self.default)
    }

    /// The dependencies with a configuration of their own, in name order.
    pub fn dependencies(&self) -> impl Iterator<Item = (&str, Config)> + '_ {
        self.dependencies.iter().map(|(name, c)| (&**name, *c))
    }

    /// The dependencies with a configuration of their own whose name is not among `known`, in
    /// name order: most often a misspelt name, whose section would otherwise be kept for a
    /// dependency nothing asks for while the real one silently runs on the default.
    ///
    /// For a configuration checked before it is put in force (nothing has asked for a breaker
    /// yet), against the names the caller knows it will ask for; a reload reports the sections
    /// without a breaker itself ([`Reload::unmatched`]). [`closest_name`] suggests what was meant.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Config, RegistryConfig, registry::closest_name};
    ///
    /// let config = RegistryConfig::default()
    ///     .dependency("serch", Config::default())
    ///     .dependency("weather", Config::default());
    /// let tools = ["search", "weather", "quotes"];
    /// assert_eq!(config.unknown_dependencies(tools), ["serch"]);
    /// assert_eq!(closest_name("serch", tools), Some("search"));
    /// ```
    pub fn unknown_dependencies<'k>(&self, known: impl IntoIterator<Item = &'k str>) -> Vec<&str> {
        let known: BTreeSet<&str> = known.into_iter().collect();
        self.dependency_names()
            .filter(|name| !known.contains(name))
            .collect()
    }

    pub(crate) fn dependency_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.dependencies.keys().map(|name| &**name)
    }

    /// Whether `dependency` has a configuration of its own.
    pub(crate) fn has_own(&self, dependency: &str) -> bool {
        self.dependencies.contains_key(dependency)
            || self
                .pool_specs()
                .any(|spec| spec.groups.iter().flatten().any(|m| **m == *dependency))
    }
}

/// The name among `candidates` nearest to `name`, if near enough to be a likely misspelling of
/// it; `None` when none is.
///
/// Nearness is the edit distance: the fewest characters inserted, deleted, substituted, or
/// swapped with their neighbour that turn one into the other. A candidate is near enough within
/// one edit per three characters of `name`, and at least one (so `serch` or `Search` find
/// `search`, `qoutes` finds `quotes`, and `api` finds nothing in `search`); of equally near
/// ones, the first. Meant for error messages about unknown names, such as the sections
/// [`RegistryConfig::unknown_dependencies`] finds.
///
/// # Examples
///
/// ```
/// use toolbreaker::registry::closest_name;
///
/// let tools = ["search", "weather", "quotes", "files"];
/// assert_eq!(closest_name("wether", tools), Some("weather"));
/// assert_eq!(closest_name("qoutes", tools), Some("quotes"));
/// assert_eq!(closest_name("calendar", tools), None);
/// ```
pub fn closest_name<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = name.chars().count().max(3) / 3;
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let distance = edit_distance(name, candidate);
        if distance <= limit && best.is_none_or(|(nearest, _)| distance < nearest) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// The optimal string alignment distance between `a` and `b`, by characters: Levenshtein's
/// insertions, deletions and substitutions, and swaps of two neighbours, each one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: the one before the previous (for swaps), the previous, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// What [`Registry::reload`](crate::Registry::reload) did: the configurations it changed, the
/// dependency sections of the new configuration that no breaker uses yet, and the pools it
/// changed.
///
/// # Examples
///
/// ```
/// use toolbreaker::{Config, Registry, RegistryConfig};
///
/// let registry = Registry::default();
/// let search = registry.get("search");
/// let tight = Config::new(2, std::time::Duration::from_secs(5), std::time::Duration::from_secs(5))?;
/// let reload = registry.reload(
///     RegistryConfig::default().dependency("search", tight).dependency("serch", tight),
/// );
/// let changed: Vec<String> = reload.changes().iter().map(ToString::to_string).collect();
/// assert_eq!(changed, ["search: failure_threshold 5 -> 2, cooldown_ms 30000 -> 5000, probe_timeout_ms 30000 -> 5000",
///                      "serch: failure_threshold 5 -> 2, cooldown_ms 30000 -> 5000, probe_timeout_ms 30000 -> 5000"]);
/// assert_eq!(reload.unmatched(), ["serch"], "a typo, or a dependency not used yet");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reload {
    changes: Vec<ConfigChange>,
    unmatched: Vec<String>,
    pools: Vec<String>,
}

impl Reload {
    pub(crate) fn new(
        changes: Vec<ConfigChange>,
        unmatched: Vec<String>,
        pools: Vec<String>,
    ) -> Self {
        Reload {
            changes,
            unmatched,
            pools,
        }
    }

    /// The pools the reload added, changed (their groups, `max_ejected` or `fail_closed`) or
    /// took out, in name order: [`Registry::pool`](crate::Registry::pool) gives the new ones
    /// from now on, over the same breakers. Empty when no pool changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Pool, Registry, RegistryConfig};
    ///
    /// let registry = Registry::default();
    /// let config = RegistryConfig::default().pool(Pool::builder("search").group(["eu", "us"]))?;
    /// assert_eq!(registry.reload(config.clone()).pools_changed(), ["search"]);
    /// assert!(registry.reload(config).pools_changed().is_empty(), "the same pool again");
    /// assert_eq!(registry.reload(RegistryConfig::default()).pools_changed(), ["search"]);
    /// assert!(registry.pool("search").is_none(), "taken out");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn pools_changed(&self) -> &[String] {
        &self.pools
    }

    /// One entry per dependency whose configuration changed, plus one for the default if it
    /// changed (first); dependencies in name order. Empty when nothing changed.
    pub fn changes(&self) -> &[ConfigChange] {
        &self.changes
    }

    /// The same, by value.
    pub fn into_changes(self) -> Vec<ConfigChange> {
        self.changes
    }

    /// The dependencies with a section of their own in the new configuration that have no
    /// breaker yet, in name order: nothing has asked for them. Most often a misspelt name (the
    /// real dependency then runs on the default); a dependency first used later takes its
    /// section then. See [`closest_name`] for a suggestion.
    pub fn unmatched(&self) -> &[String] {
        &self.unmatched
    }
}

impl<'a> IntoIterator for &'a Reload {
    type Item = &'a ConfigChange;
    type IntoIter = core::slice::Iter<'a, ConfigChange>;

    /// The changes.
    fn into_iter(self) -> Self::IntoIter {
        self.changes.iter()
    }
}

/// One dependency's configuration as changed by [`Registry::reload`](crate::Registry::reload).
///
/// Its `Display` is one line for an operator: the dependency (or `default`), each field that
/// changed with its old and new value, and the transition the change caused, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigChange {
    dependency: Option<Arc<str>>,
    before: Config,
    after: Config,
    transition: Option<Transition>,
}

impl ConfigChange {
    pub(crate) fn new(
        dependency: Option<Arc<str>>,
        before: Config,
        after: Config,
        transition: Option<Transition>,
    ) -> Self {
        ConfigChange {
            dependency,
            before,
            after,
            transition,
        }
    }

    /// The dependency, or `None` for the default configuration.
    pub fn dependency(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The configuration before the reload.
    pub fn before(&self) -> Config {
        self.before
    }

    /// The configuration after it.
    pub fn after(&self) -> Config {
        self.after
    }

    /// The transition the change caused: a trip, when a closed breaker's failures already reach
    /// a lowered threshold.
    pub fn transition(&self) -> Option<&Transition> {
        self.transition.as_ref()
    }
}

impl fmt::Display for ConfigChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dependency().unwrap_or("default"))?;
        let (b, a) = (self.before, self.after);
        let mut sep = ": ";
        let threshold = |c: Config| match c.failure_threshold() {
            Some(n) => n.to_string(),
            None => "off".to_owned(),
        };
        if b.failure_threshold() != a.failure_threshold() {
            write!(
                f,
                "{sep}failure_threshold {} -> {}",
                threshold(b),
                threshold(a)
            )?;
            sep = ", ";
        }
        // The rate rules, each as the file spells it.
        let rate = |c: Config| c.failure_rate().map_or("off".to_owned(), |r| r.to_string());
        let slow = |c: Config| {
            c.slow_calls().map_or("off".to_owned(), |(t, r)| {
                format!("{} ms at {r}", millis_floor(t))
            })
        };
        let window = |c: Config| match c.window() {
            None => "off".to_owned(),
            Some(crate::config::Window::Calls(n)) => format!("{n} calls"),
            Some(crate::config::Window::Time(t)) => format!("{} ms", millis_floor(t)),
        };
        let minimum = |c: Config| {
            c.minimum_calls()
                .map_or("off".to_owned(), |m| m.to_string())
        };
        let backoff = |c: Config| {
            c.cooldown_backoff().map_or("off".to_owned(), |(m, max)| {
                format!("{m} up to {} ms", millis_floor(max))
            })
        };
        let jitter = |c: Config| c.cooldown_jitter().to_string();
        let cap = |c: Config| {
            c.max_in_flight()
                .map_or("off".to_owned(), |n| n.to_string())
        };
        let adaptive = |c: Config| {
            c.adaptive_concurrency()
                .map_or("off".to_owned(), |l| format!("{l:?}"))
        };
        let ms = |d: core::time::Duration| millis_floor(d).to_string();
        let throttling = |c: Config| {
            c.adaptive_throttling()
                .map_or("off".to_owned(), |(k, window)| {
                    format!("k {k} over {} ms", millis_floor(window))
                })
        };
        for (name, old, new) in [
            ("failure_rate", rate(b), rate(a)),
            ("slow_calls", slow(b), slow(a)),
            ("window", window(b), window(a)),
            ("minimum_calls", minimum(b), minimum(a)),
            ("cooldown_backoff", backoff(b), backoff(a)),
            ("cooldown_jitter", jitter(b), jitter(a)),
            ("probes", b.probes().to_string(), a.probes().to_string()),
            ("max_in_flight", cap(b), cap(a)),
            ("adaptive_concurrency", adaptive(b), adaptive(a)),
            ("adaptive_throttling", throttling(b), throttling(a)),
            ("cooldown_ms", ms(b.cooldown()), ms(a.cooldown())),
            (
                "probe_timeout_ms",
                ms(b.probe_timeout()),
                ms(a.probe_timeout()),
            ),
        ] {
            if old != new {
                write!(f, "{sep}{name} {old} -> {new}")?;
                sep = ", ";
            }
        }
        if let Some(t) = &self.transition {
            write!(f, " ({} -> {}: {})", t.from(), t.to(), t.reason())?;
        }
        Ok(())
    }
}
