//! `/readyz`: whether the gateway can serve its clients' calls now, for a load balancer or an
//! orchestrator's readiness probe (`/healthz` says only that the process is up).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};

/// What `/readyz` asks on each request: the upstreams in force, each with whether it is
/// required and connected.
pub type ReadyFn = Arc<dyn Fn() -> Vec<UpstreamReadiness> + Send + Sync>;

/// One upstream as `/readyz` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamReadiness {
    /// Its name.
    pub name: String,
    /// Marked `required = true`: the gateway is not ready without it.
    pub required: bool,
    /// Connected now.
    pub connected: bool,
}

/// The answer of `/readyz`.
///
/// Ready when every upstream marked required is connected; when none is marked, when at least
/// one upstream is connected. Otherwise not ready, with the upstreams it waits for: the
/// required ones not connected, or (none marked) every upstream.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::serve::{Readiness, UpstreamReadiness};
///
/// let up = |name: &str, required, connected| UpstreamReadiness { name: name.into(), required, connected };
/// assert!(Readiness::of(&[up("a", false, true), up("b", false, false)]).ready);
/// let waiting = Readiness::of(&[up("a", false, true), up("b", true, false)]);
/// assert!(!waiting.ready);
/// assert_eq!(waiting.not_connected, ["b"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// Whether the gateway is ready.
    pub ready: bool,
    /// When not ready, the upstreams it waits for (their names, in configuration order).
    pub not_connected: Vec<String>,
}

impl Readiness {
    /// The readiness of a gateway with `upstreams`.
    pub fn of(upstreams: &[UpstreamReadiness]) -> Readiness {
        let required: Vec<&UpstreamReadiness> = upstreams.iter().filter(|u| u.required).collect();
        let ready = if required.is_empty() {
            upstreams.iter().any(|u| u.connected)
        } else {
            required.iter().all(|u| u.connected)
        };
        let not_connected = if ready {
            Vec::new()
        } else if required.is_empty() {
            upstreams.iter().map(|u| u.name.clone()).collect()
        } else {
            required
                .iter()
                .filter(|u| !u.connected)
                .map(|u| u.name.clone())
                .collect()
        };
        Readiness {
            ready,
            not_connected,
        }
    }
}

/// `200 {"ready": true}`, or `503 {"ready": false, "not_connected": [NAME, …]}`.
pub(crate) async fn readyz(ready: ReadyFn) -> Response {
    let readiness = Readiness::of(&ready());
    if readiness.ready {
        Json(serde_json::json!({ "ready": true })).into_response()
    } else {
        let body = serde_json::json!({
            "ready": false,
            "not_connected": readiness.not_connected,
        });
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(name: &str, required: bool, connected: bool) -> UpstreamReadiness {
        UpstreamReadiness {
            name: name.to_owned(),
            required,
            connected,
        }
    }

    #[test]
    fn required_upstreams_decide_and_otherwise_any_connected_one() {
        let none = Readiness::of(&[]);
        assert!(!none.ready && none.not_connected.is_empty());
        let all_down = Readiness::of(&[up("a", false, false), up("b", false, false)]);
        assert_eq!(
            (all_down.ready, all_down.not_connected),
            (false, vec!["a".into(), "b".into()])
        );
        assert!(Readiness::of(&[up("a", false, false), up("b", false, true)]).ready);
        let required = [
            up("a", true, true),
            up("b", true, false),
            up("c", false, true),
        ];
        let waiting = Readiness::of(&required);
        assert_eq!(
            (waiting.ready, waiting.not_connected),
            (false, vec!["b".into()])
        );
        assert!(Readiness::of(&[up("a", true, true), up("c", false, false)]).ready);
    }
}
