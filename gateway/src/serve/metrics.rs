//! The process's Prometheus recorder: installed once, rendered by `/metrics`.

use std::io;
use std::sync::OnceLock;

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
                .map_err(|error| format!("cannot install the Prometheus recorder: {error}"))
        })
        .clone()
        .map_err(io::Error::other)
}
