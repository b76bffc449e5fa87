//! Every counting breaker's counters through the `metrics` facade (feature `metrics`).

use super::map::Registry;

impl Registry {
    /// [`Metrics::export`](crate::observe::Metrics::export) for every counting breaker, labelled by its dependency.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{Outcome, Registry};
    ///
    /// let registry = Registry::builder().metrics(true).build();
    /// registry.get("search").try_acquire().unwrap().record(Outcome::Success);
    /// registry.export_metrics(); // no recorder installed: the facade drops them
    /// ```
    ///
    /// With retry budgets ([`Registry::retry_budget`]), also
    /// `toolbreaker_retries_refused_total` (label `dependency`, a counter): the retries each
    /// counting dependency's budget refused.
    pub fn export_metrics(&self) {
        for (dependency, metrics) in self.metrics() {
            metrics.export(&dependency);
        }
        for (name, entry) in self.breakers.pin().iter().filter(|_| self.metrics) {
            if let Some(budget) = entry.breaker.retry_budget() {
                let dependency = name.to_string();
                metrics::counter!("toolbreaker_retries_refused_total", "dependency" => dependency)
                    .absolute(budget.refused());
            }
        }
    }
}
