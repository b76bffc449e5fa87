//! Pins the auto traits users rely on: a breaker, a registry and a permit cross threads and
//! tasks (the `bounds()` test of tokio's semaphore, in spirit).

use toolbreaker::{
    Blocked, CallError, CircuitBreaker, Config, ConfigError, Outcome, Permit, Registry, State,
    Transition,
};

fn send_sync<T: Send + Sync>() {}
fn unpin<T: Unpin>() {}

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
fn owned_permits_are_send_sync_and_static() {
    fn send_sync_static<T: Send + Sync + 'static>() {}
    send_sync_static::<toolbreaker::breaker::OwnedPermit>();
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
