//! Bad input from outside, both eras of MCP: the gateway app as the binary serves it (`HttpApp`,
//! rmcp's Streamable HTTP service behind the gateway's layers), in front of a real rmcp
//! upstream, sent raw HTTP that is not JSON-RPC, JSON-RPC that is not a request MCP can serve,
//! and known methods with params that do not fit them, over a 2025-11-25 session (after
//! `initialize`) and as 2026-07-28 stateless requests. Each gets JSON-RPC's error for it (400,
//! `-32700`, `-32600`, `-32602`), the gateway serves a good call afterwards, and a 5,000
//! character tool name reaches the log capped. Raw requests also show a 2026-07-28 answer's
//! framing: plain JSON, unless a message goes before it. A binary of its own: it installs the
//! process's global subscriber.
#![allow(deprecated)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{Up, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use toolbreaker::Registry;
use toolbreaker_gateway::config::GatewayConfig;
use toolbreaker_gateway::relay::Gateway;
use toolbreaker_gateway::serve::{HttpApp, HttpOptions};

/// The longest any request here may take.
const WAIT: Duration = Duration::from_secs(20);

/// The gateway's body limit in these tests.
const MAX_BODY: usize = 64 * 1024;

/// The 2026-07-28 revision's per-request metadata, as `params._meta`.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// Where every event of the process is written.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process's log, captured from the first test on (at the binary's default level).
fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        captured
    })
}

fn log_text() -> String {
    String::from_utf8_lossy(&logs().0.lock().unwrap()).into_owned()
}

/// A gateway app in front of one rmcp upstream (prefix `up.`: `up.echo`, `up.fail`, …),
/// served on a loopback port until dropped.
struct Stack {
    mcp: String,
    base: String,
    http: reqwest::Client,
    _stop: oneshot::Sender<()>,
    _gateway: Gateway,
}

impl Stack {
    async fn start() -> Stack {
        logs();
        let upstream = serve(|| Up { crashable: false }).await;
        let config =
            toolbreaker::Config::new(3, Duration::from_millis(200), Duration::from_secs(5))
                .unwrap();
        let gateway = Gateway::new("gw", Registry::new(config), Duration::from_secs(30));
        gateway
            .start(GatewayConfig {
                upstreams: vec![common::http_upstream("up", "up.", &upstream)],
                registry: Default::default(),
            })
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut options = HttpOptions::new(addr);
        options.max_request_bytes = MAX_BODY;
        let (sessions, status) = (gateway.clone(), gateway.clone());
        let app = HttpApp::new(
            &options,
            move || Ok(sessions.session()),
            Arc::new(move || status.status()),
            None,
        )
        .unwrap()
        .with_shortcut(gateway.shortcut());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(toolbreaker_gateway::serve::serve(
            listener,
            app,
            async move {
                let _ = stopped.await;
            },
        ));
        Stack {
            mcp: format!("http://{addr}/mcp"),
            base: format!("http://{addr}"),
            http: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            _stop: stop,
            _gateway: gateway,
        }
    }

    /// A POST of `body` to `/mcp` with MCP's `Accept` and JSON's Content-Type, and `headers`.
    async fn post(&self, body: impl Into<reqwest::Body>, headers: &[(&str, &str)]) -> Answer {
        let mut request = self
            .http
            .post(&self.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the gateway answers");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = response.text().await.expect("the whole answer");
        Answer {
            status,
            content_type,
            session,
            text,
        }
    }

    /// The status of a POST whose body is `count` chunks of `size` blanks
    /// (`Transfer-Encoding: chunked`), sent on a socket of its own.
    async fn chunked(&self, count: usize, size: usize, headers: &[(&str, &str)]) -> u16 {
        let address = self.base.trim_start_matches("http://");
        let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {address}\r\naccept: application/json, \
             text/event-stream\r\ncontent-type: application/json\r\n\
             transfer-encoding: chunked\r\nconnection: close\r\n"
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        for _ in 0..count {
            request.extend_from_slice(format!("{size:x}\r\n{}\r\n", " ".repeat(size)).as_bytes());
        }
        request.extend_from_slice(b"0\r\n\r\n");
        // The gateway may answer (and close) before it has read it all.
        let _ = socket.write_all(&request).await;
        let mut answer = Vec::new();
        let read = tokio::time::timeout(WAIT, socket.read_to_end(&mut answer)).await;
        assert!(read.is_ok(), "the gateway answers within the wait");
        let answer = String::from_utf8_lossy(&answer);
        let status = answer.split(' ').nth(1).unwrap_or_default();
        status
            .parse()
            .unwrap_or_else(|_| panic!("an HTTP answer: {answer}"))
    }

    /// A 2025-11-25 session: `initialize`, then `notifications/initialized`; its headers.
    async fn session_2025(&self) -> Vec<(&'static str, String)> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bad-input", "version": "1"},
        }});
        let answer = self.post(init.to_string(), &[]).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let session = answer.session.expect("a session id");
        let headers = vec![
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25".to_owned()),
        ];
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.post(initialized.to_string(), &borrow(&headers)).await;
        assert_eq!(answer.status, 202, "{}", answer.text);
        headers
    }
}

fn borrow<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'a str, &'a str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

/// The 2026-07-28 headers of a request for `method` (and `name`, for `Mcp-Name`).
fn headers_2026<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    headers
}

struct Answer {
    status: u16,
    content_type: String,
    session: Option<String>,
    text: String,
}

impl Answer {
    /// The JSON-RPC error of a `400` answer: its code and id.
    fn refusal(&self, case: &str) -> (i64, Value) {
        assert_eq!(self.status, 400, "{case}: {}", self.text);
        assert!(
            self.content_type.starts_with("application/json"),
            "{case}: {}",
            self.content_type
        );
        let body: Value = serde_json::from_str(&self.text).expect("a JSON body");
        assert_eq!(body["jsonrpc"], "2.0", "{case}: {body}");
        assert!(body["error"]["message"].is_string(), "{case}: {body}");
        let id = body.get("id").cloned().expect("an id, null if unread");
        (body["error"]["code"].as_i64().unwrap(), id)
    }

    /// The JSON-RPC message with `id` in the answer: SSE events or one JSON body.
    fn message(&self, id: i64) -> Value {
        let whole = std::iter::once(self.text.as_str());
        let events = self.text.lines().filter_map(|l| l.strip_prefix("data:"));
        whole
            .chain(events)
            .filter_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("no message {id} in {} {}", self.status, self.text))
    }
}

/// Bodies that are not JSON-RPC (or whose params do not fit their method), each with the code
/// and id of the error it gets. `meta` is put in each request's params where it has some.
fn malformed(meta: &Value) -> Vec<(String, i64, Value)> {
    let request = |id: Value, method: &str, params: Value| {
        let mut params = params;
        if let Some(params) = params.as_object_mut() {
            params.insert("_meta".into(), meta.clone());
        }
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    let tool = |params: Value| request(json!(7), "tools/call", params);
    vec![
        // Not JSON at all: parse error, no id.
        ("not json".into(), -32700, json!(null)),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"#.into(),
            -32700,
            json!(null),
        ),
        (String::new(), -32700, json!(null)),
        ("\u{0}\u{1}".into(), -32700, json!(null)),
        // JSON, but not a JSON-RPC message: invalid request, with the id when it reads.
        (
            r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#.into(),
            -32600,
            json!(2),
        ),
        (r#"{"id":2,"method":"ping"}"#.into(), -32600, json!(2)),
        (r#"{"jsonrpc":"2.0","id":3}"#.into(), -32600, json!(3)),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":5}"#.into(),
            -32600,
            json!("s"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.into(),
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.into(),
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.into(),
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#.into(),
            -32600,
            json!(null),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","result":{}}"#.into(),
            -32600,
            json!(4),
        ),
        ("[]".into(), -32600, json!(null)),
        (
            r#"[{"jsonrpc":"2.0","id":5,"method":"ping"}]"#.into(),
            -32600,
            json!(null),
        ),
        (r#""a string""#.into(), -32600, json!(null)),
        ("42".into(), -32600, json!(null)),
        ("null".into(), -32600, json!(null)),
        ("{}".into(), -32600, json!(null)),
        // Known methods whose params do not fit: invalid params, not method not found.
        (tool(json!({})), -32602, json!(7)),
        (tool(json!({"name": 5})), -32602, json!(7)),
        (tool(json!({"name": null})), -32602, json!(7)),
        (
            tool(json!({"name": "up.echo", "arguments": [1]})),
            -32602,
            json!(7),
        ),
        (
            tool(json!({"name": "up.echo", "arguments": "text"})),
            -32602,
            json!(7),
        ),
        (tool(json!([1])), -32602, json!(7)),
        (tool(json!("up.echo")), -32602, json!(7)),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#.into(),
            -32602,
            json!(7),
        ),
        (
            request(json!("r"), "resources/read", json!({})),
            -32602,
            json!("r"),
        ),
        (
            request(json!(8), "resources/read", json!({"uri": {"a": 1}})),
            -32602,
            json!(8),
        ),
        (
            request(json!(9), "prompts/get", json!({})),
            -32602,
            json!(9),
        ),
        (
            request(json!(9), "prompts/get", json!({"name": 1})),
            -32602,
            json!(9),
        ),
        (
            request(json!(10), "tools/list", json!(5)),
            -32602,
            json!(10),
        ),
        (request(json!(11), "ping", json!([])), -32602, json!(11)),
        // Params that are not an object, any method.
        (
            request(json!(12), "no/such/method", json!([1, 2])),
            -32602,
            json!(12),
        ),
    ]
}

/// Sends every malformed body with `headers`; checks each answer.
async fn refuse_all(stack: &Stack, meta: &Value, headers: &[(&str, &str)]) -> usize {
    let cases = malformed(meta);
    for (body, code, id) in &cases {
        let answer = stack.post(body.clone(), headers).await;
        let case = format!("{body:.200}");
        assert_eq!(answer.refusal(&case), (*code, id.clone()), "{case}");
    }
    cases.len()
}

/// What is not about the body keeps rmcp's answers: 415 for a Content-Type other than JSON,
/// 406 without MCP's `Accept`, 413 over the body limit.
async fn header_and_size_answers(stack: &Stack, headers: &[(&str, &str)]) {
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut request = stack
        .http
        .post(&stack.mcp)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "text/plain")
        .body(ping);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    assert_eq!(request.send().await.unwrap().status(), 415);

    let mut request = stack
        .http
        .post(&stack.mcp)
        .header("accept", "application/json")
        .header("content-type", "application/json")
        .body("not json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    assert_eq!(request.send().await.unwrap().status(), 406);

    for filler in [" ", "x"] {
        let big = format!("{ping}{}", filler.repeat(MAX_BODY));
        let answer = stack.post(big, headers).await;
        assert_eq!(answer.status, 413, "{}", answer.text);
    }
    // In chunks, without a Content-Length, too.
    assert_eq!(stack.chunked(8, MAX_BODY / 4, headers).await, 413);
    assert_eq!(
        stack.chunked(2, 100, headers).await,
        400,
        "blanks: not JSON"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_2025_session_requests_get_json_rpc_errors_and_the_session_goes_on() {
    let stack = Stack::start().await;
    let session = stack.session_2025().await;
    let headers = borrow(&session);
    let sent = refuse_all(&stack, &json!({}), &headers).await;
    header_and_size_answers(&stack, &headers).await;

    // A method the gateway does not serve is still the handler's `-32601`, in band.
    let unknown = json!({"jsonrpc": "2.0", "id": 20, "method": "no/such/method", "params": {}});
    let answer = stack.post(unknown.to_string(), &headers).await;
    assert_eq!(
        answer.message(20)["error"]["code"],
        -32601,
        "{}",
        answer.text
    );

    // The session survived: a good call.
    let call = json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
        "params": {"name": "up.echo", "arguments": {"text": "still here"}}});
    let answer = stack.post(call.to_string(), &headers).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let result = answer.message(21);
    assert_eq!(
        result["result"]["content"][0]["text"], "still here",
        "{result}"
    );
    let health = stack.http.get(format!("{}/healthz", stack.base)).send();
    assert_eq!(health.await.unwrap().text().await.unwrap(), "ok");

    // The refusals were logged, not each of them: once per cause per 10 s.
    let logs = log_text();
    let logged = logs
        .matches("answered a malformed JSON-RPC message")
        .count();
    assert!(logged >= 1 && logged < sent, "{logged} of {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_2026_stateless_requests_get_json_rpc_errors_and_a_good_call_follows() {
    let stack = Stack::start().await;
    let meta = meta_2026();
    let headers = headers_2026("tools/call", Some("up.echo"));
    refuse_all(&stack, &meta, &headers).await;
    // With only the version header, as a client that sends no other.
    refuse_all(&stack, &meta, &[("mcp-protocol-version", "2026-07-28")]).await;
    header_and_size_answers(&stack, &headers).await;

    let call = json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
        "params": {"name": "up.echo", "arguments": {"text": "stateless"}, "_meta": meta}});
    let answer = stack.post(call.to_string(), &headers).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let result = answer.message(30);
    assert_eq!(
        result["result"]["content"][0]["text"], "stateless",
        "{result}"
    );
}

/// A 2026-07-28 call whose first message back is its answer is answered as plain JSON (one
/// message, no event stream); one whose upstream reports progress first is answered as an
/// event stream, the progress before the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_answer_is_plain_json_unless_a_message_goes_before_it() {
    let stack = Stack::start().await;
    let call = json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
        "params": {"name": "up.echo", "arguments": {"text": "plain"}, "_meta": meta_2026()}});
    let answer = stack
        .post(
            call.to_string(),
            &headers_2026("tools/call", Some("up.echo")),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(
        answer.content_type.starts_with("application/json"),
        "{} {}",
        answer.content_type,
        answer.text
    );
    let whole: Value = serde_json::from_str(&answer.text).expect("one JSON message");
    assert_eq!(whole["id"], 50, "{whole}");
    assert_eq!(whole["result"]["content"][0]["text"], "plain", "{whole}");

    // `ask` reports progress (to a client that asked for it), then asks for a sample.
    let mut meta = meta_2026();
    meta["progressToken"] = json!("p");
    let call = json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call",
        "params": {"name": "up.ask", "arguments": {}, "_meta": meta}});
    let answer = stack
        .post(
            call.to_string(),
            &headers_2026("tools/call", Some("up.ask")),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(
        answer.content_type.starts_with("text/event-stream"),
        "{} {}",
        answer.content_type,
        answer.text
    );
    let progress = answer.text.find("notifications/progress");
    let end = answer.text.find("\"id\":51");
    assert!(
        progress.is_some() && progress < end,
        "the progress, then the answer: {}",
        answer.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_unknown_tool_name_is_answered_and_logged_capped_in_both_eras() {
    let stack = Stack::start().await;
    // Unique to this test, so that other tests' lines are not counted.
    let long = format!("unknown.{}", "q".repeat(4992));
    assert_eq!(long.len(), 5000);

    let session = stack.session_2025().await;
    let call = json!({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
        "params": {"name": long, "arguments": {}}});
    for _ in 0..3 {
        let answer = stack.post(call.to_string(), &borrow(&session)).await;
        assert_eq!(
            answer.message(40)["error"]["code"],
            -32602,
            "{}",
            answer.text
        );
    }

    let get = json!({"jsonrpc": "2.0", "id": 42, "method": "prompts/get",
        "params": {"name": long}});
    let answer = stack.post(get.to_string(), &borrow(&session)).await;
    assert_eq!(
        answer.message(42)["error"]["code"],
        -32602,
        "{}",
        answer.text
    );

    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": long, "arguments": {}, "_meta": meta_2026()}});
    let answer = stack
        .post(call.to_string(), &headers_2026("tools/call", Some(&long)))
        .await;
    assert_eq!(
        answer.message(41)["error"]["code"],
        -32602,
        "{}",
        answer.text
    );

    let logs = log_text();
    assert!(!logs.contains(&long), "the whole name is in the log");
    let capped = format!("{}…(4872 more bytes)", &long[..128]);
    assert!(
        logs.contains(&capped),
        "the name is logged capped: {}",
        logs.lines()
            .filter(|line| line.contains("unknown.qqq"))
            .map(|line| &line[..line.len().min(300)])
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_header_that_does_not_match_the_body_is_refused_before_the_breaker() {
    let stack = Stack::start().await;
    let meta = meta_2026();
    // `up.fail` answers an internal error, a counted failure: three in a row would trip the
    // breaker. Named `up.echo` in the header, it must never get that far.
    for id in 0..5 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "up.fail", "_meta": meta}});
        let answer = stack
            .post(
                call.to_string(),
                &headers_2026("tools/call", Some("up.echo")),
            )
            .await;
        assert_eq!(answer.status, 400, "{}", answer.text);
        let (code, _) = answer.refusal("a mismatched Mcp-Name");
        assert_eq!(code, -32020, "{}", answer.text);
    }
    let status = stack._gateway.status();
    assert_eq!(status["upstreams"][0]["state"], "closed", "{status}");
    assert_eq!(
        status["upstreams"][0]["last_failure"],
        Value::Null,
        "{status}"
    );
    // The header that matches is served.
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "up.echo", "arguments": {"text": "named"}, "_meta": meta}});
    let answer = stack
        .post(
            call.to_string(),
            &headers_2026("tools/call", Some("up.echo")),
        )
        .await;
    assert_eq!(answer.message(9)["result"]["content"][0]["text"], "named");
}
