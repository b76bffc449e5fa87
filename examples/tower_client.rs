//! A circuit breaker in front of an HTTP client, as tower middleware.
//!
//! The client is `reqwest::Client`, which is a `tower::Service<reqwest::Request>`; it sits behind
//! `CircuitBreakerLayer::http`, whose classifier reads statuses and transport errors: 503s trip
//! the breaker, 400s (the request's fault) never do. The dependency is a small axum server on
//! 127.0.0.1 (an ephemeral port) whose answer the example switches, and which counts the requests
//! that reach it. The breaker reads a mock clock, so the cooldown passes at once and the example
//! runs in well under a second.
//!
//! ```sh
//! cargo run --example tower_client --features tower_client
//! ```

#[path = "gateway/listen.rs"]
mod listen;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::{Query, State as Shared};
use axum::http::StatusCode;
use axum::routing::get;
use toolbreaker::tower::CircuitBreakerLayer;
use toolbreaker::{Blocked, CircuitBreaker, State};
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

/// The dependency: answers every request with the status it is set to (400 to an empty query,
/// whatever its health), and counts the requests that reach it.
#[derive(Default)]
struct Dependency {
    status: AtomicU16,
    reached: AtomicUsize,
}

async fn search(
    Shared(dep): Shared<Arc<Dependency>>,
    Query(query): Query<HashMap<String, String>>,
) -> (StatusCode, String) {
    dep.reached.fetch_add(1, Ordering::SeqCst);
    let status = match query.get("q") {
        Some(q) if !q.is_empty() => dep.status.load(Ordering::SeqCst),
        _ => 400,
    };
    let status = StatusCode::from_u16(status).expect("a valid status");
    (status, format!("{status} for the search"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let dep = Arc::new(Dependency::default());
    dep.status.store(200, Ordering::SeqCst);
    let listener = listen::tcp((Ipv4Addr::LOCALHOST, 0)).await?;
    let url = format!("http://{}/search", listener.local_addr()?);
    let app = axum::Router::new()
        .route("/search", get(search))
        .with_state(Arc::clone(&dep));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let (clock, mock) = toolbreaker::quanta::Clock::mock(); // production leaves `.clock` out
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(3)
            .cooldown(Duration::from_secs(30))
            .clock(clock)
            .build()?,
    );
    let client = reqwest::Client::builder().no_proxy().build()?;
    let mut service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::http(Arc::clone(&breaker)))
        .service(client.clone());
    let request = |q: &str| client.get(format!("{url}?q={q}")).build();
    let reached = || dep.reached.load(Ordering::SeqCst);

    println!("1. healthy: a 200, and five 400s for bad queries (the request's fault, not counted)");
    let ok = service.ready().await?.call(request("rust")?).await?;
    assert_eq!(ok.status(), 200);
    for _ in 0..5 {
        let bad = service.ready().await?.call(request("")?).await?;
        assert_eq!(bad.status(), 400, "a 400 is passed through unchanged");
    }
    assert_eq!(breaker.state(), State::Closed);
    println!(
        "   breaker: {:?} after {} requests",
        breaker.state(),
        reached()
    );

    println!("2. the dependency starts answering 503: the third trips the breaker");
    dep.status.store(503, Ordering::SeqCst);
    for n in 1..=3 {
        let response = service.ready().await?.call(request("rust")?).await?;
        assert_eq!(response.status(), 503);
        println!("   503 #{n}: breaker {:?}", breaker.state());
    }
    assert_eq!(breaker.state(), State::Open);

    println!("3. open: requests fail at once with Blocked and are never sent");
    let reached_before = reached();
    mock.increment(Duration::from_secs(12));
    let error = service
        .ready()
        .await?
        .call(request("rust")?)
        .await
        .unwrap_err();
    let blocked = error
        .downcast_ref::<Blocked>()
        .expect("the error carries Blocked");
    assert_eq!(blocked.retry_after(), Duration::from_secs(18));
    assert_eq!(reached(), reached_before, "nothing was sent");
    println!("   rejected: {error}");

    println!("4. the dependency recovers; after the cooldown one probe goes through and closes it");
    dep.status.store(200, Ordering::SeqCst);
    mock.increment(Duration::from_secs(18));
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = service.ready().await?.call(request("rust")?).await?;
    assert_eq!(probe.status(), 200);
    assert_eq!(breaker.state(), State::Closed);
    println!(
        "   probe: {} -> breaker {:?}",
        probe.status(),
        breaker.state()
    );

    println!(
        "done: {} requests reached the dependency, 1 was blocked without being sent",
        reached()
    );
    assert_eq!(reached(), 1 + 5 + 3 + 1);
    server.abort();
    Ok(())
}
