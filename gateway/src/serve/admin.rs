//! Breaker control by hand, for maintenance: `POST /admin/breakers/{breaker}/{action}`.
//!
//! `{breaker}` is a breaker's name as `/metrics` labels it (`dependency`): an upstream's name,
//! or `upstream.tool` for a tool with a breaker of its own. `{action}`:
//!
//! - `isolate` (or `open`, the same): the breaker opens now and stays open, admitting no probe,
//!   until `close` or `reset`; its calls are answered blocked at once, without reaching the
//!   upstream. (A breaker opened by hand is isolated: no cooldown ends it.)
//! - `close`: closed now, from open, half-open or isolated (a closed one keeps its count).
//! - `reset`: back to as built: closed, no failures counted.
//!
//! The answer is `200` with `{"breaker", "action", "changed", "state", "isolated"}`; an
//! unknown breaker is `404` naming it and the breakers there are, an unknown action `400`.
//! Each action is logged at warn (breaker, action, who, the transition). `/status` lists the
//! breakers isolated by hand under `forced` (and an upstream's line says `"forced":
//! "isolated"`) until they are closed or reset.
//!
//! Who may: with a bearer token configured, a request carrying it (like `/mcp`); without one,
//! only a request from a loopback address. Never a request with an `Origin` header (a
//! browser's: a page must not be able to change a breaker), nor a `Host` that is not
//! admitted.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::post;
use serde_json::json;
use toolbreaker::{CircuitBreaker, State as BreakerState};

use super::app::StatusFn;
use crate::redact::shown;
use crate::relay::Gateway;

/// The breakers an operator may change, and those isolated by hand.
///
/// `Debug` shows no breaker (they are looked up when asked).
#[derive(Clone)]
pub struct BreakerControl {
    breakers: Arc<dyn Fn() -> Vec<(String, Arc<CircuitBreaker>)> + Send + Sync>,
    forced: Arc<Mutex<BTreeMap<String, Forced>>>,
}

impl std::fmt::Debug for BreakerControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BreakerControl { .. }")
    }
}

/// A breaker isolated by hand.
#[derive(Clone, Debug)]
struct Forced {
    /// When, in ms since the Unix epoch.
    at_ms: u64,
    /// Who: `token` or `loopback`.
    by: &'static str,
}

/// What an operator asks of a breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Isolate,
    Close,
    Reset,
}

impl Action {
    fn parse(action: &str) -> Option<Action> {
        match action {
            "isolate" | "open" => Some(Action::Isolate),
            "close" => Some(Action::Close),
            "reset" => Some(Action::Reset),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Action::Isolate => "isolate",
            Action::Close => "close",
            Action::Reset => "reset",
        }
    }
}

impl BreakerControl {
    /// Control of the breakers `breakers` lists (asked at each request: the ones in force),
    /// each by its name.
    pub fn new(
        breakers: impl Fn() -> Vec<(String, Arc<CircuitBreaker>)> + Send + Sync + 'static,
    ) -> BreakerControl {
        BreakerControl {
            breakers: Arc::new(breakers),
            forced: Arc::default(),
        }
    }

    /// Control of `gateway`'s breakers: each upstream's (its name), and each tool's that has
    /// one of its own (`upstream.tool`).
    pub fn of_gateway(gateway: Gateway) -> BreakerControl {
        BreakerControl::new(move || {
            let mut all = Vec::new();
            for upstream in gateway.upstreams() {
                all.push((upstream.name().to_owned(), Arc::clone(upstream.breaker())));
                let config = upstream.config();
                for tool in config.tools.iter().filter(|tool| tool.own_breaker) {
                    let name = config.breaker_name(&tool.name);
                    let breaker = gateway.registry().get(&name);
                    all.push((name, breaker));
                }
            }
            all
        })
    }

    fn forced(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Forced>> {
        self.forced.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `status` with the breakers isolated by hand: `forced` (`[{breaker, since_ms, by}]`),
    /// and `"forced": "isolated"` in the line of an upstream so isolated. A record whose
    /// breaker is gone or no longer open (closed since, by hand or by a fleet peer) is
    /// dropped.
    pub(crate) fn status(&self, status: StatusFn) -> StatusFn {
        let control = self.clone();
        Arc::new(move || {
            let mut value = status();
            let breakers = (control.breakers)();
            let mut forced = control.forced();
            forced.retain(|name, _| {
                breakers
                    .iter()
                    .any(|(n, b)| n == name && b.state() == BreakerState::Open)
            });
            let listed: Vec<_> = forced
                .iter()
                .map(|(name, forced)| {
                    json!({"breaker": name, "action": "isolate", "since_ms": forced.at_ms, "by": forced.by})
                })
                .collect();
            if let Some(object) = value.as_object_mut() {
                if let Some(upstreams) = object.get_mut("upstreams").and_then(|u| u.as_array_mut())
                {
                    for line in upstreams.iter_mut().filter_map(|u| u.as_object_mut()) {
                        let name = line.get("name").and_then(|n| n.as_str());
                        if name.is_some_and(|name| forced.contains_key(name)) {
                            line.insert("forced".to_owned(), json!("isolated"));
                        }
                    }
                }
                object.insert("forced".to_owned(), json!(listed));
            }
            value
        })
    }

    /// The routes, guarded as the [module](self) says (`token`: whether a bearer token is
    /// configured, whose own layer is outside these).
    pub(crate) fn routes(&self, token: bool) -> Router {
        Router::new()
            .route("/admin/breakers/{breaker}/{action}", post(change))
            .with_state(self.clone())
            .layer(from_fn_with_state(token, guard))
    }
}

/// Who is asking: `token`, or `loopback` (no token configured); the peer's address.
#[derive(Clone, Copy)]
struct Asker {
    by: &'static str,
    peer: Option<SocketAddr>,
}

fn refused(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

async fn guard(State(token): State<bool>, mut request: Request, next: Next) -> Response {
    if request.headers().contains_key(header::ORIGIN) {
        return refused(
            StatusCode::FORBIDDEN,
            "the admin endpoint refuses a request with an Origin header (from a browser)",
        );
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    if !token && !peer.is_some_and(|peer| peer.ip().is_loopback()) {
        return refused(
            StatusCode::FORBIDDEN,
            "without a bearer token (--auth-token-env) the admin endpoint answers loopback only",
        );
    }
    let by = if token { "token" } else { "loopback" };
    request.extensions_mut().insert(Asker { by, peer });
    next.run(request).await
}

async fn change(
    State(control): State<BreakerControl>,
    Path((name, action)): Path<(String, String)>,
    request: Request,
) -> Response {
    let asker = request.extensions().get::<Asker>().copied();
    let Some(action) = Action::parse(&action) else {
        let message = format!(
            "unknown action `{}`: expected isolate (or open), close or reset",
            shown(&action)
        );
        return refused(StatusCode::BAD_REQUEST, &message);
    };
    let breakers = (control.breakers)();
    let Some((_, breaker)) = breakers.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = breakers.iter().map(|(n, _)| n.as_str()).collect();
        let message = format!(
            "no breaker named `{}`; the breakers are: {}",
            shown(&name),
            known.join(", ")
        );
        return refused(StatusCode::NOT_FOUND, &message);
    };
    let transition = match action {
        Action::Isolate => breaker.force_open(),
        Action::Close => breaker.force_closed(),
        Action::Reset => breaker.reset(),
    };
    let by = asker.map_or("unknown", |asker| asker.by);
    if action == Action::Isolate {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        control.forced().insert(name.clone(), Forced { at_ms, by });
    } else {
        control.forced().remove(&name);
    }
    let state = state_name(breaker.state());
    let peer = asker
        .and_then(|asker| asker.peer)
        .map_or_else(|| "unknown".to_owned(), |peer| peer.to_string());
    tracing::warn!(
        breaker = %name,
        action = action.name(),
        by,
        %peer,
        from = ?transition.as_ref().map(|t| t.from()),
        to = ?transition.as_ref().map(|t| t.to()),
        state,
        "breaker changed by hand"
    );
    Json(json!({
        "breaker": name,
        "action": action.name(),
        "changed": transition.is_some(),
        "state": state,
        "isolated": action == Action::Isolate,
    }))
    .into_response()
}

fn state_name(state: BreakerState) -> &'static str {
    match state {
        BreakerState::Closed => "closed",
        BreakerState::Open => "open",
        BreakerState::HalfOpen => "half_open",
    }
}
