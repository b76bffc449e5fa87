//! The MCP `ping` health check (`HealthCheck::mcp_ping`) against a real rmcp server over
//! Streamable HTTP on a loopback port: an answered ping closes the breaker, an HTTP 503 and a
//! stopped server reopen it.

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use toolbreaker::quanta::Clock;
use toolbreaker::{CircuitBreaker, FailureKind, HealthCheck, Outcome, State, TransitionReason};

use super::common::{Upstream, WAIT};

#[tokio::test(flavor = "current_thread")]
async fn the_mcp_ping_check_probes_a_real_server() {
    let mut upstream = Upstream::start(&["search"]).await;
    let transport = StreamableHttpClientTransport::from_uri(upstream.url.clone());
    let client = tokio::time::timeout(WAIT, ().serve(transport))
        .await
        .expect("the handshake ends within the wait")
        .expect("the handshake succeeds");
    let (clock, mock) = Clock::mock();
    let cooldown = Duration::from_secs(1);
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(1)
        .cooldown(cooldown)
        .probe_timeout(WAIT)
        .clock(clock)
        .probe_with(HealthCheck::mcp_ping(client.peer().clone()))
        .build_arc()
        .unwrap();
    let trip = || {
        let permit = breaker.try_acquire().unwrap();
        permit.record(Outcome::Failure(FailureKind::Unavailable));
        mock.increment(cooldown);
    };

    trip();
    let probe = breaker.run_health_check().await.expect("due");
    assert_eq!(
        probe.outcome,
        Outcome::Success,
        "the server answered the ping"
    );
    assert_eq!(
        probe.transition.unwrap().reason(),
        TransitionReason::ProbeSucceeded
    );
    assert_eq!(breaker.state(), State::Closed);
    assert!(upstream.http_requests() > 0);

    upstream.fail_http(503, None);
    trip();
    let probe = breaker.run_health_check().await.expect("due");
    assert_eq!(
        probe.outcome,
        Outcome::Failure(FailureKind::Unavailable),
        "a 503"
    );
    assert_eq!(
        probe.transition.unwrap().reason(),
        TransitionReason::ProbeFailed
    );

    upstream.stop().await;
    mock.increment(cooldown);
    let probe = breaker.run_health_check().await.expect("due");
    assert!(
        matches!(probe.outcome, Outcome::Failure(_)),
        "nothing listens: {:?}",
        probe.outcome
    );
    assert_eq!(breaker.state(), State::Open);
}
