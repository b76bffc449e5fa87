//! Long-running tools and the per-call timeout, and the order of a call's notifications, end
//! to end: the conformance upstream (example `conformance_upstream`, its modules compiled in
//! here) over Streamable HTTP on a loopback port, the gateway in front of it, rmcp clients of
//! both eras.
//!
//! - A tool that runs past its upstream's per-call timeout while it reports progress completes
//!   (each progress notification puts the timeout back), up to `max_call_ms`; five such calls
//!   leave the upstream's breaker closed and its fast tools answering. A tool's own
//!   `per_call_timeout_ms` holds for it alone.
//! - Every progress notification and log message a tool sends before its answer reaches the
//!   client before that answer, in the order sent, with both cores held busy; and every one
//!   it sends before asking its client for input, before that request (a 2025-11-25 client)
//!   or the `input_required` answer that carries it (a 2026-07-28 client).

// The example's modules carry what only its `main` uses (stdio serving).
#![allow(dead_code)]
// Logging is deprecated by rmcp after protocol 2025-11-25 (SEP-2577); the gateway relays it.
#![allow(deprecated)]

#[path = "../examples/conformance_upstream/catalog.rs"]
mod catalog;
#[path = "../examples/conformance_upstream/http.rs"]
mod http;
#[path = "../examples/conformance_upstream/server.rs"]
mod server;
#[path = "../examples/conformance_upstream/sessions.rs"]
mod sessions;

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, CreateMessageRequestParams, CreateMessageResult, Implementation, JsonRpcMessage,
    LoggingLevel, ProtocolVersion, RequestId, RequestMetaObject, ServerNotification, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, PeerRequestOptions, RequestContext, RoleClient, RunningService,
    RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbreaker::Registry;
use toolbreaker_gateway::config::GatewayConfig;
use toolbreaker_gateway::relay::Gateway;

/// The longest one call or event is waited for.
const WAIT: Duration = Duration::from_secs(60);

/// The conformance upstream (both eras) on a loopback port; its URL, and the token that ends it.
async fn upstream() -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (router, sessions_end) = http::router(addr, None);
    let stop = sessions_end.clone();
    tokio::spawn(async move {
        let shutdown = async move { stop.cancelled().await };
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
    });
    (format!("http://{addr}/mcp"), sessions_end)
}

/// A gateway from TOML `config` (its breakers from the file); the gateway and its MCP URL.
async fn gateway(config: &str) -> (Gateway, String) {
    let config = GatewayConfig::from_toml_str(config).unwrap();
    let registry = Registry::builder().config(config.registry.clone()).build();
    let gateway = Gateway::new("gw", registry, WAIT);
    gateway.start(config).await.unwrap();
    let g = gateway.clone();
    let url = common::serve(move || g.session()).await;
    (gateway, url)
}

/// A client that answers sampling with "sampled" and handles nothing else.
#[derive(Clone, Default)]
struct Quiet;

impl ClientHandler for Quiet {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_sampling().build(),
            Implementation::new("timeouts-test", "0"),
        )
    }

    async fn create_message(
        &self,
        _: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(common::sampled())
    }
}

/// What a client read off its connection, in the order it arrived (before rmcp's handling,
/// which hands each notification to a task of its own).
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Progress(f64),
    Log(String),
    Answer(RequestId),
    /// A request of the server's (here: for a sample).
    Asked,
    Other,
}

/// A client connection that records what it receives.
struct Recording<T> {
    inner: T,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Recording<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        let seen = match &message {
            JsonRpcMessage::Notification(n) => match &n.notification {
                ServerNotification::ProgressNotification(p) => Seen::Progress(p.params.progress),
                ServerNotification::LoggingMessageNotification(l) => {
                    Seen::Log(l.params.data.as_str().unwrap_or_default().to_owned())
                }
                _ => Seen::Other,
            },
            JsonRpcMessage::Response(r) => Seen::Answer(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone().map_or(Seen::Other, Seen::Answer),
            JsonRpcMessage::Request(_) => Seen::Asked,
        };
        self.seen.lock().unwrap().push(seen);
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A client of `url` in `era` (`modern`: 2026-07-28, stateless; else 2025-11-25, a session),
/// and what it receives.
async fn client(
    url: &str,
    modern: bool,
) -> (RunningService<RoleClient, Quiet>, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let transport = Recording {
        inner: StreamableHttpClientTransport::from_uri(url.to_owned()),
        seen: Arc::clone(&seen),
    };
    let service = if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        rmcp::ClientServiceExt::serve_with_lifecycle(Quiet, transport, lifecycle).await
    } else {
        Quiet.serve(transport).await
    };
    (service.unwrap(), seen)
}

/// Calls `tool` with `arguments`, asking for log messages at `info` and up (a 2026-07-28
/// client in its request's `_meta`); the request's id and the answer.
async fn call(
    client: &RunningService<RoleClient, Quiet>,
    tool: &str,
    arguments: Value,
) -> (RequestId, CallToolResult) {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = arguments.as_object().cloned();
    let mut options = PeerRequestOptions::no_options();
    let mut meta = RequestMetaObject::new();
    meta.set_log_level(LoggingLevel::Info);
    options.meta = Some(meta);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = client
        .peer()
        .send_request_with_option(request, options)
        .await
        .unwrap();
    let id = handle.id.clone();
    let answer = tokio::time::timeout(WAIT, handle.await_response())
        .await
        .unwrap_or_else(|_| panic!("{tool} answered within {WAIT:?}"))
        .unwrap();
    let ServerResult::CallToolResult(answer) = answer else {
        panic!("a tool result: {answer:?}");
    };
    (id, answer)
}

/// Whether the answer is the tool's success (`isError` absent or false).
fn ok(result: &CallToolResult) -> bool {
    result.is_error != Some(true)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// Two processes that hold both cores busy (`yes > /dev/null`) until dropped.
struct Busy(Vec<Child>);

impl Busy {
    fn start() -> Busy {
        let spawn = || {
            Command::new("yes")
                .stdout(Stdio::null())
                .spawn()
                .expect("`yes` starts")
        };
        Busy(vec![spawn(), spawn()])
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The upstream `up` with a 1 s per-call timeout, its breaker tripping at the third failure in
/// a row, and `extra` after its keys.
fn config(url: &str, extra: &str) -> String {
    format!(
        "[upstreams.up]\nurl = \"{url}\"\nprefix = \"\"\nper_call_timeout_ms = 1000\n\
         failure_threshold = 3\ncooldown_ms = 60000\n{extra}"
    )
}

fn state(gateway: &Gateway) -> String {
    gateway.status()["upstreams"][0]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A tool that runs 2.5 s against a 1 s per-call timeout, reporting progress every 100 ms:
/// each progress notification puts the timeout back, so five such calls (at once) complete,
/// the upstream's breaker stays closed and a fast tool of it still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_tool_that_reports_progress_runs_past_the_timeout_and_opens_nothing() {
    let (up, end) = upstream().await;
    let (gateway, url) = gateway(&config(&up, "")).await;
    let _busy = Busy::start();
    let (client, _) = client(&url, false).await;
    let long = json!({"duration_ms": 2500, "every_ms": 100});
    let calls = (0..5).map(|_| call(&client, "test_long_operation", long.clone()));
    for (_, answer) in futures::future::join_all(calls).await {
        assert!(ok(&answer), "{answer:?}");
        assert_eq!(text(&answer), "Long operation completed after 2500 ms");
    }
    assert_eq!(state(&gateway), "closed", "{}", gateway.status());
    let (_, fast) = call(&client, "test_simple_text", json!({})).await;
    assert!(ok(&fast), "{fast:?}");
    // The same tool, silent, is cut at the timeout: the timeout is still there.
    let (_, silent) = call(&client, "test_long_operation", json!({"duration_ms": 2500})).await;
    assert_eq!(silent.is_error, Some(true), "{silent:?}");
    assert!(
        text(&silent).contains("timed out after 1000 ms"),
        "{silent:?}"
    );
    gateway.shutdown();
    end.cancel();
}

/// `max_call_ms` bounds what progress can stretch a call to: a tool that reports progress
/// every 100 ms for 10 s is cut at 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_stretches_a_call_no_further_than_max_call_ms() {
    let (up, end) = upstream().await;
    let (gateway, url) = gateway(&config(&up, "max_call_ms = 2000\n")).await;
    let (client, _) = client(&url, false).await;
    let started = std::time::Instant::now();
    let long = json!({"duration_ms": 10000, "every_ms": 100});
    let (_, cut) = call(&client, "test_long_operation", long).await;
    assert_eq!(cut.is_error, Some(true), "{cut:?}");
    assert!(text(&cut).contains("timed out after 2000 ms"), "{cut:?}");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "cut before the tool ended"
    );
    gateway.shutdown();
    end.cancel();
}

/// A tool's own `per_call_timeout_ms` is its alone: a silent 2.5 s tool completes under its own
/// 10 s timeout five times while the upstream's stays 1 s (a silent tool of the upstream
/// without a section is cut at 1 s); with `own_breaker`, a tool whose calls do time out opens
/// its own breaker, not the upstream's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_own_timeout_and_breaker_are_its_alone() {
    let (up, end) = upstream().await;
    let (gateway, url) = gateway(&config(
        &up,
        "[upstreams.up.tools.test_long_operation]\nper_call_timeout_ms = 10000\n\
         [upstreams.up.tools.test_tool_with_progress]\nper_call_timeout_ms = 1\nown_breaker = true\n",
    ))
    .await;
    let (client, _) = client(&url, true).await;
    let silent = json!({"duration_ms": 2500});
    let calls = (0..5).map(|_| call(&client, "test_long_operation", silent.clone()));
    for (_, answer) in futures::future::join_all(calls).await {
        assert!(ok(&answer), "{answer:?}");
    }
    // A 1 ms timeout: `test_tool_with_progress` (100 ms) times out each time, on its own breaker.
    for _ in 0..5 {
        let (_, cut) = call(&client, "test_tool_with_progress", json!({})).await;
        assert_eq!(cut.is_error, Some(true), "{cut:?}");
    }
    let tool = gateway.registry().get("up.test_tool_with_progress");
    assert_eq!(tool.state(), toolbreaker::State::Open);
    assert_eq!(state(&gateway), "closed", "{}", gateway.status());
    let (_, fast) = call(&client, "test_simple_text", json!({})).await;
    assert!(ok(&fast), "{fast:?}");
    gateway.shutdown();
    end.cancel();
}

/// How many progress notifications (each followed by a log message) a call sends.
const STEPS: usize = 4;

/// `runs` calls of `test_progress_and_logs` by one client (`modern`: 2026-07-28) through a
/// gateway: each call's progress arrived before its answer, all of it, in the order sent; and
/// where both sides put a call's log messages on the call's own stream (`logs_on_the_call`: a
/// 2026-07-28 client and upstream), its log messages too, each after the progress it follows.
async fn ordered_runs(url: &str, modern: bool, logs_on_the_call: bool, runs: usize) {
    let (client, seen) = client(url, modern).await;
    for run in 0..runs {
        seen.lock().unwrap().clear();
        let (id, answer) = call(&client, "test_progress_and_logs", json!({"count": STEPS})).await;
        assert_eq!(
            text(&answer),
            format!("Reported {STEPS} steps"),
            "{answer:?}"
        );
        let seen = seen.lock().unwrap().clone();
        let at = seen
            .iter()
            .position(|s| *s == Seen::Answer(id.clone()))
            .expect("the answer was read off the connection");
        let before = &seen[..at];
        let progress: Vec<f64> = before
            .iter()
            .filter_map(|s| match s {
                Seen::Progress(p) => Some(*p),
                _ => None,
            })
            .collect();
        let expected: Vec<f64> = (1..=STEPS).map(|s| s as f64).collect();
        let era = if modern { "2026-07-28" } else { "2025-11-25" };
        assert_eq!(progress, expected, "{era} run {run}: {seen:?}");
        if logs_on_the_call {
            let mut expected = Vec::new();
            for step in 1..=STEPS {
                expected.push(Seen::Progress(step as f64));
                expected.push(Seen::Log(format!("step {step} of {STEPS}")));
            }
            let relayed: Vec<Seen> = before
                .iter()
                .filter(|s| matches!(s, Seen::Progress(_) | Seen::Log(_)))
                .cloned()
                .collect();
            assert_eq!(relayed, expected, "{era} run {run}: {seen:?}");
        }
    }
    client.cancel().await.unwrap();
}

/// Every notification of a call before its answer, in order, with both cores held busy: 200
/// calls, 50 for each client era in front of each upstream era.
///
/// A 2025-11-25 session sends log messages on its standalone stream, not on the call's (rmcp's
/// server, as the specification allows): a 2025-11-25 client reads them on another stream than
/// the answer, and a 2025-11-25 upstream sends them to the gateway on another stream than the
/// progress, so no one can tell their order; progress and answer share the call's stream in
/// every era.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_notifications_reach_its_client_before_its_answer_in_order() {
    let (up, end) = upstream().await;
    let _busy = Busy::start();
    for upstream_era in ["2025-11-25", "2026-07-28"] {
        let (gateway, url) = gateway(&config(&up, &format!("era = \"{upstream_era}\"\n"))).await;
        for modern in [false, true] {
            let logs_on_the_call = modern && upstream_era == "2026-07-28";
            ordered_runs(&url, modern, logs_on_the_call, 50).await;
        }
        gateway.shutdown();
    }
    end.cancel();
}

/// `runs` calls of `ask` of a 2025-11-25 upstream (it reports progress, then asks for a
/// sample) by one client (`modern`: 2026-07-28) through a gateway: the progress reached the
/// client before the upstream's request did (a 2025-11-25 client is sent it; a 2026-07-28
/// client's first leg is answered `input_required` with it, and its retry brings the sample).
async fn asked_runs(url: &str, modern: bool, runs: usize) {
    let (client, seen) = client(url, modern).await;
    let era = if modern { "2026-07-28" } else { "2025-11-25" };
    for run in 0..runs {
        seen.lock().unwrap().clear();
        let ask = CallToolRequestParams::new("ask");
        let first = client
            .peer()
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(ask.clone())),
                PeerRequestOptions::no_options(),
            )
            .await
            .unwrap();
        let id = first.id.clone();
        let answer = tokio::time::timeout(WAIT, first.await_response())
            .await
            .expect("ask answered")
            .unwrap();
        let snapshot = seen.lock().unwrap().clone();
        let asked_at = if modern {
            snapshot.iter().position(|s| *s == Seen::Answer(id.clone()))
        } else {
            snapshot.iter().position(|s| *s == Seen::Asked)
        };
        let asked_at = asked_at.unwrap_or_else(|| panic!("{era} run {run}: {snapshot:?}"));
        assert_eq!(
            snapshot[..asked_at],
            [Seen::Progress(0.5)],
            "{era} run {run}: the progress before the request for a sample: {snapshot:?}"
        );
        let answer = match answer {
            ServerResult::InputRequiredResult(input) if modern => {
                let mut retry = ask.clone();
                retry.request_state = input.request_state;
                let sampled = serde_json::to_value(common::sampled()).unwrap();
                retry.input_responses = Some(
                    input
                        .input_requests
                        .unwrap_or_default()
                        .into_keys()
                        .map(|key| (key, sampled.clone()))
                        .collect(),
                );
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(retry));
                tokio::time::timeout(WAIT, client.peer().send_request(request))
                    .await
                    .expect("the retry answered")
                    .unwrap()
            }
            other => other,
        };
        let ServerResult::CallToolResult(answer) = answer else {
            panic!("{era} run {run}: a tool result: {answer:?}");
        };
        assert_eq!(text(&answer), "sampled", "{era} run {run}: {answer:?}");
    }
    client.cancel().await.unwrap();
}

/// What a 2025-11-25 upstream sends before it asks its client for input reaches the client
/// first, with both cores held busy: 50 calls for each client era. (The upstream's progress
/// and its request are read off one connection in order, but handed on by different tasks.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_before_an_upstreams_request_reaches_the_client_before_it() {
    let server = common::Only {
        server: common::Up { crashable: false },
        versions: common::LEGACY,
    };
    let up = common::serve(move || server.clone()).await;
    let _busy = Busy::start();
    let (gateway, url) = gateway(&config(&up, "")).await;
    for modern in [false, true] {
        asked_runs(&url, modern, 50).await;
    }
    gateway.shutdown();
}
