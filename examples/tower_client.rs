//! A circuit breaker in front of an HTTP client, as tower middleware.
//!
//! The "client" here is a `tower::service_fn` standing in for an HTTP client service (hyper's,
//! or reqwest's behind a service adapter): it answers `http::Response`s with the status its
//! scripted dependency is currently failing with, and counts the requests that reach it. It sits
//! behind `CircuitBreakerLayer::http`, which classifies responses by status: 503s trip the
//! breaker, 400s (the request's fault) never do. The breaker reads a mock clock, so the cooldown
//! passes at once and the example runs in milliseconds.
//!
//! ```sh
//! cargo run --example tower_client
//! ```

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use toolbreaker::tower::CircuitBreakerLayer;
use toolbreaker::{Blocked, CircuitBreaker, State};
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// The dependency's answer to every request while it is in this state (200, 503, ...).
static ANSWER: AtomicU16 = AtomicU16::new(200);
/// Requests that reached the dependency.
static SENT: AtomicUsize = AtomicUsize::new(0);

async fn client(request: Request<&'static str>) -> Result<Response<String>, Infallible> {
    SENT.fetch_add(1, Ordering::SeqCst);
    // A query the dependency cannot parse is answered 400 whatever its health.
    let status = if request.body().is_empty() {
        400
    } else {
        ANSWER.load(Ordering::SeqCst)
    };
    let body = format!("{status} for {}", request.uri());
    Ok(Response::builder().status(status).body(body).unwrap())
}

fn search(query: &'static str) -> Request<&'static str> {
    Request::get("http://search.internal/q")
        .body(query)
        .unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let (clock, mock) = toolbreaker::quanta::Clock::mock(); // production leaves `.clock` out
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(3)
            .cooldown(Duration::from_secs(30))
            .clock(clock)
            .build()?,
    );
    let service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::http(Arc::clone(&breaker)))
        .service_fn(client);

    println!("1. healthy: a 200, and five 400s for bad queries (the request's fault, not counted)");
    let ok = service.clone().oneshot(search("rust")).await?;
    assert_eq!(ok.status(), 200);
    for _ in 0..5 {
        let bad = service.clone().oneshot(search("")).await?;
        assert_eq!(bad.status(), 400, "a 400 is passed through unchanged");
    }
    assert_eq!(breaker.state(), State::Closed);
    println!(
        "   breaker: {:?} after {} requests",
        breaker.state(),
        SENT.load(Ordering::SeqCst)
    );

    println!("2. the dependency starts answering 503: the third trips the breaker");
    ANSWER.store(503, Ordering::SeqCst);
    for n in 1..=3 {
        let response = service.clone().oneshot(search("rust")).await?;
        assert_eq!(response.status(), 503);
        println!("   503 #{n}: breaker {:?}", breaker.state());
    }
    assert_eq!(breaker.state(), State::Open);

    println!("3. open: requests fail at once with Blocked and are never sent");
    let sent_before = SENT.load(Ordering::SeqCst);
    mock.increment(Duration::from_secs(12));
    let error = service.clone().oneshot(search("rust")).await.unwrap_err();
    let blocked = error
        .downcast_ref::<Blocked>()
        .expect("the error carries Blocked");
    assert_eq!(blocked.retry_after(), Duration::from_secs(18));
    assert_eq!(SENT.load(Ordering::SeqCst), sent_before, "nothing was sent");
    println!(
        "   rejected: {error} (retry_after {:?})",
        blocked.retry_after()
    );

    println!("4. the dependency recovers; after the cooldown one probe goes through and closes it");
    ANSWER.store(200, Ordering::SeqCst);
    mock.increment(Duration::from_secs(18));
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = service.clone().oneshot(search("rust")).await?;
    assert_eq!(probe.status(), 200);
    assert_eq!(breaker.state(), State::Closed);
    println!(
        "   probe: {} -> breaker {:?}",
        probe.body(),
        breaker.state()
    );

    println!(
        "done: {} requests reached the dependency, 1 was blocked without being sent",
        SENT.load(Ordering::SeqCst)
    );
    assert_eq!(SENT.load(Ordering::SeqCst), 1 + 5 + 3 + 1);
    Ok(())
}
