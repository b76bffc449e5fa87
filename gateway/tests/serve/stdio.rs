//! Serving one client on a pair of streams, as `--stdio` does on stdin and stdout.

use rmcp::ServiceExt;
use tokio::sync::oneshot;
use toolbreaker_gateway::serve::serve_io;

use crate::probe::{Probe, WAIT, call, next, text_of};

#[tokio::test]
async fn stdio_serves_its_client_until_the_client_closes_its_input() {
    let (probe, _events) = Probe::new();
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (input, output) = tokio::io::split(server_end);
    let server = tokio::spawn(serve_io(probe, input, output, std::future::pending()));
    let client = ().serve(client_end).await.expect("the handshake");
    let tools = client.peer().list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    let result = client.peer().call_tool(call("echo")).await.unwrap();
    assert_eq!(text_of(&result), "echo: ");
    assert!(!server.is_finished());
    client.cancel().await.unwrap();
    let served = tokio::time::timeout(WAIT, server)
        .await
        .expect("serve_io returns");
    served.unwrap().expect("a clean end");
}

#[tokio::test]
async fn stdio_ends_on_shutdown_cancelling_the_calls_in_flight() {
    let (probe, mut events) = Probe::new();
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (input, output) = tokio::io::split(server_end);
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let server = tokio::spawn(serve_io(probe, input, output, shutdown));
    let client = ().serve(client_end).await.expect("the handshake");
    let peer = client.peer().clone();
    let slow = tokio::spawn(async move { peer.call_tool(call("slow")).await });
    next(&mut events.entered, "the slow call to begin").await;
    stop.send(()).unwrap();
    next(&mut events.cancelled, "the slow call to be cancelled").await;
    let served = tokio::time::timeout(WAIT, server)
        .await
        .expect("serve_io returns");
    served.unwrap().expect("a clean end");
    let result = tokio::time::timeout(WAIT, slow)
        .await
        .expect("the call ends")
        .unwrap();
    assert!(result.is_err(), "{result:?}");
}

#[tokio::test]
async fn stdio_input_that_ends_before_initialize_is_an_error() {
    let (probe, _events) = Probe::new();
    let (client_end, server_end) = tokio::io::duplex(1024);
    let (input, output) = tokio::io::split(server_end);
    drop(client_end);
    let served = tokio::time::timeout(WAIT, serve_io(probe, input, output, std::future::pending()))
        .await
        .expect("serve_io returns");
    assert!(served.is_err());
}

/// A line that is not a message gets JSON-RPC's error for it on the output, and the client is
/// served after it as before: `-32700` for what is not JSON, `-32600` for JSON that is not a
/// request (a number, a batch), before `initialize` and after it.
#[tokio::test]
async fn stdio_answers_a_bad_line_with_its_error_and_goes_on_serving() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (probe, _events) = Probe::new();
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (input, output) = tokio::io::split(server_end);
    let server = tokio::spawn(serve_io(probe, input, output, std::future::pending()));
    let (from_server, mut to_server) = tokio::io::split(client_end);
    let mut from_server = BufReader::new(from_server).lines();
    let mut exchange = async move |line: &str| -> serde_json::Value {
        to_server.write_all(line.as_bytes()).await.unwrap();
        to_server.write_all(b"\n").await.unwrap();
        let answer = tokio::time::timeout(WAIT, from_server.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer to {line:?} within the wait"))
            .unwrap()
            .expect("the server's output is open");
        serde_json::from_str(&answer).expect("each answer is one line of JSON")
    };
    let error_of = |answer: &serde_json::Value| {
        (
            answer["error"]["code"].as_i64(),
            answer["id"].clone(),
            answer["jsonrpc"].clone(),
        )
    };
    let garbage = "this is not JSON \u{1b}[31m";
    let null = serde_json::Value::Null;
    let v2 = serde_json::json!("2.0");
    assert_eq!(
        error_of(&exchange(garbage).await),
        (Some(-32700), null.clone(), v2.clone())
    );
    assert_eq!(
        error_of(&exchange("[1,2]").await),
        (Some(-32600), null.clone(), v2.clone())
    );
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let initialized = exchange(initialize).await;
    assert_eq!(initialized["id"], 1, "{initialized}");
    assert!(
        initialized["result"]["serverInfo"].is_object(),
        "{initialized}"
    );
    // A notification is answered with nothing: the next answer is the next line's.
    let notified = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let after = exchange(&format!("{notified}\n{{nope")).await;
    assert_eq!(error_of(&after), (Some(-32700), null.clone(), v2.clone()));
    assert_eq!(error_of(&exchange("5").await), (Some(-32600), null, v2));
    let pong = exchange(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(pong["id"], 2, "{pong}");
    assert!(pong["result"].is_object(), "still served: {pong}");
    assert!(!server.is_finished());
    drop(exchange);
    let served = tokio::time::timeout(WAIT, server)
        .await
        .expect("serve_io returns");
    served.unwrap().expect("a clean end");
}
