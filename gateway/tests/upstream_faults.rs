//! What the gateway makes of an upstream's faults, on real sockets and real processes: an
//! upstream that refuses the gateway access (401, 403), one whose server is gone, one whose
//! process cannot start, a config that names tools the upstream does not list, an upstream
//! removed at a reload (its metrics), and what the log says of them.
#![allow(deprecated)]

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::middleware::Next;
use axum::response::IntoResponse;
use common::{Up, client, http_upstream, serve};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use toolbreaker::{Registry, State};
use toolbreaker_gateway::config::{GatewayConfig, ToolConfig, Transport, UpstreamConfig};
use toolbreaker_gateway::relay::Gateway;
use toolbreaker_gateway::serve::{HttpApp, HttpOptions};

/// A registry whose breakers open at the first counted failure, for a minute: any failure
/// that counted would show.
fn registry() -> Registry {
    let config =
        toolbreaker::Config::new(1, Duration::from_secs(60), Duration::from_secs(5)).unwrap();
    Registry::builder()
        .default_config(config)
        .metrics(true)
        .build()
}

async fn gateway(upstreams: Vec<UpstreamConfig>) -> (Gateway, String) {
    Logs::get();
    let gateway = Gateway::new("gw", registry(), Duration::from_secs(30));
    gateway
        .start(GatewayConfig {
            upstreams,
            registry: Default::default(),
        })
        .await
        .unwrap();
    let g = gateway.clone();
    let url = serve(move || g.session()).await;
    (gateway, url)
}

/// The line of `upstream` in the gateway's `/status`.
fn status_of(gateway: &Gateway, upstream: &str) -> serde_json::Value {
    gateway.status()["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == upstream)
        .cloned()
        .unwrap_or_else(|| panic!("{upstream} is not in /status: {}", gateway.status()))
}

/// `/status`'s line of `upstream` once `ready` holds of it (waited for, 60 s at most).
async fn status_when(
    gateway: &Gateway,
    upstream: &str,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let status = status_of(gateway, upstream);
            if ready(&status) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("not within 60 s: {}", status_of(gateway, upstream)))
}

async fn call(service: &RunningService<RoleClient, common::Client>, tool: &str) -> CallToolResult {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hi".into());
    service
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// An upstream (`common::Up`) behind a front that answers `status` (with a `WWW-Authenticate`
/// challenge when `challenge`) to every POST whose body holds `when` (`""`: every request);
/// its URL and the number of requests refused.
async fn refusing(status: u16, challenge: bool, when: &'static str) -> (String, Arc<AtomicUsize>) {
    let refused = Arc::new(AtomicUsize::new(0));
    let counter = refused.clone();
    let front = move |request: Request<Body>, next: Next| {
        let counter = counter.clone();
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20)
                .await
                .unwrap_or_default();
            if String::from_utf8_lossy(&body).contains(when) {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut answer = (StatusCode::from_u16(status).unwrap(), "no").into_response();
                if challenge {
                    answer.headers_mut().insert(
                        "www-authenticate",
                        "Bearer realm=\"mcp\", error=\"invalid_token\""
                            .parse()
                            .unwrap(),
                    );
                }
                return answer;
            }
            next.run(Request::from_parts(parts, Body::from(body))).await
        }
    };
    let service = StreamableHttpService::new(
        || Ok(Up { crashable: false }),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(front));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/mcp"), refused)
}

/// What the model reads of a refusal of access: that access was refused, with the status,
/// and that waiting will not help; never a time to try again after.
fn says_access_refused(answer: &CallToolResult, status: u16) {
    let said = text(answer);
    assert_eq!(answer.is_error, Some(true), "{said}");
    assert!(
        said.contains(&format!("access refused (HTTP {status})"))
            && said.contains("waiting will not help"),
        "{said}"
    );
    assert!(
        !said.contains("try after") && !said.contains("temporarily unavailable"),
        "{said}"
    );
}

/// The writer of the events of the tests that read the log.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

impl Logs {
    /// This test process's log, through the gateway's filter of `--log info`, with each span's
    /// fields as it closes: one subscriber for the whole process (a subscriber per test thread
    /// would miss events of callsites another thread's filter saw first). Each test reads the
    /// lines of its own upstreams, whose names no other test uses.
    fn get() -> &'static Logs {
        static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Logs::default();
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(toolbreaker_gateway::run::log_filter("info"))
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
                .with_writer(logs.clone())
                .with_ansi(false)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
            logs
        })
    }

    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The lines that hold each of `words`.
    fn with(&self, words: &[&str]) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|line| words.iter().all(|w| line.contains(w)))
            .collect()
    }
}

/// An upstream that answers 401 from `initialize` on: never counted (its breaker stays closed
/// at a threshold of one failure), `/status` says `unauthorized`, one error-level line, and
/// the model is told access was refused and that waiting will not help.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_at_connect_is_never_counted_and_the_model_is_told_access_was_refused() {
    let logs = Logs::get();
    let (url, refused) = refusing(401, true, "").await;
    let (gateway, at) = gateway(vec![http_upstream("locked401", "locked.", &url)]).await;
    let status = status_of(&gateway, "locked401");
    assert_eq!(status["last_failure"], "unauthorized", "{status}");
    assert_eq!(status["connected"], false, "{status}");
    let (_client, service) = client(&at).await;
    for _ in 0..3 {
        says_access_refused(&call(&service, "locked.echo").await, 401);
    }
    assert!(refused.load(Ordering::SeqCst) >= 4, "each call tried again");
    let breaker = gateway.registry().get("locked401");
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.metrics().unwrap().failures.connect, 0);
    let status = status_of(&gateway, "locked401");
    assert_eq!(
        (&status["state"], &status["last_failure"]),
        (&"closed".into(), &"unauthorized".into()),
        "{status}"
    );
    let said = logs.with(&["refused the gateway access", "upstream=locked401"]);
    assert_eq!(said.len(), 1, "once per change, not per call: {said:?}");
    assert!(said[0].contains("ERROR"), "{said:?}");
}

/// An upstream that answers 403 (no challenge) or 401 (with one) to a tool call, the rest of
/// its protocol served: neither is counted, both are `unauthorized` in `/status`, and the
/// model reads the status and that waiting will not help.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_or_401_on_a_call_is_never_counted_and_the_model_is_told_access_was_refused() {
    let (forbidden, _) = refusing(403, false, "\"tools/call\"").await;
    let (challenged, _) = refusing(401, true, "\"tools/call\"").await;
    let (gateway, at) = gateway(vec![
        http_upstream("forbidden403", "forbidden.", &forbidden),
        http_upstream("challenged401", "challenged.", &challenged),
    ])
    .await;
    let (_client, service) = client(&at).await;
    for (tool, upstream, status) in [
        ("forbidden.echo", "forbidden403", 403),
        ("challenged.echo", "challenged401", 401),
    ] {
        for _ in 0..3 {
            says_access_refused(&call(&service, tool).await, status);
        }
        assert_eq!(gateway.registry().get(upstream).state(), State::Closed);
        let line = status_of(&gateway, upstream);
        assert_eq!(line["last_failure"], "unauthorized", "{line}");
        assert_eq!(line["connected"], true, "the upstream answered: {line}");
    }
}

/// An HTTP upstream's server that is gone: `/status` says it is not connected once a request
/// to it got no answer, and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_whose_server_is_gone_is_not_connected() {
    // The upstream in a runtime of its own, on its own thread: ending that runtime ends its
    // listener and every connection it holds, as a server that exits.
    let (url_tx, url_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let url = runtime.block_on(serve(|| Up { crashable: false }));
        url_tx.send(url).unwrap();
        let _ = stop_rx.recv();
        runtime.shutdown_background();
    });
    let url = url_rx.await.unwrap();
    let (gateway, at) = gateway(vec![http_upstream("vanishing", "gone.", &url)]).await;
    let (_client, service) = client(&at).await;
    assert_eq!(text(&call(&service, "gone.echo").await), "hi");
    assert_eq!(status_of(&gateway, "vanishing")["connected"], true);
    stop_tx.send(()).unwrap();
    server.join().unwrap();
    let failed = call(&service, "gone.echo").await;
    assert_eq!(failed.is_error, Some(true), "{}", text(&failed));
    let status = status_when(&gateway, "vanishing", |s| s["connected"] == false).await;
    assert!(
        status["error"].as_str().is_some_and(|e| !e.is_empty()),
        "why it is not connected: {status}"
    );
}

/// A stdio upstream whose program cannot be started: `/status` says it is not connected and
/// why (the start error), and the model reads that it is not connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_upstream_that_cannot_start_says_so_in_status_and_to_the_model() {
    let mut config = http_upstream("nostart", "nostart.", "http://127.0.0.1:1/mcp");
    config.transport = Transport::Stdio {
        command: "/nonexistent/toolbreaker-no-such-program".into(),
        args: vec![],
        env: vec![],
        cwd: None,
    };
    let (gateway, at) = gateway(vec![config]).await;
    let status = status_of(&gateway, "nostart");
    assert_eq!(status["connected"], false, "{status}");
    assert!(
        status["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot start") && e.contains("No such file")),
        "{status}"
    );
    let (_client, service) = client(&at).await;
    let answer = call(&service, "nostart.echo").await;
    let said = text(&answer);
    assert_eq!(answer.is_error, Some(true), "{said}");
    assert!(
        said.contains("not connected") && said.contains("could not be started"),
        "{said}"
    );
}

/// A stdio upstream that starts and never answers its handshake (a program that is no MCP
/// server, or one that hangs): when the wait for it ends, `/status` says it is not connected and
/// why, and the log says so once, however many times it is tried again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_upstream_that_never_answers_its_handshake_says_so_in_status_and_the_log() {
    let logs = Logs::get();
    let mut config = http_upstream("silent", "silent.", "http://127.0.0.1:1/mcp");
    config.transport = Transport::Stdio {
        command: "sleep".into(),
        args: vec!["1000".into()],
        env: vec![],
        cwd: None,
    };
    config.per_call_timeout = std::time::Duration::from_millis(300);
    let (gateway, at) = gateway(vec![config]).await;
    let (_client, service) = client(&at).await;
    // A call waits for the handshake too, and ends at its timeout.
    let answer = call(&service, "silent.echo").await;
    assert_eq!(answer.is_error, Some(true), "{}", text(&answer));
    let status = status_of(&gateway, "silent");
    assert_eq!(status["connected"], false, "{status}");
    assert!(
        status["error"]
            .as_str()
            .is_some_and(|e| e.contains("no answer to the MCP handshake")),
        "{status}"
    );
    let said = logs.with(&[
        "upstream=silent",
        "cannot connect",
        "no answer to the MCP handshake",
    ]);
    assert!(
        said.iter().filter(|l| l.contains("WARN")).count() == 1,
        "one warning, however many tries: {said:?}"
    );
}

/// `allow`, `deny` and a tool section that name no tool the upstream lists are each warned
/// about once the upstream has listed, and not again at the next listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_of_tools_the_upstream_does_not_list_are_warned_about_once() {
    let logs = Logs::get();
    let up = serve(|| Up { crashable: false }).await;
    let mut config = http_upstream("typos", "typos.", &up);
    config.allow = Some(vec!["echo".into(), "ech".into()]);
    config.deny = vec!["nosuch".into()];
    config.tools = vec![ToolConfig {
        name: "nosuch2".into(),
        own_breaker: true,
        classifier: None,
        per_call_timeout: None,
        max_call: None,
    }];
    let (_gateway, at) = gateway(vec![config]).await;
    let (_client, service) = client(&at).await;
    let tools = service.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    service.list_all_tools().await.unwrap();
    for name in ["ech", "nosuch", "nosuch2"] {
        let said = logs.with(&["upstream=typos", &format!("tool={name} ")]);
        assert_eq!(said.len(), 1, "{name}: {said:?}\n{:?}", logs.lines());
        assert!(said[0].contains("WARN"), "{said:?}");
    }
    assert!(
        logs.with(&["upstream=typos", "tool=echo "]).is_empty(),
        "{:?}",
        logs.lines()
    );
}

/// The gateway and its `/metrics` over real HTTP: its URL and `/metrics`'s.
async fn served_with_metrics(upstreams: Vec<UpstreamConfig>) -> (Gateway, String, String) {
    Logs::get();
    let gateway = Gateway::new("gw", registry(), Duration::from_secs(30));
    gateway
        .start(GatewayConfig {
            upstreams,
            registry: Default::default(),
        })
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound = listener.local_addr().unwrap();
    let options = HttpOptions::new(bound);
    let (sessions, status, scrape) = (gateway.clone(), gateway.clone(), gateway.clone());
    let app = HttpApp::new(
        &options,
        move || Ok(sessions.session()),
        Arc::new(move || status.status()),
        Some(Arc::new(move || scrape.registry().export_metrics())),
    )
    .unwrap()
    .with_shortcut(gateway.shortcut());
    tokio::spawn(toolbreaker_gateway::serve::serve(
        listener,
        app,
        std::future::pending(),
    ));
    (
        gateway,
        format!("http://{bound}/mcp"),
        format!("http://{bound}/metrics"),
    )
}

async fn scrape(metrics: &str) -> String {
    reqwest::get(metrics).await.unwrap().text().await.unwrap()
}

/// A reload that removes an upstream takes its series (its breaker's, its tool breaker's, the
/// gateway's own for it) out of `/metrics`; the upstream that stays keeps its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_upstreams_series_leave_metrics_at_the_reload() {
    let up = serve(|| Up { crashable: false }).await;
    let stays = http_upstream("staysm", "stays.", &up);
    let mut removed = http_upstream("removedm", "removed.", &up);
    removed.tools = vec![ToolConfig {
        name: "echo".into(),
        own_breaker: true,
        classifier: None,
        per_call_timeout: None,
        max_call: None,
    }];
    let (gateway, at, metrics) = served_with_metrics(vec![stays.clone(), removed]).await;
    let (_client, service) = client(&at).await;
    call(&service, "stays.echo").await;
    call(&service, "removed.echo").await;
    call(&service, "removed.fail").await;
    let before = scrape(&metrics).await;
    for series in [
        "toolbreaker_state{dependency=\"removedm\"",
        "toolbreaker_state{dependency=\"removedm.echo\"",
        "toolbreaker_gateway_requests_total{dependency=\"removedm\"",
    ] {
        assert!(before.contains(series), "{series} before:\n{before}");
    }
    let reloaded = gateway
        .reload(GatewayConfig {
            upstreams: vec![stays],
            registry: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(reloaded.removed, ["removedm"]);
    let after = scrape(&metrics).await;
    let left: Vec<&str> = after.lines().filter(|l| l.contains("removedm")).collect();
    assert!(left.is_empty(), "series of the removed upstream: {left:?}");
    assert!(
        after.contains("toolbreaker_state{dependency=\"staysm\"")
            && after.contains("toolbreaker_gateway_requests_total{dependency=\"staysm\""),
        "the upstream that stays keeps its series:\n{after}"
    );
}

/// Every metric family in `/metrics` has its `# HELP`, and every series names the upstream
/// with one label, `dependency` (the breakers' word), never `upstream`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_is_described_and_names_its_upstream_as_dependency() {
    let up = serve(|| Up { crashable: false }).await;
    let (_gateway, at, metrics) =
        served_with_metrics(vec![http_upstream("helped", "helped.", &up)]).await;
    let (_client, service) = client(&at).await;
    call(&service, "helped.echo").await;
    let text = scrape(&metrics).await;
    assert!(
        text.contains("toolbreaker_gateway_request_duration_seconds")
            && text.contains("toolbreaker_gateway_requests_total"),
        "{text}"
    );
    let described: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# HELP "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| described.contains(f)))
            .unwrap_or(name);
        assert!(
            described.contains(&family),
            "no # HELP for {family}:\n{text}"
        );
        assert!(!line.contains("upstream=\""), "{line}");
    }
}

/// rmcp's own chatter is quiet under the gateway's log filter (`--log info`): no INFO line of
/// its (the upstream's whole `instructions`, every notification), no second line for a failed
/// connection; the gateway's own lines say it once each, in words: a child's exit as `exited
/// with status 1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_has_the_gateways_own_lines_not_rmcps() {
    let logs = Logs::get();
    let up = serve(|| Up { crashable: false }).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let mut exits = http_upstream("exits", "exits.", "http://127.0.0.1:1/mcp");
    exits.transport = Transport::Stdio {
        command: "false".into(),
        args: vec![],
        env: vec![],
        cwd: None,
    };
    let (gateway, at) = gateway(vec![
        http_upstream("fine", "fine.", &up),
        http_upstream("down", "down.", &format!("http://{closed}/mcp")),
        exits,
    ])
    .await;
    let (_client, service) = client(&at).await;
    assert_eq!(text(&call(&service, "fine.echo").await), "hi");
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while logs
            .with(&["upstream=exits", "exited with status"])
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{:?}", logs.lines());
    gateway.shutdown();
    let lines = logs.lines();
    // Of the whole process (every test's gateways): rmcp's warnings stay, its info goes.
    let rmcp: Vec<&String> = lines
        .iter()
        .filter(|l| (l.contains(" INFO ") || l.contains(" DEBUG ")) && l.contains(" rmcp::"))
        .collect();
    assert!(rmcp.is_empty(), "rmcp's own info lines: {rmcp:?}");
    assert!(
        logs.with(&["worker quit"]).is_empty() && logs.with(&["unix_wait_status"]).is_empty(),
        "{lines:?}"
    );
    let down = logs.with(&["cannot connect", "upstream=down"]);
    assert_eq!(
        down.len(),
        1,
        "one line for the upstream that is down: {lines:?}"
    );
}

/// A tool call's `execute_tool` span names the tool the model called (`gen_ai.tool.name`,
/// `otel.name`), its `dependency` the upstream's breaker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_span_names_the_tool_and_its_dependency_the_upstream() {
    let logs = Logs::get();
    let up = serve(|| Up { crashable: false }).await;
    let (_gateway, at) = gateway(vec![http_upstream("spanned", "sp.", &up)]).await;
    let (_client, service) = client(&at).await;
    assert_eq!(text(&call(&service, "sp.echo").await), "hi");
    // The call's span as it closes, and its attempt's (inside it) before.
    let closed = logs.with(&["execute_tool{", "dependency=\"spanned\""]);
    assert!(!closed.is_empty(), "{:?}", logs.lines());
    for line in &closed {
        assert!(
            line.contains("gen_ai.tool.name=\"sp.echo\"")
                && line.contains("otel.name=execute_tool sp.echo")
                && line.contains("dependency=\"spanned\""),
            "{line}"
        );
    }
}
