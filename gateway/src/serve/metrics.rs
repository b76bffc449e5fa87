//! The process's Prometheus recorder: installed once, rendered by `/metrics` without the
//! series of dependencies no longer served.

use std::collections::BTreeSet;
use std::io;
use std::sync::{Mutex, OnceLock, PoisonError};

use metrics::{Unit, describe_counter, describe_histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// The buckets, in seconds, of every histogram whose name ends in `_seconds` (such as
/// `toolbreaker_gateway_request_duration_seconds`): from 0.5 ms to 60 s.
pub const LATENCY_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

/// The handle of this process's Prometheus recorder, installed as the global `metrics`
/// recorder on the first call; every later call (another server in the same process, a test)
/// returns a handle to the same recorder. Histograms named `*_seconds` get
/// [`LATENCY_BUCKETS`]; others are rendered as summaries.
///
/// # Errors
///
/// Another global `metrics` recorder was installed before the first call (by something other
/// than this function); every call then returns that error, and nothing is recorded here.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::serve::prometheus_handle;
///
/// let handle = prometheus_handle().unwrap();
/// metrics::counter!("doc_example_total").increment(2);
/// assert!(handle.render().contains("doc_example_total 2"));
/// // The same recorder again.
/// assert!(prometheus_handle().unwrap().render().contains("doc_example_total 2"));
/// ```
pub fn prometheus_handle() -> io::Result<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), &LATENCY_BUCKETS)
                .and_then(PrometheusBuilder::install_recorder)
                .inspect(|_| describe())
                .map_err(|error| format!("cannot install the Prometheus recorder: {error}"))
        })
        .clone()
        .map_err(io::Error::other)
}

/// The `# HELP` of the gateway's own metrics, and of the breakers' that the crate leaves
/// undescribed. Every series is labelled `dependency`: a breaker's name, which for the gateway
/// is an upstream's name (or `upstream.tool` for a tool with a breaker of its own).
fn describe() {
    describe_histogram!(
        "toolbreaker_gateway_request_duration_seconds",
        Unit::Seconds,
        "Time from sending a request to an upstream to its answer, by dependency (the upstream) \
         and MCP method"
    );
    describe_counter!(
        "toolbreaker_gateway_requests_total",
        Unit::Count,
        "Requests forwarded to an upstream, by dependency (the upstream), MCP method and result \
         (ok, error, failed, blocked, stopped, input_required)"
    );
    describe_counter!(
        "toolbreaker_calls_dropped_total",
        Unit::Count,
        "Calls a circuit breaker admitted whose outcome was never recorded (cancelled, dropped)"
    );
    describe_counter!(
        "toolbreaker_retries_refused_total",
        Unit::Count,
        "Retries a dependency's retry budget refused"
    );
}

/// The dependencies whose series `/metrics` leaves out: removed at a reload. The recorder
/// keeps what it was given (it has no way to forget a series), so they are left out where
/// it is rendered ([`render`]).
static GONE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Leaves every series labelled `dependency` = one of `names` out of `/metrics` from now on:
/// their upstream (or tool breaker) is no longer served.
pub fn forget_series(names: impl IntoIterator<Item = String>) {
    GONE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(names);
}

/// Shows the series of `names` in `/metrics` again (served again after a reload).
pub fn keep_series(names: impl IntoIterator<Item = String>) {
    let mut gone = GONE.lock().unwrap_or_else(PoisonError::into_inner);
    if gone.is_empty() {
        return;
    }
    for name in names {
        gone.remove(&name);
    }
}

/// `handle`'s Prometheus text without the series of the dependencies [`forget_series`] was
/// given.
pub fn render(handle: &PrometheusHandle) -> String {
    let text = handle.render();
    let gone = GONE.lock().unwrap_or_else(PoisonError::into_inner);
    if gone.is_empty() {
        return text;
    }
    let labels: Vec<String> = gone
        .iter()
        .map(|name| format!("dependency=\"{}\"", escaped(name)))
        .collect();
    let names_gone = |line: &str| {
        line.find('{').is_some_and(|start| {
            let set = &line[start..];
            labels.iter().any(|label| {
                set.match_indices(label.as_str())
                    .any(|(at, _)| at > 0 && matches!(set.as_bytes()[at - 1], b'{' | b','))
            })
        })
    };
    text.split_inclusive('\n')
        .filter(|line| line.starts_with('#') || !names_gone(line))
        .collect()
}

/// A label value as Prometheus's text format writes it.
fn escaped(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn label_values_are_escaped_as_prometheus_writes_them() {
        assert_eq!(escaped("a"), "a");
        assert_eq!(escaped("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
