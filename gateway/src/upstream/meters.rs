//! An upstream's request metrics, with their labels made once.
//!
//! `metrics::counter!` with owned labels allocates the label strings and hashes them into the
//! recorder's registry on every call. The methods of the hot path (`tools/call`,
//! `resources/read`, `prompts/get`) keep their handles instead: each made at its first use
//! (the recorder is installed by then: the HTTP app installs it before it serves), then one
//! atomic add each. Other methods look theirs up per request.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Counter, Histogram, SharedString};

/// The request counter's name.
const REQUESTS: &str = "toolbreaker_gateway_requests_total";
/// The request duration histogram's name.
const DURATION: &str = "toolbreaker_gateway_request_duration_seconds";

/// The methods whose handles are kept.
const HOT: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

/// A request's results, as the `result` label says them.
const RESULTS: [&str; 6] = [
    "ok",
    "error",
    "blocked",
    "failed",
    "stopped",
    "input_required",
];

/// One method's handles, each made at its first use (a series appears once it has a count,
/// as with a look-up per request).
#[derive(Debug, Default)]
struct Method {
    duration: OnceLock<Histogram>,
    results: [OnceLock<Counter>; RESULTS.len()],
}

/// One upstream's request metrics (label `dependency`: the upstream's name).
#[derive(Debug)]
pub struct Meters {
    dependency: SharedString,
    hot: [Method; HOT.len()],
}

impl Meters {
    /// The metrics of upstream `name`.
    pub fn new(name: &Arc<str>) -> Self {
        Meters {
            dependency: SharedString::from(Arc::clone(name)),
            hot: Default::default(),
        }
    }

    /// One request of `method` ended with `result` after `elapsed`.
    pub fn observe(&self, method: &str, elapsed: Duration, result: &'static str) {
        match self.method(method) {
            Some((method, handles)) => handles
                .duration
                .get_or_init(|| {
                    metrics::histogram!(
                        DURATION,
                        "dependency" => self.dependency.clone(),
                        "method" => method
                    )
                })
                .record(elapsed),
            None => metrics::histogram!(
                DURATION,
                "dependency" => self.dependency.clone(),
                "method" => method.to_owned()
            )
            .record(elapsed),
        }
        self.count(method, result);
    }

    /// One request of `method` ended with `result` (one of [`RESULTS`] on the hot path).
    pub fn count(&self, method: &str, result: &'static str) {
        let kept = self
            .method(method)
            .zip(RESULTS.iter().position(|r| *r == result));
        match kept {
            Some(((method, handles), at)) => handles.results[at]
                .get_or_init(|| {
                    metrics::counter!(
                        REQUESTS,
                        "dependency" => self.dependency.clone(),
                        "method" => method,
                        "result" => RESULTS[at]
                    )
                })
                .increment(1),
            None => metrics::counter!(
                REQUESTS,
                "dependency" => self.dependency.clone(),
                "method" => method.to_owned(),
                "result" => result
            )
            .increment(1),
        }
    }

    /// `method`'s kept handles, and its name as a `'static` label, when it is on the hot path.
    fn method(&self, method: &str) -> Option<(&'static str, &Method)> {
        let at = HOT.iter().position(|m| *m == method)?;
        Some((HOT[at], &self.hot[at]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    /// The kept handles and the per-request look-up count into the same series.
    #[test]
    fn kept_and_looked_up_counts_meet() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let meters = Meters::new(&Arc::from("up"));
            meters.observe("tools/call", Duration::from_millis(2), "ok");
            meters.count("tools/call", "ok");
            meters.count("tools/call", "blocked");
            meters.count("ping", "ok");
        });
        let mut counts: Vec<(String, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Counter(n) => {
                    let labels: Vec<String> = key
                        .key()
                        .labels()
                        .map(|l| format!("{}={}", l.key(), l.value()))
                        .collect();
                    Some((labels.join(","), n))
                }
                _ => None,
            })
            .collect();
        counts.sort();
        assert_eq!(
            counts,
            [
                ("dependency=up,method=ping,result=ok".to_owned(), 1),
                (
                    "dependency=up,method=tools/call,result=blocked".to_owned(),
                    1
                ),
                ("dependency=up,method=tools/call,result=ok".to_owned(), 2),
            ]
        );
    }
}
