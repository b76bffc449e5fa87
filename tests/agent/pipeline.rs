//! The guard pipeline (`ToolGuard::call`): order of the guards, retry, Retry-After, budgets.
//! On tokio's paused clock (waits take no real time) and the breaker's mock clock.

use std::cell::RefCell;
use std::time::Duration;

use tokio::time::Instant;
use toolbreaker::agent::FailedKind;
use toolbreaker::classify::{self, http::HttpClassifier};
use toolbreaker::quanta::Clock;
use toolbreaker::{
    AgentRun, BlockedReason, CircuitBreaker, Classify, FailureKind, Outcome, RetryPolicy, State,
    StopReason, ToolGuard, ToolResult,
};

/// What the fake dependency answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    Ok,
    Unavailable,
    BadArguments,
    RateLimited(u64),
    Hang,
}

fn classify(result: &Result<&'static str, Answer>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(Answer::BadArguments) => Outcome::Ignored,
        Err(Answer::RateLimited(secs)) => Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(Duration::from_secs(*secs)),
        }),
        Err(_) => Outcome::Failure(FailureKind::Unavailable),
    }
}

/// A dependency that answers from a script and remembers when each attempt reached it.
struct Dependency {
    script: RefCell<Vec<Answer>>,
    reached: RefCell<Vec<Instant>>,
}

impl Dependency {
    fn new(script: &[Answer]) -> Self {
        Dependency {
            script: RefCell::new(script.iter().rev().copied().collect()),
            reached: RefCell::new(Vec::new()),
        }
    }

    /// One attempt: the next scripted answer (the last one repeats).
    fn attempt(&self) -> impl Future<Output = Result<&'static str, Answer>> + use<> {
        self.reached.borrow_mut().push(Instant::now());
        let mut script = self.script.borrow_mut();
        let answer = if script.len() > 1 {
            script.pop().unwrap()
        } else {
            script[0]
        };
        async move {
            match answer {
                Answer::Ok => Ok("hits"),
                Answer::Hang => std::future::pending().await,
                other => Err(other),
            }
        }
    }

    fn attempts(&self) -> usize {
        self.reached.borrow().len()
    }
}

/// The `search` breaker.
fn breaker(threshold: u32) -> (CircuitBreaker, std::sync::Arc<toolbreaker::quanta::Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(threshold)
        .cooldown(Duration::from_secs(30))
        .clock(clock)
        .build()
        .unwrap();
    (breaker, mock)
}

fn no_jitter(retries: u32) -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(retries)
        .min_delay(Duration::from_millis(100))
        .jitter(false)
}

async fn call(
    guard: &ToolGuard,
    run: &AgentRun,
    breaker: &CircuitBreaker,
    dep: &Dependency,
) -> ToolResult<&'static str> {
    guard.call(run, breaker, classify, || dep.attempt()).await
}

#[tokio::test(start_paused = true)]
async fn with_the_breaker_open_neither_the_timeout_nor_the_operation_runs() {
    let (breaker, _mock) = breaker(1);
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(3));
    let run = AgentRun::new("r", Duration::from_secs(60), 10);
    let dep = Dependency::new(&[Answer::Ok]);
    let start = Instant::now();
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(matches!(
        result,
        ToolResult::Blocked {
            reason: BlockedReason::DependencyOpen,
            ..
        }
    ));
    assert_eq!(dep.attempts(), 0, "the operation never started");
    assert_eq!(start.elapsed(), Duration::ZERO, "no timeout ran either");
    assert_eq!(
        run.tool_calls(),
        0,
        "a blocked call draws nothing from the budget"
    );
    assert_eq!(result.stats().unwrap().attempts, 0);
}

#[tokio::test(start_paused = true)]
async fn with_the_deadline_passed_the_breaker_is_not_even_asked() {
    let (breaker, mock) = breaker(1);
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));
    mock.increment(Duration::from_secs(30)); // half-open: asking would take the probe slot
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(3));
    let run = AgentRun::new("r", Duration::from_secs(1), 10);
    tokio::time::advance(Duration::from_secs(2)).await;
    let dep = Dependency::new(&[Answer::Ok]);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(matches!(
        result,
        ToolResult::Stopped {
            stop_reason: StopReason::Deadline,
            ..
        }
    ));
    assert_eq!(dep.attempts(), 0);
    let probe = breaker
        .try_acquire()
        .expect("the probe slot was never taken");
    assert!(probe.is_probe());
}

#[tokio::test(start_paused = true)]
async fn retry_stops_the_moment_the_breaker_opens() {
    let (breaker, _mock) = breaker(3);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(10));
    let run = AgentRun::new("r", Duration::from_secs(600), 100);
    let dep = Dependency::new(&[Answer::Unavailable]);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(
        dep.attempts(),
        3,
        "the third failure tripped it; no fourth attempt"
    );
    assert_eq!(breaker.state(), State::Open);
    match result {
        ToolResult::Blocked { call, reason, .. } => {
            assert_eq!(reason, BlockedReason::DependencyOpen);
            assert_eq!(
                call.unwrap().attempts,
                3,
                "the refused retry shows the attempts made"
            );
        }
        other => panic!("expected blocked, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn every_attempt_is_observed_with_its_outcome_probe_and_transition() {
    let (breaker, _mock) = breaker(2);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(5));
    let run = AgentRun::new("r", Duration::from_secs(600), 100);
    let dep = Dependency::new(&[Answer::Unavailable]);
    let mut seen = Vec::new();
    let result = guard
        .call_observed(
            &run,
            &breaker,
            classify,
            || dep.attempt(),
            |a| seen.push((a.number, a.probe, a.outcome, a.transition.map(|t| t.to()))),
        )
        .await;
    assert!(matches!(result, ToolResult::Blocked { .. }));
    let unavailable = Outcome::Failure(FailureKind::Unavailable);
    assert_eq!(
        seen,
        [
            (1, false, unavailable, None),
            (2, false, unavailable, Some(State::Open)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn retries_back_off_exponentially_and_end_on_success() {
    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(5));
    let run = AgentRun::new("r", Duration::from_secs(600), 100);
    let dep = Dependency::new(&[Answer::Unavailable, Answer::Unavailable, Answer::Ok]);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(matches!(result, ToolResult::Ok { value: "hits", .. }));
    let reached = dep.reached.borrow();
    // tokio's timer rounds a deadline up to its next millisecond tick.
    let about = |gap: Duration, ms: u64| {
        let want = Duration::from_millis(ms);
        assert!(
            gap >= want && gap <= want + Duration::from_millis(1),
            "{gap:?} for {want:?}"
        );
    };
    about(reached[1] - reached[0], 100);
    about(reached[2] - reached[1], 200);
    assert_eq!(result.stats().unwrap().attempts, 3);
    assert!((300..=302).contains(&result.stats().unwrap().elapsed_ms));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_hint_is_the_minimum_wait() {
    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(3));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let dep = Dependency::new(&[Answer::RateLimited(2), Answer::Ok]);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(matches!(result, ToolResult::Ok { .. }));
    let reached = dep.reached.borrow();
    assert!(
        reached[1] - reached[0] >= Duration::from_secs(2),
        "{:?}",
        reached[1] - reached[0]
    );
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_would_pass_the_deadline_ends_the_call_instead() {
    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(3));
    let run = AgentRun::new("r", Duration::from_millis(1_500), 100);
    let dep = Dependency::new(&[Answer::RateLimited(2), Answer::Ok]);
    let start = Instant::now();
    let result = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(dep.attempts(), 1);
    assert_eq!(start.elapsed(), Duration::ZERO, "it did not wait at all");
    match result {
        ToolResult::Failed {
            counted,
            error,
            kind,
            ..
        } => {
            assert!(counted);
            assert_eq!(
                (kind, error.as_str()),
                (FailedKind::RateLimited, "rate limited")
            );
        }
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn ignored_outcomes_are_never_retried() {
    let (breaker, _mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(5));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let dep = Dependency::new(&[Answer::BadArguments, Answer::Ok]);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(dep.attempts(), 1);
    assert!(matches!(result, ToolResult::Failed { counted: false, .. }));
    assert_eq!(breaker.state(), State::Closed, "and never counted");
}

#[tokio::test(start_paused = true)]
async fn a_hung_attempt_times_out_as_a_counted_failure() {
    let (breaker, _mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let dep = Dependency::new(&[Answer::Hang]);
    let start = Instant::now();
    let result = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(5),
        "the per-call timeout"
    );
    match result {
        ToolResult::Failed { error, counted, .. } => {
            assert_eq!((error.as_str(), counted), ("timed out after 5000 ms", true));
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert_eq!(
        breaker.state(),
        State::Open,
        "a timeout counts against the dependency"
    );
}

#[tokio::test(start_paused = true)]
async fn an_attempt_cut_by_the_run_deadline_stops_the_run_and_counts_nothing() {
    let (breaker, mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(3));
    // Closed, and half-open with the call as the probe: neither is charged for the deadline.
    for probing in [false, true] {
        if probing {
            breaker
                .try_acquire()
                .unwrap()
                .record(Outcome::Failure(FailureKind::Timeout));
            mock.increment(Duration::from_secs(30));
        }
        let run = AgentRun::new("r", Duration::from_secs(2), 100);
        let dep = Dependency::new(&[Answer::Hang]);
        let start = Instant::now();
        let result = call(&guard, &run, &breaker, &dep).await;
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(2),
            "cut to the deadline, not 5 s"
        );
        assert_eq!(dep.attempts(), 1);
        assert!(matches!(
            result,
            ToolResult::Stopped {
                stop_reason: StopReason::Deadline,
                ..
            }
        ));
        let expected = if probing {
            State::HalfOpen
        } else {
            State::Closed
        };
        assert_eq!(
            breaker.state(),
            expected,
            "nothing recorded against the dependency"
        );
        if probing {
            assert!(
                breaker.try_acquire().unwrap().is_probe(),
                "the probe slot was given back"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_that_opens_the_breaker_ends_blocked_without_waiting() {
    let (breaker, _mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(3));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let dep = Dependency::new(&[Answer::RateLimited(5)]);
    let start = Instant::now();
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(matches!(result, ToolResult::Blocked { .. }), "{result:?}");
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no 5 s wait before saying so"
    );
    assert_eq!(dep.attempts(), 1);
}

#[tokio::test(start_paused = true)]
async fn budget_exhaustion_stops_the_call_and_every_later_call_on_the_run() {
    let (breaker, _mock) = breaker(100);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(10));
    let run = AgentRun::new("run-9", Duration::from_secs(600), 2);
    let dep = Dependency::new(&[Answer::Unavailable]);
    let start = Instant::now();
    let result = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(dep.attempts(), 2, "every attempt drew on the budget of 2");
    let waited = start.elapsed();
    assert!(
        waited <= Duration::from_millis(101),
        "one backoff between the two attempts, none after the last: {waited:?}"
    );
    match &result {
        ToolResult::Stopped {
            run_id,
            stop_reason,
            call,
            ..
        } => {
            assert_eq!(
                (run_id.as_str(), *stop_reason),
                ("run-9", StopReason::ToolCallBudget)
            );
            assert_eq!(call.unwrap().attempts, 2);
        }
        other => panic!("expected stopped, got {other:?}"),
    }
    let ok = Dependency::new(&[Answer::Ok]);
    for _ in 0..3 {
        let later = call(&guard, &run, &breaker, &ok).await;
        assert!(matches!(
            later,
            ToolResult::Stopped {
                stop_reason: StopReason::ToolCallBudget,
                ..
            }
        ));
    }
    assert_eq!(ok.attempts(), 0, "no way around the guard");
}

#[tokio::test(start_paused = true)]
async fn a_spent_token_budget_stops_later_calls() {
    let (breaker, _mock) = breaker(100);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("r", Duration::from_secs(600), 100).with_token_budget(100);
    let dep = Dependency::new(&[Answer::Ok]);
    assert!(matches!(
        call(&guard, &run, &breaker, &dep).await,
        ToolResult::Ok { .. }
    ));
    assert_eq!(run.spend_tokens(150), Err(StopReason::TokenBudget));
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(matches!(
        result,
        ToolResult::Stopped {
            stop_reason: StopReason::TokenBudget,
            ..
        }
    ));
    assert_eq!(dep.attempts(), 1);
    // The first reason sticks, whatever else runs out later.
    tokio::time::advance(Duration::from_secs(601)).await;
    assert_eq!(run.stop_reason(), Some(StopReason::TokenBudget));
}

#[test]
fn stopped_and_failed_results_are_exactly_this_json() {
    let stopped = ToolResult::<()>::stopped("run-9", StopReason::ToolCallBudget).with_stats(
        toolbreaker::agent::CallStats {
            attempts: 2,
            elapsed_ms: 300,
        },
    );
    assert_eq!(
        stopped.to_json().unwrap(),
        r#"{"status":"stopped","run_id":"run-9","stop_reason":"tool_call_budget","message":"This run has used its tool-call budget; no more tool calls can be made in it. Answer with what you know now.","attempts":2,"elapsed_ms":300}"#
    );
    let failed = ToolResult::<()>::failed("files", Outcome::Ignored, Some(400), None);
    assert_eq!(
        failed.to_json().unwrap(),
        r#"{"status":"failed","dependency":"files","kind":"rejected","http_status":400,"error":"HTTP 400","counted":false,"message":"files rejected the call: HTTP 400. Correct the arguments before calling it again."}"#
    );
    for result in [stopped, failed] {
        let json = result.to_json().unwrap();
        assert!(!json.contains("retry now") && !json.contains("try again now"));
        let back: ToolResult<()> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, result);
    }
}

/// The bug a new user hit: the dependency was asked for twice, and the model was told about the
/// `search` tool when the `weather` breaker refused. Now the name comes from the breaker alone.
#[tokio::test(start_paused = true)]
async fn a_blocked_or_failed_result_names_the_breakers_own_dependency() {
    let (clock, _mock) = Clock::mock();
    let weather = CircuitBreaker::builder()
        .name("weather")
        .failure_threshold(1)
        .cooldown(Duration::from_secs(30))
        .clock(clock)
        .build()
        .unwrap();
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("r", Duration::from_secs(60), 10);
    let dep = Dependency::new(&[Answer::Unavailable]);

    let failed = guard.call(&run, &weather, classify, || dep.attempt()).await;
    let ToolResult::Failed {
        dependency,
        message,
        ..
    } = &failed
    else {
        panic!("expected failed, got {failed:?}")
    };
    assert_eq!(dependency, "weather");
    assert!(message.starts_with("weather failed:"), "{message}");
    assert!(!message.contains("search"), "{message}");

    let blocked = guard.call(&run, &weather, classify, || dep.attempt()).await;
    let ToolResult::Blocked {
        dependency,
        message,
        ..
    } = &blocked
    else {
        panic!("expected blocked, got {blocked:?}")
    };
    assert_eq!(dependency, "weather");
    assert!(
        message.starts_with("weather is temporarily unavailable;"),
        "{message}"
    );
    assert!(!message.contains("search"), "{message}");
    assert_eq!(dep.attempts(), 1);
}

/// When the time left to the deadline is exactly the per-call timeout, running out of time is
/// running into the deadline: the run stops and the dependency is charged nothing.
#[tokio::test(start_paused = true)]
async fn an_attempt_cut_when_the_time_left_equals_the_per_call_timeout_stops_the_run() {
    let (clock, _mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(1)
        .clock(clock)
        .metrics(true)
        .build()
        .unwrap();
    let per_call = Duration::from_secs(5);
    let guard = ToolGuard::new(per_call, no_jitter(0));
    let run = AgentRun::new("r", per_call, 100);
    let dep = Dependency::new(&[Answer::Hang]);
    let start = Instant::now();
    let result = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(start.elapsed(), per_call);
    assert!(
        matches!(
            result,
            ToolResult::Stopped {
                stop_reason: StopReason::Deadline,
                ..
            }
        ),
        "{result:?}"
    );
    assert_eq!(run.stop_reason(), Some(StopReason::Deadline));
    assert_eq!(breaker.state(), State::Closed, "no timeout recorded");
    let metrics = breaker.metrics().unwrap();
    assert_eq!(metrics.failures.timeout, 0);
    assert_eq!(dep.attempts(), 1);

    // A millisecond more left than the per-call timeout: the dependency's own time ran out.
    let run = AgentRun::new("r2", per_call + Duration::from_millis(1), 100);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(
        matches!(
            result,
            ToolResult::Failed {
                kind: FailedKind::Timeout,
                ..
            }
        ),
        "{result:?}"
    );
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(breaker.metrics().unwrap().failures.timeout, 1);
}

const SECRET_URL: &str = "https://api.example.com/v1/search?q=x&key=SECRET123";

/// An error whose words hold the secret, as a `reqwest::Error` displays its URL.
#[derive(Debug)]
struct LeakyError;

impl std::fmt::Display for LeakyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error sending request for url ({SECRET_URL})")
    }
}

/// A classification that knows the status each error came with.
struct StatusErrors;

impl Classify<&'static str, (u16, LeakyError)> for StatusErrors {
    fn classify(&self, result: &Result<&'static str, (u16, LeakyError)>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err((500..=599, _)) => Outcome::Failure(FailureKind::Unavailable),
            Err(_) => Outcome::Ignored,
        }
    }

    fn http_status(&self, result: &Result<&'static str, (u16, LeakyError)>) -> Option<u16> {
        result.as_ref().err().map(|(status, _)| *status)
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_result_shows_the_kind_and_status_and_never_the_errors_text() {
    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    for (status, kind, error) in [
        (503, FailedKind::Unavailable, "unavailable (HTTP 503)"),
        (401, FailedKind::Rejected, "HTTP 401"),
    ] {
        let result = guard
            .call(
                &run,
                &breaker,
                classify::with(&StatusErrors),
                || async move { Err((status, LeakyError)) },
            )
            .await;
        let json = result.to_json().unwrap();
        assert!(!json.contains("SECRET123"), "{json}");
        assert!(!json.contains("key="), "{json}");
        assert!(!json.contains("api.example.com"), "{json}");
        assert!(!format!("{result:?}").contains("SECRET123"));
        match result {
            ToolResult::Failed {
                kind: k,
                http_status,
                error: e,
                ..
            } => assert_eq!((k, http_status, e.as_str()), (kind, Some(status), error)),
            other => panic!("expected failed, got {other:?}"),
        }
    }

    // A closure knows no status: the kind alone.
    let result = guard
        .call(
            &run,
            &breaker,
            |_: &Result<(), LeakyError>| Outcome::Failure(FailureKind::Other),
            || async { Err(LeakyError) },
        )
        .await;
    let json = result.to_json().unwrap();
    assert!(
        json.contains(r#""kind":"other","error":"other failure","#),
        "{json}"
    );
    assert!(!json.contains("SECRET123"), "{json}");
}

#[tokio::test(start_paused = true)]
async fn a_guard_shows_an_errors_text_only_through_its_error_text_function() {
    let (breaker, _mock) = breaker(10);
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let redacting = ToolGuard::new(Duration::from_secs(5), no_jitter(0)).error_text(
        |(_, error): &(u16, LeakyError)| {
            let text = error.to_string();
            Some(match text.split_once('?') {
                Some((before, _)) => format!("{before})"),
                None => text,
            })
        },
    );
    let result = redacting
        .call(&run, &breaker, classify::with(&StatusErrors), || async {
            Err((503, LeakyError))
        })
        .await;
    match &result {
        ToolResult::Failed {
            error,
            http_status,
            message,
            ..
        } => {
            assert_eq!(
                error,
                "error sending request for url (https://api.example.com/v1/search)"
            );
            assert_eq!(*http_status, Some(503));
            assert!(message.contains(error.as_str()));
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert!(!result.to_json().unwrap().contains("SECRET123"));

    // `None` from the function: the kind and status, as by default.
    let declining = ToolGuard::new(Duration::from_secs(5), no_jitter(0))
        .error_text(|_: &(u16, LeakyError)| None);
    let result = declining
        .call(&run, &breaker, classify::with(&StatusErrors), || async {
            Err((502, LeakyError))
        })
        .await;
    assert!(
        matches!(&result, ToolResult::Failed { error, .. } if error == "unavailable (HTTP 502)"),
        "{result:?}"
    );
}

/// `HttpClassifier` goes to the pipeline as it is, and the status of an answer that counts as a
/// failure reaches the result.
#[tokio::test(start_paused = true)]
async fn the_pipeline_takes_an_http_classifier_and_reports_the_answers_status() {
    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let answer = |status: u16| {
        let response = http::Response::builder()
            .status(status)
            .body(String::new())
            .unwrap();
        async move { Ok::<_, std::io::Error>(response) }
    };
    let result = guard
        .call(
            &run,
            &breaker,
            classify::with(&HttpClassifier::new()),
            || answer(503),
        )
        .await;
    assert!(
        matches!(
            result,
            ToolResult::Failed {
                kind: FailedKind::Unavailable,
                http_status: Some(503),
                counted: true,
                ..
            }
        ),
        "{result:?}"
    );
    let result = guard
        .call(
            &run,
            &breaker,
            classify::with(&HttpClassifier::new()),
            || answer(404),
        )
        .await;
    match result {
        ToolResult::Ok { value, .. } => assert_eq!(value.status(), 404, "a 404 is passed on"),
        other => panic!("expected ok, got {other:?}"),
    }
}

/// A wait or a time limit too long to add to now (a server's `Retry-After` of 20 digits, a run
/// given `Duration::MAX`): no arithmetic of the pipeline overflows, and nothing panics. The hint
/// is cut to the breaker's cap (10 minutes by default), so a run whose deadline leaves room for
/// that wait retries after it, and one whose deadline does not ends `failed` at once.
#[tokio::test(start_paused = true)]
async fn hints_and_limits_too_long_to_add_to_now_never_panic() {
    let guard = ToolGuard::new(Duration::from_secs(1), no_jitter(2));
    for limit in [
        Duration::MAX,
        Duration::from_secs(u64::MAX / 2),
        Duration::from_secs(60),
    ] {
        let run = AgentRun::new("run-1", limit, 100);
        for hint in [u64::MAX, u64::MAX / 1_000, 1 << 62] {
            let (breaker, _mock) = breaker(10);
            let dependency = Dependency::new(&[Answer::RateLimited(hint)]);
            let result = guard
                .call(&run, &breaker, classify, || dependency.attempt())
                .await;
            let ToolResult::Failed { kind, .. } = &result else {
                panic!("{result:?}")
            };
            assert_eq!(*kind, FailedKind::RateLimited);
            let attempts = if limit > Duration::from_secs(600) {
                3
            } else {
                1
            };
            assert_eq!(
                dependency.reached.borrow().len(),
                attempts,
                "a retry waits the capped hint only if the deadline leaves room ({limit:?})"
            );
        }
    }
}

/// The pipeline times every attempt on tokio's clock, so a slow-call rule judges its calls: two
/// attempts of 2 s against a 1 s threshold trip the breaker (reason `slow_call_rate`).
#[tokio::test(start_paused = true)]
async fn a_slow_call_rule_judges_the_pipelines_timed_attempts() {
    let breaker = toolbreaker::CircuitBreaker::builder()
        .slow_calls(Duration::from_secs(1), 1.0)
        .window(toolbreaker::Window::Calls(2))
        .minimum_calls(2)
        .build()
        .unwrap();
    let guard = ToolGuard::new(Duration::from_secs(5), toolbreaker::RetryPolicy::none());
    let run = AgentRun::new("r", Duration::from_secs(60), 10);
    let classify = |_: &Result<u32, ()>| toolbreaker::Outcome::Success;
    for _ in 0..2 {
        let answer = guard
            .call(&run, &breaker, classify, || async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Ok::<u32, ()>(7)
            })
            .await;
        assert!(matches!(answer, ToolResult::Ok { .. }), "{answer:?}");
    }
    assert_eq!(breaker.state(), toolbreaker::State::Open);
}

/// The bug a new user hit: the retries of a call failed, the breaker opened on them, and the model
/// read only "blocked", as if the call had never reached the dependency. Now a blocked result
/// that follows failed attempts of its call says how many failed and how the last failed, in its
/// JSON and at the end of its message; a call blocked at its first attempt reads as before.
#[tokio::test(start_paused = true)]
async fn a_call_blocked_after_its_attempts_failed_tells_the_model_what_they_were() {
    let (breaker, _mock) = breaker(2);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(5));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let fail = || async { Err((503, LeakyError)) };
    let result = guard
        .call(&run, &breaker, classify::with(&StatusErrors), fail)
        .await;
    let json = result.to_json().unwrap();
    let (shown, elapsed) = json.rsplit_once(r#","elapsed_ms":"#).unwrap();
    assert_eq!(
        shown,
        r#"{"status":"blocked","dependency":"search","reason":"dependency_open","retry_after_ms":30000,"message":"search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 30.0 s. This call failed twice before that; the last failure: unavailable (HTTP 503).","failed_attempts":2,"last_failure":"unavailable","last_http_status":503,"attempts":2"#
    );
    // One 100 ms backoff; tokio's timer rounds a deadline up to its next millisecond tick.
    assert!(["100}", "101}"].contains(&elapsed), "{elapsed}");
    let back: ToolResult<&str> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, result);
    let tried = result.failed_attempts().unwrap();
    assert_eq!(
        (tried.count, tried.last, tried.last_http_status),
        (2, FailedKind::Unavailable, Some(503))
    );

    // The next call is blocked at its first attempt: the JSON it always had, nothing tried.
    let result = guard
        .call(&run, &breaker, classify::with(&StatusErrors), fail)
        .await;
    assert_eq!(result.failed_attempts(), None);
    assert_eq!(
        result.to_json().unwrap(),
        r#"{"status":"blocked","dependency":"search","reason":"dependency_open","retry_after_ms":30000,"message":"search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 30.0 s.","attempts":0,"elapsed_ms":0}"#
    );

    // Blocked by another's doing while this call waited to retry (an operator isolated the
    // dependency): the breaker refuses the retry itself, and the model still hears of the
    // failure. A timeout, which has no status, reads as its kind alone.
    let (breaker, _mock) = self::breaker(10);
    let dep = Dependency::new(&[Answer::Hang]);
    let guard = ToolGuard::new(Duration::from_secs(1), no_jitter(5));
    let isolate = async {
        tokio::time::sleep(Duration::from_millis(1_050)).await;
        breaker.force_open();
    };
    let (result, ()) = tokio::join!(call(&guard, &run, &breaker, &dep), isolate);
    assert_eq!(dep.attempts(), 1);
    let ToolResult::Blocked {
        reason: BlockedReason::Isolated,
        message,
        tried: Some(tried),
        call: Some(stats),
        ..
    } = &result
    else {
        panic!("expected blocked (isolated), got {result:?}")
    };
    assert_eq!((tried.count, tried.last), (1, FailedKind::Timeout));
    assert_eq!(tried.last_http_status, None);
    assert_eq!(stats.attempts, 1);
    assert!(
        message.starts_with("search is switched off by its operators")
            && !message.contains("try after")
            && message.ends_with(" tool. This call failed once before that: timed out."),
        "{message}"
    );
    let json = result.to_json().unwrap();
    assert!(
        json.contains(r#","failed_attempts":1,"last_failure":"timeout","attempts":1,"#),
        "{json}"
    );
}

/// The same fault for every stop: a run that stops a call after attempts of it failed (its
/// tool-call budget spent at the retry, its token budget spent during an attempt, its deadline
/// cutting a retry short) tells the model what was tried; an attempt the deadline cut is not one
/// of the failures, and a call stopped before any attempt carries none.
#[tokio::test(start_paused = true)]
async fn a_call_stopped_after_its_attempts_failed_tells_the_model_what_they_were() {
    let (breaker, _mock) = breaker(100);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(10));

    // The tool-call budget: three attempts, all failed; the fourth is not allowed.
    let run = AgentRun::new("run-9", Duration::from_secs(600), 3);
    let dep = Dependency::new(&[Answer::Unavailable]);
    let result = call(&guard, &run, &breaker, &dep).await;
    let ToolResult::Stopped {
        stop_reason: StopReason::ToolCallBudget,
        message,
        tried: Some(tried),
        call: Some(stats),
        ..
    } = &result
    else {
        panic!("expected stopped (budget), got {result:?}")
    };
    assert_eq!(
        (tried.count, tried.last, stats.attempts),
        (3, FailedKind::Unavailable, 3)
    );
    assert_eq!(
        message,
        "This run has used its tool-call budget; no more tool calls can be made in it. Answer \
         with what you know now. This call failed 3 times before that; the last failure: \
         unavailable."
    );
    let json = result.to_json().unwrap();
    assert!(
        json.contains(r#","failed_attempts":3,"last_failure":"unavailable","attempts":3,"#),
        "{json}"
    );
    let back: ToolResult<&str> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, result);
    // A later call on the stopped run never started: nothing tried, the JSON it always had.
    let later = call(&guard, &run, &breaker, &dep).await;
    assert_eq!(later.failed_attempts(), None);
    assert!(
        later
            .to_json()
            .unwrap()
            .ends_with(r#"Answer with what you know now.","attempts":0,"elapsed_ms":0}"#)
    );

    // The token budget, spent by the runtime while the first attempt ran: the call stops
    // before its retry.
    let run = AgentRun::new("r", Duration::from_secs(600), 100).with_token_budget(10);
    let result = guard
        .call(&run, &breaker, classify, || {
            let _ = run.spend_tokens(10);
            dep.attempt()
        })
        .await;
    assert!(
        matches!(
            &result,
            ToolResult::Stopped {
                stop_reason: StopReason::TokenBudget,
                tried: Some(tried),
                ..
            } if tried.count == 1
        ),
        "{result:?}"
    );

    // The deadline, cutting the retry short: the first attempt failed, the cut one is not
    // counted as a failure, though both reached the dependency.
    let run = AgentRun::new("r", Duration::from_secs(3), 100);
    let dep = Dependency::new(&[Answer::Unavailable, Answer::Hang]);
    let result = call(&guard, &run, &breaker, &dep).await;
    let ToolResult::Stopped {
        stop_reason: StopReason::Deadline,
        message,
        tried: Some(tried),
        call: Some(stats),
        ..
    } = &result
    else {
        panic!("expected stopped (deadline), got {result:?}")
    };
    assert_eq!((tried.count, stats.attempts), (1, 2));
    assert!(
        message.ends_with(
            "Answer with what you know now. This call failed once before that: unavailable."
        ),
        "{message}"
    );

    // Cut at its first attempt: nothing failed before, nothing is said.
    let run = AgentRun::new("r", Duration::from_secs(3), 100);
    let dep = Dependency::new(&[Answer::Hang]);
    let result = call(&guard, &run, &breaker, &dep).await;
    assert!(
        matches!(
            &result,
            ToolResult::Stopped {
                stop_reason: StopReason::Deadline,
                tried: None,
                ..
            }
        ),
        "{result:?}"
    );
    assert!(!result.to_json().unwrap().contains("failed_attempts"));
}

/// The inference a new user hit: `classify` comes before `attempt` in `ToolGuard::call`, so a
/// closure written in place that calls a method on what its argument holds cannot infer that
/// argument (`|r| r.as_ref().map_or_else(|e| e.outcome(), ..)` is "type annotations needed"); with
/// its type written, `|r: &Result<T, E>|`, it compiles, in `call` and `call_observed`. This file
/// compiling is half the test.
#[tokio::test(start_paused = true)]
async fn a_classification_that_calls_a_method_compiles_with_its_argument_type_written() {
    struct ApiError(u16);
    impl ApiError {
        fn outcome(&self) -> Outcome {
            match self.0 {
                500.. => Outcome::Failure(FailureKind::Unavailable),
                _ => Outcome::Ignored,
            }
        }
    }
    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let result = guard
        .call(
            &run,
            &breaker,
            |r: &Result<String, ApiError>| {
                r.as_ref()
                    .map_or_else(|e| e.outcome(), |_| Outcome::Success)
            },
            || async { Err(ApiError(404)) },
        )
        .await;
    assert!(
        matches!(result, ToolResult::Failed { counted: false, .. }),
        "{result:?}"
    );
    let mut heard = Vec::new();
    let result = guard
        .call_observed(
            &run,
            &breaker,
            |r: &Result<String, ApiError>| {
                r.as_ref().err().map_or(Outcome::Success, ApiError::outcome)
            },
            || async { Err(ApiError(503)) },
            |attempt| heard.push(attempt.outcome),
        )
        .await;
    assert!(
        matches!(result, ToolResult::Failed { counted: true, .. }),
        "{result:?}"
    );
    assert_eq!(heard, [Outcome::Failure(FailureKind::Unavailable)]);
}

/// A 429's `Retry-After` of 30 years: the model is told the breaker's cap (10 minutes by
/// default), the time the breaker itself keeps the dependency open, not the raw hint.
#[tokio::test(start_paused = true)]
async fn a_huge_hint_reaches_the_model_cut_to_the_breaker_s_cap() {
    let breaker = toolbreaker::CircuitBreaker::builder()
        .failure_threshold(5)
        .build()
        .unwrap();
    let guard =
        toolbreaker::ToolGuard::new(Duration::from_secs(1), toolbreaker::RetryPolicy::none());
    let run = toolbreaker::AgentRun::new("r", Duration::from_secs(60), 10);
    let huge = Duration::from_secs(999_999_999);
    let result = guard
        .call(
            &run,
            &breaker,
            |_: &Result<(), ()>| {
                toolbreaker::Outcome::Failure(toolbreaker::FailureKind::RateLimited {
                    retry_after: Some(huge),
                })
            },
            || async { Err::<(), ()>(()) },
        )
        .await;
    let toolbreaker::ToolResult::Failed { retry_after_ms, .. } = &result else {
        panic!("{result:?}")
    };
    assert_eq!(*retry_after_ms, Some(600_000), "{result:?}");
}
