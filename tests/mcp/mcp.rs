//! MCP (feature `mcp`) end to end over Streamable HTTP: `GuardedClient` and `McpGateway` in
//! front of real rmcp servers on loopback sockets, reached by real rmcp clients.
//!
//! Covered: the breaker opening on transport failures (an upstream whose endpoint stopped, one
//! answering HTTP 503) and sending nothing while open; the exact `CallToolResult` of a blocked
//! call; what never trips (`isError` answers, invalid params, unknown tools) and the override
//! that does; exactly one probe after the cooldown, closing or reopening the breaker; a
//! cancelled probe giving its slot back; the gateway's namespaced listing, forwarding,
//! `-32602` for an unknown tool, fencing of one upstream's outage, and cancellation through
//! it (a dropped call, an explicit `notifications/cancelled`, a dropped HTTP connection); and
//! `McpClassifier`'s table on results that came over the wire.
//!
//! The upstream servers run in this process: each is a hand-written `ServerHandler` behind
//! rmcp's `StreamableHttpService` on axum, with a middleware in front that counts every HTTP
//! request and can answer with an HTTP error instead. What a tool does is chosen by the call's
//! `do` argument. The breakers read a `quanta` mock clock that the tests move past each
//! cooldown, so nothing here sleeps for time; network events are awaited with a bounded poll
//! or a server-side count. tokio's clock is real (the sockets are), but every per-call timeout
//! and run deadline is far longer than any loopback answer takes, so none decides an outcome.

use super::common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    COOLDOWN, RACERS, Sessions, THRESHOLD, Upstream, WAIT, assert_answered, assert_blocked,
    assert_failed, call, doing, guarded, no_retries, object, registry, run, text_of, wait_until,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ErrorCode,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ServiceError, ServiceExt};
use serde_json::json;
use tokio::sync::oneshot;
use toolbreaker::agent::FailedKind;
use toolbreaker::mcp::{GuardedClient, MCP_PATH, McpClassifier, McpGateway};
use toolbreaker::{BlockedReason, Classify, FailureKind, Outcome, State, ToolResult};

// ---------------------------------------------------------------------------------------------
// HTTP clients and the gateway.
// ---------------------------------------------------------------------------------------------

/// An rmcp client connected to `url` over Streamable HTTP (the handshake done).
async fn connect(url: &str) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    tokio::time::timeout(WAIT, ().serve(transport))
        .await
        .expect("the handshake ends within the wait")
        .expect("the handshake succeeds")
}

/// One upstream with `tools`, an rmcp client of it (the handshake done), and that client guarded
/// as the server `search`, its breakers on a mock clock ([`registry`]).
struct One {
    registry: toolbreaker::Registry,
    mock: Arc<toolbreaker::quanta::Mock>,
    upstream: Upstream,
    client: GuardedClient,
}

impl One {
    async fn start(tools: &[&'static str]) -> One {
        let (registry, mock) = registry();
        let upstream = Upstream::start(tools).await;
        let service = connect(&upstream.url).await;
        let client = guarded("search", service, &registry);
        One {
            registry,
            mock,
            upstream,
            client,
        }
    }
}

/// Opens `client`'s breaker the way an outage does: the upstream answers HTTP 503 to
/// [`THRESHOLD`] calls; then it serves again (the breaker stays open, on the mock clock).
async fn open_by_outage(client: &GuardedClient, upstream: &Upstream) {
    upstream.fail_http(503, None);
    for _ in 0..THRESHOLD {
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        assert_failed(&result, client.server(), "unavailable");
    }
    assert_eq!(client.breaker().state(), State::Open);
    upstream.heal();
}

/// An [`McpGateway`] serving Streamable HTTP on a loopback port.
struct Gateway {
    url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Gateway {
    /// Serves a gateway in front of `upstreams`.
    async fn start(upstreams: Vec<GuardedClient>) -> Gateway {
        let mut builder = McpGateway::builder();
        for upstream in upstreams {
            builder = builder.upstream(upstream);
        }
        let gateway = builder.build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{MCP_PATH}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(gateway.serve_http(listener, async move {
            let _ = stopped.await;
        }));
        Gateway {
            url,
            stop: Some(stop),
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Two upstreams (`search` with `query` and `echo`, `weather` with `forecast`), their guarded
/// clients on one registry, and a gateway in front of both, with a client connected to it.
struct Fronted {
    search: Upstream,
    weather: Upstream,
    search_client: GuardedClient,
    weather_client: GuardedClient,
    mock: Arc<toolbreaker::quanta::Mock>,
    gateway: Gateway,
    client: RunningService<RoleClient, ()>,
}

impl Fronted {
    /// Starts both upstreams, connects and guards a client of each, and serves the gateway.
    async fn start() -> Fronted {
        let (registry, mock) = registry();
        let search = Upstream::start(&["query", "echo"]).await;
        let weather = Upstream::start(&["forecast"]).await;
        let search_service = connect(&search.url).await;
        let weather_service = connect(&weather.url).await;
        let search_client = guarded("search", search_service, &registry);
        let weather_client = guarded("weather", weather_service, &registry);
        let gateway = Gateway::start(vec![search_client.clone(), weather_client.clone()]).await;
        let client = connect(&gateway.url).await;
        Fronted {
            search,
            weather,
            search_client,
            weather_client,
            mock,
            gateway,
            client,
        }
    }

    /// One call through the gateway.
    async fn call(&self, params: CallToolRequestParams) -> Result<CallToolResult, ServiceError> {
        tokio::time::timeout(WAIT, self.client.peer().call_tool(params))
            .await
            .expect("the gateway answers within the wait")
    }
}

// ---------------------------------------------------------------------------------------------
// The breaker opens on transport failures, and then sends nothing.
// ---------------------------------------------------------------------------------------------

/// The upstream's endpoint stops (connects refused): each call fails as `connect`, the breaker
/// opens at the threshold, and while it is open nothing reaches the address, even once a server
/// listens there again. After the cooldown one probe reaches the restarted server and closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breaker_opens_when_the_upstream_stops_and_open_sends_nothing() {
    let One {
        registry: _registry,
        mock,
        mut upstream,
        client,
    } = One::start(&["query"]).await;
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );

    upstream.stop().await;
    for failure in 1..=THRESHOLD {
        assert_eq!(
            client.breaker().state(),
            State::Closed,
            "before failure {failure}"
        );
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        let json = assert_failed(&result, "search", "connect");
        assert_eq!(
            json.get("http_status"),
            None,
            "no HTTP status: nothing answered"
        );
    }
    assert_eq!(client.breaker().state(), State::Open);

    // A server on the same address again: the open breaker sends it nothing.
    let restarted = Upstream::start_at(upstream.addr, &["query"], Sessions::Stateless).await;
    for _ in 0..10 {
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        assert_blocked(&result, "search", "dependency_open");
    }
    assert_eq!(restarted.http_requests(), 0, "no HTTP request while open");
    assert_eq!(restarted.calls(), 0);

    mock.increment(COOLDOWN);
    assert_eq!(client.breaker().state(), State::HalfOpen);
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );
    assert_eq!(
        client.breaker().state(),
        State::Closed,
        "the probe closed it"
    );
    assert_eq!(
        (restarted.http_requests(), restarted.calls()),
        (1, 1),
        "the probe alone, on the client's surviving transport"
    );
}

/// The same with rmcp's default session mode: the stopped server's session is gone, so the
/// probe's POST is answered 404 and rmcp re-initialises on its own; the probe still succeeds as
/// the one call that reaches the restarted server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breaker_opens_when_a_session_upstream_stops_and_recovers_in_a_new_session() {
    let (registry, mock) = registry();
    let mut upstream =
        Upstream::start_at("127.0.0.1:0".parse().unwrap(), &["query"], Sessions::Legacy).await;
    let service = connect(&upstream.url).await;
    let client = guarded("search", service, &registry);
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );

    upstream.stop().await;
    for _ in 0..THRESHOLD {
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        assert_failed(&result, "search", "connect");
    }
    assert_eq!(client.breaker().state(), State::Open);

    let restarted = Upstream::start_at(upstream.addr, &["query"], Sessions::Legacy).await;
    for _ in 0..10 {
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        assert_blocked(&result, "search", "dependency_open");
    }
    assert_eq!(restarted.calls(), 0, "no tools/call while open");

    mock.increment(COOLDOWN);
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );
    assert_eq!(client.breaker().state(), State::Closed);
    assert_eq!(restarted.calls(), 1, "the probe alone");
}

/// An upstream answering HTTP 503: each call fails as `unavailable` with `http_status` 503, the
/// breaker opens at the threshold, and the calls it blocks make no HTTP request at all.
#[tokio::test]
async fn breaker_opens_on_http_503_and_blocked_calls_make_no_request() {
    let One {
        registry: _registry,
        mock: _mock,
        upstream,
        client,
    } = One::start(&["query"]).await;

    upstream.fail_http(503, None);
    let before = upstream.http_requests();
    for failure in 1..=THRESHOLD {
        assert_eq!(
            client.breaker().state(),
            State::Closed,
            "before failure {failure}"
        );
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        let json = assert_failed(&result, "search", "unavailable");
        assert_eq!(json["http_status"], 503, "{json}");
        assert_eq!(json["error"], "unavailable (HTTP 503)", "{json}");
    }
    assert_eq!(client.breaker().state(), State::Open);
    assert_eq!(
        upstream.http_requests() - before,
        THRESHOLD as usize,
        "one per call"
    );

    upstream.heal();
    for _ in 0..20 {
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        assert_blocked(&result, "search", "dependency_open");
    }
    assert_eq!(
        upstream.http_requests() - before,
        THRESHOLD as usize,
        "blocked calls send nothing"
    );
    assert_eq!(upstream.calls(), 0);
}

// ---------------------------------------------------------------------------------------------
// What the model reads of a blocked call.
// ---------------------------------------------------------------------------------------------

/// A blocked call's `CallToolResult`, exactly: `isError: true`, the message as its one text
/// content, and the `ToolResult` JSON as `structuredContent`, its retry-after the cooldown
/// left on the mock clock. (tokio's clock is paused around the call alone, so its
/// `elapsed_ms` is exactly 0: the blocked call never waits on anything.)
#[tokio::test]
async fn blocked_call_result_has_the_exact_shape() {
    let One {
        registry: _registry,
        mock,
        upstream,
        client,
    } = One::start(&["query"]).await;
    open_by_outage(&client, &upstream).await;
    mock.increment(Duration::from_millis(400));
    let requests = upstream.http_requests();

    tokio::time::pause();
    let result = client.call_tool(&run(), doing("query", "answer")).await;
    tokio::time::resume();

    let message = "search is temporarily unavailable; do not call it again now. Answer with \
                   what you know, use another tool, or try after 1.4 s.";
    assert_eq!(result.is_error, Some(true));
    assert_eq!(result.content.len(), 1);
    assert_eq!(result.content[0].as_text().unwrap().text, message);
    assert_eq!(
        result.structured_content,
        Some(json!({
            "status": "blocked",
            "dependency": "search",
            "reason": "dependency_open",
            "retry_after_ms": 1440,
            "message": message,
            "attempts": 0,
            "elapsed_ms": 0,
        }))
    );
    assert_eq!(result.meta, None);
    assert_eq!(upstream.http_requests(), requests, "nothing sent");

    // The same call as the pipeline's own result.
    let ToolResult::Blocked {
        dependency,
        reason,
        retry_after_ms,
        ..
    } = client
        .call_tool_result(&run(), doing("query", "answer"))
        .await
    else {
        panic!("blocked");
    };
    assert_eq!(
        (dependency.as_str(), reason, retry_after_ms),
        ("search", BlockedReason::DependencyOpen, 1440)
    );
}

// ---------------------------------------------------------------------------------------------
// What never trips, and the override that does.
// ---------------------------------------------------------------------------------------------

/// Answers with `isError: true` are the tool's own word: many in a row leave the breaker
/// closed, and each reaches the caller exactly as an unguarded call of the same peer gets it.
#[tokio::test]
async fn tool_error_answers_never_trip_and_pass_through_unchanged() {
    let One {
        registry: _registry,
        mock: _mock,
        upstream,
        client,
    } = One::start(&["query"]).await;

    let calls = 4 * THRESHOLD as usize;
    for _ in 0..calls {
        let guarded = client.call_tool(&run(), doing("query", "tool_error")).await;
        let raw = client
            .peer()
            .call_tool(doing("query", "tool_error"))
            .await
            .expect("an answer");
        assert_eq!(guarded, raw, "passed through unchanged");
        assert_eq!(guarded.is_error, Some(true));
        assert_eq!(text_of(&guarded), "no such city");
        assert_eq!(guarded.structured_content, None, "no pipeline JSON added");
        assert_eq!(client.breaker().state(), State::Closed);
    }
    assert_eq!(upstream.calls(), 2 * calls, "every call reached the server");
}

/// JSON-RPC `-32602` (invalid params, and an unknown tool) is the call's own fault: many in a
/// row leave the breaker closed; the model reads the server's words and is told to correct
/// the arguments.
#[tokio::test]
async fn invalid_params_and_unknown_tools_never_trip() {
    let One {
        registry: _registry,
        mock: _mock,
        upstream,
        client,
    } = One::start(&["query"]).await;

    for _ in 0..3 * THRESHOLD {
        let invalid = client.call_tool(&run(), doing("query", "invalid")).await;
        let json = assert_failed(&invalid, "search", "rejected");
        assert_eq!(json["error"], "`q` must not be empty", "{json}");
        assert!(
            text_of(&invalid).starts_with(
                "search rejected the call: `q` must not be empty. Correct the arguments"
            ),
            "{json}"
        );
        let unknown = client.call_tool(&run(), doing("nosuch", "answer")).await;
        let json = assert_failed(&unknown, "search", "rejected");
        assert_eq!(json["error"], "tool not found", "{json}");
        assert_eq!(client.breaker().state(), State::Closed);
    }
    assert_eq!(
        upstream.calls(),
        6 * THRESHOLD as usize,
        "every call reached the server"
    );
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );
}

/// A tool whose `isError` answers relay its own upstream's outage, classified so
/// (`McpClassifier::tool_error` through `GuardedClientBuilder::tool_classifier`): its answers
/// count, the server's breaker opens at the threshold, and the server's other tools are
/// blocked with it. Another tool's `isError` answers still do not count.
#[tokio::test]
async fn tool_error_override_trips_the_breaker() {
    let (registry, _mock) = registry();
    let upstream = Upstream::start(&["query", "relay"]).await;
    let service = connect(&upstream.url).await;
    let relays = McpClassifier::new().tool_error(Outcome::Failure(FailureKind::Unavailable));
    let client = GuardedClient::builder("search", service, &registry)
        .guard(no_retries())
        .tool_classifier("relay", relays)
        .build()
        .unwrap();

    for _ in 0..2 * THRESHOLD {
        let result = client.call_tool(&run(), doing("query", "tool_error")).await;
        assert_eq!(text_of(&result), "no such city", "not counted, passed on");
    }
    assert_eq!(client.breaker().state(), State::Closed);

    for failure in 1..=THRESHOLD {
        assert_eq!(
            client.breaker().state(),
            State::Closed,
            "before failure {failure}"
        );
        let result = client.call_tool(&run(), doing("relay", "tool_error")).await;
        let json = assert_failed(&result, "search", "unavailable");
        assert_eq!(json.get("http_status"), None);
    }
    assert_eq!(client.breaker().state(), State::Open);
    assert!(
        Arc::ptr_eq(client.breaker_for("relay"), client.breaker()),
        "a classifier of its own, the server's breaker"
    );
    let calls = upstream.calls();
    let blocked = client.call_tool(&run(), doing("query", "answer")).await;
    assert_blocked(&blocked, "search", "dependency_open");
    assert_eq!(upstream.calls(), calls, "blocked: nothing sent");
}

/// JSON-RPC `-32603` (internal error) says the server is broken: it counts, and opens the
/// breaker at the threshold.
#[tokio::test]
async fn internal_errors_trip_the_breaker() {
    let One {
        registry: _registry,
        mock: _mock,
        upstream: _upstream,
        client,
    } = One::start(&["query"]).await;

    for _ in 0..THRESHOLD {
        let result = client.call_tool(&run(), doing("query", "internal")).await;
        let json = assert_failed(&result, "search", "unavailable");
        assert_eq!(
            json["error"], "unavailable",
            "the server's words are not shown"
        );
    }
    assert_eq!(client.breaker().state(), State::Open);
}

// ---------------------------------------------------------------------------------------------
// Exactly one probe after the cooldown.
// ---------------------------------------------------------------------------------------------

/// Races [`RACERS`] calls of `params` (a `do: "gate"` call) through `client` at once, a barrier
/// lining them up: the `RACERS - 1` results that came back while the probe waited at the
/// upstream's gate (checked to be the one call that reached it), then the probe's, once the gate
/// let it through.
async fn race(
    client: &GuardedClient,
    upstream: &Upstream,
    params: CallToolRequestParams,
) -> (Vec<CallToolResult>, CallToolResult) {
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let (done, mut results) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..RACERS {
        let (client, params, barrier, done) = (
            client.clone(),
            params.clone(),
            barrier.clone(),
            done.clone(),
        );
        tokio::spawn(async move {
            barrier.wait().await;
            let _ = done.send(client.call_tool(&run(), params).await);
        });
    }
    let mut blocked = Vec::new();
    for _ in 1..RACERS {
        let result = tokio::time::timeout(WAIT, results.recv())
            .await
            .expect("every call but the probe returns at once")
            .unwrap();
        blocked.push(result);
    }
    wait_until("the probe at the server", || upstream.waiting() == 1).await;
    assert_eq!(upstream.calls(), 1, "one call reached the server");
    upstream.open_gate();
    let probe = tokio::time::timeout(WAIT, results.recv())
        .await
        .expect("the probe returns once let through")
        .unwrap();
    (blocked, probe)
}

/// After the cooldown, of many concurrent calls exactly one reaches the server (the probe); the
/// rest are blocked as `probe_in_flight` while it runs. Its success closes the breaker, and the
/// next calls go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_probe_after_the_cooldown_and_its_success_closes() {
    let One {
        registry: _registry,
        mock,
        upstream,
        client,
    } = One::start(&["query"]).await;
    open_by_outage(&client, &upstream).await;
    mock.increment(COOLDOWN);
    assert_eq!(client.breaker().state(), State::HalfOpen);

    let (blocked, probe) = race(&client, &upstream, doing("query", "gate")).await;
    for result in &blocked {
        let retry_after_ms = assert_blocked(result, "search", "probe_in_flight");
        assert!(retry_after_ms > 0);
    }
    assert_answered(&probe, "query");
    assert_eq!(upstream.calls(), 1, "exactly one call reached the server");
    assert_eq!(
        client.breaker().state(),
        State::Closed,
        "the probe's success closed it"
    );

    for _ in 0..5 {
        assert_answered(
            &client.call_tool(&run(), doing("query", "answer")).await,
            "query",
        );
    }
    assert_eq!(upstream.calls(), 6);
}

/// A probe that fails reopens the breaker for a full cooldown; the racing calls were blocked,
/// and only the probe reached the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_probe_reopens_the_breaker() {
    let One {
        registry: _registry,
        mock,
        upstream,
        client,
    } = One::start(&["query"]).await;
    open_by_outage(&client, &upstream).await;
    mock.increment(COOLDOWN);

    let (blocked, probe) = race(&client, &upstream, doing("query", "gate_then_fail")).await;
    for result in &blocked {
        assert_blocked(result, "search", "probe_in_flight");
    }
    assert_failed(&probe, "search", "unavailable");
    assert_eq!(
        client.breaker().state(),
        State::Open,
        "the failed probe reopened it"
    );
    let again = client.call_tool(&run(), doing("query", "answer")).await;
    let retry_after_ms = assert_blocked(&again, "search", "dependency_open");
    assert_eq!(
        retry_after_ms,
        COOLDOWN.as_millis() as u64,
        "a full cooldown again"
    );
    assert_eq!(upstream.calls(), 1, "only the probe reached the server");
}

// ---------------------------------------------------------------------------------------------
// A cancelled probe gives its slot back.
// ---------------------------------------------------------------------------------------------

/// Asserts that the half-open slot is free (a permit taken and given back unused: a probe
/// permit), and that the next call is the probe: it reaches `upstream` and closes the breaker.
async fn assert_slot_free_and_next_call_probes(client: &GuardedClient, upstream: &Upstream) {
    common::assert_probe_slot_free(client.breaker());
    let calls = upstream.calls();
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );
    assert_eq!(upstream.calls(), calls + 1, "the next call was the probe");
    assert_eq!(client.breaker().state(), State::Closed);
}

/// The probe hangs at the server and its caller drops the call's future: the slot is free at
/// once, rmcp cancels the request (the server's `RequestContext::ct` fires), nothing is
/// recorded, and the next call becomes the probe.
#[tokio::test]
async fn a_dropped_probe_future_cancels_the_call_and_frees_the_slot() {
    let One {
        registry: _registry,
        mock,
        upstream,
        client,
    } = One::start(&["query"]).await;
    open_by_outage(&client, &upstream).await;
    mock.increment(COOLDOWN);

    let probe_run = run();
    let probe = client.call_tool(&probe_run, doing("query", "hang"));
    tokio::select! {
        result = probe => panic!("the probe hangs until cancelled: {result:?}"),
        () = wait_until("the probe at the server", || upstream.waiting() == 1) => {}
    }
    // The probe's future was dropped with the `select!`, its call still waiting on the server:
    // the slot is free at once, before the server has even heard of the cancellation.
    let permit = client
        .breaker()
        .try_acquire()
        .expect("the slot is free at once");
    assert!(permit.is_probe());
    drop(permit);
    wait_until("the server to see the cancellation", || {
        upstream.cancelled() == 1
    })
    .await;
    assert_slot_free_and_next_call_probes(&client, &upstream).await;
}

/// The same with the probe's task aborted while it hangs, checking the slot before any other
/// call: free, and the next call is the probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_probe_task_frees_the_slot() {
    let One {
        registry: _registry,
        mock,
        upstream,
        client,
    } = One::start(&["query"]).await;
    open_by_outage(&client, &upstream).await;
    mock.increment(COOLDOWN);

    let probe = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool(&run(), doing("query", "hang")).await }
    });
    wait_until("the probe at the server", || upstream.waiting() == 1).await;
    let blocked = client.call_tool(&run(), doing("query", "answer")).await;
    assert_blocked(&blocked, "search", "probe_in_flight");

    probe.abort();
    assert!(probe.await.unwrap_err().is_cancelled());
    wait_until("the server to see the cancellation", || {
        upstream.cancelled() == 1
    })
    .await;
    assert_slot_free_and_next_call_probes(&client, &upstream).await;
}

// ---------------------------------------------------------------------------------------------
// The gateway.
// ---------------------------------------------------------------------------------------------

/// `tools/list` through the gateway: every upstream's tools, named `upstream.tool`, with their
/// descriptions and schemas.
#[tokio::test]
async fn gateway_lists_every_upstreams_tools_namespaced() {
    let fronted = Fronted::start().await;
    let tools = fronted.client.peer().list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["search.echo", "search.query", "weather.forecast"]);
    let forecast = tools.iter().find(|t| t.name == "weather.forecast").unwrap();
    assert_eq!(forecast.description.as_deref(), Some("the forecast tool"));
    assert_eq!(forecast.input_schema["properties"]["q"]["type"], "string");
    assert_eq!(
        fronted.search.calls() + fronted.weather.calls(),
        0,
        "listing calls nothing"
    );
}

/// `tools/call` through the gateway reaches the upstream named by the prefix, as the bare
/// tool, with its arguments intact, and answers with the upstream's answer.
#[tokio::test]
async fn gateway_forwards_calls_with_their_arguments_intact() {
    let fronted = Fronted::start().await;
    let arguments = json!({
        "q": "rust ünïcode ✓",
        "limit": 3,
        "filters": {"lang": ["en", "de"], "exact": true, "score": 0.5, "none": null},
    });
    let answer = fronted
        .call(call("search.echo", arguments.clone()))
        .await
        .unwrap();
    assert_eq!(fronted.search.calls(), 1);
    assert_eq!(fronted.weather.calls(), 0);
    assert_eq!(
        fronted.search.shared.last_arguments.lock().unwrap().clone(),
        Some(object(arguments.clone())),
        "the upstream got the arguments as sent"
    );
    assert_eq!(answer.is_error, Some(false));
    assert_eq!(text_of(&answer), "echo: rust ünïcode ✓");
    assert_eq!(answer.structured_content, Some(arguments));

    let forecast = fronted
        .call(doing("weather.forecast", "answer"))
        .await
        .unwrap();
    assert_answered(&forecast, "forecast");
    assert_eq!(fronted.weather.calls(), 1);
}

/// A name with no upstream's prefix is JSON-RPC `-32602`, from the gateway itself: nothing is
/// forwarded and no breaker moves. A known upstream's unknown tool is that upstream's own
/// `-32602`, which the model reads as a rejected call.
#[tokio::test]
async fn gateway_answers_an_unknown_tool_with_invalid_params() {
    let fronted = Fronted::start().await;
    for name in [
        "nosuch.query",
        "query",
        "search",
        ".query",
        "weather-forecast",
    ] {
        let error = fronted
            .call(CallToolRequestParams::new(name))
            .await
            .unwrap_err();
        let ServiceError::McpError(error) = error else {
            panic!("a JSON-RPC error for {name}: {error:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{name}");
        assert_eq!(error.message, format!("unknown tool `{name}`"));
    }
    assert_eq!(
        fronted.search.calls() + fronted.weather.calls(),
        0,
        "nothing forwarded"
    );

    let rejected = fronted
        .call(doing("search.nosuch", "answer"))
        .await
        .unwrap();
    let json = assert_failed(&rejected, "search", "rejected");
    assert_eq!(json["error"], "tool not found");
    assert_eq!(fronted.search.calls(), 1);
    assert_eq!(fronted.search_client.breaker().state(), State::Closed);
    assert_eq!(fronted.weather_client.breaker().state(), State::Closed);
}

/// One upstream down (HTTP 503): its calls fail, then are blocked at once with nothing sent;
/// the other upstream's calls are still answered and its breaker stays closed. Listing still
/// shows the open upstream's tools (the ones it listed last), so the model can be told why.
#[tokio::test]
async fn gateway_fences_one_upstreams_outage_from_the_others() {
    let fronted = Fronted::start().await;
    assert_eq!(
        fronted.client.peer().list_all_tools().await.unwrap().len(),
        3
    );

    fronted.weather.fail_http(503, None);
    for _ in 0..THRESHOLD {
        let failed = fronted
            .call(doing("weather.forecast", "answer"))
            .await
            .unwrap();
        let json = assert_failed(&failed, "weather", "unavailable");
        assert_eq!(json["http_status"], 503);
    }
    assert_eq!(fronted.weather_client.breaker().state(), State::Open);
    let requests = fronted.weather.http_requests();
    for round in 0..5 {
        let blocked = fronted
            .call(doing("weather.forecast", "answer"))
            .await
            .unwrap();
        assert_blocked(&blocked, "weather", "dependency_open");
        let answered = fronted.call(doing("search.query", "answer")).await.unwrap();
        assert_answered(&answered, "query");
        assert_eq!(fronted.search.calls(), round + 1);
    }
    assert_eq!(
        fronted.weather.http_requests(),
        requests,
        "blocked: nothing sent"
    );
    assert_eq!(fronted.search_client.breaker().state(), State::Closed);

    let mut names: Vec<String> = (fronted.client.peer().list_all_tools().await.unwrap())
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["search.echo", "search.query", "weather.forecast"]);
    assert_eq!(
        fronted.weather.http_requests(),
        requests,
        "an open upstream is not asked"
    );

    fronted.weather.heal();
    fronted.mock.increment(COOLDOWN);
    let probe = fronted
        .call(doing("weather.forecast", "answer"))
        .await
        .unwrap();
    assert_answered(&probe, "forecast");
    assert_eq!(fronted.weather_client.breaker().state(), State::Closed);
}

/// Opens `search`'s breaker through the gateway and moves the mock clock past its cooldown.
async fn half_open_search(fronted: &Fronted) {
    fronted.search.fail_http(503, None);
    for _ in 0..THRESHOLD {
        let failed = fronted.call(doing("search.query", "answer")).await.unwrap();
        assert_failed(&failed, "search", "unavailable");
    }
    fronted.search.heal();
    fronted.mock.increment(COOLDOWN);
    assert_eq!(fronted.search_client.breaker().state(), State::HalfOpen);
}

/// A gateway client drops its call's future while the probe hangs upstream: the gateway's call
/// is cancelled (rmcp's client cancels the request it abandoned), the gateway drops the
/// forwarded call, the upstream sees the cancellation, and the probe slot is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_client_dropping_a_call_cancels_upstream_and_frees_the_probe() {
    let fronted = Fronted::start().await;
    half_open_search(&fronted).await;

    let probe = fronted
        .client
        .peer()
        .call_tool(doing("search.query", "hang"));
    tokio::select! {
        result = probe => panic!("the probe hangs until cancelled: {result:?}"),
        () = wait_until("the probe upstream", || fronted.search.waiting() == 1) => {}
    }
    wait_until("the upstream to see the cancellation", || {
        fronted.search.cancelled() == 1
    })
    .await;
    assert_slot_free_and_next_call_probes(&fronted.search_client, &fronted.search).await;
}

/// The same with an explicit `notifications/cancelled` from the gateway's client for a request
/// it sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_client_cancelled_notification_cancels_upstream_and_frees_the_probe() {
    let fronted = Fronted::start().await;
    half_open_search(&fronted).await;

    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(doing("search.query", "hang")));
    let handle = fronted
        .client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    wait_until("the probe upstream", || fronted.search.waiting() == 1).await;
    handle
        .cancel(Some("the user moved on".to_owned()))
        .await
        .unwrap();
    wait_until("the upstream to see the cancellation", || {
        fronted.search.cancelled() == 1
    })
    .await;
    assert_slot_free_and_next_call_probes(&fronted.search_client, &fronted.search).await;
}

/// An HTTP client that drops its connection to the gateway mid-call (a plain POST of
/// `tools/call`, aborted) cancels the forwarded call: the upstream sees the cancellation and
/// the probe slot is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_dropped_http_connection_cancels_upstream_and_frees_the_probe() {
    let fronted = Fronted::start().await;
    half_open_search(&fronted).await;

    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search.query", "arguments": {"do": "hang"}},
    });
    let url = fronted.gateway.url.clone();
    let post = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string())
            .send()
            .await
    });
    wait_until("the probe upstream", || fronted.search.waiting() == 1).await;
    post.abort();
    assert!(post.await.unwrap_err().is_cancelled(), "no answer came");
    wait_until("the upstream to see the cancellation", || {
        fronted.search.cancelled() == 1
    })
    .await;
    assert_slot_free_and_next_call_probes(&fronted.search_client, &fronted.search).await;
}

// ---------------------------------------------------------------------------------------------
// McpClassifier's table, on results that came over the wire.
// ---------------------------------------------------------------------------------------------

/// One unguarded call's result and its classification.
async fn classified(
    service: &RunningService<RoleClient, ()>,
    params: CallToolRequestParams,
) -> (Result<CallToolResult, ServiceError>, Outcome, Option<u16>) {
    let result = service.peer().call_tool(params).await;
    let classifier = McpClassifier::new();
    let outcome = classifier.classify(&result);
    let status = classifier.http_status(&result);
    (result, outcome, status)
}

/// A closed transport (the client's service shut down) is `Failure(Connect)`; a client built
/// with `builder_caller_keeps_alive` over the peer of a service its caller then closes fails
/// every call as `connect`, as its docs warn.
#[tokio::test]
async fn classify_closed_transport_as_connect() {
    let (registry, _mock) = registry();
    let upstream = Upstream::start(&["query"]).await;
    let service = connect(&upstream.url).await;
    let peer = service.peer().clone();
    let client = GuardedClient::builder_caller_keeps_alive("search", peer.clone(), &registry)
        .guard(no_retries())
        .build()
        .unwrap();
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );
    service.cancel().await.unwrap();

    let result = peer.call_tool(doing("query", "answer")).await;
    assert!(
        matches!(result, Err(ServiceError::TransportClosed)),
        "{result:?}"
    );
    assert_eq!(
        McpClassifier::new().classify(&result),
        Outcome::Failure(FailureKind::Connect)
    );
    let failed = client.call_tool(&run(), doing("query", "answer")).await;
    assert_failed(&failed, "search", "connect");
    assert_eq!(upstream.calls(), 1, "only the call made while it was open");
}

/// HTTP 503 through Streamable HTTP is `Failure(Unavailable)`, its status known: the failed
/// `ToolResult` says `http_status: 503`.
#[tokio::test]
async fn classify_http_503_as_unavailable_with_its_status() {
    let (registry, _mock) = registry();
    let upstream = Upstream::start(&["query"]).await;
    let service = connect(&upstream.url).await;
    upstream.fail_http(503, None);

    let (result, outcome, status) = classified(&service, doing("query", "answer")).await;
    assert!(
        matches!(result, Err(ServiceError::TransportSend(_))),
        "{result:?}"
    );
    assert_eq!(outcome, Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(status, Some(503));

    let client = guarded("search", service, &registry);
    let ToolResult::Failed {
        kind,
        http_status,
        counted,
        ..
    } = client
        .call_tool_result(&run(), doing("query", "answer"))
        .await
    else {
        panic!("failed");
    };
    assert_eq!(
        (kind, http_status, counted),
        (FailedKind::Unavailable, Some(503), true)
    );
}

/// HTTP 429 with `Retry-After` is `Failure(RateLimited)` carrying the hint.
#[tokio::test]
async fn classify_http_429_as_rate_limited_with_the_hint() {
    let (registry, _mock) = registry();
    let upstream = Upstream::start(&["query"]).await;
    let service = connect(&upstream.url).await;
    upstream.fail_http(429, Some("7"));

    let (_, outcome, status) = classified(&service, doing("query", "answer")).await;
    assert_eq!(
        outcome,
        Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        })
    );
    assert_eq!(status, Some(429));
    assert_eq!(outcome.retry_after(), Some(Duration::from_secs(7)));

    let client = guarded("search", service, &registry);
    let failed = client.call_tool(&run(), doing("query", "answer")).await;
    let json = assert_failed(&failed, "search", "rate_limited");
    assert_eq!(json["http_status"], 429);
}

/// JSON-RPC errors from the server: `-32603` is `Failure(Unavailable)`, `-32602` (invalid
/// params, an unknown tool) is `Ignored`; an `isError` answer is `Ignored` and a plain answer
/// `Success`.
#[tokio::test]
async fn classify_json_rpc_errors_and_answers() {
    let upstream = Upstream::start(&["query"]).await;
    let service = connect(&upstream.url).await;

    let (result, outcome, status) = classified(&service, doing("query", "internal")).await;
    let Err(ServiceError::McpError(error)) = &result else {
        panic!("a JSON-RPC error: {result:?}");
    };
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    assert_eq!(
        (outcome, status),
        (Outcome::Failure(FailureKind::Unavailable), None)
    );

    for params in [doing("query", "invalid"), doing("nosuch", "answer")] {
        let (result, outcome, _) = classified(&service, params).await;
        let Err(ServiceError::McpError(error)) = &result else {
            panic!("a JSON-RPC error: {result:?}");
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(outcome, Outcome::Ignored);
    }

    let (_, outcome, _) = classified(&service, doing("query", "tool_error")).await;
    assert_eq!(outcome, Outcome::Ignored);
    let (_, outcome, _) = classified(&service, doing("query", "answer")).await;
    assert_eq!(outcome, Outcome::Success);

    // An override of a code replaces the table's word for it.
    let lenient = McpClassifier::new().code(ErrorCode::INTERNAL_ERROR.0, Outcome::Ignored);
    let (result, _, _) = classified(&service, doing("query", "internal")).await;
    assert_eq!(lenient.classify(&result), Outcome::Ignored);
}

// ---------------------------------------------------------------------------------------------
// Found by review: answers that are not MCP, listings, settings, and the default guard.
// ---------------------------------------------------------------------------------------------

/// A server that answers, but not in MCP (a body that is not JSON-RPC, an HTML page): the server is up and broken, so the call counts as `other`, never as a
/// connection that could not be made, and the model is not told "could not connect". (A broken
/// event stream is not here: rmcp's client ends its transport on one, and reports
/// `TransportClosed`, which is a connection failure.)
#[tokio::test]
async fn answers_that_are_not_mcp_count_as_other_failures() {
    let bodies = [
        (200, "application/json", "not json{"),
        (200, "text/html", "<html><body>maintenance</body></html>"),
    ];
    for (status, content_type, body) in bodies {
        let (registry, _mock) = registry();
        let upstream = Upstream::start(&["query"]).await;
        let service = connect(&upstream.url).await;
        let client = GuardedClient::builder("search", service, &registry)
            .guard(toolbreaker::ToolGuard::new(
                Duration::from_secs(2),
                toolbreaker::RetryPolicy::none(),
            ))
            .build()
            .unwrap();
        upstream.reply(status, content_type, body);
        let result = client.call_tool(&run(), doing("query", "answer")).await;
        let json = common::pipeline_json(&result);
        assert_eq!(json["status"], "failed", "{content_type} {body}: {json}");
        assert_eq!(json["counted"], true, "{content_type} {body}: {json}");
        assert_eq!(json["kind"], "other", "{content_type} {body}: {json}");
    }
}

/// Listing an upstream whose breaker is open asks it nothing and counts no blocked call: a
/// listing is not a tool call.
#[tokio::test]
async fn gateway_listing_an_open_upstream_counts_no_blocked_call() {
    let (clock, _mock) = toolbreaker::quanta::Clock::mock();
    let registry = toolbreaker::Registry::builder()
        .default_config(
            toolbreaker::Config::new(THRESHOLD, COOLDOWN, Duration::from_secs(30)).unwrap(),
        )
        .clock(clock)
        .metrics(true)
        .build();
    let upstream = Upstream::start(&["query"]).await;
    let service = connect(&upstream.url).await;
    let client = guarded("search", service, &registry);
    let gateway = Gateway::start(vec![client.clone()]).await;
    let agent = connect(&gateway.url).await;
    let _ = agent.peer().list_all_tools().await.unwrap();
    open_by_outage(&client, &upstream).await;
    let blocked = client.breaker().metrics().unwrap().blocked;
    let requests = upstream.http_requests();
    for _ in 0..10 {
        let tools = agent.peer().list_all_tools().await.unwrap();
        assert!(
            tools.iter().any(|t| t.name == "search.query"),
            "listed from its last listing"
        );
    }
    assert_eq!(client.breaker().metrics().unwrap().blocked, blocked);
    assert_eq!(
        upstream.http_requests(),
        requests,
        "the open upstream was not asked"
    );
}

/// Settings under which a breaker could never see an outage are errors naming the field: a
/// per-call timeout of zero, and a gateway's call time limit no longer than an upstream's
/// per-call timeout (every attempt would be cut by the call's deadline, which records nothing).
#[tokio::test]
async fn settings_that_would_hide_an_outage_are_config_errors() {
    let (registry, _mock) = registry();
    let upstream = Upstream::start(&["query"]).await;
    let zero = GuardedClient::builder("search", connect(&upstream.url).await, &registry)
        .guard(toolbreaker::ToolGuard::new(
            Duration::ZERO,
            toolbreaker::RetryPolicy::none(),
        ))
        .build()
        .unwrap_err();
    assert_eq!(zero.field(), "per_call_timeout");
    let service = connect(&upstream.url).await;
    let client = GuardedClient::builder("search", service, &registry)
        .guard(toolbreaker::ToolGuard::new(
            Duration::from_secs(2),
            toolbreaker::RetryPolicy::none(),
        ))
        .build()
        .unwrap();
    for limit in [Duration::from_millis(300), Duration::from_secs(2)] {
        let err = McpGateway::builder()
            .upstream(client.clone())
            .call_time_limit(limit)
            .build()
            .unwrap_err();
        assert_eq!(
            (err.field(), err.problem()),
            ("call_time_limit", toolbreaker::config::Problem::TooShort)
        );
        assert!(err.to_string().contains("per-call timeout"), "{err}");
    }
    assert!(
        McpGateway::builder()
            .upstream(client)
            .call_time_limit(Duration::from_secs(3))
            .build()
            .is_ok()
    );
}

/// A tool call may have effects, and a failed attempt may still have run: the default guard
/// makes one attempt, and a retry is the caller's choice.
#[tokio::test]
async fn the_default_guard_runs_a_tool_once() {
    let (registry, _mock) = registry();
    let upstream = Upstream::start(&["query"]).await;
    let service = connect(&upstream.url).await;
    let client = GuardedClient::builder("search", service, &registry)
        .build()
        .unwrap();
    let result = client.call_tool(&run(), doing("query", "internal")).await;
    let json = assert_failed(&result, "search", "unavailable");
    assert_eq!(json["attempts"], 1);
    assert_eq!(upstream.calls(), 1, "the tool ran once");
}

// ---------------------------------------------------------------------------------------------
// The client owns its connection.
// ---------------------------------------------------------------------------------------------

/// Connects to `url` and returns the service guarded as `search`, the client alone: the service
/// leaves this function inside it (an earlier API took the peer, and the service was dropped
/// here, closing the connection).
async fn connected_in_a_helper(url: &str, registry: &toolbreaker::Registry) -> GuardedClient {
    let service = connect(url).await;
    GuardedClient::builder("search", service, registry)
        .guard(no_retries())
        .build()
        .unwrap()
}

/// A client made in a helper that returns it alone keeps its connection: every call reaches
/// the real upstream and is answered, and its breaker records no failure (a dropped connection
/// would fail each as a counted `connect` and open the breaker of a healthy server). The
/// connection lives while any clone does, and closes with the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_made_in_a_helper_keeps_its_connection_until_its_last_clone() {
    let (clock, _mock) = toolbreaker::quanta::Clock::mock();
    let registry = toolbreaker::Registry::builder()
        .default_config(
            toolbreaker::Config::new(THRESHOLD, COOLDOWN, Duration::from_secs(30)).unwrap(),
        )
        .clock(clock)
        .metrics(true)
        .build();
    let upstream = Upstream::start(&["query"]).await;
    let client = connected_in_a_helper(&upstream.url, &registry).await;
    // Time for a dropped service's task to end, had the helper dropped it.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(
        !client.peer().is_transport_closed(),
        "the connection is open"
    );

    let calls = 2 * THRESHOLD as usize;
    for _ in 0..calls {
        assert_answered(
            &client.call_tool(&run(), doing("query", "answer")).await,
            "query",
        );
    }
    let metrics = client.breaker().metrics().unwrap();
    assert_eq!(metrics.failures.total(), 0, "{metrics:?}");
    assert_eq!(metrics.successes, calls as u64, "{metrics:?}");
    assert_eq!(metrics.state, State::Closed);
    assert_eq!(upstream.calls(), calls, "every call reached the upstream");

    // A clone keeps the connection when the original is dropped; the last clone closes it.
    let clone = client.clone();
    let peer = client.peer().clone();
    drop(client);
    assert_answered(
        &clone.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );
    assert!(!peer.is_transport_closed());
    drop(clone);
    wait_until("the connection closes with the last clone", || {
        peer.is_transport_closed()
    })
    .await;
    assert_eq!(upstream.calls(), calls + 1);
    assert_eq!(
        registry.get("search").metrics().unwrap().failures.total(),
        0
    );
}
