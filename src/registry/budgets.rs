//! The dependencies' retry budgets: their rules in a [`RegistryConfig`] (a default, and each
//! dependency's own), and the budget a registry attaches to each breaker, kept across reloads.

use core::time::Duration;

use super::config::RegistryConfig;
use super::map::Registry;
use crate::breaker::{BudgetRule, CircuitBreaker, RetryBudget};

impl RegistryConfig {
    /// The same, with `budget`'s rules (its ratio, floor and window; not its counts) as the
    /// default retry budget: every dependency without a rule of its own gets a budget of its own
    /// with these rules. `None`: no default budget (the default).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{RegistryConfig, breaker::RetryBudget};
    ///
    /// let budget = RetryBudget::new(0.2, 10, Duration::from_secs(10))?;
    /// let config = RegistryConfig::default()
    ///     .with_retry_budget(Some(&budget))
    ///     .dependency_retry_budget("billing", None);
    /// assert_eq!(config.retry_budget_for("search"), Some((0.2, 10, Duration::from_secs(10))));
    /// assert_eq!(config.retry_budget_for("billing"), None, "off for billing");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_retry_budget(mut self, budget: Option<&RetryBudget>) -> Self {
        self.budgets.0 = budget.map(RetryBudget::rule);
        self
    }

    /// The same, with `budget`'s rules as `dependency`'s own retry budget, or (`None`) no retry
    /// budget for it whatever the default.
    #[must_use]
    pub fn dependency_retry_budget(
        mut self,
        dependency: impl Into<String>,
        budget: Option<&RetryBudget>,
    ) -> Self {
        let rule = budget.map(RetryBudget::rule);
        self.budgets
            .1
            .insert(dependency.into().into_boxed_str(), rule);
        self
    }

    /// `dependency`'s retry budget rules, its own or the default's: `(ratio, min_per_second,
    /// window)`; `None` when it has no budget.
    pub fn retry_budget_for(&self, dependency: &str) -> Option<(f64, u32, Duration)> {
        self.budget_rule(dependency).map(|rule| {
            let window = Duration::from_millis(rule.window_ms);
            (rule.ratio, rule.min_per_second, window)
        })
    }

    pub(crate) fn budget_rule(&self, dependency: &str) -> Option<BudgetRule> {
        match self.budgets.1.get(dependency) {
            Some(own) => *own,
            None => self.budgets.0,
        }
    }

    /// The default rule, and each dependency's own, for the TOML reader.
    #[cfg(feature = "toml")]
    pub(crate) fn set_budget_rule(&mut self, dependency: Option<&str>, rule: Option<BudgetRule>) {
        match dependency {
            Some(name) => {
                self.budgets.1.insert(name.into(), rule);
            }
            None => self.budgets.0 = rule,
        }
    }
}

impl Registry {
    /// `dependency`'s retry budget, shared with every call through the guard pipeline that
    /// uses the registry's (a `ToolGuard` without a budget of its own, feature `tokio`):
    /// `None` when the configuration gives it none (see
    /// [`RegistryBuilder::retry_budget`](super::RegistryBuilder::retry_budget) and the
    /// `retry_budget` key of a configuration file). Like [`get`](Self::get), the first use
    /// of a name creates its breaker, to which its budget belongs.
    ///
    /// A reload keeps each dependency's budget and its counts: a new ratio or floor applies to
    /// them at once; a new window carries the old window's live counts into the new one
    /// (counted as of the reload, leaving it a window later); a rule taken out switches the
    /// budget off (every retry allowed) until a rule is put back.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{Registry, RegistryConfig, breaker::RetryBudget};
    ///
    /// let template = RetryBudget::new(0.2, 10, Duration::from_secs(10))?;
    /// let registry = Registry::builder().retry_budget(&template).build();
    /// let search = registry.retry_budget("search").expect("every dependency has its own");
    /// search.deposit();
    /// assert_eq!(registry.retry_budget("search").unwrap(), search, "one budget, shared");
    /// assert_ne!(registry.retry_budget("weather").unwrap(), search, "one per dependency");
    ///
    /// let tighter = RetryBudget::new(0.1, 1, Duration::from_secs(10))?;
    /// registry.reload(RegistryConfig::default().with_retry_budget(Some(&tighter)));
    /// assert_eq!(search.ratio(), 0.1, "the same budget, new rules");
    /// registry.reload(RegistryConfig::default());
    /// assert!(registry.retry_budget("search").is_none(), "no rule: no budget");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn retry_budget(&self, dependency: &str) -> Option<RetryBudget> {
        self.with(dependency, |breaker| breaker.retry_budget().cloned())
    }

    /// Give `breaker` the budget `rule` asks for: its attached one updated (or switched off),
    /// or a new one attached when it has none and `rule` is set.
    pub(super) fn sync_budget(&self, breaker: &CircuitBreaker, rule: Option<BudgetRule>) {
        match (breaker.attached_budget(None), rule) {
            (Some(budget), rule) => {
                if (budget.is_on(), rule) != (true, Some(budget.rule())) {
                    budget.apply(rule);
                }
            }
            (None, Some(rule)) => {
                let make = || RetryBudget::from_rule(rule, self.clock.clone());
                breaker.attached_budget(Some(&make));
            }
            (None, None) => {}
        }
    }
}
