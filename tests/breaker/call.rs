//! Guarded calls: `call`, `run`, and `run_with_timeout` under tokio's paused clock (no real waits);
//! the classifications they and the pipeline take (closures in place, types through `classify::with`), the
//! sizes of what they return, and `CallError` as an error reporter shows it.

use std::error::Error;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use toolbreaker::classify::{self, http::HttpClassifier};
use toolbreaker::{
    AgentRun, Blocked, CallError, CircuitBreaker, Classify, FailureKind, Outcome, RetryPolicy,
    State, ToolGuard, ToolResult,
};

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
    assert_eq!(err.to_string(), "the operation failed");
    assert_eq!(err.blocked(), None);
    assert_eq!(err.into_inner(), Some("boom"));
    let err: CallError<&str> = CallError::TimedOut(Duration::from_millis(250));
    assert_eq!(err.to_string(), "call timed out after 0.250 s");
}

/// An error with a cause of its own, as a client library's usually is.
#[derive(Debug)]
struct FetchFailed(io::Error);

impl fmt::Display for FetchFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fetch of the index failed")
    }
}

impl Error for FetchFailed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.0)
    }
}

/// Every link's `Display`, walking `source()` from `error` down, as anyhow and eyre print it.
fn chain(error: &(dyn Error + 'static)) -> Vec<String> {
    let mut links = vec![error.to_string()];
    let mut next = error.source();
    while let Some(link) = next {
        links.push(link.to_string());
        next = link.source();
    }
    links
}

fn occurrences(links: &[String], text: &str) -> usize {
    links.iter().map(|link| link.matches(text).count()).sum()
}

/// An error either shows its source in its message or returns it from `source()`, never both:
/// a reporter that walks the chain prints each message once.
#[test]
fn an_error_report_shows_each_message_of_the_chain_once() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(1)
        .clock(clock)
        .build()
        .unwrap();
    let inner = breaker
        .call(
            || Err::<(), _>(FetchFailed(io::Error::other("connection reset"))),
            |_: &_| Outcome::Failure(FailureKind::Connect),
        )
        .unwrap_err();
    let links = chain(&inner);
    assert_eq!(
        links,
        [
            "the operation failed",
            "fetch of the index failed",
            "connection reset"
        ]
    );
    assert_eq!(occurrences(&links, "fetch of the index failed"), 1);
    assert_eq!(occurrences(&links, "connection reset"), 1);
    assert!(inner.source().unwrap().is::<FetchFailed>());

    let blocked = breaker.call(|| Ok(()), |_: &Result<(), FetchFailed>| Outcome::Success);
    let blocked = blocked.unwrap_err();
    let links = chain(&blocked);
    assert_eq!(occurrences(&links, "circuit open"), 1, "{links:?}");
    assert_eq!(
        links,
        [
            "call blocked by its circuit breaker",
            "circuit open: dependency calls blocked for another 30.000 s"
        ]
    );
    assert!(blocked.source().unwrap().is::<toolbreaker::Blocked>());

    let timed_out: CallError<FetchFailed> = CallError::TimedOut(PER_CALL);
    assert_eq!(chain(&timed_out), ["call timed out after 0.250 s"]);
}

/// The bug a new user hit: a classifier written in place, `|_| ...` or `|r| match r { .. }`,
/// failed to compile ("implementation of `FnOnce` is not general enough") in every guarded call,
/// since they took `impl Classify`. Each method that takes a classification is called here with
/// both forms, and with the earlier `|r: &_|` form; this file compiling is half the test.
#[tokio::test(start_paused = true)]
async fn a_closure_in_place_infers_its_argument_in_every_guarded_call() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = breaker(clock);
    let answer = |n: u16| if n == 0 { Ok(1) } else { Err::<i32, u16>(n) };

    // `call`.
    assert_eq!(
        breaker.call(|| answer(400), |_| Outcome::Ignored),
        Err(CallError::Inner(400))
    );
    let matched = breaker.call(
        || answer(400),
        |r| match r {
            Ok(_) => Outcome::Success,
            Err(503) => Outcome::Failure(FailureKind::Unavailable),
            Err(_) => Outcome::Ignored,
        },
    );
    assert_eq!(matched, Err(CallError::Inner(400)));
    assert_eq!(
        breaker.call(
            || answer(0),
            |r: &_| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Ignored,
            }
        ),
        Ok(1)
    );

    // `run`.
    let run = breaker.run(async { answer(0) }, |_| Outcome::Success).await;
    assert_eq!(run, Ok(1));
    let run = breaker
        .run(async { answer(404) }, |r| match r {
            Ok(_) => Outcome::Success,
            Err(500..) => Outcome::Failure(FailureKind::Unavailable),
            Err(_) => Outcome::Ignored,
        })
        .await;
    assert_eq!(run, Err(CallError::Inner(404)));

    // `run_with_timeout`.
    let timed = breaker
        .run_with_timeout(PER_CALL, async { answer(0) }, |_| Outcome::Success)
        .await;
    assert_eq!(timed, Ok(1));
    assert_eq!(breaker.state(), State::Closed, "nothing counted yet");
    let timed = breaker
        .run_with_timeout(PER_CALL, async { answer(503) }, |r| match r {
            Ok(_) => Outcome::Success,
            Err(503) => Outcome::Failure(FailureKind::Unavailable),
            Err(_) => Outcome::Ignored,
        })
        .await;
    assert_eq!(timed, Err(CallError::Inner(503)));
    let _ = breaker.call(
        || answer(503),
        |r| match r {
            Err(503) => Outcome::Failure(FailureKind::Unavailable),
            _ => Outcome::Ignored,
        },
    );
    assert_eq!(breaker.state(), State::Open, "the two 503s counted");

    // The pipeline's `call` and `call_observed`.
    let (clock, _mock) = quanta::Clock::mock();
    let search = CircuitBreaker::builder()
        .name("search")
        .clock(clock)
        .build()
        .unwrap();
    let guard = ToolGuard::new(PER_CALL, RetryPolicy::none());
    let agent_run = AgentRun::new("run-1", Duration::from_secs(60), 10);
    let result = guard
        .call(
            &agent_run,
            &search,
            |_| Outcome::Success,
            || async { answer(0) },
        )
        .await;
    assert!(
        matches!(result, ToolResult::Ok { value: 1, .. }),
        "{result:?}"
    );
    let result = guard
        .call(
            &agent_run,
            &search,
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(503) => Outcome::Failure(FailureKind::Unavailable),
                Err(_) => Outcome::Ignored,
            },
            || async { answer(503) },
        )
        .await;
    assert!(
        matches!(result, ToolResult::Failed { counted: true, .. }),
        "{result:?}"
    );
    let mut heard = Vec::new();
    let result = guard
        .call_observed(
            &agent_run,
            &search,
            |r| match r {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Ignored,
            },
            || async { answer(400) },
            |attempt| heard.push(attempt.outcome),
        )
        .await;
    assert!(
        matches!(result, ToolResult::Failed { counted: false, .. }),
        "{result:?}"
    );
    assert_eq!(heard, [Outcome::Ignored]);
}

/// Classifier types stay usable in every guarded call, through `classify::with`, and the pipeline still
/// tells the model the HTTP status they read.
#[tokio::test(start_paused = true)]
async fn a_classifier_type_goes_through_classify_with_in_every_guarded_call() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = breaker(clock);
    let response = |status: u16| {
        Ok::<_, io::Error>(http::Response::builder().status(status).body(()).unwrap())
    };
    let http = HttpClassifier::new();
    let answer = breaker.call(|| response(503), classify::with(&http));
    assert_eq!(answer.unwrap().status(), 503);
    let answer = breaker
        .run(
            async { response(404) },
            classify::with(&HttpClassifier::new()),
        )
        .await;
    assert_eq!(answer.unwrap().status(), 404, "a 404 is ignored");
    assert_eq!(breaker.state(), State::Closed);
    let answer = breaker
        .run_with_timeout(PER_CALL, async { response(502) }, classify::with(&http))
        .await;
    assert_eq!(answer.unwrap().status(), 502);
    assert_eq!(breaker.state(), State::Open, "the two 5xx counted");
    assert!(matches!(
        breaker.call(|| response(200), classify::with(&http)),
        Err(CallError::Blocked(_))
    ));

    // A named function and a type of the caller's own.
    struct ByResult;
    impl Classify<u32, &'static str> for ByResult {
        fn classify(&self, result: &Result<u32, &'static str>) -> Outcome {
            by_result(result)
        }
    }
    let (clock, _mock) = quanta::Clock::mock();
    let other = self::breaker(clock);
    assert_eq!(
        other.call(|| Err("bad arguments"), by_result),
        Err(CallError::Inner("bad arguments"))
    );
    assert_eq!(
        other.call(|| Err("bad arguments"), classify::with(&ByResult)),
        Err(CallError::Inner("bad arguments"))
    );
    assert_eq!(other.state(), State::Closed);

    // The pipeline: the model is told the status the classifier read.
    let (clock, _mock) = quanta::Clock::mock();
    let search = CircuitBreaker::builder()
        .name("search")
        .clock(clock)
        .build()
        .unwrap();
    let guard = ToolGuard::new(PER_CALL, RetryPolicy::none());
    let agent_run = AgentRun::new("run-1", Duration::from_secs(60), 10);
    let result = guard
        .call(&agent_run, &search, classify::with(&http), || async {
            response(503)
        })
        .await;
    let ToolResult::Failed {
        error,
        counted: true,
        ..
    } = &result
    else {
        panic!("expected a counted failure, got {result:?}")
    };
    assert_eq!(error, "unavailable (HTTP 503)");
    let mut heard = Vec::new();
    let result = guard
        .call_observed(
            &agent_run,
            &search,
            classify::with(&http),
            || async { response(200) },
            |attempt| heard.push(attempt.outcome),
        )
        .await;
    assert!(matches!(&result, ToolResult::Ok { value, .. } if value.status() == 200));
    assert_eq!(heard, [Outcome::Success]);
}

/// What a caller pays for a rejection: `Blocked` is two words and `Copy`, owning no name and
/// having no drop, so `call`'s result is a few stores and never read back for a drop check
/// (it grew to 40 bytes with a drop when it carried the breaker's name).
#[test]
fn blocked_is_small_and_copy_and_so_is_what_call_returns() {
    fn copy<T: Copy>() {}
    copy::<Blocked>();
    copy::<CallError<u64>>();
    copy::<Result<u64, CallError<u64>>>();
    assert!(!std::mem::needs_drop::<Blocked>());
    assert!(!std::mem::needs_drop::<Result<u64, CallError<u64>>>());
    assert_eq!(
        size_of::<Blocked>(),
        16,
        "the retry-after, the state and the reason"
    );
    // Three words at most for a small answer and error: the largest variant (a `Blocked` or a
    // timeout's `Duration`) and a tag.
    let sizes = [
        size_of::<CallError<()>>(),
        size_of::<CallError<u64>>(),
        size_of::<Result<(), CallError<()>>>(),
        size_of::<Result<u64, CallError<u64>>>(),
        size_of::<Result<u64, CallError<std::io::Error>>>(),
    ];
    assert!(sizes.iter().all(|&size| size <= 24), "{sizes:?}");
}
