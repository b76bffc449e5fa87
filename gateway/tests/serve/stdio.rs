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
