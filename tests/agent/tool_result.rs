//! `ToolResult`: the exact JSON the model receives.

use std::time::Duration;

use toolbreaker::{BlockedReason, CircuitBreaker, FailureKind, Outcome, ToolResult};

/// A real `Blocked` value: the `search` breaker tripped on a mock clock, then read `elapsed`
/// later.
fn blocked_open(cooldown_ms: u64, elapsed_ms: u64) -> toolbreaker::Blocked {
    let (clock, mock) = quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(1)
        .cooldown(Duration::from_millis(cooldown_ms))
        .clock(clock)
        .build()
        .unwrap();
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    mock.increment(Duration::from_millis(elapsed_ms));
    breaker.try_acquire().unwrap_err()
}

#[test]
fn blocked_while_open_is_exactly_the_documented_json() {
    let json = ToolResult::<()>::blocked("search", blocked_open(2_000, 160))
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"blocked","dependency":"search","reason":"dependency_open","retry_after_ms":1840,"message":"search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 1.8 s."}"#
    );
}

#[test]
fn blocked_while_a_probe_is_in_flight_is_exactly_this_json() {
    let (clock, mock) = quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("weather")
        .failure_threshold(1)
        .cooldown(Duration::from_millis(100))
        .probe_timeout(Duration::from_secs(5))
        .clock(clock)
        .build()
        .unwrap();
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));
    mock.increment(Duration::from_millis(100));
    let _probe = breaker.try_acquire().unwrap();
    mock.increment(Duration::from_millis(1_500));
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
    let json = ToolResult::<()>::blocked(breaker.name(), blocked)
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"blocked","dependency":"weather","reason":"probe_in_flight","retry_after_ms":3500,"message":"weather is being checked for recovery; do not call it again now. Answer with what you know, use another tool, or try after 3.5 s."}"#
    );
}

/// A call adaptive throttling shed: the dependency is degrading and nothing was sent; the model
/// is told to come back after a tenth of the throttle's window.
#[test]
fn a_call_shed_by_adaptive_throttling_is_exactly_this_json() {
    let (clock, _mock) = quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(1_000)
        .adaptive_throttling(2.0, Duration::from_secs(20))
        .clock(clock)
        .build()
        .unwrap();
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Unavailable));
    let blocked = (0..1_000)
        .find_map(|_| breaker.try_acquire().err())
        .expect("p is at least 1/2: some call is shed");
    assert_eq!(blocked.reason(), BlockedReason::Throttled);
    assert_eq!(blocked.reason().as_str(), "throttled");
    let json = ToolResult::<()>::blocked(breaker.name(), blocked)
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"blocked","dependency":"search","reason":"throttled","retry_after_ms":2000,"message":"search is degrading, so this call was held back here to let it recover; nothing was sent. Answer with what you know, use another tool, or try after 2.0 s."}"#
    );
}

#[test]
fn the_message_never_reads_as_retry_now() {
    // (remaining ms, seconds shown): rounded to the nearest tenth, never shown as 0.0 s.
    for (remaining, shown) in [
        (1, "0.1"),
        (49, "0.1"),
        (149, "0.1"),
        (150, "0.2"),
        (1_840, "1.8"),
        (1_850, "1.9"),
        (65_000, "65.0"),
    ] {
        let blocked = blocked_open(remaining, 0);
        let ToolResult::Blocked {
            message,
            retry_after_ms,
            ..
        } = ToolResult::<()>::blocked("search", blocked)
        else {
            panic!("blocked")
        };
        assert_eq!(retry_after_ms, remaining);
        assert!(
            message.ends_with(&format!("try after {shown} s.")),
            "{remaining} ms: {message}"
        );
        assert!(message.contains("do not call it again now"));
        assert!(!message.to_lowercase().contains("retry now"));
    }
}

#[test]
fn ok_carries_the_value_and_round_trips() {
    let ok = ToolResult::ok(serde_json::json!({"hits": ["a", "b"]}));
    let json = ok.to_json().unwrap();
    assert_eq!(json, r#"{"status":"ok","value":{"hits":["a","b"]}}"#);
    let back: ToolResult<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ok);
    assert!(back.is_ok());

    let blocked = ToolResult::<serde_json::Value>::blocked("search", blocked_open(100, 0));
    let back: ToolResult<serde_json::Value> =
        serde_json::from_str(&blocked.to_json().unwrap()).unwrap();
    assert_eq!(back, blocked);
}

#[test]
fn an_isolated_or_unnamed_breakers_result_reads_well() {
    let breaker = CircuitBreaker::builder().name("files").build().unwrap();
    breaker.force_open();
    let ToolResult::Blocked {
        dependency,
        reason,
        message,
        ..
    } = ToolResult::<()>::blocked(breaker.name(), breaker.try_acquire().unwrap_err())
    else {
        panic!("blocked")
    };
    assert_eq!(
        (dependency.as_str(), reason),
        ("files", BlockedReason::Isolated)
    );
    assert!(
        message.starts_with("files is switched off by its operators until they turn it back on;")
            && !message.contains("try after"),
        "{message}"
    );

    let unnamed = CircuitBreaker::builder().build().unwrap();
    unnamed.force_open();
    let ToolResult::Blocked {
        dependency,
        message,
        ..
    } = ToolResult::<()>::blocked(unnamed.name(), unnamed.try_acquire().unwrap_err())
    else {
        panic!("blocked")
    };
    assert_eq!(dependency, "");
    assert!(
        message.starts_with("This tool is switched off by its operators"),
        "{message}"
    );
}

#[test]
fn a_failed_result_tells_the_kind_and_status_and_words_only_when_given() {
    let unavailable = Outcome::Failure(FailureKind::Unavailable);
    let json = ToolResult::<()>::failed("search", unavailable, Some(503), None)
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"failed","dependency":"search","kind":"unavailable","http_status":503,"error":"unavailable (HTTP 503)","counted":true,"message":"search failed: unavailable (HTTP 503). Do not call it again now; answer with what you know or use another tool."}"#
    );
    let json = ToolResult::<()>::failed("files", Outcome::Ignored, Some(400), None)
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"failed","dependency":"files","kind":"rejected","http_status":400,"error":"HTTP 400","counted":false,"message":"files rejected the call: HTTP 400. Correct the arguments before calling it again."}"#
    );
    let connect = Outcome::Failure(FailureKind::Connect);
    let json = ToolResult::<()>::failed("weather", connect, None, None)
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"failed","dependency":"weather","kind":"connect","error":"could not connect","counted":true,"message":"weather failed: could not connect. Do not call it again now; answer with what you know or use another tool."}"#
    );
    let worded = ToolResult::<()>::failed(
        "files",
        Outcome::Ignored,
        None,
        Some("invalid argument `path`".to_owned()),
    );
    let json = worded.to_json().unwrap();
    assert_eq!(
        json,
        r#"{"status":"failed","dependency":"files","kind":"rejected","error":"invalid argument `path`","counted":false,"message":"files rejected the call: invalid argument `path`. Correct the arguments before calling it again."}"#
    );
    let back: ToolResult<()> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, worded);
    assert!(!back.is_ok(), "a failed call ran, and is not ok");
}

/// A call refused as its own fault is told what to do by what the status says was wrong: no
/// refusal of access (an auth error can reach `Ignored` through any classification) asks the
/// model to correct its arguments, which would not help; a missing resource points at the names
/// it gave; a bad request asks for the arguments to be corrected.
#[test]
fn a_refused_call_is_told_what_its_status_says_and_only_a_bad_request_blames_the_arguments() {
    let message = |status: Option<u16>| {
        let json = ToolResult::<()>::failed("files", Outcome::Ignored, status, None)
            .to_json()
            .unwrap();
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        json["message"].as_str().unwrap().to_owned()
    };
    for status in [401, 403, 407] {
        let message = message(Some(status));
        assert!(message.contains("refused access"), "{status}: {message}");
        assert!(!message.contains("arguments"), "{status}: {message}");
        assert!(
            message.contains("tell the user or use another tool"),
            "{status}: {message}"
        );
    }
    for status in [404, 410] {
        let message = message(Some(status));
        assert!(message.contains("was not found"), "{status}: {message}");
        assert!(
            !message.contains("Correct the arguments"),
            "{status}: {message}"
        );
    }
    for status in [Some(400), Some(409), Some(422), Some(499), None] {
        let message = message(status);
        assert!(
            message.ends_with("Correct the arguments before calling it again."),
            "{status:?}: {message}"
        );
    }
    // A status outside the client errors that a classification still called the call's own
    // fault: no advice about arguments, and no invitation to repeat it.
    let message = message(Some(501));
    assert!(
        message.ends_with("Do not repeat the same call unchanged."),
        "{message}"
    );
}

/// `map` turns an answer into what the model reads and keeps every other result as it is, for
/// each kind of result: the same JSON before and after, the Retry-After hint of a 429 included.
#[test]
fn map_changes_only_an_answer_and_keeps_every_other_result_whole() {
    let limited = Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(Duration::from_millis(7_000)),
    });
    let stats = toolbreaker::agent::CallStats {
        attempts: 2,
        elapsed_ms: 40,
    };
    let others: [ToolResult<Vec<u8>>; 4] = [
        ToolResult::blocked("search", blocked_open(2_000, 160)).with_stats(stats),
        ToolResult::failed("search", limited, Some(429), None).with_stats(stats),
        ToolResult::failed("search", Outcome::Ignored, Some(404), None),
        ToolResult::stopped("run-1", toolbreaker::StopReason::Deadline).with_stats(stats),
    ];
    for result in others {
        let before = result.to_json().unwrap();
        let after = result
            .map(|_| -> String { unreachable!("only an answer is mapped") })
            .to_json()
            .unwrap();
        assert_eq!(after, before);
    }
    let failed = ToolResult::<()>::failed("search", limited, Some(429), None);
    assert_eq!(
        failed.to_json().unwrap(),
        r#"{"status":"failed","dependency":"search","kind":"rate_limited","http_status":429,"retry_after_ms":7000,"error":"rate limited (HTTP 429)","counted":true,"message":"search failed: rate limited (HTTP 429). Do not call it again now; answer with what you know, use another tool, or try after 7.0 s."}"#
    );

    let ok = ToolResult::ok(b"3 hits".to_vec()).with_stats(stats);
    let mapped = ok.map(|body| String::from_utf8(body).unwrap());
    assert_eq!(
        mapped.to_json().unwrap(),
        r#"{"status":"ok","value":"3 hits","attempts":2,"elapsed_ms":40}"#
    );
}
