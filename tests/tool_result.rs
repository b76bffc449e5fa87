//! `ToolResult`: the exact JSON the model receives.

use std::time::Duration;

use toolbreaker::{BlockedReason, CircuitBreaker, FailureKind, Outcome, ToolResult};

/// A real `Blocked` value: a breaker tripped on a mock clock, then read `elapsed` later.
fn blocked_open(cooldown_ms: u64, elapsed_ms: u64) -> toolbreaker::Blocked {
    let (clock, mock) = quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
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
    let json = ToolResult::<()>::blocked("search", &blocked_open(2_000, 160))
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
    let json = ToolResult::<()>::blocked("weather", &blocked)
        .to_json()
        .unwrap();
    assert_eq!(
        json,
        r#"{"status":"blocked","dependency":"weather","reason":"probe_in_flight","retry_after_ms":3500,"message":"weather is being checked for recovery; do not call it again now. Answer with what you know, use another tool, or try after 3.5 s."}"#
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
        } = ToolResult::<()>::blocked("search", &blocked)
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

    let blocked = ToolResult::<serde_json::Value>::blocked("search", &blocked_open(100, 0));
    let back: ToolResult<serde_json::Value> =
        serde_json::from_str(&blocked.to_json().unwrap()).unwrap();
    assert_eq!(back, blocked);
}
