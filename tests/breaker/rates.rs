//! The rate rules: failure-rate and slow-call windows, by count and by time, with their minimum;
//! their edges on the mock clock, their configuration errors, and their races.

use std::sync::Arc;
use std::time::Duration;

use toolbreaker::config::Problem;
use toolbreaker::{
    CircuitBreaker, Config, FailureKind, Outcome, RegistryConfig, State, Transition,
    TransitionReason, Window,
};

const FAILED: Outcome = Outcome::Failure(FailureKind::Unavailable);
const MS: Duration = Duration::from_millis(1);

fn record(breaker: &CircuitBreaker, outcome: Outcome) -> Option<Transition> {
    breaker
        .try_acquire()
        .expect("closed admits")
        .record(outcome)
}

/// Record `outcomes` in order; the call (1-based) whose record tripped the breaker, if one did.
fn feed(breaker: &CircuitBreaker, outcomes: &[Outcome]) -> Option<(usize, Transition)> {
    for (i, &outcome) in outcomes.iter().enumerate() {
        if let Some(trip) = record(breaker, outcome) {
            return Some((i + 1, trip));
        }
    }
    None
}

fn rated(ratio: f64, window: Window, minimum: u32) -> toolbreaker::breaker::Builder {
    CircuitBreaker::builder()
        .failure_rate(ratio)
        .window(window)
        .minimum_calls(minimum)
}

#[test]
fn no_rate_is_judged_below_the_minimum_and_it_is_judged_exactly_at_it() {
    // Every call fails: 100 % from the first, but the minimum is 5.
    let breaker = rated(0.5, Window::Calls(100), 5).build().unwrap();
    let (at, trip) = feed(&breaker, &[FAILED; 10]).unwrap();
    assert_eq!(at, 5, "judged at the fifth call, not before");
    assert_eq!(trip.reason(), TransitionReason::FailureRate);
    assert_eq!(trip.failures(), 5);

    // The call that reaches the minimum is a success: it is judged too (3 of 5 ≥ 50 %).
    let breaker = rated(0.5, Window::Calls(100), 5).build().unwrap();
    let s = Outcome::Success;
    let (at, _) = feed(&breaker, &[FAILED, FAILED, FAILED, s, s, s]).unwrap();
    assert_eq!(at, 5);

    // Below the ratio at the minimum: no trip, until a failure raises it.
    let breaker = rated(0.5, Window::Calls(100), 4).build().unwrap();
    assert_eq!(feed(&breaker, &[FAILED, s, s, s, s]), None, "1 of 5");
    assert_eq!(breaker.state(), State::Closed);
    let (at, _) = feed(&breaker, &[FAILED, FAILED, FAILED]).unwrap();
    assert_eq!(at, 3, "4 of 8 is 50 %");
}

#[test]
fn the_rate_is_judged_before_a_count_window_fills() {
    // The fault of a window that is judged only once full: 100 calls before it can trip.
    let breaker = rated(0.5, Window::Calls(100), 10).build().unwrap();
    let (at, _) = feed(&breaker, &[FAILED; 100]).unwrap();
    assert_eq!(at, 10);
}

#[test]
fn a_count_window_of_at_most_32_judges_exactly_the_last_calls() {
    for n in [1u32, 2, 7, 10, 31, 32] {
        let breaker = rated(0.5, Window::Calls(n), n).build().unwrap();
        // A long healthy stretch, then failures: the window holds the last n calls only, so the
        // trip comes when half of the last n failed, not half of everything.
        assert_eq!(feed(&breaker, &vec![Outcome::Success; 1000]), None);
        let needed = (n as usize).div_ceil(2);
        let (at, trip) = feed(&breaker, &vec![FAILED; n as usize]).unwrap();
        assert_eq!(at, needed, "window {n}");
        assert_eq!(trip.failures(), needed as u64, "window {n}");
    }
}

#[test]
fn old_failures_leave_a_count_window() {
    let s = Outcome::Success;
    let breaker = rated(0.5, Window::Calls(4), 4).build().unwrap();
    // F F S S: 2 of 4, which trips; so start below: F S S S (1 of 4).
    assert_eq!(feed(&breaker, &[FAILED, s, s, s]), None);
    // F leaves with the next call: S S S F is 1 of 4, then S S F F is 2 of 4.
    assert_eq!(feed(&breaker, &[FAILED]), None);
    let (at, trip) = feed(&breaker, &[FAILED]).unwrap();
    assert_eq!((at, trip.failures()), (1, 2));
}

#[test]
fn a_larger_count_window_judges_whole_buckets() {
    // 100 calls in buckets of 4: the oldest bucket leaves whole. 60 failures then 100 successes
    // leave none; a window judged over its last 100 to 103 calls.
    let breaker = rated(0.5, Window::Calls(100), 100).build().unwrap();
    let mut outcomes = vec![Outcome::Success; 60];
    outcomes.extend(vec![FAILED; 40]);
    assert_eq!(feed(&breaker, &outcomes), None, "40 of 100");
    assert_eq!(feed(&breaker, &vec![Outcome::Success; 104]), None);
    // Now the window holds successes only: it takes 50 failures of the last 100 to trip.
    let (at, _) = feed(&breaker, &vec![FAILED; 60]).unwrap();
    assert!((50..=52).contains(&at), "tripped at failure {at}");
}

#[test]
fn ignored_outcomes_and_dropped_permits_are_not_judged() {
    let breaker = rated(0.5, Window::Calls(10), 4).build().unwrap();
    for _ in 0..20 {
        assert_eq!(record(&breaker, Outcome::Ignored), None);
        drop(breaker.try_acquire().unwrap());
    }
    let s = Outcome::Success;
    // Had they been judged, 2 failures would be far below 50 %.
    let (at, _) = feed(&breaker, &[FAILED, s, FAILED, s]).unwrap();
    assert_eq!(at, 4);
}

#[test]
fn a_rate_rule_alone_has_no_consecutive_rule_and_both_can_be_set() {
    // Only the rate: 9 failures in a row do not trip below a minimum of 20.
    let breaker = rated(0.9, Window::Calls(100), 20).build().unwrap();
    assert_eq!(breaker.config().failure_threshold(), None);
    assert_eq!(feed(&breaker, &[FAILED; 19]), None);
    assert_eq!(breaker.state(), State::Closed);
    // Both: 3 in a row trip by the consecutive rule before the minimum.
    let both = rated(0.9, Window::Calls(100), 20)
        .failure_threshold(3)
        .build()
        .unwrap();
    let (at, trip) = feed(&both, &[FAILED; 5]).unwrap();
    assert_eq!((at, trip.reason()), (3, TransitionReason::FailureThreshold));
    // And the rate where the failures are never 3 in a row: F F S repeated is 66 %.
    let both = rated(0.6, Window::Calls(100), 9)
        .failure_threshold(3)
        .build()
        .unwrap();
    let s = Outcome::Success;
    let pattern = [FAILED, FAILED, s, FAILED, FAILED, s, FAILED, FAILED, s];
    let (at, trip) = feed(&both, &pattern).unwrap();
    assert_eq!((at, trip.reason()), (9, TransitionReason::FailureRate));
}

#[test]
fn every_transition_empties_the_window() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = rated(0.5, Window::Calls(10), 4)
        .cooldown(Duration::from_secs(1))
        .clock(clock)
        .build()
        .unwrap();
    let s = Outcome::Success;
    feed(&breaker, &[FAILED; 4]).unwrap();
    mock.increment(Duration::from_secs(1));
    let probe = breaker.try_acquire().unwrap();
    assert!(probe.is_probe());
    assert_eq!(
        probe.record(s).map(|t| t.reason()),
        Some(TransitionReason::ProbeSucceeded)
    );
    // The four failures are gone: one more is 1 of 4 at the minimum, not 5 of 8.
    assert_eq!(feed(&breaker, &[FAILED, s, s, s]), None);
    // A reset by hand empties it too.
    assert_eq!(feed(&breaker, &[FAILED]), None, "2 of 5");
    breaker.reset();
    assert_eq!(
        feed(&breaker, &[FAILED, s, s, s]),
        None,
        "1 of 4 after the reset"
    );
}

#[test]
fn a_time_window_forgets_calls_at_its_boundary_on_the_mock_clock() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    // 10 s in buckets of 1 s, counted from the breaker's construction.
    let breaker = rated(0.5, Window::Time(Duration::from_secs(10)), 2)
        .clock(clock)
        .build()
        .unwrap();
    assert_eq!(
        record(&breaker, FAILED),
        None,
        "1 call is below the minimum"
    );
    // Just before the window's end the failure still counts: F S is 50 %.
    mock.increment(Duration::from_secs(10) - MS);
    let s = Outcome::Success;
    assert_eq!(
        record(&breaker, s).map(|t| t.reason()),
        Some(TransitionReason::FailureRate)
    );

    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = rated(0.5, Window::Time(Duration::from_secs(10)), 2)
        .clock(clock)
        .build()
        .unwrap();
    assert_eq!(record(&breaker, FAILED), None);
    // At the window's end it has left: the success is alone in the window.
    mock.increment(Duration::from_secs(10));
    assert_eq!(record(&breaker, s), None);
    assert_eq!(record(&breaker, s), None, "2 successes");
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn a_call_stays_in_a_time_window_between_nine_tenths_of_it_and_all_of_it() {
    // Recorded late in its bucket, a call leaves sooner: at the bucket 10 after its own.
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = rated(1.0, Window::Time(Duration::from_secs(10)), 2)
        .clock(clock)
        .build()
        .unwrap();
    mock.increment(Duration::from_millis(999));
    assert_eq!(record(&breaker, FAILED), None);
    // 9.001 s later: bucket 10, the failure has left.
    mock.increment(Duration::from_millis(9_001));
    assert_eq!(record(&breaker, FAILED), None, "alone again");
    mock.increment(Duration::from_millis(500));
    assert_eq!(
        record(&breaker, FAILED).map(|t| t.reason()),
        Some(TransitionReason::FailureRate),
        "two in the window"
    );
}

#[test]
fn successes_that_bring_a_time_window_back_to_its_minimum_are_judged() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = rated(0.5, Window::Time(Duration::from_secs(10)), 5)
        .clock(clock)
        .build()
        .unwrap();
    let s = Outcome::Success;
    // 7 successes, then 3 failures 5 s later: 3 of 10, below 50 %.
    assert_eq!(feed(&breaker, &[s; 7]), None);
    mock.increment(Duration::from_secs(5));
    assert_eq!(feed(&breaker, &[FAILED; 3]), None);
    // The successes leave; the 3 failures stay, below the minimum.
    mock.increment(Duration::from_secs(6));
    assert_eq!(record(&breaker, s), None, "3 of 4, below the minimum");
    let trip = record(&breaker, s).expect("3 of 5 at the minimum");
    assert_eq!(trip.reason(), TransitionReason::FailureRate);
}

#[test]
fn slow_calls_trip_whether_they_succeed_or_fail_and_untimed_calls_are_never_slow() {
    let build = || {
        CircuitBreaker::builder()
            .slow_calls(Duration::from_millis(500), 0.5)
            .window(Window::Calls(4))
            .minimum_calls(4)
            .build()
            .unwrap()
    };
    let breaker = build();
    let slow = Duration::from_millis(500);
    let fast = slow - Duration::from_nanos(1);
    let timed = |outcome, elapsed| {
        breaker
            .try_acquire()
            .unwrap()
            .record_elapsed(outcome, elapsed)
    };
    assert_eq!(timed(Outcome::Success, fast), None);
    assert_eq!(timed(Outcome::Ignored, slow), None, "not judged");
    assert_eq!(timed(FAILED, slow), None, "a slow failure: 1 of 2");
    assert_eq!(timed(Outcome::Success, fast), None);
    let trip = timed(Outcome::Success, slow).unwrap();
    assert_eq!(trip.reason(), TransitionReason::SlowCallRate);
    assert_eq!(trip.failures(), 2, "the slow calls");

    let breaker = build();
    for _ in 0..20 {
        assert_eq!(record(&breaker, Outcome::Success), None);
    }
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn call_times_its_calls_on_the_breaker_clock_only_when_a_slow_rule_is_set() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .slow_calls(Duration::from_secs(2), 1.0)
        .window(Window::Calls(2))
        .minimum_calls(2)
        .clock(clock)
        .build()
        .unwrap();
    let slow = || {
        mock.increment(Duration::from_secs(2));
        Ok::<_, ()>(())
    };
    assert_eq!(breaker.call(slow, |_: &_| Outcome::Success), Ok(()));
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.call(slow, |_: &_| Outcome::Success), Ok(()));
    assert_eq!(breaker.state(), State::Open, "two slow calls of two");
}

#[test]
fn each_bad_value_is_a_config_error_naming_its_field() {
    let b = CircuitBreaker::builder;
    let cases = [
        (b().failure_rate(0.0), "failure_rate", Problem::OutOfRange),
        (b().failure_rate(1.01), "failure_rate", Problem::OutOfRange),
        (b().failure_rate(-0.5), "failure_rate", Problem::OutOfRange),
        (
            b().failure_rate(f64::NAN),
            "failure_rate",
            Problem::OutOfRange,
        ),
        (
            b().slow_calls(Duration::from_secs(1), 0.0),
            "slow_call_rate",
            Problem::OutOfRange,
        ),
        (
            b().slow_calls(Duration::ZERO, 0.5),
            "slow_call_threshold",
            Problem::Zero,
        ),
        (
            b().failure_rate(0.5).window(Window::Calls(0)),
            "window",
            Problem::Zero,
        ),
        (
            b().failure_rate(0.5).window(Window::Time(Duration::ZERO)),
            "window",
            Problem::Zero,
        ),
        (
            b().failure_rate(0.5).window(Window::Time(Duration::MAX)),
            "window",
            Problem::TooLong,
        ),
        (
            b().failure_rate(0.5)
                .window(Window::Calls(10))
                .minimum_calls(11),
            "minimum_calls",
            Problem::TooLarge,
        ),
        (
            b().failure_rate(0.5).minimum_calls(0),
            "minimum_calls",
            Problem::Zero,
        ),
        (b().window(Window::Calls(10)), "window", Problem::NoRule),
        (b().minimum_calls(3), "minimum_calls", Problem::NoRule),
    ];
    for (builder, field, problem) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!((err.field(), err.problem()), (field, problem), "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }
    // The edges that are accepted.
    let ok = b()
        .failure_rate(1.0)
        .window(Window::Calls(10))
        .minimum_calls(10)
        .build_config()
        .unwrap();
    assert_eq!(
        (ok.failure_rate(), ok.minimum_calls()),
        (Some(1.0), Some(10))
    );
    let default_minimum = b()
        .failure_rate(0.5)
        .window(Window::Calls(4))
        .build_config()
        .unwrap();
    assert_eq!(
        default_minimum.minimum_calls(),
        Some(4),
        "capped at the window"
    );
}

#[test]
fn the_rules_round_trip_through_the_toml_file_and_its_errors_name_the_key() {
    let text = "[default]\nfailure_rate = 0.25\nwindow_ms = 30000\nminimum_calls = 20\n\
                [dependencies.search]\nfailure_threshold = 4\nslow_call_threshold_ms = 1500\n\
                slow_call_rate = 1\nwindow_calls = 50\n";
    let config = RegistryConfig::from_toml(text).unwrap();
    let default = config.default_config();
    assert_eq!(default.failure_rate(), Some(0.25));
    assert_eq!(
        default.window(),
        Some(Window::Time(Duration::from_secs(30)))
    );
    assert_eq!(default.minimum_calls(), Some(20));
    assert_eq!(default.failure_threshold(), None, "no threshold was set");
    let search = config.config_for("search");
    assert_eq!(search.failure_threshold(), Some(4));
    assert_eq!(search.failure_rate(), Some(0.25), "inherited");
    assert_eq!(
        search.slow_calls(),
        Some((Duration::from_millis(1500), 1.0))
    );
    assert_eq!(search.window(), Some(Window::Calls(50)));

    for (text, field) in [
        ("[default]\nfailure_rate = 1.5\n", "failure_rate"),
        ("[default]\nfailure_rate = \"half\"\n", "failure_rate"),
        (
            "[default]\nfailure_rate = 0.5\nwindow_calls = 0\n",
            "window_calls",
        ),
        (
            "[default]\nfailure_rate = 0.5\nwindow_ms = 0\n",
            "window_ms",
        ),
        (
            "[default]\nfailure_rate = 0.5\nwindow_calls = 5\nminimum_calls = 6\n",
            "minimum_calls",
        ),
        ("[default]\nslow_call_rate = 0.5\n", "slow_call_rate"),
        (
            "[default]\nslow_call_threshold_ms = 0\nslow_call_rate = 0.5\n",
            "slow_call_threshold_ms",
        ),
        ("[dependencies.a]\nminimum_calls = 5\n", "minimum_calls"),
    ] {
        let err = RegistryConfig::from_toml(text).unwrap_err();
        assert_eq!(err.field(), Some(field), "{text}: {err}");
    }
    let both = "[default]\nfailure_rate = 0.5\nwindow_ms = 10\nwindow_calls = 5\n";
    let err = RegistryConfig::from_toml(both).unwrap_err();
    assert!(err.to_string().contains("not both"), "{err}");
    assert!(
        matches!(err.field(), Some("window_ms" | "window_calls")),
        "{err}"
    );
}

#[test]
fn a_reload_sets_changes_and_removes_the_rules_of_live_breakers() {
    let registry = toolbreaker::Registry::default();
    let search = registry.get("search");
    assert_eq!(
        feed(&search, &[FAILED; 4]),
        None,
        "consecutive 5 by default"
    );
    search.reset();
    let reload = registry
        .reload_toml("[default]\nfailure_rate = 0.5\nwindow_calls = 4\nminimum_calls = 4\n")
        .unwrap();
    let change = reload.changes()[0].to_string();
    assert!(change.contains("failure_rate off -> 0.5"), "{change}");
    assert!(change.contains("failure_threshold 5 -> off"), "{change}");
    let s = Outcome::Success;
    let (at, trip) = feed(&search, &[FAILED, s, FAILED, s]).unwrap();
    assert_eq!((at, trip.reason()), (4, TransitionReason::FailureRate));
    // Removed: back to the consecutive rule alone.
    search.force_closed();
    registry.reload(RegistryConfig::new(Config::default()));
    assert_eq!(search.config().failure_rate(), None);
    assert_eq!(feed(&search, &[FAILED, s, FAILED, s, FAILED, s]), None);
    assert_eq!(search.state(), State::Closed);
}

#[test]
fn a_rule_added_to_a_breaker_with_failures_in_flight_starts_an_empty_window() {
    let breaker = CircuitBreaker::builder().build().unwrap();
    let held = breaker.try_acquire().unwrap();
    assert_eq!(feed(&breaker, &[FAILED; 3]), None);
    let config = CircuitBreaker::builder()
        .failure_threshold(5)
        .failure_rate(0.5)
        .window(Window::Calls(2))
        .minimum_calls(2)
        .build_config()
        .unwrap();
    assert_eq!(breaker.reconfigure(config), None);
    // A permit from before the change is stale, as after a reset.
    assert!(!held.is_current());
    assert_eq!(held.record(FAILED), None);
    assert_eq!(breaker.state(), State::Closed);
    let (at, _) = feed(&breaker, &[Outcome::Success, FAILED]).unwrap();
    assert_eq!(at, 2, "1 of 2 at the minimum");
}

/// Many threads record into one window: it trips once, by the rule, and never while the
/// window holds fewer than the minimum.
#[test]
fn racing_threads_trip_a_window_once() {
    for round in 0..20 {
        let breaker = Arc::new(
            rated(0.5, Window::Calls(64), 32)
                .cooldown(Duration::from_secs(3600))
                .build()
                .unwrap(),
        );
        let trips: usize = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|t| {
                    let breaker = Arc::clone(&breaker);
                    s.spawn(move || {
                        let mut trips = 0;
                        for i in 0..500 {
                            let Ok(permit) = breaker.try_acquire() else {
                                break;
                            };
                            let outcome = if (i + t + round) % 2 == 0 {
                                FAILED
                            } else {
                                Outcome::Success
                            };
                            if let Some(trip) = permit.record(outcome) {
                                assert_eq!(trip.reason(), TransitionReason::FailureRate);
                                assert!(trip.failures() >= 16, "{trip:?}");
                                trips += 1;
                            }
                        }
                        trips
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        assert_eq!(trips, 1, "round {round}");
        assert_eq!(breaker.state(), State::Open);
    }
}

#[test]
fn idle_eviction_removes_a_rated_breaker_with_nothing_counted_and_keeps_one_that_is_watching() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let config = rated(0.5, Window::Time(Duration::from_secs(60)), 5)
        .build_config()
        .unwrap();
    let registry = toolbreaker::Registry::builder()
        .default_config(config)
        .idle_eviction(Duration::from_secs(10))
        .clock(clock)
        .build();
    registry.with("healthy", |b| assert_eq!(record(b, Outcome::Success), None));
    // One failure below the minimum: successes must be judged against it, so it is kept.
    registry.with("watching", |b| assert_eq!(record(b, FAILED), None));
    mock.increment(Duration::from_secs(10));
    assert_eq!(registry.evict_idle(), 1);
    assert_eq!(registry.dependencies(), ["watching"]);
}

/// A bucketed count window (more than 32 calls) loses a whole bucket at once, so a success can
/// raise its rate by pushing out a bucket of successes: successes are judged while the window
/// holds failures. Window 96 in buckets of 3: 49 successes, 48 failures, then successes.
#[test]
fn a_success_that_pushes_out_a_bucket_of_successes_is_judged() {
    let breaker = rated(0.5, Window::Calls(96), 10).build().unwrap();
    let mut outcomes = vec![Outcome::Success; 49];
    outcomes.extend([FAILED; 48]);
    assert_eq!(feed(&breaker, &outcomes), None, "48 of 97");
    let (at, trip) = feed(&breaker, &[Outcome::Success; 3]).expect("trips on a success");
    assert_eq!(trip.reason(), TransitionReason::FailureRate);
    assert!(at <= 2, "at success {at}");
}

/// New ratios or a new minimum judge the window as it stands: calls in flight still count. A new
/// window starts afresh (documented), as after a reset.
#[test]
fn new_ratios_keep_calls_in_flight_and_the_consecutive_count() {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(3)
        .failure_rate(0.9)
        .window(Window::Calls(10))
        .build()
        .unwrap();
    assert_eq!(feed(&breaker, &[FAILED; 2]), None);
    let in_flight = breaker.try_acquire().unwrap();
    let raised = CircuitBreaker::builder()
        .failure_threshold(3)
        .failure_rate(0.95)
        .window(Window::Calls(10))
        .minimum_calls(5)
        .build_config()
        .unwrap();
    assert_eq!(breaker.reconfigure(raised), None);
    assert!(in_flight.is_current());
    assert_eq!(
        in_flight.record(FAILED).map(|t| t.reason()),
        Some(TransitionReason::FailureThreshold),
        "the third failure in a row"
    );
}

/// A dependency's section that sets a smaller window gets that window's default minimum, as the
/// builder gives; only a minimum someone wrote is carried from `[default]`.
#[test]
fn a_sections_window_gets_its_own_default_minimum() {
    let config = RegistryConfig::from_toml(
        "[default]\nfailure_rate = 0.5\n[dependencies.search]\nwindow_calls = 5\n",
    )
    .unwrap();
    assert_eq!(config.config_for("search").minimum_calls(), Some(5));
    let written = RegistryConfig::from_toml(
        "[default]\nfailure_rate = 0.5\nminimum_calls = 20\n[dependencies.search]\nwindow_calls = 50\n",
    )
    .unwrap();
    assert_eq!(written.config_for("search").minimum_calls(), Some(20));
}

#[test]
fn idle_eviction_keeps_a_count_window_that_holds_failures_past_its_minimum() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let config = rated(0.5, Window::Calls(10), 10).build_config().unwrap();
    let registry = toolbreaker::Registry::builder()
        .default_config(config)
        .idle_eviction(Duration::from_secs(60))
        .clock(clock)
        .build();
    let s = Outcome::Success;
    registry.with("search", |b| {
        assert_eq!(
            feed(b, &[s, s, s, s, s, FAILED, FAILED, FAILED, FAILED, s]),
            None
        );
    });
    mock.increment(Duration::from_secs(61));
    assert_eq!(registry.evict_idle(), 0, "4 failures in its window");
    let (at, _) = registry
        .with("search", |b| feed(b, &[FAILED]))
        .expect("the fifth failure of ten trips it");
    assert_eq!(at, 1);
}

/// A lowered ratio (or minimum) may be met by the window as it stands: the next judged call, a
/// success included, is judged against it, though the window had reached its minimum and
/// successes were no longer watched.
#[test]
fn the_next_success_after_a_lowered_ratio_is_judged() {
    let breaker = rated(0.5, Window::Calls(10), 4).build().unwrap();
    let s = Outcome::Success;
    assert_eq!(feed(&breaker, &[FAILED, s, s, s, s, s]), None, "1 of 6");
    let lowered = rated(0.1, Window::Calls(10), 4).build_config().unwrap();
    assert_eq!(
        breaker.reconfigure(lowered),
        None,
        "judged at the next call"
    );
    let trip = record(&breaker, s).expect("1 of 7 ≥ 10 %");
    assert_eq!(trip.reason(), TransitionReason::FailureRate);
}
