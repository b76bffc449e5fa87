//! MCP (feature `mcp`) over stdio: `GuardedClient` in front of an rmcp server that is a child
//! process, and `McpGateway::serve_stdio` as a child process in front of an upstream over
//! Streamable HTTP.
//!
//! This binary is its own child: started with `TOOLBREAKER_MCP_CHILD=upstream` it serves the
//! tests' MCP server (its tools do what each call's `do` argument says: answer, answer
//! `isError`, fail, hang until cancelled, wait at a gate) on stdin and stdout until stdin
//! closes; with `TOOLBREAKER_MCP_CHILD=gateway` it serves an `McpGateway` on stdio in front of
//! the Streamable HTTP upstream at `TOOLBREAKER_MCP_UPSTREAM`. Otherwise it runs the scenarios
//! below, each an async function on a runtime of its own, spawning this binary as the child
//! (`rmcp::transport::TokioChildProcess`, or a plain child process where a test must kill it or
//! close its stdin itself). It prints `test NAME ... ok` for each and exits non-zero if any
//! failed; free arguments and `--skip` select scenarios by name, as libtest's do.
//!
//! A child's stdout carries MCP alone; its stderr is the test's, for diagnostics. The child
//! counts server-side what reached it; the parent reads those counts through two control tools
//! (`stats`, `open_gate`) called on the raw rmcp peer, past the breaker, never counted.
//!
//! What recovery means over stdio: the transport *is* the process, so a client whose child died
//! is closed for good (every later call fails at once as `connect`, a probe through it
//! included). A server recovers as a new process with a new client; guarded under the same
//! name on the same `Registry`, that client has the same breaker, still open: the new process
//! is sent nothing until the cooldown has passed, and then one probe.
//!
//! The breakers read a `quanta` mock clock moved by hand past each cooldown; events are awaited
//! with bounded polls, never fixed sleeps.

#[path = "common/mcp.rs"]
mod common;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    COOLDOWN, RACERS, Shared, THRESHOLD, ToolServer, Upstream, WAIT, assert_answered,
    assert_blocked, assert_failed, call, doing, guarded, object, registry, run, text_of,
    wait_until, wait_until_within,
};
use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};
use toolbreaker::mcp::{GuardedClient, McpGateway};
use toolbreaker::{Registry, State};

/// Set in a child's environment: what it serves (`upstream` or `gateway`).
const CHILD: &str = "TOOLBREAKER_MCP_CHILD";
/// Set in a gateway child's environment: its upstream's Streamable HTTP URL.
const UPSTREAM_URL: &str = "TOOLBREAKER_MCP_UPSTREAM";
/// The tools of the upstream child.
const TOOLS: &[&str] = &["query", "relay"];
/// The longest one scenario may take.
const SCENARIO_LIMIT: Duration = Duration::from_secs(90);
/// How long a gateway child may take, once its stdin is closed, to cancel the call it is
/// forwarding: rmcp lets running handlers finish for up to 5 s before it cancels them.
const STDIN_CLOSED_WAIT: Duration = Duration::from_secs(30);

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("upstream") => serve_as_child(serve_upstream()),
        Ok("gateway") => serve_as_child(serve_gateway()),
        Ok(other) => panic!("{CHILD}={other}: expected `upstream` or `gateway`"),
        Err(_) => run_scenarios(),
    }
}

// ---------------------------------------------------------------------------------------------
// The children.
// ---------------------------------------------------------------------------------------------

/// Runs a child's server to its end, then exits at once (a blocking read of stdin may still be
/// parked in tokio's blocking pool; the process does not wait for it).
fn serve_as_child(serve: impl Future<Output = ()>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(serve);
    std::process::exit(0);
}

/// The tests' MCP server on stdio, until stdin closes.
async fn serve_upstream() {
    let server = ToolServer::new(TOOLS, Shared::new());
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .expect("the upstream child's handshake");
    let _ = running.waiting().await;
}

/// An `McpGateway` on stdio in front of the Streamable HTTP upstream `search` at
/// `$TOOLBREAKER_MCP_UPSTREAM`, until stdin closes.
async fn serve_gateway() {
    let url = std::env::var(UPSTREAM_URL).expect("the upstream's URL");
    let transport = StreamableHttpClientTransport::from_uri(url);
    let upstream = ().serve(transport).await.expect("the gateway's upstream");
    let registry = Registry::builder().build();
    let search = GuardedClient::builder("search", upstream, &registry)
        .build()
        .unwrap();
    let gateway = McpGateway::builder().upstream(search).build().unwrap();
    gateway
        .serve_stdio()
        .await
        .expect("the gateway serves stdio");
}

// ---------------------------------------------------------------------------------------------
// The scenarios' runner.
// ---------------------------------------------------------------------------------------------

type ScenarioFuture = Pin<Box<dyn Future<Output = ()>>>;

/// One scenario: its name, whether it needs a current-thread runtime, and its body.
struct Scenario {
    name: &'static str,
    current_thread: bool,
    body: fn() -> ScenarioFuture,
}

/// Every scenario, in the order they run.
fn scenarios() -> Vec<Scenario> {
    let scenario = |name, body| Scenario {
        name,
        current_thread: false,
        body,
    };
    vec![
        scenario(
            "breaker_opens_when_the_child_is_killed_and_sends_nothing_more",
            || Box::pin(breaker_opens_when_the_child_is_killed_and_sends_nothing_more()),
        ),
        Scenario {
            name: "blocked_call_result_has_the_exact_shape",
            current_thread: true,
            body: || Box::pin(blocked_call_result_has_the_exact_shape()),
        },
        scenario("tool_error_answers_never_trip", || {
            Box::pin(tool_error_answers_never_trip())
        }),
        scenario(
            "exactly_one_probe_reaches_the_restarted_child_and_closes",
            || Box::pin(exactly_one_probe_reaches_the_restarted_child_and_closes()),
        ),
        scenario("a_cancelled_probe_frees_the_slot", || {
            Box::pin(a_cancelled_probe_frees_the_slot())
        }),
        scenario("gateway_child_lists_and_forwards_over_stdio", || {
            Box::pin(gateway_child_lists_and_forwards_over_stdio())
        }),
        scenario(
            "a_client_made_in_a_helper_keeps_its_child_until_its_last_clone",
            || Box::pin(a_client_made_in_a_helper_keeps_its_child_until_its_last_clone()),
        ),
        scenario(
            "gateway_child_stdin_closed_cancels_the_upstream_call",
            || Box::pin(gateway_child_stdin_closed_cancels_the_upstream_call()),
        ),
    ]
}

/// Runs the scenarios the arguments select (libtest's way: a scenario runs if its name contains
/// any of the free arguments, or if there are none, and none given with `--skip`), each on a
/// runtime of its own and within [`SCENARIO_LIMIT`]; exits non-zero if any failed. Other flags
/// of libtest's are accepted and ignored, with their values.
fn run_scenarios() {
    let (mut filters, mut skips) = (Vec::new(), Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--skip" => skips.extend(args.next()),
            "--test-threads" | "--format" | "--color" | "--logfile" | "-Z" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            _ => filters.push(arg),
        }
    }
    let selected: Vec<Scenario> = scenarios()
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|f| s.name.contains(f.as_str())))
        .filter(|s| !skips.iter().any(|skip| s.name.contains(skip.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let started = Instant::now();
    let mut failed = Vec::new();
    for scenario in &selected {
        let runtime = if scenario.current_thread {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(4);
            builder
        }
        .enable_all()
        .build()
        .unwrap();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(async {
                tokio::time::timeout(SCENARIO_LIMIT, (scenario.body)())
                    .await
                    .expect("the scenario ends within its limit");
            });
        }));
        // Children and servers still running end with the runtime.
        runtime.shutdown_timeout(Duration::from_secs(5));
        match outcome {
            Ok(()) => println!("test {} ... ok", scenario.name),
            Err(_) => {
                println!("test {} ... FAILED", scenario.name);
                failed.push(scenario.name);
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    if failed.is_empty() {
        println!(
            "\ntest result: ok. {} passed; 0 failed; finished in {elapsed:.2}s\n",
            selected.len()
        );
    } else {
        println!(
            "\ntest result: FAILED. {} passed; {} failed ({}); finished in {elapsed:.2}s\n",
            selected.len() - failed.len(),
            failed.len(),
            failed.join(", ")
        );
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------------
// Children and what they have seen.
// ---------------------------------------------------------------------------------------------

/// This binary as a child serving `role`, its stderr the test's.
fn child_command(role: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .env(CHILD, role)
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    command
}

/// A client of a new upstream child, through rmcp's child-process transport (the child is
/// killed when the client ends).
async fn spawn_upstream() -> RunningService<RoleClient, ()> {
    serve_client(TokioChildProcess::new(child_command("upstream")).unwrap()).await
}

/// The rmcp client handshake over `transport`, within [`WAIT`].
async fn serve_client<T, E, A>(transport: T) -> RunningService<RoleClient, ()>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    tokio::time::timeout(WAIT, ().serve(transport))
        .await
        .expect("the child's handshake ends within the wait")
        .expect("the child's handshake succeeds")
}

/// A child serving `role`, spawned as a plain process so the test can kill it or close its
/// stdin itself, and an rmcp client of it over its stdin and stdout.
async fn spawn_own_child(
    mut command: tokio::process::Command,
) -> (RunningService<RoleClient, ()>, tokio::process::Child) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    (serve_client((stdout, stdin)).await, child)
}

/// Waits, within `within`, for `child` to exit.
async fn exit_of(child: &mut tokio::process::Child, within: Duration) -> ExitStatus {
    tokio::time::timeout(within, child.wait())
        .await
        .expect("the child exits within the wait")
        .expect("the child's exit status")
}

/// What the upstream child behind `peer` has seen (its [`common::STATS`] tool, called on the
/// raw peer: past the breaker, never counted).
async fn stats(peer: &Peer<RoleClient>) -> Value {
    let answer = tokio::time::timeout(WAIT, peer.call_tool(stats_call()))
        .await
        .expect("stats within the wait")
        .expect("the child answers stats");
    answer.structured_content.expect("the counts")
}

fn stats_call() -> CallToolRequestParams {
    CallToolRequestParams::new(common::STATS)
}

/// How many `tools/call` reached the child behind `peer`.
async fn child_calls(peer: &Peer<RoleClient>) -> u64 {
    stats(peer).await["calls"].as_u64().unwrap()
}

/// Polls the child's counts every few ms until `condition` holds on them, within [`WAIT`].
async fn wait_for_child(peer: &Peer<RoleClient>, what: &str, condition: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let counts = stats(peer).await;
        if condition(&counts) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {counts}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Opens `client`'s breaker with [`THRESHOLD`] internal errors (`-32603`) from its child.
async fn open_by_internal_errors(client: &GuardedClient) {
    for _ in 0..THRESHOLD {
        let result = client.call_tool(&run(), doing("query", "internal")).await;
        assert_failed(&result, client.server(), "unavailable");
    }
    assert_eq!(client.breaker().state(), State::Open);
}

// ---------------------------------------------------------------------------------------------
// The scenarios.
// ---------------------------------------------------------------------------------------------

/// The child is killed (SIGKILL) while a call hangs in it: that call fails as `connect` (the
/// transport closed under it), and so does every call after (rmcp answers `TransportClosed` at
/// once); the breaker opens at the threshold, and blocked calls are sent nowhere. A restarted
/// child, reached by a new client under the same name on the same registry, shares the open
/// breaker: it is sent nothing. After the cooldown a probe through the dead client fails at
/// once and reopens the breaker (the old transport never recovers); after the next cooldown the
/// probe through the new client reaches the new child and closes it.
async fn breaker_opens_when_the_child_is_killed_and_sends_nothing_more() {
    let (registry, mock) = registry();
    let (service, mut child) = spawn_own_child(child_command("upstream")).await;
    let client = guarded("search", service, &registry);
    assert_answered(
        &client.call_tool(&run(), doing("query", "answer")).await,
        "query",
    );

    let in_flight = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool(&run(), doing("query", "hang")).await }
    });
    wait_for_child(client.peer(), "the call to hang", |c| c["waiting"] == 1).await;
    child.start_kill().expect("kill the child");
    let status = exit_of(&mut child, WAIT).await;
    assert!(!status.success(), "killed: {status}");

    let failed = tokio::time::timeout(WAIT, in_flight)
        .await
        .expect("the call in flight ends when the child dies")
        .unwrap();
    assert_failed(&failed, "search", "connect");
    let raw = client.peer().call_tool(doing("query", "answer")).await;
    assert!(
        matches!(raw, Err(ServiceError::TransportClosed)),
        "a dead child's transport is closed: {raw:?}"
    );
    for _ in 1..THRESHOLD {
        assert_eq!(client.breaker().state(), State::Closed);
        let failed = client.call_tool(&run(), doing("query", "answer")).await;
        assert_failed(&failed, "search", "connect");
    }
    assert_eq!(client.breaker().state(), State::Open);
    for _ in 0..10 {
        let blocked = client.call_tool(&run(), doing("query", "answer")).await;
        assert_blocked(&blocked, "search", "dependency_open");
    }

    // The supervisor restarts the server: a new process, a new client, the same breaker.
    let recovered = spawn_upstream().await;
    let new_client = guarded("search", recovered, &registry);
    assert!(Arc::ptr_eq(new_client.breaker(), client.breaker()));
    for _ in 0..10 {
        let blocked = new_client.call_tool(&run(), doing("query", "answer")).await;
        assert_blocked(&blocked, "search", "dependency_open");
    }
    assert_eq!(
        child_calls(new_client.peer()).await,
        0,
        "the open breaker sent it nothing"
    );

    mock.increment(COOLDOWN);
    let failed = client.call_tool(&run(), doing("query", "answer")).await;
    assert_failed(&failed, "search", "connect");
    assert_eq!(
        client.breaker().state(),
        State::Open,
        "the dead client's probe reopened it"
    );
    assert_eq!(child_calls(new_client.peer()).await, 0);

    mock.increment(COOLDOWN);
    let probe = new_client.call_tool(&run(), doing("query", "answer")).await;
    assert_answered(&probe, "query");
    assert_eq!(new_client.breaker().state(), State::Closed);
    assert_eq!(child_calls(new_client.peer()).await, 1, "the probe alone");
}

/// A blocked call's `CallToolResult` over stdio, exactly: `isError: true`, the message as its
/// one text content, and the `ToolResult` JSON as `structuredContent` with the cooldown left on
/// the mock clock. (tokio's clock is paused around that call alone, so `elapsed_ms` is 0.)
async fn blocked_call_result_has_the_exact_shape() {
    let (registry, mock) = registry();
    let service = spawn_upstream().await;
    let client = guarded("search", service, &registry);
    open_by_internal_errors(&client).await;
    mock.increment(Duration::from_millis(1000));

    tokio::time::pause();
    let result = client.call_tool(&run(), doing("query", "answer")).await;
    tokio::time::resume();

    let message = "search is temporarily unavailable; do not call it again now. Answer with \
                   what you know, use another tool, or try after 0.8 s.";
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), message);
    assert_eq!(
        result.structured_content,
        Some(json!({
            "status": "blocked",
            "dependency": "search",
            "reason": "dependency_open",
            "retry_after_ms": 840,
            "message": message,
            "attempts": 0,
            "elapsed_ms": 0,
        }))
    );
    assert_eq!(
        child_calls(client.peer()).await,
        u64::from(THRESHOLD),
        "nothing sent"
    );
}

/// `isError: true` answers from the child, many in a row: the breaker stays closed, and each is
/// passed to the caller as an unguarded call of the same peer gets it.
async fn tool_error_answers_never_trip() {
    let (registry, _mock) = registry();
    let service = spawn_upstream().await;
    let client = guarded("search", service, &registry);
    let calls = 4 * THRESHOLD;
    for _ in 0..calls {
        let guarded = client.call_tool(&run(), doing("query", "tool_error")).await;
        let raw = client
            .peer()
            .call_tool(doing("query", "tool_error"))
            .await
            .unwrap();
        assert_eq!(guarded, raw, "passed through unchanged");
        assert_eq!(text_of(&guarded), "no such city");
        assert_eq!(client.breaker().state(), State::Closed);
    }
    assert_eq!(child_calls(client.peer()).await, 2 * u64::from(calls));
}

/// The child is killed and the breaker opens; the restarted child is the recovered server.
/// After the cooldown, of [`RACERS`] concurrent calls exactly one reaches it (the probe, held
/// at the child's gate while the others are blocked as `probe_in_flight`); its success closes
/// the breaker.
async fn exactly_one_probe_reaches_the_restarted_child_and_closes() {
    let (registry, mock) = registry();
    let (service, mut child) = spawn_own_child(child_command("upstream")).await;
    let client = guarded("search", service, &registry);
    child.start_kill().expect("kill the child");
    exit_of(&mut child, WAIT).await;
    for _ in 0..THRESHOLD {
        let failed = client.call_tool(&run(), doing("query", "answer")).await;
        assert_failed(&failed, "search", "connect");
    }
    assert_eq!(client.breaker().state(), State::Open);

    let recovered = spawn_upstream().await;
    let client = guarded("search", recovered, &registry);
    mock.increment(COOLDOWN);
    assert_eq!(client.breaker().state(), State::HalfOpen);

    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let (done, mut results) = tokio::sync::mpsc::unbounded_channel::<CallToolResult>();
    for _ in 0..RACERS {
        let (client, barrier, done) = (client.clone(), barrier.clone(), done.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            let _ = done.send(client.call_tool(&run(), doing("query", "gate")).await);
        });
    }
    for _ in 1..RACERS {
        let result = tokio::time::timeout(WAIT, results.recv())
            .await
            .expect("every call but the probe returns at once")
            .unwrap();
        assert_blocked(&result, "search", "probe_in_flight");
    }
    wait_for_child(client.peer(), "the probe at the child", |c| {
        c["waiting"] == 1
    })
    .await;
    assert_eq!(
        child_calls(client.peer()).await,
        1,
        "one call reached the child"
    );
    client
        .peer()
        .call_tool(CallToolRequestParams::new(common::OPEN_GATE))
        .await
        .unwrap();
    let probe = tokio::time::timeout(WAIT, results.recv())
        .await
        .expect("the probe returns once let through")
        .unwrap();
    assert_answered(&probe, "query");
    assert_eq!(client.breaker().state(), State::Closed);
    assert_eq!(
        child_calls(client.peer()).await,
        1,
        "exactly one call reached the child"
    );
}

/// The probe hangs in the child and its caller drops the call's future: rmcp writes
/// `notifications/cancelled` to the child's stdin and the child's `RequestContext::ct` fires;
/// nothing is recorded, the slot is free, and the next call is the probe that closes the
/// breaker.
async fn a_cancelled_probe_frees_the_slot() {
    let (registry, mock) = registry();
    let service = spawn_upstream().await;
    let client = guarded("search", service, &registry);
    open_by_internal_errors(&client).await;
    mock.increment(COOLDOWN);

    let probe_run = run();
    let probe = client.call_tool(&probe_run, doing("query", "hang"));
    tokio::select! {
        result = probe => panic!("the probe hangs until cancelled: {result:?}"),
        () = wait_for_child(client.peer(), "the probe to hang", |c| c["waiting"] == 1) => {}
    }
    wait_for_child(client.peer(), "the child to see the cancellation", |c| {
        c["cancelled"] == 1
    })
    .await;
    common::assert_probe_slot_free(client.breaker());

    let probe = client.call_tool(&run(), doing("query", "answer")).await;
    assert_answered(&probe, "query");
    assert_eq!(client.breaker().state(), State::Closed);
    assert_eq!(child_calls(client.peer()).await, u64::from(THRESHOLD) + 2);
}

/// An upstream child and the client of it guarded as `search`, made in a helper that returns
/// them without the rmcp service: the service leaves inside the client (an earlier API took the
/// peer, and dropping the service here closed the child's stdin).
async fn guarded_child_from_a_helper(
    registry: &Registry,
) -> (GuardedClient, tokio::process::Child) {
    let (service, child) = spawn_own_child(child_command("upstream")).await;
    (guarded("search", service, registry), child)
}

/// A client made in a helper that returns it alone keeps its child: every call reaches the
/// child and is answered, and the breaker records no failure (a closed transport would fail
/// each as a counted `connect` and open the breaker of a healthy child). A clone keeps the
/// connection when the original is dropped; dropping the last closes the child's stdin, and
/// the child exits cleanly.
async fn a_client_made_in_a_helper_keeps_its_child_until_its_last_clone() {
    let registry = Registry::builder().metrics(true).build();
    let (client, mut child) = guarded_child_from_a_helper(&registry).await;
    let calls = 2 * THRESHOLD;
    for _ in 0..calls {
        assert_answered(
            &client.call_tool(&run(), doing("query", "answer")).await,
            "query",
        );
    }
    assert_eq!(client.breaker().state(), State::Closed);
    assert_eq!(child_calls(client.peer()).await, u64::from(calls));

    let clone = client.clone();
    drop(client);
    let answer = clone.call_tool(&run(), doing("query", "answer")).await;
    assert_answered(&answer, "query");
    let metrics = clone.breaker().metrics().unwrap();
    assert_eq!(metrics.failures.total(), 0, "{metrics:?}");
    assert_eq!(metrics.successes, u64::from(calls) + 1, "{metrics:?}");
    assert_eq!(metrics.state, State::Closed);
    assert!(child.try_wait().unwrap().is_none(), "the child runs");
    drop(clone);
    let status = exit_of(&mut child, WAIT).await;
    assert!(
        status.success(),
        "its stdin closed, the child exits cleanly: {status}"
    );
}

/// A gateway child on stdio in front of an upstream this process serves over Streamable HTTP:
/// it lists the upstream's tools namespaced, forwards a call with its arguments intact, and
/// answers an unknown tool with `-32602`.
async fn gateway_child_lists_and_forwards_over_stdio() {
    let upstream = Upstream::start(&["query", "echo"]).await;
    let mut command = child_command("gateway");
    command.env(UPSTREAM_URL, &upstream.url);
    let gateway = serve_client(TokioChildProcess::new(command).unwrap()).await;

    let tools = gateway.peer().list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["search.echo", "search.query"]);

    let arguments = json!({"q": "ünïcode ✓", "page": 2, "filters": {"lang": ["en"], "x": null}});
    let answer = gateway
        .peer()
        .call_tool(call("search.echo", arguments.clone()))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "echo: ünïcode ✓");
    assert_eq!(answer.structured_content, Some(arguments.clone()));
    assert_eq!(
        upstream.shared.last_arguments.lock().unwrap().clone(),
        Some(object(arguments)),
        "the upstream got the arguments as sent"
    );
    assert_eq!(upstream.calls(), 1);

    let error = gateway
        .peer()
        .call_tool(doing("nosuch.query", "answer"))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = error else {
        panic!("a JSON-RPC error: {error:?}");
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(upstream.calls(), 1, "nothing forwarded");
}

/// A gateway child forwards a call that hangs upstream; the test drops its client, which closes
/// the child's stdin: the gateway cancels the call it forwards (the upstream's
/// `RequestContext::ct` fires) and exits cleanly.
async fn gateway_child_stdin_closed_cancels_the_upstream_call() {
    let upstream = Upstream::start(&["query"]).await;
    let mut command = child_command("gateway");
    command.env(UPSTREAM_URL, &upstream.url);
    let (gateway, mut child) = spawn_own_child(command).await;

    let peer = gateway.peer().clone();
    let hanging = tokio::spawn(async move { peer.call_tool(doing("search.query", "hang")).await });
    wait_until("the call to hang upstream", || upstream.waiting() == 1).await;
    assert_eq!(upstream.cancelled(), 0);

    // Closing the client closes the child's stdin (its transport's write half).
    tokio::time::timeout(WAIT, gateway.cancel())
        .await
        .expect("the client closes within the wait")
        .unwrap();
    wait_until_within(
        STDIN_CLOSED_WAIT,
        "the upstream to see the cancellation",
        || upstream.cancelled() == 1,
    )
    .await;
    let status = exit_of(&mut child, STDIN_CLOSED_WAIT).await;
    assert!(status.success(), "the gateway exits cleanly: {status}");
    let answer = tokio::time::timeout(WAIT, hanging).await.unwrap().unwrap();
    assert!(
        matches!(answer, Err(ServiceError::TransportClosed)),
        "no answer: {answer:?}"
    );
    assert_eq!(upstream.calls(), 1);
}
