//! The routes and their security: the bearer token, the `Host` and `Origin` checks, the
//! request size limit, `/healthz`, `/status` and `/metrics`.

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode};

use crate::probe::{INITIALIZE, Probe, Served, TOKEN, call, text_of};

/// A POST of `body` to the MCP endpoint, with the headers MCP asks for.
fn post_mcp(served: &Served, body: impl Into<reqwest::Body>) -> RequestBuilder {
    reqwest::Client::new()
        .post(served.mcp())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body)
}

fn get(served: &Served, path: &str) -> RequestBuilder {
    reqwest::Client::new().get(format!("{}{path}", served.base))
}

async fn send(request: RequestBuilder) -> Response {
    request.send().await.expect("the server answers")
}

/// Asserts a 401 with a bearer challenge; the challenge.
fn assert_unauthorized(response: &Response) -> String {
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{response:?}");
    let challenge = response.headers()[WWW_AUTHENTICATE].to_str().unwrap();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    challenge.to_owned()
}

#[tokio::test]
async fn healthz_answers_ok_without_a_token() {
    let served = Served::start(Probe::new().0, |_| {}).await;
    let response = send(get(&served, "/healthz")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn a_request_without_the_token_is_refused_on_every_guarded_route() {
    let served = Served::start(Probe::new().0, |_| {}).await;
    let challenge = assert_unauthorized(&send(post_mcp(&served, INITIALIZE)).await);
    assert_eq!(challenge, "Bearer");
    assert_unauthorized(&send(get(&served, "/status")).await);
    assert_unauthorized(&send(get(&served, "/metrics")).await);
    assert_eq!(
        served
            .status_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // Another scheme is no token either.
    let basic = post_mcp(&served, INITIALIZE).header(AUTHORIZATION, "Basic dXNlcjpwYXNz");
    assert_unauthorized(&send(basic).await);
    // An rmcp client without it cannot connect.
    assert!(served.client(None).await.is_err());
}

#[tokio::test]
async fn a_wrong_token_is_refused() {
    let served = Served::start(Probe::new().0, |_| {}).await;
    let wrong = format!("{TOKEN}x");
    for token in [wrong.as_str(), &TOKEN[1..], "t"] {
        let request = post_mcp(&served, INITIALIZE).bearer_auth(token);
        let challenge = assert_unauthorized(&send(request).await);
        assert_eq!(challenge, r#"Bearer error="invalid_token""#);
        assert_unauthorized(&send(get(&served, "/status").bearer_auth(token)).await);
    }
    assert!(served.client(Some(&wrong)).await.is_err());
}

#[tokio::test]
async fn the_right_token_lets_a_client_in() {
    let served = Served::start(Probe::new().0, |_| {}).await;
    let response = send(post_mcp(&served, INITIALIZE).bearer_auth(TOKEN)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers().contains_key("mcp-session-id"),
        "a session"
    );
    // The scheme in any case.
    let lower = post_mcp(&served, INITIALIZE).header(AUTHORIZATION, format!("bearer {TOKEN}"));
    assert_eq!(send(lower).await.status(), StatusCode::OK);
    let client = served.client(Some(TOKEN)).await.expect("connects");
    let mut echo = call("echo");
    echo.arguments = serde_json::json!({"q": "hi"}).as_object().cloned();
    let result = client.peer().call_tool(echo).await.unwrap();
    assert_eq!(text_of(&result), "echo: hi");
    // The token stops at the gate: the handler never sees it.
    let result = client
        .peer()
        .call_tool(call("authorization"))
        .await
        .unwrap();
    assert_eq!(text_of(&result), "absent");
}

#[tokio::test]
async fn without_a_configured_token_nothing_is_asked() {
    let served = Served::start(Probe::new().0, |options| options.auth_token = None).await;
    assert_eq!(
        send(post_mcp(&served, INITIALIZE)).await.status(),
        StatusCode::OK
    );
    assert_eq!(send(get(&served, "/status")).await.status(), StatusCode::OK);
    let client = served.client(None).await.expect("connects");
    // The handler sees a client's own `Authorization` header when the gateway asks for none.
    let _ = client.cancel().await;
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            served.mcp(),
        )
        .auth_header("upstream-bound");
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    let client = rmcp::ServiceExt::serve((), transport)
        .await
        .expect("connects");
    let result = client
        .peer()
        .call_tool(call("authorization"))
        .await
        .unwrap();
    assert_eq!(text_of(&result), "present");
}

#[tokio::test]
async fn a_host_that_is_not_admitted_is_forbidden() {
    let served = Served::start(Probe::new().0, |options| {
        options.allowed_hosts = vec!["gw.example".to_owned(), "pinned.example:8443".to_owned()];
    })
    .await;
    let with_host =
        |request: RequestBuilder, host: &str| request.bearer_auth(TOKEN).header(HOST, host);
    for host in [
        "evil.example",
        "evil.example:80",
        "pinned.example:8444",
        "pinned.example",
    ] {
        let response = send(with_host(post_mcp(&served, INITIALIZE), host)).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{host}");
        for path in ["/status", "/metrics"] {
            let response = send(with_host(get(&served, path), host)).await;
            assert_eq!(response.status(), StatusCode::FORBIDDEN, "{path} {host}");
        }
    }
    assert_eq!(
        served
            .status_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    let port = served.addr.port();
    for host in [
        format!("localhost:{port}"),
        "gw.example".to_owned(),
        "pinned.example:8443".to_owned(),
    ] {
        let response = send(with_host(post_mcp(&served, INITIALIZE), &host)).await;
        assert_eq!(response.status(), StatusCode::OK, "{host}");
        let response = send(with_host(get(&served, "/status"), &host)).await;
        assert_eq!(response.status(), StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn an_origin_that_is_not_admitted_is_forbidden() {
    let served = Served::start(Probe::new().0, |options| {
        options.allowed_origins = vec!["https://app.example:443".to_owned()];
    })
    .await;
    let with_origin = |origin: &str| {
        post_mcp(&served, INITIALIZE)
            .bearer_auth(TOKEN)
            .header(ORIGIN, origin)
    };
    for origin in [
        "http://evil.example",
        "https://app.example:8443",
        "null",
        "http://app.example",
    ] {
        let response = send(with_origin(origin)).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
    }
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:6274",
        "https://app.example",
    ] {
        let response = send(with_origin(origin)).await;
        assert_eq!(response.status(), StatusCode::OK, "{origin}");
    }
}

#[tokio::test]
async fn a_body_over_the_size_limit_is_413() {
    const LIMIT: usize = 8 * 1024;
    let served = Served::start(Probe::new().0, |options| options.max_request_bytes = LIMIT).await;
    let padding = "x".repeat(LIMIT);
    let ping =
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"pad":"{padding}"}}}}"#);
    assert!(ping.len() > LIMIT);
    let response = send(post_mcp(&served, ping).bearer_auth(TOKEN)).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // Under the limit, the same endpoint answers.
    assert!(INITIALIZE.len() < LIMIT);
    let response = send(post_mcp(&served, INITIALIZE).bearer_auth(TOKEN)).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn status_is_the_relays_json_asked_on_each_request() {
    let served = Served::start(Probe::new().0, |_| {}).await;
    for asked in 1..=2 {
        let response = send(get(&served, "/status").bearer_auth(TOKEN)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let json: serde_json::Value =
            serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(json["upstreams"][0]["name"], "search");
        assert_eq!(json["upstreams"][0]["state"], "closed");
        assert_eq!(json["asked"], asked);
    }
}

#[tokio::test]
async fn metrics_render_what_was_recorded_in_prometheus_text_format() {
    let served = Served::start(Probe::new().0, |_| {}).await;
    metrics::counter!("serve_test_requests_total", "upstream" => "search").increment(3);
    metrics::histogram!("serve_test_request_duration_seconds").record(0.003);
    let response = send(get(&served, "/metrics").bearer_auth(TOKEN)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#"serve_test_requests_total{upstream="search"} 3"#),
        "{text}"
    );
    // A `_seconds` histogram has buckets: 3 ms is over 2.5 ms and within 5 ms.
    assert!(
        text.contains(r#"serve_test_request_duration_seconds_bucket{le="0.0025"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"serve_test_request_duration_seconds_bucket{le="0.005"} 1"#),
        "{text}"
    );
    assert!(
        text.contains("serve_test_request_duration_seconds_count 1"),
        "{text}"
    );
}

#[tokio::test]
async fn bad_options_are_refused_naming_the_flag() {
    let mut options = toolbreaker_gateway::serve::HttpOptions::new(([127, 0, 0, 1], 0).into());
    options.allowed_origins = vec!["app.example".to_owned()];
    let status = std::sync::Arc::new(|| serde_json::json!({}));
    let refused =
        toolbreaker_gateway::serve::HttpApp::new(&options, || Ok(Probe::new().0), status, None);
    let error = refused.err().expect("refused");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        error.to_string(),
        "--allowed-origin `app.example`: expected `null` or an origin: http(s)://host, with :PORT or :* (any port)"
    );
}
