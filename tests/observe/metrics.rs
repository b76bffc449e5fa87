//! Counters: exact snapshots after a scripted sequence on the mock clock, exact sums under
//! concurrency, the registry's snapshot of every dependency, and the JSON field names.

use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::json;
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    CircuitBreaker, Config, FailureKind, Outcome, Registry, State, TransitionReason,
    observe::Metrics,
};

const COOLDOWN: Duration = Duration::from_millis(100);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

fn counting(threshold: u32) -> (CircuitBreaker, Arc<Mock>, Arc<Mutex<Vec<TransitionReason>>>) {
    let (clock, mock) = Clock::mock();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(PROBE_TIMEOUT)
        .clock(clock)
        .metrics(true)
        .on_transition(move |event| log.lock().unwrap().push(event.transition().reason()))
        .build()
        .unwrap();
    (breaker, mock, heard)
}

/// Every figure of a snapshot, in one comparable value.
type Figures = (State, u64, u64, u64, [u64; 5], u64, [u64; 6]);

fn figures(m: &Metrics) -> Figures {
    let f = &m.failures;
    let t = &m.transitions;
    (
        m.state,
        m.admitted,
        m.blocked,
        m.successes,
        [f.timeout, f.connect, f.rate_limited, f.unavailable, f.other],
        m.ignored,
        [
            t.failure_threshold,
            t.cooldown_elapsed,
            t.probe_succeeded,
            t.probe_failed,
            t.probe_timed_out,
            t.manual,
        ],
    )
}

fn snapshot(breaker: &CircuitBreaker) -> Figures {
    figures(&breaker.metrics().expect("counting is on"))
}

#[test]
fn a_scripted_sequence_gives_an_exact_snapshot() {
    let _turn = crate::turn();
    let (breaker, mock, heard) = counting(2);
    assert_eq!(
        snapshot(&breaker),
        (State::Closed, 0, 0, 0, [0; 5], 0, [0; 6]),
        "nothing yet"
    );

    // Closed: a success, an ignored call, a failure (1 of 2), a permit held, a second failure
    // that trips.
    assert_eq!(
        breaker.try_acquire().unwrap().record(Outcome::Success),
        None
    );
    assert_eq!(
        breaker.try_acquire().unwrap().record(Outcome::Ignored),
        None
    );
    let timeout = Outcome::Failure(FailureKind::Timeout);
    assert_eq!(breaker.try_acquire().unwrap().record(timeout), None);
    let held = breaker.try_acquire().unwrap();
    let connect = Outcome::Failure(FailureKind::Connect);
    assert!(breaker.try_acquire().unwrap().record(connect).is_some());
    assert_eq!(
        snapshot(&breaker),
        (State::Open, 4, 0, 1, [1, 1, 0, 0, 0], 1, [1, 0, 0, 0, 0, 0]),
        "a call is counted when its permit is used up: the held one is not yet"
    );

    // The held permit's failure is stale (it moves nothing) but is counted: the dependency did
    // fail.
    let unavailable = Outcome::Failure(FailureKind::Unavailable);
    assert_eq!(held.record(unavailable), None);
    for _ in 0..3 {
        assert!(breaker.try_acquire().is_err());
    }
    assert_eq!(
        snapshot(&breaker),
        (State::Open, 5, 3, 1, [1, 1, 0, 1, 0], 1, [1, 0, 0, 0, 0, 0])
    );

    // A probe that fails (rate limited), with a caller blocked while it is out.
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().expect("probe");
    assert!(breaker.try_acquire().is_err());
    let limited = Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(Duration::from_secs(2)),
    });
    assert_eq!(
        probe.record(limited).map(|t| t.reason()),
        Some(TransitionReason::ProbeFailed)
    );

    // A probe that times out, found by a blocked caller; its late success is stale, and counted.
    // (The failed probe's `Retry-After: 2` keeps the breaker open 2 s, spread by up to 10 %.)
    mock.increment(Duration::from_millis(2_200));
    let probe = breaker.try_acquire().expect("probe");
    mock.increment(PROBE_TIMEOUT);
    assert!(breaker.try_acquire().is_err());
    assert_eq!(probe.record(Outcome::Success), None);
    assert_eq!(
        snapshot(&breaker),
        (State::Open, 7, 5, 2, [1, 1, 1, 1, 0], 1, [1, 2, 0, 1, 1, 0])
    );

    // A probe that succeeds; then a failure (1 of 2) and a permit dropped unrecorded.
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().expect("probe");
    assert_eq!(
        probe.record(Outcome::Success).map(|t| t.reason()),
        Some(TransitionReason::ProbeSucceeded)
    );
    let other = Outcome::Failure(FailureKind::Other);
    assert_eq!(breaker.try_acquire().unwrap().record(other), None);
    drop(breaker.try_acquire().unwrap());

    // A lowered threshold trips; a probe is dropped unrecorded; by hand: isolate, blocked, reset.
    let lowered = Config::new(1, COOLDOWN, PROBE_TIMEOUT).unwrap();
    assert!(breaker.reconfigure(lowered).is_some());
    mock.increment(COOLDOWN);
    drop(breaker.try_acquire().expect("probe"));
    assert_eq!(breaker.state(), State::HalfOpen);
    assert!(breaker.force_open().is_some());
    assert!(breaker.try_acquire().is_err());
    assert!(breaker.reset().is_some());
    assert_eq!(breaker.reset(), None, "no transition, nothing counted");

    let end = breaker.metrics().unwrap();
    assert_eq!(
        figures(&end),
        (
            State::Closed,
            11,
            6,
            3,
            [1, 1, 1, 1, 1],
            1,
            [2, 4, 1, 1, 1, 2]
        ),
        "counters only grow: a reset clears none"
    );
    assert_eq!(end.failures.total(), 5);
    assert_eq!(end.transitions.total(), 11);
    assert_eq!(
        end.transitions.total(),
        heard.lock().unwrap().len() as u64,
        "every transition heard is counted once"
    );
    // Admitted = outcomes recorded + permits dropped unrecorded (one ordinary, one probe).
    assert_eq!(end.dropped, 2);
    assert_eq!(
        end.admitted,
        end.successes + end.failures.total() + end.ignored + end.dropped
    );
}

#[test]
fn the_snapshot_state_is_the_effective_state() {
    let _turn = crate::turn();
    let (breaker, mock, _heard) = counting(1);
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));
    assert_eq!(breaker.metrics().unwrap().state, State::Open);
    mock.increment(COOLDOWN);
    let m = breaker.metrics().unwrap();
    assert_eq!(
        m.state,
        State::HalfOpen,
        "derived from the clock, unclaimed"
    );
    assert_eq!(
        m.transitions.cooldown_elapsed, 0,
        "counted when a probe claims"
    );
    breaker.force_open().unwrap();
    mock.increment(Duration::from_secs(3_600));
    assert_eq!(breaker.metrics().unwrap().state, State::Open);
}

#[test]
fn counts_are_exact_under_concurrency() {
    let _turn = crate::turn();
    const THREADS: usize = 4;
    const CALLS: u64 = 5_000;
    let kinds = [
        Outcome::Success,
        Outcome::Ignored,
        Outcome::Failure(FailureKind::Timeout),
        Outcome::Failure(FailureKind::Connect),
        Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
        Outcome::Failure(FailureKind::Unavailable),
        Outcome::Failure(FailureKind::Other),
    ];
    let runs = |breaker: &Arc<CircuitBreaker>, each: fn(&CircuitBreaker, u64, &[Outcome; 7])| {
        let start = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (breaker, start) = (Arc::clone(breaker), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    for i in 0..CALLS {
                        each(&breaker, i, &kinds);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    };
    let total = THREADS as u64 * CALLS;

    // Closed throughout (the threshold is never reached): every call admitted, every outcome
    // counted under its kind.
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(u32::MAX)
            .metrics(true)
            .build()
            .unwrap(),
    );
    runs(&breaker, |b, i, kinds| {
        let _ = b.try_acquire().unwrap().record(kinds[(i % 7) as usize]);
    });
    // CALLS = 5_000 = 7 × 714 + 2: per thread, 715 of kinds 0 and 1, 714 of the rest.
    let (many, few) = (THREADS as u64 * 715, THREADS as u64 * 714);
    assert_eq!(
        snapshot(&breaker),
        (State::Closed, total, 0, many, [few; 5], many, [0; 6])
    );

    // Isolated throughout: every call blocked.
    let breaker = Arc::new(CircuitBreaker::builder().metrics(true).build().unwrap());
    breaker.force_open().unwrap();
    runs(&breaker, |b, _, _| assert!(b.try_acquire().is_err()));
    assert_eq!(
        snapshot(&breaker),
        (State::Open, 0, total, 0, [0; 5], 0, [0, 0, 0, 0, 0, 1])
    );

    // Tripping midway, on a clock that never moves: some admitted, the rest blocked, one trip,
    // and outcomes recorded after the trip still counted.
    let (clock, _mock) = Clock::mock();
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(1_000)
            .clock(clock)
            .metrics(true)
            .build()
            .unwrap(),
    );
    runs(&breaker, |b, _, _| {
        if let Ok(permit) = b.try_acquire() {
            let _ = permit.record(Outcome::Failure(FailureKind::Timeout));
        }
    });
    let m = breaker.metrics().unwrap();
    assert_eq!(m.admitted + m.blocked, total);
    assert_eq!(
        m.failures.timeout, m.admitted,
        "every admitted call recorded"
    );
    assert!(m.admitted >= 1_000, "the threshold was reached");
    assert_eq!(m.transitions.failure_threshold, 1);
    assert_eq!(m.transitions.total(), 1);
    assert_eq!(m.state, State::Open);
}

#[test]
fn the_registry_snapshot_holds_every_dependency_by_name() {
    let _turn = crate::turn();
    let (clock, mock) = Clock::mock();
    let config = Config::new(1, COOLDOWN, PROBE_TIMEOUT).unwrap();
    let registry = Registry::builder()
        .default_config(config)
        .clock(clock)
        .metrics(true)
        .build();
    assert!(registry.metrics().is_empty(), "no breaker yet");

    let timeout = Outcome::Failure(FailureKind::Timeout);
    let api = registry.get("api.example.com");
    api.try_acquire().unwrap().record(timeout);
    mock.increment(COOLDOWN);
    let search = registry.get("search");
    search.try_acquire().unwrap().record(timeout);
    assert!(search.try_acquire().is_err());
    registry
        .get("weather")
        .try_acquire()
        .unwrap()
        .record(Outcome::Success);

    let all = registry.metrics();
    let names: Vec<&str> = all.keys().map(String::as_str).collect();
    assert_eq!(names, ["api.example.com", "search", "weather"]);
    assert_eq!(all["api.example.com"], api.metrics().unwrap());
    assert_eq!(all["search"], search.metrics().unwrap());
    assert_eq!(
        figures(&all["api.example.com"]),
        (
            State::HalfOpen,
            1,
            0,
            0,
            [1, 0, 0, 0, 0],
            0,
            [1, 0, 0, 0, 0, 0]
        )
    );
    assert_eq!(
        figures(&all["search"]),
        (State::Open, 1, 1, 0, [1, 0, 0, 0, 0], 0, [1, 0, 0, 0, 0, 0])
    );
    assert_eq!(
        figures(&all["weather"]),
        (State::Closed, 1, 0, 1, [0; 5], 0, [0; 6])
    );

    let value = serde_json::to_value(&all).unwrap();
    assert_eq!(
        value,
        json!({
            "api.example.com": {
                "state": "half_open",
                "admitted": 1,
                "blocked": 0,
                "saturated": 0,
                "in_flight": 0,
                "concurrency_limit": null,
                "successes": 0,
                "failures": {"timeout": 1, "connect": 0, "rate_limited": 0, "unavailable": 0, "other": 0},
                "ignored": 0,
                "dropped": 0,
                "throttled": 0,
                "transitions": {
                    "failure_threshold": 1, "failure_rate": 0, "slow_call_rate": 0, "retry_after": 0,
                    "cooldown_elapsed": 0, "probe_succeeded": 0,
                    "probe_failed": 0, "probe_timed_out": 0, "manual": 0, "fleet": 0
                }
            },
            "search": {
                "state": "open",
                "admitted": 1,
                "blocked": 1,
                "saturated": 0,
                "in_flight": 0,
                "concurrency_limit": null,
                "successes": 0,
                "failures": {"timeout": 1, "connect": 0, "rate_limited": 0, "unavailable": 0, "other": 0},
                "ignored": 0,
                "dropped": 0,
                "throttled": 0,
                "transitions": {
                    "failure_threshold": 1, "failure_rate": 0, "slow_call_rate": 0, "retry_after": 0,
                    "cooldown_elapsed": 0, "probe_succeeded": 0,
                    "probe_failed": 0, "probe_timed_out": 0, "manual": 0, "fleet": 0
                }
            },
            "weather": {
                "state": "closed",
                "admitted": 1,
                "blocked": 0,
                "saturated": 0,
                "in_flight": 0,
                "concurrency_limit": null,
                "successes": 1,
                "failures": {"timeout": 0, "connect": 0, "rate_limited": 0, "unavailable": 0, "other": 0},
                "ignored": 0,
                "dropped": 0,
                "throttled": 0,
                "transitions": {
                    "failure_threshold": 0, "failure_rate": 0, "slow_call_rate": 0, "retry_after": 0,
                    "cooldown_elapsed": 0, "probe_succeeded": 0,
                    "probe_failed": 0, "probe_timed_out": 0, "manual": 0, "fleet": 0
                }
            }
        })
    );
}

#[test]
fn a_single_snapshot_serialises_with_every_documented_field() {
    let _turn = crate::turn();
    let (breaker, _mock, _heard) = counting(5);
    for kind in [
        FailureKind::Timeout,
        FailureKind::Connect,
        FailureKind::RateLimited { retry_after: None },
        FailureKind::Unavailable,
        FailureKind::Other,
    ] {
        breaker
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(kind));
    }
    breaker.force_closed(); // open → closed by hand
    let value = serde_json::to_value(breaker.metrics().unwrap()).unwrap();
    assert_eq!(value["state"], "closed");
    assert_eq!(value["admitted"], 5);
    assert_eq!(
        value["failures"],
        json!({"timeout": 1, "connect": 1, "rate_limited": 1, "unavailable": 1, "other": 1})
    );
    assert_eq!(value["transitions"]["failure_threshold"], 1);
    assert_eq!(value["transitions"]["manual"], 1);
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "admitted",
            "blocked",
            "concurrency_limit",
            "dropped",
            "failures",
            "ignored",
            "in_flight",
            "saturated",
            "state",
            "successes",
            "throttled",
            "transitions"
        ]
    );
}

#[test]
fn without_counting_there_are_no_metrics() {
    let _turn = crate::turn();
    assert_eq!(CircuitBreaker::builder().build().unwrap().metrics(), None);
    let off = CircuitBreaker::builder().metrics(false).build().unwrap();
    off.try_acquire().unwrap().record(Outcome::Success);
    assert_eq!(off.metrics(), None);

    for registry in [
        Registry::default(),
        Registry::builder().metrics(false).build(),
    ] {
        let search = registry.get("search");
        search
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Timeout));
        assert_eq!(search.metrics(), None);
        assert!(registry.metrics().is_empty());
        assert_eq!(serde_json::to_value(registry.metrics()).unwrap(), json!({}));
    }
}
