//! [`Gateway`]: the relay's front: start, reload, status, and a [`Session`] per client.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use toolbreaker::Registry;

use super::core::Core;
use super::session::Session;
use crate::config::GatewayConfig;
use crate::upstream::Upstream;

/// The MCP gateway's relay: every upstream of a [`GatewayConfig`] behind its breaker, and a
/// [`Session`] for each client that connects.
///
/// - Tools, prompts and completions are shown under each upstream's `prefix`; resources keep
///   their URIs and are routed to the upstream that listed them.
/// - Every request forwarded to an upstream is admitted by its breaker. While it is open, its
///   listings are its last good ones; a blocked tool call answers the model's `isError`
///   result, anything else a JSON-RPC error whose `data` is the same ToolResult JSON.
/// - An upstream that is down at start leaves the others listed; it is listed again under its
///   breaker, and when its tools become known every client is sent
///   `notifications/tools/list_changed`.
#[derive(Clone, Debug)]
pub struct Gateway {
    core: Arc<Core>,
}

/// What a [`Gateway::reload`] changed, by upstream name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Upstreams added.
    pub added: Vec<String>,
    /// Upstreams removed (their connections closed, their children ended).
    pub removed: Vec<String>,
    /// Upstreams whose settings changed (reconnected; their breakers keep their state).
    pub changed: Vec<String>,
    /// Breakers whose settings changed, reconfigured in place (an upstream's name, a tool's
    /// `upstream.tool`, or `default` for `[default]`), in name order; no reconnection.
    pub breakers: Vec<String>,
}

/// A name collision between upstreams, or another reason a configuration cannot be served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collision {
    /// The name as clients would see it.
    pub name: String,
    /// The upstream that shows it first, and the other.
    pub upstreams: (String, String),
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tool name collision: `{}` is shown by upstream `{}` and by upstream `{}`; give one of them another `prefix`",
            self.name, self.upstreams.0, self.upstreams.1
        )
    }
}

impl std::error::Error for Collision {}

impl Gateway {
    /// A gateway named `name` (its `serverInfo`) over `registry`'s breakers, each tool call a
    /// run of at most `call_time_limit`. It has no upstreams until [`start`](Self::start).
    pub fn new(name: impl Into<String>, registry: Registry, call_time_limit: Duration) -> Self {
        Gateway {
            core: Arc::new(Core::new(name.into(), registry, call_time_limit)),
        }
    }

    /// How long a 2026-07-28 client's tool call waits upstream for the client's retry when a
    /// 2025-11-25 upstream asked for input during it (sampling, elicitation, roots: the client
    /// was answered `input_required`); past it the call is cancelled upstream and counts
    /// nothing. 60 s unless set; a call already waiting keeps its own.
    pub fn set_input_wait(&self, wait: Duration) {
        self.core.inputs().set_wait(wait);
    }

    /// Connects to `config`'s upstreams and lists their tools (each at most its per-call
    /// timeout; one that is down is left to its background task).
    ///
    /// # Errors
    ///
    /// A [`Collision`] when two upstreams show the same tool name (their children are ended).
    pub async fn start(&self, config: GatewayConfig) -> Result<(), Collision> {
        let sessions = self.core.sessions().clone();
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .into_iter()
            .map(|c| Upstream::new(c, self.core.registry(), sessions.clone()))
            .collect();
        join_all(upstreams.iter().map(|u| u.list_tools())).await;
        if let Some((name, a, b)) = Core::collision(&upstreams) {
            upstreams.iter().for_each(|u| u.stop());
            return Err(Collision {
                name,
                upstreams: (a, b),
            });
        }
        upstreams.iter().for_each(Upstream::start);
        upstreams.iter().for_each(|u| health_check(&self.core, u));
        crate::serve::keep_series(upstreams.iter().flat_map(|u| dependencies(u.config())));
        self.core.set_upstreams(Arc::new(upstreams));
        Ok(())
    }

    /// Applies `config` while clients stay connected: the breakers take the new settings and
    /// keep their state; upstreams are added, removed, or (when their settings changed)
    /// reconnected. Every client is sent `notifications/tools/list_changed` (and the prompt
    /// and resource ones).
    ///
    /// # Errors
    ///
    /// A [`Collision`]: nothing is changed.
    pub async fn reload(&self, config: GatewayConfig) -> Result<Reloaded, Collision> {
        let old = self.core.upstreams();
        let by_name: HashMap<&str, &Arc<Upstream>> = old.iter().map(|u| (u.name(), u)).collect();
        let sessions = self.core.sessions().clone();
        let mut reloaded = Reloaded::default();
        let mut fresh = Vec::new();
        let next: Vec<Arc<Upstream>> = config
            .upstreams
            .into_iter()
            .map(|c| match by_name.get(c.name.as_str()) {
                Some(kept) if *kept.config() == c => Arc::clone(kept),
                found => {
                    if found.is_some() {
                        reloaded.changed.push(c.name.clone());
                    } else {
                        reloaded.added.push(c.name.clone());
                    }
                    let upstream = Upstream::new(c, self.core.registry(), sessions.clone());
                    if let Some(earlier) = found {
                        upstream.inherit(earlier);
                    }
                    fresh.push(Arc::clone(&upstream));
                    upstream
                }
            })
            .collect();
        join_all(fresh.iter().map(|u| u.list_tools())).await;
        if let Some((name, a, b)) = Core::collision(&next) {
            fresh.iter().for_each(|u| u.stop());
            return Err(Collision {
                name,
                upstreams: (a, b),
            });
        }
        let breakers = self.core.registry().reload(config.registry);
        reloaded.breakers = breakers
            .changes()
            .iter()
            .map(|change| change.dependency().unwrap_or("default").to_owned())
            .collect();
        for upstream in old.iter() {
            let still = next.iter().find(|n| n.name() == upstream.name());
            if still.is_none_or(|n| !Arc::ptr_eq(n, upstream)) {
                upstream.stop();
            }
            if still.is_none() {
                reloaded.removed.push(upstream.name().to_owned());
            }
        }
        fresh.iter().for_each(Upstream::start);
        fresh.iter().for_each(|u| health_check(&self.core, u));
        // The series of a dependency no longer served leave `/metrics` (an alert on a breaker
        // that is not closed stops firing for an upstream that is gone); one served again
        // shows again.
        let served: BTreeSet<String> = next.iter().flat_map(|u| dependencies(u.config())).collect();
        let gone = old
            .iter()
            .flat_map(|u| dependencies(u.config()))
            .filter(|name| !served.contains(name));
        crate::serve::forget_series(gone);
        crate::serve::keep_series(served);
        self.core.set_upstreams(Arc::new(next));
        for listener in self.core.sessions().peers() {
            listener.tools_changed().await;
            listener.prompts_changed().await;
            listener.resources_changed().await;
        }
        Ok(reloaded)
    }

    /// A new client session (the rmcp service for one client).
    pub fn session(&self) -> Session {
        Session::new(Arc::clone(&self.core))
    }

    /// The direct road of clients' tool calls (2026-07-28 requests, 2025-11-25 sessions'), for
    /// [`HttpApp::with_shortcut`](crate::serve::HttpApp::with_shortcut) (see
    /// `relay::direct`): a plain call to a tool of a 2026-07-28 upstream over HTTP is relayed
    /// without rmcp's transports in between, with the same breaker, timeout and metrics.
    pub fn shortcut(&self) -> crate::serve::Shortcut {
        super::direct::shortcut(Arc::clone(&self.core))
    }

    /// The upstreams in force, in configuration order.
    pub fn upstreams(&self) -> Vec<Arc<Upstream>> {
        self.core.upstreams().to_vec()
    }

    /// The breakers' registry.
    pub fn registry(&self) -> &Registry {
        self.core.registry()
    }

    /// The number of client sessions open.
    pub fn sessions(&self) -> usize {
        self.core.sessions().len()
    }

    /// `/status`: `{"upstreams": [{name, transport, era, state, retry_after_ms,
    /// last_failure, tools, connected, error}], "sessions": n}`; `era` is the protocol revision
    /// of the upstream's last connection (`"2026-07-28"`, `"2025-11-25"`, …; `null` before it
    /// was reached). `last_failure` is the kind of the last counted failure (`connect`,
    /// `timeout`, …) or `unauthorized` (the upstream refused the gateway access: HTTP 401 or
    /// 403, never counted). `connected` is whether the gateway holds a connection the upstream
    /// answered last time (a request with no answer at all, the health check's included, makes
    /// it `false`); `error`, while it is not connected, is why, in words (`null` otherwise).
    /// No credential is in it.
    pub fn status(&self) -> serde_json::Value {
        let upstreams: Vec<_> = self.core.upstreams().iter().map(|u| u.status()).collect();
        serde_json::json!({ "upstreams": upstreams, "sessions": self.sessions() })
    }

    /// Ends every upstream's connection and background task (stdio children are ended).
    pub fn shutdown(&self) {
        self.core.upstreams().iter().for_each(|u| u.stop());
    }
}

/// The breakers' names of `config`'s upstream, as the metrics' `dependency` label holds them:
/// the upstream's, and `upstream.tool` for each tool with a breaker of its own.
fn dependencies(config: &crate::config::UpstreamConfig) -> Vec<String> {
    std::iter::once(config.name.clone())
        .chain(
            config
                .tools
                .iter()
                .filter(|t| t.own_breaker)
                .map(|t| config.breaker_name(&t.name)),
        )
        .collect()
}

/// Makes MCP `ping` the health check of `upstream`'s breaker: when its cooldown ends, the
/// gateway pings the upstream in force under that name (after a reload, the new one) as the
/// probe, so no client's call is spent on it. A breaker that has a health check already (the
/// name was served before a reload) keeps it: it looks the upstream up by name too.
fn health_check(core: &Arc<Core>, upstream: &Upstream) {
    let weak = Arc::downgrade(core);
    let name = upstream.name().to_owned();
    let check = move || {
        let current = weak
            .upgrade()
            .and_then(|core| core.upstreams().iter().find(|u| u.name() == name).cloned());
        async move {
            match current {
                Some(upstream) => upstream.ping().await,
                None => toolbreaker::Outcome::Ignored,
            }
        }
    };
    if let Err(error) = upstream.breaker().start_health_check(check)
        && error.problem() != toolbreaker::config::Problem::Duplicate
    {
        tracing::warn!(upstream = %upstream.name(), %error, "no health check: the breaker's probe stays a client's call");
    }
}
