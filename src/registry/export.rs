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
    pub fn export_metrics(&self) {
        for (dependency, metrics) in self.metrics() {
            metrics.export(&dependency);
        }
    }
}
