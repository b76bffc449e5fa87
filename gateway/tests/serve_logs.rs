//! The bearer token never reaches the logs: every event of every crate (rmcp, hyper, axum, the
//! gateway), at every level, is captured while clients present the right token, a wrong one and
//! none, and none of the tokens appears in them. A binary of its own, since it installs the
//! process's global subscriber.

#[path = "serve/probe.rs"]
mod probe;

use std::io::Write;
use std::sync::{Arc, Mutex};

use probe::{INITIALIZE, Probe, Served, TOKEN, call, text_of};

/// Where the captured events are written.
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

#[tokio::test]
async fn no_token_is_logged_at_any_level() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    const WRONG: &str = "wr0ng-but-secret-all-the-same";

    let mut served = Served::start(Probe::new().0, |_| {}).await;
    let http = reqwest::Client::new();
    let post = || {
        http.post(served.mcp())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(INITIALIZE)
    };
    assert_eq!(
        post().bearer_auth(WRONG).send().await.unwrap().status(),
        401
    );
    assert_eq!(post().send().await.unwrap().status(), 401);
    assert_eq!(
        post().bearer_auth(TOKEN).send().await.unwrap().status(),
        200
    );
    for path in ["/status", "/metrics"] {
        let url = format!("{}{path}", served.base);
        let response = http.get(url).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let client = served.client(Some(TOKEN)).await.expect("connects");
    let result = client.peer().call_tool(call("echo")).await.unwrap();
    assert_eq!(text_of(&result), "echo: ");
    client.cancel().await.unwrap();
    served.stop();
    served.returned().await.unwrap();

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("refused a request without the bearer token"),
        "the refusals were logged: {logs}"
    );
    assert!(logs.contains("shutting down"), "{logs}");
    assert!(!logs.contains(TOKEN), "the token is in the logs");
    assert!(!logs.contains(WRONG), "a wrong token is in the logs");
}
