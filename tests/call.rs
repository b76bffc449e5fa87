//! Guarded calls: `call`, `run`, and `run_with_timeout` under tokio's paused clock (no real waits).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use toolbreaker::{CallError, CircuitBreaker, FailureKind, Outcome, State};

const COOLDOWN: Duration = Duration::from_millis(100);
const PER_CALL: Duration = Duration::from_millis(250);

fn breaker(clock: quanta::Clock) -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_threshold(2)
        .cooldown(COOLDOWN)
        .probe_timeout(Duration::from_secs(1))
        .clock(clock)
        .build()
        .unwrap()
}

fn by_result(r: &Result<u32, &'static str>) -> Outcome {
    match r {
        Ok(_) => Outcome::Success,
        Err("bad arguments") => Outcome::Ignored,
        Err(_) => Outcome::Failure(FailureKind::Unavailable),
    }
}

#[tokio::test(start_paused = true)]
async fn a_hung_call_times_out_as_a_counted_timeout_and_trips() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = breaker(clock);
    for _ in 0..2 {
        let answer = breaker
            .run_with_timeout(
                PER_CALL,
                std::future::pending::<Result<u32, &str>>(),
                by_result,
            )
            .await;
        assert_eq!(answer, Err(CallError::TimedOut(PER_CALL)));
    }
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_probe_reopens_and_never_leaves_the_slot_taken() {
    let (clock, mock) = quanta::Clock::mock();
    let breaker = breaker(clock);
    for _ in 0..2 {
        breaker
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Timeout));
    }
    mock.increment(COOLDOWN);
    let answer = breaker
        .run_with_timeout(
            PER_CALL,
            std::future::pending::<Result<u32, &str>>(),
            by_result,
        )
        .await;
    assert_eq!(answer, Err(CallError::TimedOut(PER_CALL)));
    assert_eq!(
        breaker.state(),
        State::Open,
        "a timed-out probe is a failed probe"
    );
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(
        blocked.retry_after(),
        COOLDOWN,
        "a fresh cooldown, not a held slot"
    );
    mock.increment(COOLDOWN);
    let answer = breaker
        .run_with_timeout(PER_CALL, async { Ok(5) }, by_result)
        .await;
    assert_eq!(answer, Ok(5));
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_finishes_within_its_timeout_is_classified_normally() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = breaker(clock);
    let slow_ok = async {
        tokio::time::sleep(PER_CALL - Duration::from_millis(1)).await;
        Ok(7)
    };
    assert_eq!(
        breaker.run_with_timeout(PER_CALL, slow_ok, by_result).await,
        Ok(7)
    );
    for _ in 0..5 {
        let answer = breaker
            .run_with_timeout(PER_CALL, async { Err("bad arguments") }, by_result)
            .await;
        assert_eq!(answer, Err(CallError::Inner("bad arguments")));
    }
    assert_eq!(
        breaker.state(),
        State::Closed,
        "ignored outcomes never trip"
    );
}

#[tokio::test(start_paused = true)]
async fn a_blocked_call_never_polls_its_future_or_starts_its_timer() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = breaker(clock);
    for _ in 0..2 {
        let _ = breaker.run(async { Err::<u32, _>("503") }, by_result).await;
    }
    let polled = AtomicUsize::new(0);
    let start = tokio::time::Instant::now();
    let answer = breaker
        .run_with_timeout(
            PER_CALL,
            async {
                polled.fetch_add(1, Ordering::Relaxed);
                Ok(1)
            },
            by_result,
        )
        .await;
    assert!(matches!(answer, Err(CallError::Blocked(_))));
    assert_eq!(polled.load(Ordering::Relaxed), 0);
    assert_eq!(start.elapsed(), Duration::ZERO, "answered at once");
}

#[tokio::test(start_paused = true)]
async fn an_aborted_task_holding_the_probe_releases_it() {
    let (clock, mock) = quanta::Clock::mock();
    let breaker = std::sync::Arc::new(breaker(clock));
    for _ in 0..2 {
        let _ = breaker.call(|| Err::<u32, _>("503"), by_result);
    }
    mock.increment(COOLDOWN);
    let task = tokio::spawn({
        let breaker = breaker.clone();
        async move {
            breaker
                .run(std::future::pending::<Result<u32, &str>>(), by_result)
                .await
        }
    });
    tokio::task::yield_now().await; // let the task take the probe slot
    assert!(breaker.try_acquire().is_err(), "the task holds the probe");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let probe = breaker.try_acquire().expect("the slot was released");
    assert!(probe.is_probe());
}

#[test]
fn call_error_accessors_and_display() {
    let err: CallError<&str> = CallError::Inner("boom");
    assert_eq!(err.to_string(), "boom");
    assert_eq!(err.blocked(), None);
    assert_eq!(err.into_inner(), Some("boom"));
    let err: CallError<&str> = CallError::TimedOut(Duration::from_millis(250));
    assert_eq!(err.to_string(), "call timed out after 0.250 s");
}
