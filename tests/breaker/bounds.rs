//! Pins the auto traits users rely on: a breaker, a registry and a permit cross threads and
//! tasks, and the futures and the tower service are `Send` (and `Unpin`) whenever what they wrap
//! is (the `bounds()` test of tokio's semaphore, in spirit).

use toolbreaker::{
    Blocked, CallError, CircuitBreaker, Config, ConfigError, Outcome, Permit, Registry, State,
    Transition,
};

fn send_sync<T: Send + Sync>() {}
fn unpin<T: Unpin>() {}
fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}

/// A breaker may be used inside `catch_unwind` without `AssertUnwindSafe`, whatever its listener
/// captures: a listener's panic never leaves the breaker's state half-written.
#[test]
fn a_breaker_and_its_permits_are_unwind_safe() {
    unwind_safe::<CircuitBreaker>();
    unwind_safe::<&CircuitBreaker>();
    let breaker = CircuitBreaker::builder()
        .on_transition(|_| {})
        .build()
        .unwrap();
    let caught =
        std::panic::catch_unwind(|| breaker.call(|| Ok::<_, ()>(1), |_: &_| Outcome::Success));
    assert_eq!(caught.unwrap(), Ok(1));
}

#[test]
fn shared_types_are_send_and_sync() {
    send_sync::<CircuitBreaker>();
    send_sync::<Registry>();
    send_sync::<Permit<'static>>();
    send_sync::<Blocked>();
    send_sync::<ConfigError>();
    send_sync::<Config>();
    send_sync::<Outcome>();
    send_sync::<State>();
    send_sync::<Transition>();
    send_sync::<CallError<std::io::Error>>();
    send_sync::<toolbreaker::ToolResult<String>>();
    unpin::<Permit<'static>>();
}

#[test]
fn a_permit_moves_to_another_thread_and_records_there() {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let permit = breaker.try_acquire().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || permit.record(Outcome::Failure(toolbreaker::FailureKind::Connect)));
    });
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn blocked_and_call_error_box_into_dyn_error() {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(toolbreaker::FailureKind::Other));
    let blocked: Box<dyn std::error::Error + Send + Sync> =
        Box::new(breaker.try_acquire().unwrap_err());
    assert!(blocked.to_string().starts_with("circuit open"));
    let err: CallError<std::io::Error> = breaker
        .call(|| Ok::<(), std::io::Error>(()), |_: &_| Outcome::Success)
        .unwrap_err();
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    assert!(boxed.source().unwrap().is::<Blocked>());
}

#[test]
fn owned_permits_are_send_sync_unpin_and_static() {
    fn send_sync_static<T: Send + Sync + 'static>() {}
    send_sync_static::<toolbreaker::breaker::OwnedPermit>();
    unpin::<toolbreaker::breaker::OwnedPermit>();
}

#[test]
fn configuration_types_are_send_and_sync() {
    send_sync::<toolbreaker::RegistryConfig>();
    send_sync::<toolbreaker::registry::Reload>();
    send_sync::<toolbreaker::registry::ConfigChange>();
    send_sync::<toolbreaker::registry::ConfigFileError>();
}

/// `run`'s future holds the breaker by reference, the call's future, the classifier and (once
/// admitted) a permit: for every such pair it is `Send` and `Sync` when they are, and `Unpin`
/// when the call's future is. Checked for all of them at once: these generic functions compile
/// only if the bounds follow from the parameters' alone.
#[test]
fn run_futures_are_send_sync_and_unpin_when_what_they_wrap_is() {
    use toolbreaker::breaker::RunFuture;

    fn send_sync_if<F: Send + Sync, C: Send + Sync>() {
        send_sync::<RunFuture<'_, F, C>>();
    }
    fn unpin_if<F: Unpin, C>() {
        unpin::<RunFuture<'_, F, C>>();
    }
    type Ready = std::future::Ready<Result<u8, std::io::Error>>;
    type Classify = fn(&Result<u8, std::io::Error>) -> Outcome;
    send_sync_if::<Ready, Classify>();
    unpin_if::<Ready, Classify>();

    // And a real one, around an `async` block (which is not `Unpin`), can be spawned.
    fn send<T: Send>(_: &T) {}
    let breaker = CircuitBreaker::builder().build().unwrap();
    let future = breaker.run(async { Ok::<u8, std::io::Error>(1) }, |_: &_| {
        Outcome::Success
    });
    send(&future);
}

/// The tower service holds the inner service, the breaker, the classifier (shared) and a permit
/// between `poll_ready` and `call`; its future holds the inner future, a permit or the
/// rejection, and the classifier. Both are `Send` and `Sync` when the inner service (future)
/// and the classifier are, and `Unpin` when the inner service (future) is, whatever they are.
#[test]
fn the_tower_service_and_its_future_are_send_sync_and_unpin_when_what_they_wrap_is() {
    use toolbreaker::tower::{CircuitBreakerService, future::ResponseFuture};

    fn service_send_sync_if<S: Send + Sync, C: Send + Sync>() {
        send_sync::<CircuitBreakerService<S, C>>();
    }
    fn service_unpin_if<S: Unpin, C>() {
        unpin::<CircuitBreakerService<S, C>>();
    }
    fn future_send_sync_if<F: Send + Sync, C: Send + Sync>() {
        send_sync::<ResponseFuture<F, C>>();
    }
    fn future_unpin_if<F: Unpin, C>() {
        unpin::<ResponseFuture<F, C>>();
    }
    type Classifier = toolbreaker::classify::http::HttpClassifier;
    type Inner = tower::util::ServiceFn<
        fn(http::Request<()>) -> std::future::Ready<Result<http::Response<()>, std::io::Error>>,
    >;
    service_send_sync_if::<Inner, Classifier>();
    service_unpin_if::<Inner, Classifier>();
    future_send_sync_if::<std::future::Ready<Result<http::Response<()>, std::io::Error>>, Classifier>(
    );
    future_unpin_if::<std::future::Ready<Result<http::Response<()>, std::io::Error>>, Classifier>();
}

#[test]
fn an_owned_probe_dropped_in_another_thread_releases_the_slot() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = std::sync::Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(1)
            .clock(clock)
            .build()
            .unwrap(),
    );
    breaker
        .try_acquire_owned()
        .unwrap()
        .record(Outcome::Failure(toolbreaker::FailureKind::Timeout));
    mock.increment(toolbreaker::config::DEFAULT_COOLDOWN);
    let probe = breaker.try_acquire_owned().unwrap();
    assert!(probe.is_probe());
    assert!(breaker.try_acquire().is_err());
    std::thread::spawn(move || drop(probe)).join().unwrap();
    let next = breaker.try_acquire_owned().expect("released");
    assert!(next.is_probe());
    assert_eq!(
        next.record(Outcome::Success).map(|t| t.to()),
        Some(State::Closed)
    );
}
