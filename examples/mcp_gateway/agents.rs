//! The agents of the MCP gateway demo: concurrent MCP clients, each its own rmcp client over
//! Streamable HTTP to the gateway, calling the gateway's namespaced tools and reading each
//! `CallToolResult` as a model's runtime would.
//!
//! Shared by the example (`mcp_gateway.rs`) and its test (`examples/tests/gateway_mcp.rs`).
//!
//! A `CallToolResult` is read as one of:
//!
//! - **answered**: no `isError: true`: the upstream's tool answered;
//! - **tool error**: `isError: true` from the tool itself (`notes` refusing a bad path): the
//!   upstream is up, the call was wrong; no `structuredContent.status`;
//! - **blocked**, **failed**, **stopped**: `isError: true` with the gateway's
//!   `structuredContent.status`: the breaker sent nothing, the upstream failed (the gateway
//!   forwards each call once: it does not retry), or the call's own deadline ended it.
//!
//! Every counter is an atomic bumped with relaxed ordering: they are statistics, read live by the
//! progress line and exactly once the agent tasks have been joined.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::upstream::{Control, Upstream};

/// One call to `notes` in this many carries bad arguments (a path with `..`, or none).
pub const BAD_ARGS_ONE_IN: u64 = 5;
/// The longest an agent waits for the gateway's answer to one call; the gateway answers long
/// before (its own deadline per call is shorter), so this only bounds the loop.
pub const CALL_GIVE_UP: Duration = Duration::from_secs(10);

/// How the model would read one `CallToolResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The tool answered.
    Answered,
    /// The tool itself said `isError: true`.
    ToolError,
    /// The gateway's breaker blocked the call: nothing was sent upstream.
    Blocked,
    /// The upstream failed.
    Failed,
    /// The call's deadline (its run, on the gateway) ended it.
    Stopped,
}

impl Seen {
    /// Read `result` as the model would.
    pub fn of(result: &CallToolResult) -> Seen {
        if result.is_error != Some(true) {
            return Seen::Answered;
        }
        let status = result
            .structured_content
            .as_ref()
            .and_then(|json| json.get("status"))
            .and_then(Value::as_str);
        match status {
            Some("blocked") => Seen::Blocked,
            Some("failed") => Seen::Failed,
            Some("stopped") => Seen::Stopped,
            _ => Seen::ToolError,
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn load(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// What the agents saw of one upstream's tools.
#[derive(Debug, Default)]
pub struct CallStats {
    calls: AtomicU64,
    answered: AtomicU64,
    tool_errors: AtomicU64,
    blocked: AtomicU64,
    /// Blocked calls whose first attempt was sent: a retry the opened breaker refused (none: the
    /// gateway does not retry; counted to show it).
    retries_refused: AtomicU64,
    failed: AtomicU64,
    stopped: AtomicU64,
    /// Calls the gateway did not answer with a `CallToolResult` (a JSON-RPC or transport error
    /// between agent and gateway, or no answer within [`CALL_GIVE_UP`]).
    gateway_errors: AtomicU64,
    /// Calls made while the upstream was failing, and how many of them were blocked.
    outage_calls: AtomicU64,
    outage_blocked: AtomicU64,
    /// The first `CallToolResult` of a call blocked outright (nothing sent), as the model
    /// received it.
    first_blocked: OnceLock<Value>,
}

/// A copy of [`CallStats`] once the agents are done.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallCounts {
    /// Calls made.
    pub calls: u64,
    /// Answered by the tool.
    pub answered: u64,
    /// `isError: true` from the tool itself.
    pub tool_errors: u64,
    /// Blocked by the breaker: nothing sent, or a retry refused.
    pub blocked: u64,
    /// Those whose first attempt was sent: the breaker opened before their retry.
    pub retries_refused: u64,
    /// Failed upstream.
    pub failed: u64,
    /// Ended by the call's deadline.
    pub stopped: u64,
    /// Not answered with a `CallToolResult` at all.
    pub gateway_errors: u64,
    /// Calls made while the upstream was failing.
    pub outage_calls: u64,
    /// Those blocked.
    pub outage_blocked: u64,
}

impl CallStats {
    /// Count one call made while the upstream was (`in_outage`) or was not failing, by what came
    /// back: the gateway's `CallToolResult`, or `None` if it gave none.
    pub fn record(&self, result: Option<&CallToolResult>, in_outage: bool) {
        bump(&self.calls);
        if in_outage {
            bump(&self.outage_calls);
        }
        let Some(result) = result else {
            bump(&self.gateway_errors);
            return;
        };
        let seen = Seen::of(result);
        bump(match seen {
            Seen::Answered => &self.answered,
            Seen::ToolError => &self.tool_errors,
            Seen::Blocked => &self.blocked,
            Seen::Failed => &self.failed,
            Seen::Stopped => &self.stopped,
        });
        if seen == Seen::Blocked {
            if in_outage {
                bump(&self.outage_blocked);
            }
            let attempts = result
                .structured_content
                .as_ref()
                .and_then(|json| json.get("attempts"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if attempts > 0 {
                bump(&self.retries_refused);
            } else if self.first_blocked.get().is_none()
                && let Ok(json) = serde_json::to_value(result)
            {
                let _ = self.first_blocked.set(json);
            }
        }
    }

    /// The calls made so far.
    pub fn calls(&self) -> u64 {
        load(&self.calls)
    }

    /// The counts so far.
    pub fn counts(&self) -> CallCounts {
        CallCounts {
            calls: load(&self.calls),
            answered: load(&self.answered),
            tool_errors: load(&self.tool_errors),
            blocked: load(&self.blocked),
            retries_refused: load(&self.retries_refused),
            failed: load(&self.failed),
            stopped: load(&self.stopped),
            gateway_errors: load(&self.gateway_errors),
            outage_calls: load(&self.outage_calls),
            outage_blocked: load(&self.outage_blocked),
        }
    }

    /// The first `CallToolResult` of a call blocked outright, as JSON.
    pub fn first_blocked(&self) -> Option<&Value> {
        self.first_blocked.get()
    }
}

/// One upstream as the agents see it: its counters, and its control (to tell whether a call was
/// made during its outage, for the counters only).
pub struct Target {
    /// The upstream.
    pub upstream: Upstream,
    /// Its server's control.
    pub control: Arc<Control>,
    /// What the agents saw of it.
    pub stats: CallStats,
}

/// What every agent task shares.
pub struct Agents {
    /// The upstreams, in [`Upstream::ALL`] order.
    pub targets: Vec<Target>,
    /// How long an agent waits after each call.
    pub think_time: Duration,
    /// When the agents stop calling.
    pub deadline: Instant,
}

/// An HTTP client for MCP over loopback: no proxy, no delay on small writes, connections kept
/// for reuse (rmcp's own default client opens a connection per request).
///
/// # Errors
///
/// reqwest's, if the client cannot be built.
pub fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
}

/// An rmcp client of the MCP server at `url`, over Streamable HTTP with `http`, allowed up to
/// `max_in_flight` requests at once (`()`: a client with no handler of its own).
///
/// # Errors
///
/// rmcp's, if the handshake fails.
pub async fn connect(
    http: reqwest::Client,
    url: &str,
    max_in_flight: usize,
) -> Result<RunningService<RoleClient, ()>, Box<dyn std::error::Error + Send + Sync>> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .max_concurrent_requests(max_in_flight);
    let transport = StreamableHttpClientTransport::with_client(http, config);
    Ok(().serve(transport).await?)
}

/// The call an agent makes to `upstream`, with bad arguments for `notes` one time in
/// [`BAD_ARGS_ONE_IN`].
pub fn pick_call(upstream: Upstream, rng: &mut fastrand::Rng) -> CallToolRequestParams {
    let object = |value: Value| -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        }
    };
    let (tool, args) = match upstream {
        Upstream::Search => ("search.query", json!({"q": "circuit breaker pattern"})),
        Upstream::Weather => ("weather.forecast", json!({"city": "Lisbon"})),
        Upstream::Notes => {
            let bad = rng.u64(..BAD_ARGS_ONE_IN) == 0;
            let path = if bad { "../../etc/passwd" } else { "plan.md" };
            if rng.u8(..4) == 0 {
                (
                    "notes.put",
                    json!({"path": path, "text": "1. ship the breaker\n2. write the docs\n"}),
                )
            } else {
                ("notes.get", json!({"path": path}))
            }
        }
    };
    CallToolRequestParams::new(tool).with_arguments(object(args))
}

/// One agent task with its own MCP client of the gateway (`client`, connected): it calls a tool
/// picked at random, reads the answer, thinks a little, until the deadline; then it closes its
/// client. Each call is bounded ([`CALL_GIVE_UP`]).
pub async fn agent(task: usize, shared: Arc<Agents>, client: RunningService<RoleClient, ()>) {
    let mut rng = fastrand::Rng::with_seed(task as u64);
    while Instant::now() < shared.deadline {
        let target = &shared.targets[rng.usize(..shared.targets.len())];
        let params = pick_call(target.upstream, &mut rng);
        let in_outage = target.control.mode().is_failing();
        let answer = tokio::time::timeout(CALL_GIVE_UP, client.peer().call_tool(params)).await;
        target
            .stats
            .record(answer.ok().and_then(Result::ok).as_ref(), in_outage);
        tokio::time::sleep(shared.think_time).await;
    }
    let _ = tokio::time::timeout(CALL_GIVE_UP, client.cancel()).await;
}
