//! The configuration a registry holds ([`RegistryConfig`]) and what a reload changed
//! ([`ConfigChange`]). Loading it from TOML (feature `toml`) is in `toml`.

use core::fmt;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::Config;
use crate::types::Transition;

/// A registry's configuration: a default, and each dependency's own.
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
}

impl RegistryConfig {
    /// `default` for every dependency, and no dependency with its own.
    pub fn new(default: Config) -> Self {
        RegistryConfig {
            default,
            dependencies: BTreeMap::new(),
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

    pub(crate) fn dependency_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.dependencies.keys().map(|name| &**name)
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
        if b.failure_threshold() != a.failure_threshold() {
            write!(
                f,
                "{sep}failure_threshold {} -> {}",
                b.failure_threshold(),
                a.failure_threshold()
            )?;
            sep = ", ";
        }
        for (name, old, new) in [
            ("cooldown_ms", b.cooldown(), a.cooldown()),
            ("probe_timeout_ms", b.probe_timeout(), a.probe_timeout()),
        ] {
            if old != new {
                write!(f, "{sep}{name} {} -> {}", old.as_millis(), new.as_millis())?;
                sep = ", ";
            }
        }
        if let Some(t) = &self.transition {
            write!(f, " ({} -> {}: {})", t.from(), t.to(), t.reason())?;
        }
        Ok(())
    }
}
