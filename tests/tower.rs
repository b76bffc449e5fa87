//! The tower middleware (`toolbreaker::tower`): rejection before the inner service is called or
//! polled, HTTP classification, readiness, and what happens to the permit when a service is
//! cloned or dropped, or a response future is dropped. All on the mock clock; nothing sleeps.
//!
//! Unless a test says otherwise: cooldown 10 s, probe timeout 60 s, the clock at 0 when the
//! breaker is built.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::{Response, StatusCode};
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::tower::{CircuitBreakerLayer, CircuitBreakerService};
use toolbreaker::{
    Blocked, BlockedReason, CircuitBreaker, FailureKind, Outcome, State, TransitionReason,
    classify::http::HttpClassifier,
};
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt, service_fn};

const COOLDOWN: Duration = Duration::from_secs(10);

fn breaker(threshold: u32) -> (Arc<CircuitBreaker>, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(Duration::from_secs(60))
        .clock(clock)
        .build()
        .expect("valid config");
    (Arc::new(breaker), mock)
}

fn noop() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut noop())
}

/// The `Blocked` an error carries; panics on any other error.
fn blocked(error: &BoxError) -> Blocked {
    error
        .downcast_ref::<Blocked>()
        .copied()
        .unwrap_or_else(|| panic!("expected a Blocked error, got {error}"))
}

/// What the stand-in dependency is asked to do.
#[derive(Clone, Copy, Debug)]
enum Req {
    /// Answer with this status at once.
    Status(u16),
    /// Never answer.
    Hang,
}

#[derive(Clone, Copy, Debug)]
enum Readiness {
    Ready,
    Pending,
    Fail,
}

/// A stand-in HTTP dependency: counts the calls that reach it, and its readiness is set by hand.
#[derive(Clone)]
struct Dependency {
    calls: Arc<AtomicUsize>,
    polls: Arc<AtomicUsize>,
    readiness: Arc<Mutex<Readiness>>,
}

impl Dependency {
    fn new() -> Self {
        Dependency {
            calls: Arc::new(AtomicUsize::new(0)),
            polls: Arc::new(AtomicUsize::new(0)),
            readiness: Arc::new(Mutex::new(Readiness::Ready)),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }

    fn set(&self, readiness: Readiness) {
        *self.readiness.lock().unwrap() = readiness;
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl Service<Req> for Dependency {
    type Response = Response<()>;
    type Error = io::Error;
    type Future = BoxFuture<Result<Response<()>, io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        match *self.readiness.lock().unwrap() {
            Readiness::Ready => Poll::Ready(Ok(())),
            Readiness::Pending => Poll::Pending,
            Readiness::Fail => Poll::Ready(Err(io::Error::other("connection refused"))),
        }
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match req {
            Req::Status(code) => {
                let response = Response::builder().status(code).body(()).unwrap();
                Box::pin(async move { Ok(response) })
            }
            Req::Hang => Box::pin(std::future::pending()),
        }
    }
}

type Guarded = CircuitBreakerService<Dependency, HttpClassifier>;

/// The dependency behind an HTTP-classified breaker layer.
fn guarded(breaker: &Arc<CircuitBreaker>) -> (Guarded, Dependency) {
    let dependency = Dependency::new();
    let service = CircuitBreakerLayer::http(Arc::clone(breaker)).layer(dependency.clone());
    (service, dependency)
}

/// Poll a service ready once, expecting it to be ready at once.
fn ready_now<S: Service<Req>>(service: &mut S)
where
    S::Error: std::fmt::Debug,
{
    match service.poll_ready(&mut noop()) {
        Poll::Ready(Ok(())) => {}
        other => panic!("expected ready, got {other:?}"),
    }
}

/// `poll_ready` then `call`, then poll the response once: it must be done.
fn request(service: &mut Guarded, req: Req) -> Result<Response<()>, BoxError> {
    ready_now(service);
    let fut = pin!(service.call(req));
    match poll_once(fut) {
        Poll::Ready(result) => result,
        Poll::Pending => panic!("the response future should be done"),
    }
}

fn status(result: Result<Response<()>, BoxError>) -> u16 {
    result.expect("a response").status().as_u16()
}

/// Trip a threshold-1 breaker through the service with one 503; then let the cooldown pass.
fn half_open(service: &mut Guarded, breaker: &CircuitBreaker, mock: &Mock) {
    assert_eq!(status(request(service, Req::Status(503))), 503);
    assert_eq!(breaker.state(), State::Open);
    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
}

// ---------------------------------------------------------------------------------------------
// Rejection

#[tokio::test]
async fn a_rejected_request_fails_with_blocked_and_never_reaches_the_inner_service() {
    let (breaker, mock) = breaker(2);
    let sent = Arc::new(AtomicUsize::new(0));
    let classify = |result: &Result<u16, io::Error>| match result {
        Ok(500..=599) | Err(_) => Outcome::Failure(FailureKind::Unavailable),
        Ok(_) => Outcome::Success,
    };
    let service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(Arc::clone(&breaker), classify))
        .service(service_fn({
            let sent = Arc::clone(&sent);
            move |code: u16| {
                sent.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, io::Error>(code) }
            }
        }));

    assert_eq!(service.clone().oneshot(200).await.unwrap(), 200);
    for _ in 0..2 {
        assert_eq!(service.clone().oneshot(503).await.unwrap(), 503);
    }
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(sent.load(Ordering::SeqCst), 3);

    mock.increment(Duration::from_secs(4));
    for _ in 0..100 {
        let error = service.clone().oneshot(200).await.unwrap_err();
        let blocked = blocked(&error);
        assert_eq!(blocked.state(), State::Open);
        assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
        assert_eq!(
            blocked.retry_after(),
            Duration::from_secs(6),
            "the cooldown left"
        );
        assert_eq!(
            error.to_string(),
            "circuit open: dependency calls blocked for another 6.000 s"
        );
    }
    assert_eq!(
        sent.load(Ordering::SeqCst),
        3,
        "no rejected request was sent"
    );
    assert_eq!(breaker.state(), State::Open, "rejections count nothing");
}

#[test]
fn an_open_breaker_makes_a_never_ready_inner_service_ready_at_once() {
    let (breaker, _mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    dependency.set(Readiness::Pending);

    // Closed: the service waits for its inner service, as any middleware would.
    assert!(service.poll_ready(&mut noop()).is_pending());
    assert_eq!(dependency.polls(), 1);

    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(breaker.state(), State::Open);

    // Open: ready at once, and the inner service is not even polled.
    ready_now(&mut service);
    assert_eq!(dependency.polls(), 1, "the inner service was not polled");
    let fut = pin!(service.call(Req::Status(200)));
    let Poll::Ready(Err(error)) = poll_once(fut) else {
        panic!("the rejection is ready at once")
    };
    assert_eq!(blocked(&error).retry_after(), COOLDOWN);
    assert_eq!(dependency.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_answers_ready_awaiting_callers_over_a_never_ready_service() {
    let (breaker, _mock) = breaker(1);
    let (service, dependency) = guarded(&breaker);
    dependency.set(Readiness::Pending);
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));

    // `oneshot` awaits readiness first: with the breaker open it does not hang. (The timeout is
    // on tokio's paused clock, so a regression fails at once instead of hanging the test.)
    let answer = tokio::time::timeout(Duration::from_secs(1), service.oneshot(Req::Status(200)));
    let error = answer
        .await
        .expect("no wait on the inner service")
        .unwrap_err();
    assert_eq!(blocked(&error).state(), State::Open);
    assert_eq!(dependency.calls(), 0);
}

#[test]
fn a_rejection_is_decided_again_at_the_next_poll_ready() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);
    assert_eq!(status(request(&mut service, Req::Status(503))), 503); // the probe fails
    assert_eq!(breaker.state(), State::Open);

    ready_now(&mut service); // blocked, remembered for the call
    mock.increment(COOLDOWN);
    ready_now(&mut service); // polled again after the cooldown: admitted as the probe
    let fut = pin!(service.call(Req::Status(200)));
    assert_eq!(
        status(match poll_once(fut) {
            Poll::Ready(result) => result,
            Poll::Pending => panic!("done"),
        }),
        200
    );
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(dependency.calls(), 3);
}

// ---------------------------------------------------------------------------------------------
// Classification

#[test]
fn http_503s_trip_the_breaker_at_the_threshold_and_400s_never_do() {
    let (breaker, _mock) = breaker(3);
    let (mut service, dependency) = guarded(&breaker);

    for _ in 0..50 {
        assert_eq!(status(request(&mut service, Req::Status(400))), 400);
    }
    assert_eq!(
        breaker.state(),
        State::Closed,
        "400s are the request's fault"
    );

    // Ignored outcomes neither count nor clear the run of counted failures.
    for code in [503, 400, 503, 400] {
        assert_eq!(status(request(&mut service, Req::Status(code))), code);
        assert_eq!(breaker.state(), State::Closed);
    }
    // The third 503: the response is still passed through, and the breaker opens.
    assert_eq!(status(request(&mut service, Req::Status(503))), 503);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(dependency.calls(), 55);

    let error = request(&mut service, Req::Status(400)).unwrap_err();
    assert_eq!(blocked(&error).reason(), BlockedReason::DependencyOpen);
    assert_eq!(dependency.calls(), 55, "not sent");
}

#[test]
fn a_success_clears_the_run_of_503s() {
    let (breaker, _mock) = breaker(2);
    let (mut service, _dependency) = guarded(&breaker);
    for code in [503, 200, 503, 204, 503] {
        assert_eq!(status(request(&mut service, Req::Status(code))), code);
    }
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(status(request(&mut service, Req::Status(502))), 502);
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn an_http_override_classifies_through_the_layer() {
    let (breaker, _mock) = breaker(1);
    let classify = HttpClassifier::new().status(
        StatusCode::NOT_FOUND,
        Outcome::Failure(FailureKind::Unavailable),
    );
    let dependency = Dependency::new();
    let mut service = CircuitBreakerLayer::new(Arc::clone(&breaker), classify).layer(dependency);
    assert_eq!(status(request(&mut service, Req::Status(400))), 400);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(status(request(&mut service, Req::Status(404))), 404);
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test]
async fn an_inner_error_is_recorded_and_passed_through_boxed() {
    let (breaker, _mock) = breaker(2);
    let service =
        CircuitBreakerLayer::http(Arc::clone(&breaker)).layer(service_fn(|_: ()| async {
            Err::<Response<()>, _>(io::Error::other("connection reset"))
        }));
    for _ in 0..2 {
        let error = service.clone().oneshot(()).await.unwrap_err();
        let inner = error.downcast_ref::<io::Error>().expect("the inner error");
        assert_eq!(inner.to_string(), "connection reset");
        assert!(!error.is::<Blocked>());
    }
    // HttpClassifier counts any error of a generic HTTP service as a failure of kind Other.
    assert_eq!(breaker.state(), State::Open);
    assert!(service.oneshot(()).await.unwrap_err().is::<Blocked>());
}

#[test]
fn a_failing_poll_ready_of_the_inner_service_is_classified_and_recorded() {
    let (breaker, _mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    dependency.set(Readiness::Fail);
    let Poll::Ready(Err(error)) = service.poll_ready(&mut noop()) else {
        panic!("the inner readiness error")
    };
    assert!(error.is::<io::Error>());
    assert_eq!(
        breaker.state(),
        State::Open,
        "counted as a failure of kind Other"
    );
    assert_eq!(dependency.calls(), 0);
}

// ---------------------------------------------------------------------------------------------
// The permit: dropped futures, clones, dropped services, waiting on readiness

#[test]
fn dropping_the_probes_response_future_releases_the_probe_slot() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);

    // The probe is sent and hangs.
    let mut probe = service.clone();
    ready_now(&mut probe);
    let mut fut = Box::pin(probe.call(Req::Hang));
    assert!(poll_once(fut.as_mut()).is_pending());
    assert_eq!(dependency.calls(), 2);

    // While it is in flight, every other request is blocked.
    let error = request(&mut service, Req::Status(200)).unwrap_err();
    assert_eq!(blocked(&error).reason(), BlockedReason::ProbeInFlight);
    assert_eq!(dependency.calls(), 2);

    // Cancelled: nothing is counted (the breaker does not reopen) and the slot is free.
    drop(fut);
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(status(request(&mut service, Req::Status(200))), 200);
    assert_eq!(
        breaker.state(),
        State::Closed,
        "the next request was the probe"
    );
    assert_eq!(dependency.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_above_the_layer_releases_the_probe_slot() {
    let (breaker, mock) = breaker(1);
    let (mut service, _dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);

    // tokio's paused clock advances by itself while the runtime is idle: no real sleep.
    let hung =
        tokio::time::timeout(Duration::from_secs(5), service.clone().oneshot(Req::Hang)).await;
    assert!(hung.is_err(), "timed out");
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(
        service
            .clone()
            .oneshot(Req::Status(200))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn a_clone_of_a_ready_service_does_not_carry_its_permit() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);

    ready_now(&mut service); // holds the probe slot
    let mut clone = service.clone();
    // The clone asks the breaker for itself: the slot is taken, so it is blocked.
    let error = request(&mut clone, Req::Status(200)).unwrap_err();
    assert_eq!(blocked(&error).reason(), BlockedReason::ProbeInFlight);
    assert_eq!(dependency.calls(), 1);

    // The original still holds the probe's permit and makes the call.
    let fut = pin!(service.call(Req::Status(200)));
    assert!(matches!(poll_once(fut), Poll::Ready(Ok(_))));
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(dependency.calls(), 2);
}

#[test]
fn a_clone_of_a_blocked_service_does_not_carry_its_rejection() {
    let (breaker, mock) = breaker(1);
    let (mut service, _dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);
    assert_eq!(status(request(&mut service, Req::Status(503))), 503);
    assert_eq!(breaker.state(), State::Open);

    ready_now(&mut service); // blocked
    mock.increment(COOLDOWN);
    let mut clone = service.clone();
    assert_eq!(status(request(&mut clone, Req::Status(200))), 200);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn dropping_a_ready_service_releases_the_probe_slot() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);

    let mut ready = service.clone();
    ready_now(&mut ready); // holds the probe slot
    assert_eq!(
        blocked(&request(&mut service, Req::Status(200)).unwrap_err()).reason(),
        BlockedReason::ProbeInFlight
    );
    drop(ready);
    assert_eq!(breaker.state(), State::HalfOpen, "nothing counted");
    assert_eq!(status(request(&mut service, Req::Status(200))), 200);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(dependency.calls(), 2);
}

#[test]
fn a_service_waiting_on_its_inner_readiness_holds_no_probe_slot() {
    let (breaker, mock) = breaker(1);
    let (mut service, _dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);

    // Another client of the same dependency whose pool is full.
    let (mut waiting, saturated) = guarded(&breaker);
    saturated.set(Readiness::Pending);
    assert!(waiting.poll_ready(&mut noop()).is_pending());
    assert!(waiting.poll_ready(&mut noop()).is_pending());

    // The probe goes to a caller that can send it.
    assert_eq!(status(request(&mut service, Req::Status(200))), 200);
    assert_eq!(breaker.state(), State::Closed);

    // When the pool frees up, the waiting service is admitted in the new state.
    saturated.set(Readiness::Ready);
    assert_eq!(status(request(&mut waiting, Req::Status(200))), 200);
    assert_eq!(saturated.calls(), 1);
}

#[test]
fn a_trip_while_waiting_on_readiness_is_seen_at_the_next_poll() {
    let (breaker, _mock) = breaker(1);
    let (mut waiting, saturated) = guarded(&breaker);
    saturated.set(Readiness::Pending);
    assert!(waiting.poll_ready(&mut noop()).is_pending());

    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Connect));
    // Woken (by the inner service, say) and polled again: the permit from before the trip is
    // not kept, so the request is rejected rather than sent to an open dependency.
    saturated.set(Readiness::Ready);
    let error = request(&mut waiting, Req::Status(200)).unwrap_err();
    assert_eq!(blocked(&error).state(), State::Open);
    assert_eq!(saturated.calls(), 0);
}

#[test]
fn call_without_poll_ready_asks_the_breaker_in_call() {
    let (breaker, _mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);

    let fut = pin!(service.call(Req::Status(503)));
    assert!(matches!(poll_once(fut), Poll::Ready(Ok(_))));
    assert_eq!(
        breaker.state(),
        State::Open,
        "admitted, classified and recorded"
    );

    let fut = pin!(service.call(Req::Status(200)));
    let Poll::Ready(Err(error)) = poll_once(fut) else {
        panic!("rejected at once")
    };
    assert_eq!(blocked(&error).retry_after(), COOLDOWN);
    assert_eq!(dependency.calls(), 1);
}

#[test]
fn readiness_counts_for_one_call() {
    let (breaker, _mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    ready_now(&mut service);
    ready_now(&mut service); // polled twice: still one reservation, and no permit lost
    let first = pin!(service.call(Req::Status(503)));
    assert!(matches!(poll_once(first), Poll::Ready(Ok(_))));
    assert_eq!(breaker.state(), State::Open);
    // The next call has no readiness left over: the breaker is asked again, and blocks it.
    let second = pin!(service.call(Req::Status(200)));
    assert!(matches!(poll_once(second), Poll::Ready(Err(_))));
    assert_eq!(dependency.calls(), 1);
}

// ---------------------------------------------------------------------------------------------
// Stale reservations: a permit kept by a ready service is checked before it is used.

#[test]
fn a_reservation_made_before_a_trip_never_sends_while_the_breaker_is_open() {
    let (breaker, _mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    ready_now(&mut service); // reserves a permit while closed
    // Another caller trips the breaker.
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(breaker.state(), State::Open);
    // Both paths notice: a new `poll_ready` asks again, and so does `call` on the old one.
    let error = request(&mut service, Req::Status(200)).unwrap_err();
    assert_eq!(blocked(&error).reason(), BlockedReason::DependencyOpen);
    ready_now(&mut service);
    breaker
        .try_acquire()
        .map(|p| p.record(Outcome::Success))
        .unwrap_err(); // still open
    assert_eq!(
        dependency.calls(),
        0,
        "nothing reached the dependency while open"
    );
}

#[test]
fn a_stale_reservation_is_not_a_second_probe() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    ready_now(&mut service); // a closed-era reservation
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().unwrap(); // the probe is held elsewhere
    assert!(probe.is_probe());
    let fut = pin!(service.call(Req::Status(200)));
    match poll_once(fut) {
        Poll::Ready(Err(error)) => {
            assert_eq!(blocked(&error).reason(), BlockedReason::ProbeInFlight)
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(
        dependency.calls(),
        0,
        "exactly one probe: the one held elsewhere"
    );
    drop(probe);
}

#[test]
fn a_ready_probe_whose_lease_ran_out_is_not_sent() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);
    let sent = dependency.calls();
    ready_now(&mut service); // holds the probe slot
    mock.increment(Duration::from_secs(3_600)); // its lease ends, and a cooldown after it
    // The call asks again and becomes the new probe; the old lease counted as a failed probe.
    let fut = pin!(service.call(Req::Status(200)));
    assert!(matches!(poll_once(fut), Poll::Ready(Ok(_))));
    assert_eq!(dependency.calls(), sent + 1);
    assert_eq!(
        breaker.state(),
        State::Closed,
        "the new probe's success closed it"
    );
}

// ---------------------------------------------------------------------------------------------
// Waiting on readiness takes nothing from the breaker

/// A counting breaker with a listener that keeps the reasons of the transitions it hears.
fn counted(
    threshold: u32,
) -> (
    Arc<CircuitBreaker>,
    Arc<Mock>,
    Arc<Mutex<Vec<TransitionReason>>>,
) {
    let (clock, mock) = Clock::mock();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(Duration::from_secs(60))
        .clock(clock)
        .metrics(true)
        .on_transition({
            let heard = Arc::clone(&heard);
            move |event| heard.lock().unwrap().push(event.transition().reason())
        })
        .build()
        .expect("valid config");
    (Arc::new(breaker), mock, heard)
}

#[test]
fn polling_a_service_whose_inner_service_is_pending_takes_nothing_from_the_breaker() {
    let (breaker, mock, heard) = counted(1);
    let (mut service, dependency) = guarded(&breaker);
    let admitted = || breaker.metrics().unwrap().admitted;

    // Closed: however often it is polled while the inner service is pending, nothing is admitted.
    dependency.set(Readiness::Pending);
    for _ in 0..10 {
        assert!(service.poll_ready(&mut noop()).is_pending());
    }
    assert_eq!(dependency.polls(), 10);
    assert_eq!(admitted(), 0, "no admission per poll");
    dependency.set(Readiness::Ready);
    assert_eq!(status(request(&mut service, Req::Status(503))), 503);
    assert_eq!(admitted(), 1);
    assert_eq!(breaker.state(), State::Open);

    // Half-open: the probe slot is neither claimed nor given back while waiting.
    mock.increment(COOLDOWN);
    dependency.set(Readiness::Pending);
    for _ in 0..10 {
        assert!(service.poll_ready(&mut noop()).is_pending());
    }
    assert_eq!(admitted(), 1);
    assert_eq!(
        *heard.lock().unwrap(),
        [TransitionReason::FailureThreshold],
        "nothing written while waiting"
    );
    assert_eq!(breaker.metrics().unwrap().blocked, 0);

    // Ready at last: one probe, admitted once, and each transition heard once.
    dependency.set(Readiness::Ready);
    assert_eq!(status(request(&mut service, Req::Status(200))), 200);
    assert_eq!(admitted(), 2);
    assert_eq!(
        *heard.lock().unwrap(),
        [
            TransitionReason::FailureThreshold,
            TransitionReason::CooldownElapsed,
            TransitionReason::ProbeSucceeded,
        ]
    );
    assert_eq!(dependency.calls(), 2);
}

#[test]
fn a_probe_in_flight_answers_a_caller_at_once_whatever_its_inner_readiness() {
    let (breaker, mock) = breaker(1);
    let (mut service, dependency) = guarded(&breaker);
    half_open(&mut service, &breaker, &mock);
    let probe = breaker.try_acquire().expect("the probe, held elsewhere");
    dependency.set(Readiness::Pending);
    let polls = dependency.polls();

    ready_now(&mut service);
    assert_eq!(
        dependency.polls(),
        polls,
        "the inner service was not polled"
    );
    let fut = pin!(service.call(Req::Status(200)));
    let Poll::Ready(Err(error)) = poll_once(fut) else {
        panic!("the rejection is ready at once")
    };
    assert_eq!(blocked(&error).reason(), BlockedReason::ProbeInFlight);
    drop(probe);

    // The slot is free again: the service waits on its inner service, holding nothing.
    assert!(service.poll_ready(&mut noop()).is_pending());
    assert!(
        breaker.try_acquire().expect("the slot is free").is_probe(),
        "the waiting service did not take it"
    );
}

/// With a slow-call rule, the layer times each call on the breaker's clock, from the call to its
/// answer: two slow calls of two trip it; a breaker without the rule is never timed.
#[tokio::test]
async fn the_layer_times_its_calls_for_a_slow_call_rule() {
    let (clock, mock) = Clock::mock();
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .slow_calls(Duration::from_secs(2), 1.0)
            .window(toolbreaker::Window::Calls(2))
            .minimum_calls(2)
            .clock(clock)
            .build()
            .unwrap(),
    );
    let classify = |_: &Result<u16, io::Error>| Outcome::Success;
    let service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(Arc::clone(&breaker), classify))
        .service(service_fn(move |secs: u64| {
            // Half the time in the service's `call`, half in its future: both are the call's.
            mock.increment(Duration::from_secs(secs) / 2);
            let mock = Arc::clone(&mock);
            async move {
                mock.increment(Duration::from_secs(secs) / 2);
                Ok::<_, io::Error>(200)
            }
        }));
    assert_eq!(service.clone().oneshot(1).await.unwrap(), 200);
    assert_eq!(service.clone().oneshot(2).await.unwrap(), 200);
    assert_eq!(breaker.state(), State::Closed, "one slow of two");
    assert_eq!(service.clone().oneshot(3).await.unwrap(), 200);
    assert_eq!(breaker.state(), State::Open, "two slow of the last two");
}
