//! The cap on concurrent MCP sessions (overall and per client address) and their idle expiry,
//! over real sockets: a session over the cap is refused with `503` or `429`, `Retry-After` and
//! a JSON-RPC error naming the limit; a session's `DELETE` or its idle expiry frees its place.

mod common;
#[path = "serve/probe.rs"]
mod probe;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use probe::{INITIALIZE, Probe, Served, TOKEN, WAIT};
use reqwest::{Response, StatusCode};
use rmcp::model::{ProtocolVersion, SubscriptionFilter};
use rmcp::service::ClientLifecycleMode;
use rmcp::transport::StreamableHttpClientTransport;
use toolbreaker::Registry;
use toolbreaker_gateway::config::GatewayConfig;
use toolbreaker_gateway::relay::Gateway;
use toolbreaker_gateway::serve::{HttpApp, HttpOptions, serve};

/// An HTTP client whose connections come from `ip` (any of 127.0.0.0/8 is loopback).
fn from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip.parse::<IpAddr>().unwrap())
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// A client's first POST: `initialize`, with what MCP asks of it.
async fn initialize(served: &Served, http: &reqwest::Client) -> Response {
    http.post(served.mcp())
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(INITIALIZE)
        .send()
        .await
        .expect("the gateway answers")
}

/// The session an admitted `initialize` opened.
fn session_of(response: &Response) -> String {
    assert_eq!(response.status(), StatusCode::OK, "{response:?}");
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Ends `session` as a client does.
async fn delete(served: &Served, http: &reqwest::Client, session: &str) -> StatusCode {
    http.delete(served.mcp())
        .bearer_auth(TOKEN)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .expect("the gateway answers")
        .status()
}

/// Asserts a refusal: `status`, `Retry-After`, and a JSON-RPC error for the `initialize`
/// (its id) naming `flag` and the limit `max`.
async fn assert_refused(response: Response, status: StatusCode, flag: &str, max: u64) {
    assert_eq!(response.status(), status, "{response:?}");
    assert_eq!(response.headers()["retry-after"], "5");
    assert_eq!(response.headers()["content-type"], "application/json");
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer["jsonrpc"], "2.0");
    assert_eq!(answer["id"], 1, "the initialize's id: {answer}");
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(flag) && message.contains(&format!("limit of {max} ")),
        "{message}"
    );
    assert_eq!(answer["error"]["data"]["limit"], flag);
    assert_eq!(answer["error"]["data"]["max"], max);
}

#[tokio::test]
async fn a_session_over_the_cap_is_refused_until_one_is_deleted() {
    let served = Served::start(Probe::new().0, |options| options.max_sessions = 2).await;
    let http = from("127.0.0.1");
    let first = session_of(&initialize(&served, &http).await);
    let second = session_of(&initialize(&served, &http).await);
    assert_ne!(first, second);
    let over = initialize(&served, &http).await;
    assert_refused(over, StatusCode::SERVICE_UNAVAILABLE, "--max-sessions", 2).await;
    // Still refused: a refusal holds no place, and the two sessions hold theirs.
    let over = initialize(&served, &http).await;
    assert_eq!(over.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(delete(&served, &http, &first).await.is_success());
    let third = session_of(&initialize(&served, &http).await);
    assert!(third != first && third != second);
    let over = initialize(&served, &http).await;
    assert_eq!(over.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn one_client_address_is_capped_on_its_own() {
    let served = Served::start(Probe::new().0, |options| {
        options.max_sessions = 10;
        options.max_sessions_per_client = 1;
    })
    .await;
    let (one, other) = (from("127.0.0.1"), from("127.0.0.2"));
    let held = session_of(&initialize(&served, &one).await);
    let over = initialize(&served, &one).await;
    assert_refused(
        over,
        StatusCode::TOO_MANY_REQUESTS,
        "--max-sessions-per-client",
        1,
    )
    .await;
    // Another address is another client.
    session_of(&initialize(&served, &other).await);
    assert!(delete(&served, &one, &held).await.is_success());
    session_of(&initialize(&served, &one).await);
}

#[tokio::test]
async fn an_idle_session_expires_and_frees_its_place() {
    let served = Served::start(Probe::new().0, |options| {
        options.max_sessions = 1;
        options.session_idle = Duration::from_millis(300);
    })
    .await;
    let http = from("127.0.0.1");
    let idle = session_of(&initialize(&served, &http).await);
    // Waits for the place to free (each refused try touches no session), bounded.
    let admitted = tokio::time::timeout(WAIT, async {
        loop {
            let response = initialize(&served, &http).await;
            if response.status() == StatusCode::OK {
                return session_of(&response);
            }
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the idle session expires within the wait");
    assert_ne!(admitted, idle);
    // The expired session is gone.
    let ping = http
        .post(served.mcp())
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &idle)
        .header("mcp-protocol-version", "2025-06-18")
        .body(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status(), StatusCode::NOT_FOUND, "{ping:?}");
}

/// A 2026-07-28 `subscriptions/listen` stream holds a place while it is open (it is a session
/// of its own in the gateway); the era's other requests are stateless and hold none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_listen_stream_holds_a_place_while_it_is_open() {
    let upstream = common::serve(|| common::Up { crashable: false }).await;
    let gateway = Gateway::new("gw", Registry::builder().build(), Duration::from_secs(30));
    let config = GatewayConfig {
        upstreams: vec![common::http_upstream("up", "up.", &upstream)],
        registry: Default::default(),
    };
    gateway.start(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut options = HttpOptions::new(addr);
    options.max_sessions = 1;
    let (sessions, status) = (gateway.clone(), gateway.clone());
    let app = HttpApp::new(
        &options,
        move || Ok(sessions.session()),
        Arc::new(move || status.status()),
        None,
    )
    .unwrap()
    .with_shortcut(gateway.shortcut());
    tokio::spawn(serve(listener, app, std::future::pending()));
    let url = format!("http://{addr}/mcp");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = rmcp::ClientServiceExt::serve_with_lifecycle(
        (),
        StreamableHttpClientTransport::from_uri(url.clone()),
        lifecycle,
    )
    .await
    .unwrap();
    let stream = tokio::time::timeout(WAIT, client.peer().listen(SubscriptionFilter::new()))
        .await
        .expect("the listen stream opens within the wait")
        .unwrap();
    let http = from("127.0.0.1");
    let initialize = |http: &reqwest::Client| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(INITIALIZE)
            .send()
    };
    let refused = initialize(&http).await.unwrap();
    assert_eq!(
        refused.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "{refused:?}"
    );
    // Stateless requests are served at the cap.
    let tools = client.peer().list_all_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "up.echo"), "{tools:?}");
    drop(stream);
    drop(client);
}
