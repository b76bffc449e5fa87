//! Graceful shutdown: the listener closes at the signal, a call in flight finishes, then the
//! sessions end and `serve` returns; past the drain limit, what is left is cancelled.

use std::net::SocketAddr;
use std::time::Duration;

use crate::probe::{INITIALIZE, Probe, Served, TOKEN, WAIT, call, next, text_of};

/// Waits until connecting to `addr` is refused: the listener is closed.
async fn wait_for_closed_listener(addr: SocketAddr) {
    let closed = async {
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };
    tokio::time::timeout(WAIT, closed)
        .await
        .expect("the listener closes at the signal");
}

#[tokio::test]
async fn shutdown_lets_a_call_in_flight_finish_then_returns() {
    let (probe, mut events) = Probe::new();
    // A drain limit no test reaches: serve returns because the call finished.
    let mut served =
        Served::start(probe, |options| options.drain = Duration::from_secs(3600)).await;
    let client = served.client(Some(TOKEN)).await.expect("connects");
    let peer = client.peer().clone();
    let slow = tokio::spawn(async move { peer.call_tool(call("slow")).await });
    next(&mut events.entered, "the slow call to begin").await;

    served.stop();
    wait_for_closed_listener(served.addr).await;
    assert!(
        !served.server.is_finished(),
        "the call in flight holds serve"
    );
    assert!(
        !served.sessions.is_cancelled(),
        "the sessions last while draining"
    );

    events.gate.add_permits(1);
    let result = tokio::time::timeout(WAIT, slow)
        .await
        .expect("the call ends")
        .unwrap()
        .expect("the call in flight is answered");
    assert_eq!(text_of(&result), "slow: done");
    let sessions = served.sessions.clone();
    served.returned().await.expect("a clean shutdown");
    assert!(sessions.is_cancelled(), "the sessions were ended");
    assert!(
        events.cancelled.try_recv().is_err(),
        "nothing was cancelled"
    );
}

#[tokio::test]
async fn past_the_drain_limit_the_sessions_end_and_calls_are_cancelled() {
    let (probe, mut events) = Probe::new();
    let mut served = Served::start(probe, |options| options.drain = Duration::ZERO).await;
    let client = served.client(Some(TOKEN)).await.expect("connects");
    let peer = client.peer().clone();
    let slow = tokio::spawn(async move { peer.call_tool(call("slow")).await });
    next(&mut events.entered, "the slow call to begin").await;

    served.stop();
    next(&mut events.cancelled, "the slow call to be cancelled").await;
    let sessions = served.sessions.clone();
    served.returned().await.expect("a clean shutdown");
    assert!(sessions.is_cancelled());
    // The call's stream closed without an answer; what the client does then (rmcp's tries to
    // resume the stream) is its own.
    assert!(!slow.is_finished() || slow.await.unwrap().is_err());
}

#[tokio::test]
async fn an_idle_server_returns_at_once_with_a_session_stream_open() {
    let (probe, _events) = Probe::new();
    let mut served =
        Served::start(probe, |options| options.drain = Duration::from_secs(3600)).await;
    // A session, and its standalone stream open (its answer's head received): it lasts as
    // long as the session, and the drain does not wait for it.
    let http = reqwest::Client::new();
    let post = |body: &'static str| {
        http.post(served.mcp())
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
    };
    let initialized = post(INITIALIZE).send().await.unwrap();
    assert_eq!(initialized.status(), 200);
    let session = initialized.headers()["mcp-session-id"].clone();
    let notified = post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .header("mcp-session-id", session.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(notified.status(), 202);
    let stream = http
        .get(served.mcp())
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    served.stop();
    served.returned().await.expect("a clean shutdown");
    drop(stream);
}
