//! Export of a breaker's counters through the `metrics` crate facade (feature `metrics`).

use metrics::{Unit, counter, describe_counter, describe_gauge, gauge};

use super::counters::Metrics;
use crate::types::State;

impl Metrics {
    /// Hand this snapshot to the [`metrics`](https://docs.rs/metrics) facade, labelled
    /// `dependency`: each counter is set to its absolute value (the facade's way to export
    /// counts kept elsewhere), so exporting again after more calls only moves them forward.
    ///
    /// | name | labels | kind |
    /// |---|---|---|
    /// | `toolbreaker_calls_admitted_total` | `dependency` | counter |
    /// | `toolbreaker_calls_blocked_total` | `dependency` | counter |
    /// | `toolbreaker_call_successes_total` | `dependency` | counter |
    /// | `toolbreaker_call_failures_total` | `dependency`, `kind` (`timeout`, `connect`, `rate_limited`, `unavailable`, `other`) | counter |
    /// | `toolbreaker_calls_ignored_total` | `dependency` | counter |
    /// | `toolbreaker_calls_dropped_total` | `dependency` | counter |
    /// | `toolbreaker_calls_saturated_total` | `dependency` | counter |
    /// | `toolbreaker_calls_in_flight` | `dependency` | gauge: calls holding a slot of the cap on calls in flight |
    /// | `toolbreaker_concurrency_limit` | `dependency` | gauge: the cap in force (exported only with a cap) |
    /// | `toolbreaker_calls_throttled_total` | `dependency` | counter |
    /// | `toolbreaker_transitions_total` | `dependency`, `reason` (as [`TransitionReason::as_str`](crate::TransitionReason::as_str)) | counter |
    /// | `toolbreaker_state` | `dependency`, `state` (`closed`, `open`, `half_open`) | gauge: 1 for the state now, 0 for the others |
    ///
    /// Counting stays off the facade's hot path: a call touches only the breaker's striped
    /// counters, and the facade sees them when this runs (call it on a timer, or before each
    /// scrape).
    pub fn export(&self, dependency: &str) {
        describe();
        let d = dependency.to_owned();
        counter!("toolbreaker_calls_admitted_total", "dependency" => d.clone())
            .absolute(self.admitted);
        counter!("toolbreaker_calls_blocked_total", "dependency" => d.clone())
            .absolute(self.blocked);
        counter!("toolbreaker_call_successes_total", "dependency" => d.clone())
            .absolute(self.successes);
        let f = &self.failures;
        for (kind, count) in [
            ("timeout", f.timeout),
            ("connect", f.connect),
            ("rate_limited", f.rate_limited),
            ("unavailable", f.unavailable),
            ("other", f.other),
        ] {
            counter!("toolbreaker_call_failures_total", "dependency" => d.clone(), "kind" => kind)
                .absolute(count);
        }
        counter!("toolbreaker_calls_ignored_total", "dependency" => d.clone())
            .absolute(self.ignored);
        counter!("toolbreaker_calls_dropped_total", "dependency" => d.clone())
            .absolute(self.dropped);
        counter!("toolbreaker_calls_saturated_total", "dependency" => d.clone())
            .absolute(self.saturated);
        gauge!("toolbreaker_calls_in_flight", "dependency" => d.clone())
            .set(f64::from(self.in_flight));
        if let Some(limit) = self.concurrency_limit {
            gauge!("toolbreaker_concurrency_limit", "dependency" => d.clone())
                .set(f64::from(limit));
        }
        counter!("toolbreaker_calls_throttled_total", "dependency" => d.clone())
            .absolute(self.throttled);
        let t = &self.transitions;
        for (reason, count) in [
            ("failure_threshold", t.failure_threshold),
            ("failure_rate", t.failure_rate),
            ("slow_call_rate", t.slow_call_rate),
            ("retry_after", t.retry_after),
            ("cooldown_elapsed", t.cooldown_elapsed),
            ("probe_succeeded", t.probe_succeeded),
            ("probe_failed", t.probe_failed),
            ("probe_timed_out", t.probe_timed_out),
            ("manual", t.manual),
            ("fleet", t.fleet),
        ] {
            counter!("toolbreaker_transitions_total", "dependency" => d.clone(), "reason" => reason)
                .absolute(count);
        }
        for state in [State::Closed, State::Open, State::HalfOpen] {
            let now = if state == self.state { 1.0 } else { 0.0 };
            gauge!("toolbreaker_state", "dependency" => d.clone(), "state" => state.as_str())
                .set(now);
        }
    }
}

fn describe() {
    describe_counter!(
        "toolbreaker_calls_admitted_total",
        Unit::Count,
        "Calls a circuit breaker admitted, counted when they finish (recorded or dropped)"
    );
    describe_counter!(
        "toolbreaker_calls_blocked_total",
        Unit::Count,
        "Calls a circuit breaker blocked; nothing was sent"
    );
    describe_counter!(
        "toolbreaker_call_successes_total",
        Unit::Count,
        "Calls recorded as successes"
    );
    describe_counter!(
        "toolbreaker_call_failures_total",
        Unit::Count,
        "Calls recorded as counted failures, by kind"
    );
    describe_counter!(
        "toolbreaker_calls_ignored_total",
        Unit::Count,
        "Calls that failed through no fault of the dependency"
    );
    describe_counter!(
        "toolbreaker_calls_saturated_total",
        Unit::Count,
        "Calls refused by a circuit breaker's cap on calls in flight; nothing was sent"
    );
    describe_gauge!(
        "toolbreaker_calls_in_flight",
        Unit::Count,
        "Calls holding a slot of a circuit breaker's cap on calls in flight"
    );
    describe_gauge!(
        "toolbreaker_concurrency_limit",
        Unit::Count,
        "The cap on calls in flight in force, fixed or adaptive"
    );
    describe_counter!(
        "toolbreaker_calls_throttled_total",
        Unit::Count,
        "Calls adaptive throttling shed before sending while the circuit breaker was closed"
    );
    describe_counter!(
        "toolbreaker_transitions_total",
        Unit::Count,
        "Circuit breaker state changes, by reason"
    );
    describe_gauge!(
        "toolbreaker_state",
        "1 for a circuit breaker's current state, 0 for the others"
    );
}
