//! The gateway example's tool servers and its tool calls through the guard pipeline
//! (`ToolGuard::call_observed`), end to end over loopback sockets; and its `--config` file and
//! reload (`settings.rs`), without signals.
//!
//! The servers run in this process; the test switches their modes itself (never by wall time),
//! and the breakers read a mock clock that the test advances past each cooldown, so nothing here
//! sleeps. tokio's clock is real (the sockets are), but every per-call timeout and run deadline is
//! far longer than any loopback answer takes, so none of them decides an outcome.

use crate::{flags, listen, logging, settings, tools};

use std::sync::Arc;
use std::time::Duration;

use toolbreaker::{
    AgentRun, BlockedReason, CircuitBreaker, Config, FailureKind, Outcome, Registry, RetryPolicy,
    State, StopReason, ToolResult, TransitionReason, agent::Attempt,
};
use tools::{Cause, Mode, Tool, ToolError, ToolServer, call_tool};

const THRESHOLD: u32 = 3;
const COOLDOWN: Duration = Duration::from_millis(500);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Generous: on loopback every answer arrives long before it, so it never decides an outcome.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Longer than any test takes, so no run reaches its deadline by accident.
const RUN_TIME_LIMIT: Duration = Duration::from_secs(120);
/// More attempts than any test makes, unless it sets out to spend them.
const RUN_BUDGET: u32 = 1_000;
const GRACE: Duration = Duration::from_secs(5);

fn registry() -> (Registry, Arc<toolbreaker::quanta::Mock>) {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let config = Config::new(THRESHOLD, COOLDOWN, PROBE_TIMEOUT).unwrap();
    let registry = Registry::builder()
        .default_config(config)
        .clock(clock)
        .build();
    (registry, mock)
}

fn run(id: &str) -> AgentRun {
    AgentRun::new(id, RUN_TIME_LIMIT, RUN_BUDGET)
}

/// One guard without retries: every call is at most one attempt, so hit counts are exact.
fn no_retries() -> tools::Guard {
    tools::guard(CALL_TIMEOUT, RetryPolicy::none())
}

/// One call through the pipeline, with the attempts it reported.
async fn call(
    guard: &tools::Guard,
    run: &AgentRun,
    breaker: &CircuitBreaker,
    client: &reqwest::Client,
    tool: Tool,
    url: &str,
) -> (ToolResult<String>, Vec<Attempt>) {
    let mut attempts = Vec::new();
    assert_eq!(breaker.name(), tool.name(), "the tool's own breaker");
    let result = call_tool(guard, run, breaker, client, url, |attempt| {
        attempts.push(*attempt)
    })
    .await;
    (result, attempts)
}

fn attempts_of(result: &ToolResult<String>) -> u32 {
    result.stats().expect("the pipeline's stats").attempts
}

fn transition(attempt: &Attempt) -> Option<(State, State)> {
    attempt.transition.map(|t| (t.from(), t.to()))
}

/// The breaker's reason, if the call was answered `blocked`.
fn blocked(result: &ToolResult<String>) -> Option<(BlockedReason, u64)> {
    match result {
        ToolResult::Blocked {
            reason,
            retry_after_ms,
            ..
        } => Some((*reason, *retry_after_ms)),
        _ => None,
    }
}

fn assert_failed(result: &ToolResult<String>, error_text: &str, counted_failure: bool) {
    match result {
        ToolResult::Failed { error, counted, .. } => {
            assert_eq!(error, error_text);
            assert_eq!(*counted, counted_failure);
        }
        other => panic!("expected failed ({error_text}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_503_trips_blocks_probes_once_and_recovers() {
    let server = ToolServer::spawn(Tool::Search).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, mock) = registry();
    let search = registry.get("search");
    let guard = no_retries();
    let run = Arc::new(run("agent-0-1"));
    let url = server.valid_url.clone();

    let (healthy, attempts) = call(&guard, &run, &search, &client, Tool::Search, &url).await;
    assert!(matches!(&healthy, ToolResult::Ok { value, .. } if value.contains("results")));
    assert_eq!(attempts_of(&healthy), 1);
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, Outcome::Success);
    assert_eq!(server.control.hits(), 1);

    // 1. 503: the breaker trips after `THRESHOLD` counted failures ...
    server.control.set_mode(Mode::Unavailable);
    for n in 1..=THRESHOLD {
        let (failed, attempts) = call(&guard, &run, &search, &client, Tool::Search, &url).await;
        assert_failed(&failed, "HTTP 503 Service Unavailable", true);
        assert!(
            matches!(
                &failed,
                ToolResult::Failed { dependency, http_status: Some(503), .. } if dependency == "search"
            ),
            "{failed:?}"
        );
        assert_eq!(attempts.len(), 1, "no retries: {attempts:?}");
        let attempt = attempts[0];
        assert_eq!(attempt.outcome, Outcome::Failure(FailureKind::Unavailable));
        assert!(!attempt.probe);
        assert!(!attempt.timed_out);
        let expected = (n == THRESHOLD).then_some((State::Closed, State::Open));
        assert_eq!(transition(&attempt), expected, "failure {n}");
    }
    assert_eq!(search.state(), State::Open);
    let hits_at_trip = server.control.hits();
    assert_eq!(hits_at_trip, 1 + u64::from(THRESHOLD));

    // ... and while open nothing reaches the server, and nothing is drawn from the run's budget.
    let calls_at_trip = run.tool_calls();
    for _ in 0..50 {
        let (result, attempts) = call(&guard, &run, &search, &client, Tool::Search, &url).await;
        assert_eq!(
            blocked(&result),
            Some((BlockedReason::DependencyOpen, COOLDOWN.as_millis() as u64)),
            "the mock clock has not moved: {result:?}"
        );
        assert_eq!(attempts_of(&result), 0);
        assert!(attempts.is_empty());
    }
    assert_eq!(
        server.control.hits(),
        hits_at_trip,
        "blocked calls are never sent"
    );
    assert_eq!(run.tool_calls(), calls_at_trip);

    // 2. The cooldown passes: of many racing calls exactly one probe reaches the server; it
    // still gets a 503, so the breaker reopens.
    mock.increment(COOLDOWN);
    assert_eq!(search.state(), State::HalfOpen);
    let racers: Vec<_> = (0..16)
        .map(|_| {
            let (client, search, run, url, guard) = (
                client.clone(),
                Arc::clone(&search),
                Arc::clone(&run),
                url.clone(),
                guard.clone(),
            );
            tokio::spawn(
                async move { call(&guard, &run, &search, &client, Tool::Search, &url).await },
            )
        })
        .collect();
    let mut admitted = Vec::new();
    for racer in racers {
        let (result, attempts) = racer.await.unwrap();
        match blocked(&result) {
            Some((reason, _)) => {
                assert!(matches!(
                    reason,
                    BlockedReason::ProbeInFlight | BlockedReason::DependencyOpen
                ));
                assert!(attempts.is_empty());
            }
            None => admitted.push((result, attempts)),
        }
    }
    assert_eq!(admitted.len(), 1, "exactly one probe: {admitted:?}");
    let (result, attempts) = &admitted[0];
    assert_failed(result, "HTTP 503 Service Unavailable", true);
    assert_eq!(attempts.len(), 1);
    let probe = attempts[0];
    assert!(probe.probe);
    assert_eq!(probe.outcome, Outcome::Failure(FailureKind::Unavailable));
    assert_eq!(transition(&probe), Some((State::HalfOpen, State::Open)));
    assert_eq!(server.control.hits(), hits_at_trip + 1);
    assert_eq!(search.state(), State::Open);
    let (result, _) = call(&guard, &run, &search, &client, Tool::Search, &url).await;
    assert!(blocked(&result).is_some());
    assert_eq!(server.control.hits(), hits_at_trip + 1);

    // The dependency recovers; after the next cooldown the probe succeeds and closes the breaker.
    server.control.set_mode(Mode::Healthy);
    mock.increment(COOLDOWN);
    let (result, attempts) = call(&guard, &run, &search, &client, Tool::Search, &url).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(attempts.len(), 1);
    assert!(attempts[0].probe);
    assert_eq!(attempts[0].outcome, Outcome::Success);
    assert_eq!(
        transition(&attempts[0]),
        Some((State::HalfOpen, State::Closed))
    );
    assert_eq!(search.state(), State::Closed);
    assert_eq!(server.control.hits(), hits_at_trip + 2);

    // Later calls reach the server again.
    for _ in 0..10 {
        let (result, attempts) = call(&guard, &run, &search, &client, Tool::Search, &url).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(attempts.len(), 1);
        assert!(!attempts[0].probe);
        assert_eq!(attempts[0].transition, None);
    }
    assert_eq!(server.control.hits(), hits_at_trip + 12);
    assert_eq!(
        u64::from(run.tool_calls()),
        server.control.hits(),
        "the run's budget counts exactly the attempts sent"
    );

    server.shutdown(GRACE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_400s_for_bad_arguments_never_trip_and_are_never_retried() {
    let server = ToolServer::spawn(Tool::Files).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, _mock) = registry();
    let files = registry.get("files");
    // Retries allowed (with tiny real delays), so that a 400 not being retried means something.
    let guard = tools::guard(
        CALL_TIMEOUT,
        RetryPolicy::default()
            .max_retries(3)
            .min_delay(Duration::from_millis(1))
            .jitter(false),
    );
    let run = run("agent-0-1");

    // Ten invalid calls in a row (far past the threshold), then a mix.
    let invalid = (0..10).map(|_| false).chain((0..30).map(|i| i % 3 != 0));
    let mut calls = 0;
    for valid in invalid {
        let url = if valid {
            &server.valid_url
        } else {
            &server.invalid_url
        };
        let (result, attempts) = call(&guard, &run, &files, &client, Tool::Files, url).await;
        calls += 1;
        assert_eq!(attempts_of(&result), 1, "call {calls}: {result:?}");
        assert_eq!(attempts.len(), 1, "call {calls} was retried or blocked");
        if valid {
            assert!(result.is_ok(), "{result:?}");
            assert_eq!(attempts[0].outcome, Outcome::Success);
        } else {
            assert_failed(&result, "HTTP 400 Bad Request", false);
            assert_eq!(
                attempts[0].outcome,
                Outcome::Ignored,
                "a 400 is the caller's fault"
            );
        }
        assert_eq!(attempts[0].transition, None);
        assert_eq!(files.state(), State::Closed, "after call {calls}");
    }
    assert_eq!(
        server.control.hits(),
        calls,
        "every call reached the server, once"
    );

    server.shutdown(GRACE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_429_carries_retry_after_to_the_outcome_and_trips() {
    let quotes_server = ToolServer::spawn(Tool::Quotes).await.unwrap();
    let files_server = ToolServer::spawn(Tool::Files).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, _mock) = registry();
    let quotes = registry.get("quotes");
    let files = registry.get("files");
    let guard = no_retries();
    let run = run("agent-0-1");
    let rate_limited = Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(Duration::from_secs(1)),
    });

    // The attempt itself classifies, so its error carries the hint.
    quotes_server.control.set_mode(Mode::RateLimited {
        retry_after_secs: 1,
    });
    let error = tools::fetch(&client, &quotes_server.valid_url)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ToolError {
            outcome: rate_limited,
            cause: Cause::Status(429),
        }
    );
    assert_eq!(
        error.to_string(),
        "HTTP 429 Too Many Requests (Retry-After: 1 s)"
    );
    assert_eq!(quotes.state(), State::Closed, "fetch alone records nothing");
    let hits_before = quotes_server.control.hits();

    for n in 1..=THRESHOLD {
        let (result, attempts) = call(
            &guard,
            &run,
            &quotes,
            &client,
            Tool::Quotes,
            &quotes_server.valid_url,
        )
        .await;
        assert_failed(
            &result,
            "HTTP 429 Too Many Requests (Retry-After: 1 s)",
            true,
        );
        assert_eq!(attempts.len(), 1);
        assert_eq!(attempts[0].outcome, rate_limited);
        assert_eq!(
            attempts[0].outcome.retry_after(),
            Some(Duration::from_secs(1))
        );
        let expected = (n == THRESHOLD).then_some((State::Closed, State::Open));
        assert_eq!(transition(&attempts[0]), expected, "failure {n}");
    }
    assert_eq!(quotes.state(), State::Open);
    let (result, attempts) = call(
        &guard,
        &run,
        &quotes,
        &client,
        Tool::Quotes,
        &quotes_server.valid_url,
    )
    .await;
    assert!(blocked(&result).is_some(), "{result:?}");
    assert!(attempts.is_empty());
    assert_eq!(
        quotes_server.control.hits(),
        hits_before + u64::from(THRESHOLD)
    );

    // One outage never blocks another dependency.
    let (result, _) = call(
        &guard,
        &run,
        &files,
        &client,
        Tool::Files,
        &files_server.valid_url,
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(files.state(), State::Closed);

    quotes_server.shutdown(GRACE).await.unwrap();
    files_server.shutdown(GRACE).await.unwrap();
}

/// `quotes`' partial outage, as the gateway schedules it: one request in three answered 429,
/// never two in a row. The consecutive rule alone (every other dependency's settings) never
/// trips on it; the gateway's settings for `quotes`, which add a failure-rate rule, trip with
/// reason `failure_rate`, block calls with a result the model can act on, trip again after a
/// probe that the outage let through closed them, and close for good once the outage is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_partial_outage_trips_only_its_failure_rate_rule_and_recovers() {
    const PARTIAL: Mode = Mode::PartlyRateLimited {
        one_in: 3,
        retry_after_secs: 1,
    };
    const RATE_LIMITED: &str = "HTTP 429 Too Many Requests (Retry-After: 1 s)";
    let server = ToolServer::spawn(Tool::Quotes).await.unwrap();
    let client = tools::client().unwrap();
    let guard = no_retries();
    let run = run("agent-0-1");
    let url = server.valid_url.clone();
    let built_in = settings::built_in();
    assert_eq!(settings::RATED, Tool::Quotes);
    let rated = built_in.config_for(Tool::Quotes.name());
    assert_eq!(rated.failure_threshold(), Some(settings::FAILURE_THRESHOLD));
    assert_eq!(rated.failure_rate(), Some(settings::FAILURE_RATE));
    assert_eq!(
        rated.window(),
        Some(toolbreaker::Window::Calls(settings::WINDOW_CALLS))
    );
    assert_eq!(rated.minimum_calls(), Some(settings::MINIMUM_CALLS));
    assert_eq!(rated.cooldown(), settings::COOLDOWN);
    for tool in [Tool::Search, Tool::Weather, Tool::Files] {
        assert_eq!(built_in.config_for(tool.name()).failure_rate(), None);
    }
    // Each call asserts its outcome from the server's count of the requests it had while
    // failing: the 3rd, 6th, 9th, ... are answered 429 (the count goes on across breakers).
    let rate_limited = |failing_hits: u64| failing_hits.is_multiple_of(3);
    server.control.set_mode(PARTIAL);
    assert_eq!(
        server.control.mode(),
        PARTIAL,
        "one word holds the mode and both parameters"
    );
    assert_eq!(
        PARTIAL.describe(),
        "429 rate limited on 1 request in 3, Retry-After: 1"
    );
    assert!(PARTIAL.is_failing(), "its requests count as the outage's");

    // 1. The consecutive rule alone: a third of 60 calls fail, never two in a row; it never
    // trips.
    let (clock, _mock) = toolbreaker::quanta::Clock::mock();
    let consecutive_only = Registry::builder()
        .default_config(built_in.default_config())
        .clock(clock)
        .build();
    let quotes = consecutive_only.get("quotes");
    assert_eq!(quotes.config().failure_rate(), None);
    for n in 1..=60 {
        let (result, attempts) = call(&guard, &run, &quotes, &client, Tool::Quotes, &url).await;
        assert_eq!(attempts.len(), 1, "call {n}");
        if rate_limited(server.control.failing_hits()) {
            assert_failed(&result, RATE_LIMITED, true);
        } else {
            assert!(result.is_ok(), "call {n}: {result:?}");
        }
        assert_eq!(attempts[0].transition, None, "call {n}");
    }
    assert_eq!(quotes.state(), State::Closed);
    assert_eq!(server.control.failing_hits(), 60);

    // 2. The gateway's settings for `quotes`: the window empties on every transition, and from
    // its 10th judged call on, 30 % of failures trips it. The 10th call after the start (3 of
    // them failed) and after the close (4 failed) trips it, with reason `failure_rate`.
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let registry = Registry::builder()
        .config(built_in.clone())
        .clock(clock)
        .metrics(true)
        .build();
    let quotes = registry.get("quotes");
    assert_eq!(quotes.config(), rated);
    let mut blocked_json = None;
    for round in 1..=2 {
        for n in 1..=settings::MINIMUM_CALLS {
            let (result, attempts) = call(&guard, &run, &quotes, &client, Tool::Quotes, &url).await;
            assert_eq!(attempts.len(), 1, "round {round}, call {n}: {result:?}");
            if rate_limited(server.control.failing_hits()) {
                assert_failed(&result, RATE_LIMITED, true);
            } else {
                assert!(result.is_ok(), "round {round}, call {n}: {result:?}");
            }
            let trip = attempts[0].transition;
            if n < settings::MINIMUM_CALLS {
                assert_eq!(trip, None, "round {round}, call {n}");
            } else {
                let trip = trip.unwrap_or_else(|| panic!("round {round}: no trip"));
                assert_eq!((trip.from(), trip.to()), (State::Closed, State::Open));
                assert_eq!(
                    trip.reason(),
                    TransitionReason::FailureRate,
                    "round {round}"
                );
            }
        }
        assert_eq!(quotes.state(), State::Open, "round {round}");

        // While open nothing reaches the server; the agent gets `blocked` at once. The 429s'
        // `Retry-After: 1` keeps the breaker open 1 s from when it was heard (the mock clock has
        // not moved), spread upward by up to 10 %, longer than its 500 ms cooldown.
        let hits_at_trip = server.control.hits();
        let mut open_for = None;
        for _ in 0..20 {
            let (result, attempts) = call(&guard, &run, &quotes, &client, Tool::Quotes, &url).await;
            let (reason, wait_ms) = blocked(&result).unwrap_or_else(|| panic!("{result:?}"));
            assert_eq!(reason, BlockedReason::DependencyOpen, "{result:?}");
            assert!((1_000..=1_100).contains(&wait_ms), "{result:?}");
            assert_eq!(*open_for.get_or_insert(wait_ms), wait_ms, "one deadline");
            assert!(attempts.is_empty());
            blocked_json.get_or_insert_with(|| result.to_json().unwrap());
        }
        assert_eq!(
            server.control.hits(),
            hits_at_trip,
            "blocked calls are never sent"
        );

        // After the cooldown one probe goes through and succeeds: in round 1 the outage let it
        // through (two requests in three are answered), and the rate rule trips the breaker
        // again 10 calls later; before round 2's probe the outage is over.
        if round == 2 {
            server.control.set_mode(Mode::Healthy);
        }
        mock.increment(Duration::from_millis(open_for.expect("blocked calls")));
        let (result, attempts) = call(&guard, &run, &quotes, &client, Tool::Quotes, &url).await;
        assert!(result.is_ok(), "round {round}: {result:?}");
        assert!(attempts[0].probe);
        let close = attempts[0].transition.expect("the probe's verdict");
        assert_eq!((close.from(), close.to()), (State::HalfOpen, State::Closed));
        assert_eq!(close.reason(), TransitionReason::ProbeSucceeded);
        if round == 1 {
            assert_eq!(
                server.control.failing_hits(),
                60 + u64::from(settings::MINIMUM_CALLS) + 1,
                "the probe was sent during the outage"
            );
        }
    }
    let blocked_json = blocked_json.expect("a blocked call");
    assert!(
        blocked_json.starts_with(
            r#"{"status":"blocked","dependency":"quotes","reason":"dependency_open","retry_after_ms":1"#
        ),
        "{blocked_json}"
    );
    for n in 1..=30 {
        let (result, attempts) = call(&guard, &run, &quotes, &client, Tool::Quotes, &url).await;
        assert!(result.is_ok(), "call {n} after the outage: {result:?}");
        assert_eq!(attempts[0].transition, None);
    }
    assert_eq!(quotes.state(), State::Closed);

    // The breaker's own counters: two trips, both by the failure rate, none by 5 in a row.
    let metrics = quotes.metrics().unwrap();
    assert_eq!(metrics.transitions.failure_rate, 2);
    assert_eq!(metrics.transitions.failure_threshold, 0);
    assert_eq!(metrics.transitions.probe_succeeded, 2);
    assert_eq!(metrics.failures.rate_limited, 3 + 4);
    assert_eq!(metrics.blocked, 2 * 20);

    server.shutdown(GRACE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_is_refused_once_the_breaker_opens() {
    let server = ToolServer::spawn(Tool::Search).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, _mock) = registry();
    let search = registry.get("search");
    // More retries than the threshold leaves room for; tiny real delays.
    let guard = tools::guard(
        CALL_TIMEOUT,
        RetryPolicy::default()
            .max_retries(THRESHOLD + 2)
            .min_delay(Duration::from_millis(1))
            .max_delay(Duration::from_millis(4))
            .jitter(false),
    );
    let run = run("agent-0-1");
    server.control.set_mode(Mode::Unavailable);

    let (result, attempts) = call(
        &guard,
        &run,
        &search,
        &client,
        Tool::Search,
        &server.valid_url,
    )
    .await;

    // The first attempt and its retries each count; the one that trips the breaker is the last
    // sent: the next retry asks the breaker again and is refused.
    assert_eq!(
        blocked(&result),
        Some((BlockedReason::DependencyOpen, COOLDOWN.as_millis() as u64)),
        "{result:?}"
    );
    assert_eq!(attempts_of(&result), THRESHOLD);
    assert!(
        attempts_of(&result) >= 1,
        "a retry refused, not a call blocked"
    );
    let numbers: Vec<u32> = attempts.iter().map(|a| a.number).collect();
    assert_eq!(numbers, (1..=THRESHOLD).collect::<Vec<_>>());
    for attempt in &attempts {
        assert_eq!(attempt.outcome, Outcome::Failure(FailureKind::Unavailable));
    }
    assert_eq!(
        transition(attempts.last().unwrap()),
        Some((State::Closed, State::Open))
    );
    assert_eq!(
        server.control.hits(),
        u64::from(THRESHOLD),
        "no attempt was sent after the trip"
    );
    assert_eq!(run.tool_calls(), THRESHOLD);

    server.shutdown(GRACE).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_budget_or_deadline_sends_nothing() {
    let server = ToolServer::spawn(Tool::Files).await.unwrap();
    let client = tools::client().unwrap();
    let (registry, _mock) = registry();
    let files = registry.get("files");
    let guard = no_retries();

    let run = AgentRun::new("agent-0-1", RUN_TIME_LIMIT, 2);
    for _ in 0..2 {
        let (result, _) = call(
            &guard,
            &run,
            &files,
            &client,
            Tool::Files,
            &server.valid_url,
        )
        .await;
        assert!(result.is_ok(), "{result:?}");
    }
    for _ in 0..3 {
        let (result, attempts) = call(
            &guard,
            &run,
            &files,
            &client,
            Tool::Files,
            &server.valid_url,
        )
        .await;
        assert!(
            matches!(
                &result,
                ToolResult::Stopped { run_id, stop_reason: StopReason::ToolCallBudget, .. }
                    if run_id == "agent-0-1"
            ),
            "{result:?}"
        );
        assert_eq!(attempts_of(&result), 0);
        assert!(attempts.is_empty());
    }
    assert_eq!(server.control.hits(), 2);

    let late = AgentRun::new("agent-0-2", Duration::ZERO, RUN_BUDGET);
    let (result, _) = call(
        &guard,
        &late,
        &files,
        &client,
        Tool::Files,
        &server.valid_url,
    )
    .await;
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
    assert_eq!(server.control.hits(), 2);

    server.shutdown(GRACE).await.unwrap();
}

/// The gateway's `--config` file and its reload (what the SIGHUP handler calls), without signals.
mod reload {
    use std::path::PathBuf;

    use toolbreaker::{FailureKind, Outcome, Registry, RegistryConfig, State};

    use super::{Tool, settings};

    fn shipped() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/gateway/breakers.toml")
    }

    /// A scratch copy of the shipped file, under the target folder.
    fn scratch(name: &str) -> PathBuf {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::copy(shipped(), &path).unwrap();
        path
    }

    #[test]
    fn the_shipped_file_holds_the_built_in_settings() {
        assert_eq!(
            RegistryConfig::from_file(shipped()).unwrap(),
            settings::built_in()
        );
        assert_eq!(settings::initial(None).unwrap(), settings::built_in());
        assert_eq!(
            settings::initial(Some(&shipped())).unwrap(),
            settings::built_in()
        );
    }

    #[test]
    fn a_bad_file_at_start_names_the_dependency_and_field() {
        let path = scratch("gateway-start-bad.toml");
        std::fs::write(&path, "[dependencies.quotes]\nprobe_timeout_ms = \"2s\"\n").unwrap();
        let text = settings::initial(Some(&path)).unwrap_err();
        assert!(
            text.starts_with(
                "invalid breaker configuration file, [dependencies.\"quotes\"] `probe_timeout_ms`: "
            ),
            "{text}"
        );
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_reload_prints_one_line_per_change_and_a_bad_file_keeps_the_settings_in_force() {
        let path = scratch("gateway-reload.toml");
        let shown = path.display().to_string();
        let registry = Registry::builder()
            .config(settings::initial(Some(&path)).unwrap())
            .metrics(true)
            .build();
        let search = registry.get("search");
        let weather = registry.get("weather");

        // The same file again: nothing changed.
        assert_eq!(
            settings::reload(&registry, &path),
            Ok(vec![format!("reloaded {shown}: no change")])
        );

        // A new default cooldown and a threshold in `search`'s own section, its throttle taken
        // off (so that the failures recorded below are never shed): one line per change, the
        // default's first, then each dependency's in name order; the handles see the change.
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("cooldown_ms = 500 ", "cooldown_ms = 1000")
            .replace("adaptive_throttling = { k = 1.5, window_ms = 100 }\n", "")
            .replacen(
                "[dependencies.search]\n",
                "[dependencies.search]\nfailure_threshold = 3\n",
                1,
            );
        std::fs::write(&path, text).unwrap();
        // `quotes`' section takes its cooldown from [default]: it changes too, though no
        // breaker has been asked for it yet; so do the pool's members, whose breakers the
        // registry made for the pool.
        assert_eq!(
            settings::reload(&registry, &path),
            Ok(vec![
                format!("reloaded {shown}: default: cooldown_ms 500 -> 1000"),
                format!("reloaded {shown}: llm-a: cooldown_ms 500 -> 1000"),
                format!("reloaded {shown}: llm-b: cooldown_ms 500 -> 1000"),
                format!("reloaded {shown}: llm-c: cooldown_ms 500 -> 1000"),
                format!("reloaded {shown}: quotes: cooldown_ms 500 -> 1000"),
                format!(
                    "reloaded {shown}: search: failure_threshold 5 -> 3, adaptive_throttling k 1.5 \
                     over 100 ms -> off, cooldown_ms 500 -> 1000"
                ),
                format!("reloaded {shown}: weather: cooldown_ms 500 -> 1000"),
            ])
        );
        assert_eq!(search.config().failure_threshold(), Some(3));
        assert_eq!(weather.config().cooldown().as_millis(), 1000);

        // A threshold lowered to the failures a closed breaker already has trips it, and the
        // line says so.
        for _ in 0..2 {
            search
                .try_acquire()
                .unwrap()
                .record(Outcome::Failure(FailureKind::Unavailable));
        }
        assert_eq!(search.state(), State::Closed);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("failure_threshold = 3", "failure_threshold = 2");
        std::fs::write(&path, text).unwrap();
        let lines = settings::reload(&registry, &path).unwrap();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(&format!(
                "reloaded {shown}: search: failure_threshold 3 -> 2 (closed -> open"
            )),
            "{lines:?}"
        );
        assert_eq!(search.state(), State::Open);
        let metrics = search.metrics().unwrap();
        assert_eq!(metrics.failures.unavailable, 2);

        // A bad file: one line naming the dependency and field, and nothing changes.
        let in_force = registry.configuration();
        let good = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            good.replace("failure_threshold = 2", "failure_threshold = 0"),
        )
        .unwrap();
        let line = settings::reload(&registry, &path).unwrap_err();
        assert!(
            line.starts_with(&format!("not reloaded {shown}: ")),
            "{line}"
        );
        assert!(
            line.contains("[dependencies.\"search\"] `failure_threshold`"),
            "{line}"
        );
        assert!(
            line.ends_with("; the configuration in force is kept"),
            "{line}"
        );
        assert_eq!(registry.configuration(), in_force);
        assert_eq!(search.config().failure_threshold(), Some(2));
        assert_eq!(
            search.state(),
            State::Open,
            "a rejected file touches no breaker"
        );

        // A misspelt key is refused too, not ignored.
        std::fs::write(&path, good.replace("cooldown_ms = 1000", "cooldown = 1000")).unwrap();
        let line = settings::reload(&registry, &path).unwrap_err();
        assert!(line.contains("[default] `cooldown`: unknown key"), "{line}");
        assert_eq!(registry.configuration(), in_force);

        // A file that is gone: the same.
        std::fs::remove_file(&path).unwrap();
        let line = settings::reload(&registry, &path).unwrap_err();
        assert!(line.contains("cannot read"), "{line}");
        assert_eq!(registry.configuration(), in_force);
    }

    /// A section for a dependency that is none of the gateway's tools: refused at start and on
    /// reload, naming the section and the tool it most likely means; on reload the settings in
    /// force are kept.
    #[test]
    fn a_section_for_no_tool_is_refused_naming_the_closest_tool() {
        let path = scratch("gateway-unknown-section.toml");
        let good = std::fs::read_to_string(&path).unwrap();
        let registry = Registry::builder()
            .config(settings::initial(Some(&path)).unwrap())
            .build();
        let search = registry.get("search");

        std::fs::write(
            &path,
            format!("{good}\n[dependencies.serch]\nfailure_threshold = 1\n"),
        )
        .unwrap();
        assert_eq!(
            settings::initial(Some(&path)),
            Err(
                "unknown dependency section [dependencies.\"serch\"]; did you mean \"search\"?"
                    .to_owned()
            )
        );
        let in_force = registry.configuration();
        let shown = path.display();
        assert_eq!(
            settings::reload(&registry, &path),
            Err(format!(
                "not reloaded {shown}: unknown dependency section [dependencies.\"serch\"]; \
                 did you mean \"search\"?; the configuration in force is kept"
            ))
        );
        assert_eq!(registry.configuration(), in_force);
        assert_eq!(
            search.config().failure_threshold(),
            Some(settings::FAILURE_THRESHOLD)
        );

        // Each unknown section is named; a name near no tool lists the tools instead.
        std::fs::write(
            &path,
            format!(
                "{good}\n[dependencies.Wether]\ncooldown_ms = 9\n[dependencies.calendar]\n\
                 cooldown_ms = 9\n[dependencies.files]\ncooldown_ms = 9\n"
            ),
        )
        .unwrap();
        assert_eq!(
            settings::initial(Some(&path)),
            Err("unknown dependency section [dependencies.\"Wether\"]; did you mean \"weather\"?; \
                 unknown dependency section [dependencies.\"calendar\"]; the gateway's dependencies \
                 are \"search\", \"weather\", \"quotes\", \"files\", \"llm-a\", \"llm-b\", \"llm-c\""
                .to_owned())
        );
        assert!(settings::reload(&registry, &path).is_err());
        assert_eq!(registry.configuration(), in_force);

        // A section for each tool and provider is accepted, and put in force on reload (the
        // shipped file has `quotes`', `weather`'s and `search`'s already: each gets the key).
        let shipped = [settings::RATED, settings::CAPPED, settings::THROTTLED].map(Tool::name);
        let every_tool: String = settings::dependencies()
            .filter(|name| !shipped.contains(name))
            .map(|name| format!("\n[dependencies.{name}]\nfailure_threshold = 2\n"))
            .collect();
        let good = shipped.iter().fold(good, |good, name| {
            let section = format!("[dependencies.{name}]\n");
            good.replacen(&section, &format!("{section}failure_threshold = 2\n"), 1)
        });
        std::fs::write(&path, format!("{good}{every_tool}")).unwrap();
        let config = settings::initial(Some(&path)).unwrap();
        assert_eq!(config.dependencies().count(), 7);
        assert_eq!(settings::reload(&registry, &path).unwrap().len(), 7);
        assert_eq!(search.config().failure_threshold(), Some(2));
        std::fs::remove_file(path).unwrap();
    }

    /// The pool `llm`: a file without `[pools.llm]` gets the built-in one; one whose pool names
    /// a member that is none of the providers, or has another pool, is refused at start and on
    /// reload; a reload that changes the groups says so, and the registry's pool follows.
    #[test]
    fn the_pool_section_is_checked_filled_in_and_reloaded() {
        let path = scratch("gateway-pool.toml");
        let shown = path.display().to_string();
        let good = std::fs::read_to_string(&path).unwrap();
        let (without, _) = good.split_once("[pools.llm]").unwrap();
        std::fs::write(&path, without).unwrap();
        assert_eq!(
            settings::initial(Some(&path)).unwrap(),
            settings::built_in()
        );

        std::fs::write(&path, &good).unwrap();
        let registry = Registry::builder()
            .config(settings::initial(Some(&path)).unwrap())
            .build();
        let groups = |registry: &Registry| -> Vec<Vec<String>> {
            let pool = registry.pool(crate::providers::POOL).expect("the pool llm");
            pool.groups()
                .map(|g| g.iter().map(|b| b.name().to_owned()).collect())
                .collect()
        };
        assert_eq!(groups(&registry), [vec!["llm-a", "llm-b"], vec!["llm-c"]]);

        let bad_member = good.replace(r#"["llm-c"]]"#, r#"["llm-d"]]"#);
        std::fs::write(&path, &bad_member).unwrap();
        let why =
            "[pools.\"llm\"] `groups`: \"llm-d\" is none of the providers (llm-a, llm-b, llm-c)";
        assert_eq!(settings::initial(Some(&path)), Err(why.to_owned()));
        assert_eq!(
            settings::reload(&registry, &path),
            Err(format!(
                "not reloaded {shown}: {why}; the configuration in force is kept"
            ))
        );
        std::fs::write(
            &path,
            format!("{good}\n[pools.search]\ngroups = [[\"search\"]]\n"),
        )
        .unwrap();
        assert_eq!(
            settings::initial(Some(&path)),
            Err(
                "unknown pool section [pools.\"search\"]; the gateway's pool is \"llm\"".to_owned()
            )
        );
        assert_eq!(groups(&registry), [vec!["llm-a", "llm-b"], vec!["llm-c"]]);

        // One group of three: the reload says the pool changed, and the registry's pool is new.
        let flat = good.replace(
            r#"[["llm-a", "llm-b"], ["llm-c"]]"#,
            r#"[["llm-a", "llm-b", "llm-c"]]"#,
        );
        std::fs::write(&path, flat).unwrap();
        assert_eq!(
            settings::reload(&registry, &path),
            Ok(vec![format!("reloaded {shown}: pool llm: groups changed")])
        );
        assert_eq!(groups(&registry), [vec!["llm-a", "llm-b", "llm-c"]]);
        std::fs::remove_file(path).unwrap();
    }
}

/// The gateway's numeric flags: a number of any size that is too large says so, with the most
/// accepted; one too small, the least; anything else is not a number.
mod flags_tests {
    use std::time::Duration;

    use super::flags::{seconds, split, whole_number};

    #[test]
    fn a_value_written_into_a_long_flag_is_split_off_and_nothing_else_is() {
        let owned = |flag: &str, value: Option<&str>| (flag.to_owned(), value.map(str::to_owned));
        for (arg, want) in [
            ("--duration=4", owned("--duration", Some("4"))),
            ("--config=a=b.toml", owned("--config", Some("a=b.toml"))),
            ("--json=", owned("--json", Some(""))),
            ("--json", owned("--json", None)),
            ("-h=1", owned("-h=1", None)),
            ("x=--y", owned("x=--y", None)),
        ] {
            assert_eq!(split(String::from(arg)), want, "{arg}");
        }
    }

    #[test]
    fn a_whole_number_too_large_for_any_integer_type_is_too_large_with_the_maximum() {
        let too_large = |text: &str| {
            Err(format!(
                "--concurrency: `{text}` is too large: at most 1000"
            ))
        };
        let too_small =
            |text: &str| Err(format!("--concurrency: `{text}` is too small: at least 1"));
        let past_u128 = "9".repeat(50);
        let negative_past_u128 = format!("-{past_u128}");
        for (text, want) in [
            ("64", Ok(64)),
            (" 1000 ", Ok(1000)),
            ("1", Ok(1)),
            ("1001", too_large("1001")),
            ("99999999999999999999", too_large("99999999999999999999")),
            (past_u128.as_str(), too_large(&past_u128)),
            ("0", too_small("0")),
            ("-5", too_small("-5")),
            (negative_past_u128.as_str(), too_small(&negative_past_u128)),
            (
                "many",
                Err("--concurrency: `many` is not a whole number".to_owned()),
            ),
            (
                "2.5",
                Err("--concurrency: `2.5` is not a whole number".to_owned()),
            ),
            (
                "-",
                Err("--concurrency: `-` is not a whole number".to_owned()),
            ),
            (
                "",
                Err("--concurrency: `` is not a whole number".to_owned()),
            ),
        ] {
            assert_eq!(
                whole_number("--concurrency", text, 1, 1000),
                want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn seconds_too_large_or_too_small_say_so_with_the_limit() {
        assert_eq!(
            seconds("--duration", "4", 3600.0),
            Ok(Duration::from_secs(4))
        );
        assert_eq!(
            seconds("--duration", "0.5", 3600.0),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            seconds("--duration", "3600", 3600.0),
            Ok(Duration::from_secs(3600))
        );
        for text in ["3600.5", "99999999999999999999", "1e400", "inf"] {
            assert_eq!(
                seconds("--duration", text, 3600.0),
                Err(format!(
                    "--duration: `{text}` is too large: at most 3600 seconds"
                )),
                "{text:?}"
            );
        }
        for text in ["0", "-1", "-inf", "1e-12"] {
            assert_eq!(
                seconds("--duration", text, 3600.0),
                Err(format!(
                    "--duration: `{text}` is too small: more than 0 seconds"
                )),
                "{text:?}"
            );
        }
        for text in ["soon", "NaN", ""] {
            assert_eq!(
                seconds("--duration", text, 3600.0),
                Err(format!("--duration: `{text}` is not a number of seconds")),
                "{text:?}"
            );
        }
    }
}

/// The gateway's `--log` value: a filter that would print nothing by mistake (a bare word that
/// is neither a level nor the crate's target, which tracing-subscriber reads as a target nothing
/// has) is refused naming the flag and the value, as is one that does not parse.
mod logging_tests {
    use super::logging::filter;

    #[test]
    fn a_bare_word_that_is_no_level_nor_the_crates_target_is_refused() {
        for text in [
            "notalevel",
            "infoo",
            "warn,notalevel",
            "toolbreakers",
            "debug, hyper",
        ] {
            let err = filter("--log", text).expect_err(text);
            let word = text.rsplit(',').next().unwrap().trim();
            assert!(
                err.starts_with(&format!("--log: `{word}` is not a level")),
                "{err}"
            );
        }
        for text in ["", " "] {
            let err = filter("--log", text).expect_err(text);
            assert!(
                err.starts_with(&format!("--log: `{text}` is empty")),
                "{err}"
            );
        }
        for text in ["toolbreaker=loud", "info[", "=info"] {
            let err = filter("--log", text).expect_err(text);
            assert!(
                err.starts_with(&format!("--log: `{text}` is not a filter directive")),
                "{err}"
            );
        }
    }

    #[test]
    fn levels_the_crates_target_and_target_level_pairs_are_accepted() {
        for text in [
            "info",
            "DEBUG",
            "off",
            "toolbreaker",
            "toolbreaker=debug",
            "toolbreaker::agent=trace",
            "warn,toolbreaker=debug",
            "hyper=debug",
            "info,",
        ] {
            assert!(
                filter("--log", text).is_ok(),
                "{text}: {:?}",
                filter("--log", text).err()
            );
        }
    }
}

/// Every listening socket the examples open reports a bind error with the address it tried.
mod listen_tests {
    use std::net::{Ipv4Addr, SocketAddr};

    #[tokio::test]
    async fn a_busy_port_is_named_in_the_error() {
        let taken = super::listen::tcp((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr: SocketAddr = taken.local_addr().unwrap();
        let err = super::listen::tcp(addr).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
        assert!(
            err.to_string()
                .starts_with(&format!("cannot listen on {addr}: ")),
            "{err}"
        );
    }
}

/// The `chat` tool's model providers (`providers.rs`) over loopback, and the pool `llm` over
/// them as the gateway calls it: a rate-limited provider's 429 carries its
/// `x-ratelimit-reset-requests` into the outcome's hint, on `/chat` and `/health` alike; a pool
/// call's retries move to another member and spill to the backup; a member's health check closes
/// it without any call.
mod providers_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::sync::mpsc;
    use tokio::time::Instant;
    use toolbreaker::{
        AgentRun, FailureKind, HealthCheck, Outcome, Registry, RegistryConfig, RetryPolicy, State,
        ToolResult, TransitionReason, classify,
    };

    use super::tools::{self, Cause, Classified};
    use super::{COOLDOWN, PROBE_TIMEOUT};
    use crate::providers::{
        POOL, PROVIDERS, ProviderMode, ProviderServer, RESET_HEADER, go_duration,
    };

    #[test]
    fn durations_are_written_as_go_writes_them() {
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_millis(350)), "350ms");
        assert_eq!(go_duration(Duration::from_millis(1400)), "1.4s");
        assert_eq!(go_duration(Duration::from_millis(2000)), "2s");
        assert_eq!(go_duration(Duration::from_millis(61_005)), "61.005s");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_pool_spills_to_the_backup_and_a_health_check_closes_a_member() {
        let origin = Instant::now();
        let mut servers = Vec::new();
        for name in PROVIDERS {
            servers.push(ProviderServer::spawn(name, origin).await.unwrap());
        }
        let client = tools::client().unwrap();

        // A rate-limited provider says when its quota resets, to a call and to a health check.
        servers[0].control.set_mode(ProviderMode::RateLimited {
            reset_at_ms: 30_000,
        });
        let limited = tools::fetch(&client, &servers[0].chat_url)
            .await
            .unwrap_err();
        assert_eq!(limited.cause, Cause::Status(429));
        let Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(hint),
        }) = limited.outcome
        else {
            panic!("a 429 with its hint: {limited:?}");
        };
        assert!(
            hint > Duration::from_secs(20) && hint <= Duration::from_secs(30),
            "{hint:?}"
        );
        let health = client.get(&servers[0].health_url).send().await.unwrap();
        assert_eq!(health.status().as_u16(), 429);
        assert!(health.headers().contains_key(RESET_HEADER));
        assert_eq!(servers[0].control.health_refused(), 1);

        // Both preferred providers answer 503; a breaker trips on one failure. The call's first
        // attempt goes to one of them, its retry to the other, its last to the backup.
        servers[0].control.set_mode(ProviderMode::Unavailable);
        servers[1].control.set_mode(ProviderMode::Unavailable);
        let (clock, mock) = toolbreaker::quanta::Clock::mock();
        let (heard, mut transitions) = mpsc::unbounded_channel();
        let config = toolbreaker::Config::new(1, COOLDOWN, PROBE_TIMEOUT).unwrap();
        let registry = Arc::new(
            Registry::builder()
                .config(super::settings::with_pool(RegistryConfig::new(config)))
                .clock(clock)
                .on_transition(move |event| {
                    let t = event.transition();
                    let _ = heard.send((event.dependency().to_owned(), t.to(), t.reason()));
                })
                .build(),
        );
        let pool = registry.pool(POOL).unwrap();
        let guard = tools::guard(
            super::CALL_TIMEOUT,
            RetryPolicy::default()
                .max_retries(2)
                .min_delay(Duration::from_millis(1)),
        );
        let run = AgentRun::new("agent-0-1", super::RUN_TIME_LIMIT, super::RUN_BUDGET);
        let mut asked = Vec::new();
        let result = guard
            .call_pool(&run, &pool, classify::with(&Classified), |member| {
                asked.push(member);
                let index = PROVIDERS.iter().position(|p| *p == member).unwrap();
                tools::fetch(&client, &servers[index].chat_url)
            })
            .await;
        assert!(
            matches!(&result, ToolResult::Ok { value, .. } if value.contains("llm-c")),
            "{result:?}"
        );
        assert_eq!(asked.len(), 3, "{asked:?}");
        assert!(
            asked[..2].contains(&"llm-a") && asked[..2].contains(&"llm-b"),
            "{asked:?}"
        );
        assert_eq!(asked[2], "llm-c");
        for name in ["llm-a", "llm-b"] {
            assert_eq!(registry.get(name).state(), State::Open, "{name}");
        }

        // llm-b recovers; its health check, not a call, probes it once the cooldown is over,
        // and closes it.
        let llm_b = registry.get("llm-b");
        let url = servers[1].health_url.parse().unwrap();
        llm_b
            .start_health_check(HealthCheck::http_get(client.clone(), url))
            .unwrap();
        servers[1].control.set_mode(ProviderMode::Healthy);
        mock.increment(COOLDOWN);
        let closed = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some((name, to, reason)) = transitions.recv().await {
                if name == "llm-b" && to == State::Closed {
                    return reason;
                }
            }
            panic!("the listener's channel closed");
        })
        .await
        .expect("the health check closed llm-b");
        assert_eq!(closed, TransitionReason::ProbeSucceeded);
        assert_eq!(llm_b.state(), State::Closed);
        assert_eq!(servers[1].control.health_ok(), 1);
        assert_eq!(servers[1].control.chat_hits(), 1, "no call was its probe");
        // The preferred group serves again (llm-a, half-open on the mock clock, may be drawn
        // for its probe): not the backup.
        assert_ne!(pool.try_acquire().unwrap().member(), "llm-c");
        for server in servers {
            server.shutdown(super::GRACE).await.unwrap();
        }
    }
}
