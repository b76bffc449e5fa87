//! Open times from the dependency: a rate-limited failure's hint keeps the breaker open for the
//! longer of the cooldown and the hint, capped and spread upward; nothing shortens an open
//! period; a long hint may trip at once; the settings' edges and their file keys.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use toolbreaker::config::Problem;
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    CircuitBreaker, Config, FailureKind, Outcome, RegistryConfig, State, TransitionReason,
};

const FAILED: Outcome = Outcome::Failure(FailureKind::Unavailable);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn limited(hint: Duration) -> Outcome {
    Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(hint),
    })
}

/// A breaker tripping on `threshold` failures with a 5 s cooldown, hints unspread.
fn breaker(threshold: u32) -> (CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(secs(5))
        .probe_timeout(secs(1))
        .hint_jitter(0.0)
        .clock(clock)
        .build()
        .unwrap();
    (breaker, mock)
}

/// The time left, as a blocked caller is told it.
fn waiting(breaker: &CircuitBreaker) -> Duration {
    breaker.try_acquire().unwrap_err().retry_after()
}

#[test]
fn a_hinted_trip_stays_open_for_the_longer_of_the_cooldown_and_the_hint() {
    for (hint, open_for) in [(secs(30), secs(30)), (secs(2), secs(5)), (secs(5), secs(5))] {
        let (breaker, mock) = breaker(1);
        let trip = breaker
            .try_acquire()
            .unwrap()
            .record(limited(hint))
            .unwrap();
        assert_eq!(
            trip.cooldown(),
            open_for,
            "the transition tells it ({hint:?})"
        );
        assert_eq!(waiting(&breaker), open_for, "{hint:?}");
        mock.increment(open_for - Duration::from_millis(1));
        assert_eq!(breaker.state(), State::Open, "{hint:?}");
        assert!(breaker.try_acquire().is_err());
        mock.increment(Duration::from_millis(1));
        assert_eq!(breaker.state(), State::HalfOpen, "{hint:?}");
    }
}

#[test]
fn a_hint_counted_before_the_trip_governs_the_trip_from_the_time_it_was_heard() {
    let (breaker, mock) = breaker(3);
    breaker.try_acquire().unwrap().record(limited(secs(60)));
    mock.increment(secs(10));
    breaker.try_acquire().unwrap().record(FAILED);
    breaker.try_acquire().unwrap().record(FAILED);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(
        waiting(&breaker),
        secs(50),
        "60 s from the hint, 10 s of them gone"
    );
    // A success in between would have cleared the count, not the hint's end; the hint of a
    // closed period that never trips lapses with time.
    let (breaker, mock) = breaker_with_success_between();
    mock.increment(secs(120));
    breaker.try_acquire().unwrap().record(FAILED);
    assert_eq!(
        waiting(&breaker),
        secs(5),
        "a lapsed hint lengthens nothing"
    );
}

fn breaker_with_success_between() -> (CircuitBreaker, Arc<Mock>) {
    let (breaker, mock) = breaker(1);
    let first = breaker.try_acquire().unwrap();
    let second = breaker.try_acquire().unwrap();
    first.record(limited(secs(60)));
    second.record(Outcome::Success); // stale: the trip moved on
    mock.increment(secs(60));
    breaker.try_acquire().unwrap().record(Outcome::Success); // the probe closes
    assert_eq!(breaker.state(), State::Closed);
    (breaker, mock)
}

#[test]
fn a_later_hint_while_open_lengthens_the_period_and_a_shorter_one_never_shortens_it() {
    let (breaker, mock) = breaker(1);
    let late = breaker.try_acquire().unwrap();
    let later = breaker.try_acquire().unwrap();
    let last = breaker.try_acquire().unwrap();
    breaker.try_acquire().unwrap().record(limited(secs(20)));
    assert_eq!(waiting(&breaker), secs(20));
    mock.increment(secs(5));
    // Calls admitted before the trip report while it is open: stale, but their hints count.
    assert_eq!(late.record(limited(secs(40))), None);
    assert_eq!(
        waiting(&breaker),
        secs(40),
        "lengthened from when it was heard"
    );
    assert_eq!(later.record(limited(secs(1))), None);
    assert_eq!(waiting(&breaker), secs(40), "never shortened");
    assert_eq!(last.record(FAILED), None);
    assert_eq!(waiting(&breaker), secs(40));
    mock.increment(secs(40));
    assert_eq!(breaker.state(), State::HalfOpen);
}

#[test]
fn a_reopen_never_ends_before_the_deadline_in_force_and_takes_the_probe_s_hint() {
    let (breaker, mock) = breaker(1);
    breaker.try_acquire().unwrap().record(limited(secs(30)));
    mock.increment(secs(30));
    let probe = breaker.try_acquire().expect("the probe");
    let reopen = probe.record(limited(secs(2))).expect("reopens");
    assert_eq!(reopen.reason(), TransitionReason::ProbeFailed);
    assert_eq!(
        waiting(&breaker),
        secs(5),
        "the cooldown: longer than the probe's hint"
    );
    mock.increment(secs(5));
    let probe = breaker.try_acquire().expect("the probe");
    probe.record(limited(secs(90)));
    assert_eq!(waiting(&breaker), secs(90), "the probe's own hint");
}

#[test]
fn a_huge_hint_is_capped_and_a_cap_of_zero_turns_hints_off() {
    let (clock, _mock) = Clock::mock();
    let defaults = CircuitBreaker::builder()
        .failure_threshold(1)
        .clock(clock)
        .build()
        .unwrap();
    defaults
        .try_acquire()
        .unwrap()
        .record(limited(Duration::MAX));
    let wait = waiting(&defaults);
    assert!(
        wait >= secs(600) && wait < secs(660),
        "10 minutes, spread by up to 10 %: {wait:?}"
    );
    let (clock, _mock) = Clock::mock();
    let off = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(secs(5))
        .max_hinted_open(Duration::ZERO)
        .clock(clock)
        .build()
        .unwrap();
    off.try_acquire().unwrap().record(limited(secs(300)));
    assert_eq!(waiting(&off), secs(5), "hints off: the cooldown");
}

#[test]
fn breakers_told_the_same_hint_spread_upward_within_the_jitter() {
    let hint = secs(100);
    let mut waits = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let (clock, _mock) = Clock::mock();
        let breaker = CircuitBreaker::builder()
            .failure_threshold(1)
            .cooldown(secs(1))
            .hint_jitter(0.2)
            .clock(clock)
            .build()
            .unwrap();
        breaker.try_acquire().unwrap().record(limited(hint));
        let wait = waiting(&breaker);
        assert!(wait >= hint && wait < secs(120), "{wait:?}");
        assert_eq!(waiting(&breaker), wait, "one deadline for every caller");
        waits.insert(wait);
    }
    // 200 draws over 20,000 ms: nearly all distinct, and none before the hint.
    assert!(waits.len() > 150, "{} distinct deadlines", waits.len());
    let (low, high) = (*waits.first().unwrap(), *waits.last().unwrap());
    assert!(
        high - low > secs(10),
        "spread over the range: {low:?}..{high:?}"
    );
}

#[test]
fn hinted_failures_racing_the_trip_leave_the_longest_hint_in_force() {
    for round in 0..50 {
        let (breaker, _mock) = breaker(4);
        let breaker = Arc::new(breaker);
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8u64)
            .map(|i| {
                let (breaker, barrier) = (Arc::clone(&breaker), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let permit = breaker.try_acquire();
                    barrier.wait();
                    if let Ok(permit) = permit {
                        permit.record(limited(secs(10 + i)));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(breaker.state(), State::Open, "round {round}");
        assert_eq!(
            waiting(&breaker),
            secs(17),
            "round {round}: the longest of 10..=17 s"
        );
    }
}

#[test]
fn a_long_hint_trips_at_once_only_when_asked_and_only_when_longer_than_the_cooldown() {
    let (off, _mock) = breaker(3);
    assert_eq!(off.try_acquire().unwrap().record(limited(secs(60))), None);
    assert_eq!(off.state(), State::Closed, "off by default: counted");

    let (clock, _mock) = Clock::mock();
    let on = CircuitBreaker::builder()
        .failure_threshold(3)
        .cooldown(secs(5))
        .hint_jitter(0.0)
        .open_on_long_hint(true)
        .metrics(true)
        .clock(clock)
        .build()
        .unwrap();
    assert_eq!(on.try_acquire().unwrap().record(limited(secs(5))), None);
    assert_eq!(
        on.state(),
        State::Closed,
        "no longer than the cooldown: counted"
    );
    let trip = on.try_acquire().unwrap().record(limited(secs(6))).unwrap();
    assert_eq!(
        (trip.reason(), trip.failures(), trip.cooldown()),
        (TransitionReason::RetryAfter, 2, secs(6))
    );
    let metrics = on.metrics().unwrap();
    assert_eq!(metrics.transitions.retry_after, 1);
    assert_eq!(metrics.failures.rate_limited, 2);
}

#[test]
fn a_reconfiguration_keeps_the_hinted_deadline_and_the_settings_round_trip() {
    let (breaker, _mock) = breaker(1);
    breaker.try_acquire().unwrap().record(limited(secs(40)));
    let config = breaker.config();
    assert_eq!(
        (
            config.max_hinted_open(),
            config.hint_jitter(),
            config.opens_on_long_hint()
        ),
        (secs(600), 0.0, false)
    );
    assert_eq!(breaker.reconfigure(config), None);
    assert_eq!(waiting(&breaker), secs(40), "the hint heard stays in force");
    let custom = CircuitBreaker::builder()
        .max_hinted_open(secs(90))
        .hint_jitter(1.0)
        .open_on_long_hint(true)
        .build_config()
        .unwrap();
    let rebuilt = CircuitBreaker::builder()
        .config(custom)
        .build_config()
        .unwrap();
    assert_eq!(rebuilt, custom);
    assert_eq!(Config::default().max_hinted_open(), secs(600));
}

#[test]
fn each_bad_hint_setting_is_a_config_error_naming_its_field() {
    let cases = [
        (
            CircuitBreaker::builder().hint_jitter(1.01).build_config(),
            "hint_jitter",
            Problem::OutOfRange,
        ),
        (
            CircuitBreaker::builder()
                .hint_jitter(f64::NAN)
                .build_config(),
            "hint_jitter",
            Problem::OutOfRange,
        ),
        (
            CircuitBreaker::builder()
                .max_hinted_open(Duration::MAX)
                .build_config(),
            "max_hinted_open",
            Problem::TooLong,
        ),
    ];
    for (result, field, problem) in cases {
        let err = result.unwrap_err();
        assert_eq!((err.field(), err.problem()), (field, problem), "{err}");
    }
}

#[test]
fn the_hint_settings_go_through_the_toml_file() {
    let text = "[default]\nmax_hinted_open_ms = 0\n\n[dependencies.llm]\nmax_hinted_open_ms = 120000\nhint_jitter = 0.25\nopen_on_long_hint = true\n";
    let config = RegistryConfig::from_toml(text).unwrap();
    let llm = config.config_for("llm");
    assert_eq!(
        (
            llm.max_hinted_open(),
            llm.hint_jitter(),
            llm.opens_on_long_hint()
        ),
        (secs(120), 0.25, true)
    );
    assert_eq!(config.config_for("other").max_hinted_open(), Duration::ZERO);
    let err = RegistryConfig::from_toml("[default]\nopen_on_long_hint = \"yes\"\n").unwrap_err();
    assert_eq!(err.field(), Some("open_on_long_hint"), "{err}");
}

/// The class of "never shortens", over seeded random runs: hinted and plain failures from fresh
/// and stale permits, successes, ignored outcomes, dropped permits, clock steps and changes of
/// the cooldown. While one open period lasts (no transition heard since it began), its deadline
/// never moves earlier but by a reconfigured cooldown, and it is never before the end of a hint
/// heard in it or counted in the closed period that tripped into it (and not cleared by a
/// success since).
#[test]
fn no_sequence_of_reports_shortens_an_open_period_or_ends_it_before_a_hint_heard_in_it() {
    use std::sync::atomic::{AtomicU64, Ordering};
    const CAP_MS: u64 = 60_000;
    for seed in 0..300 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let (clock, mock) = Clock::mock();
        let transitions = Arc::new(AtomicU64::new(0));
        let heard = Arc::clone(&transitions);
        let breaker = CircuitBreaker::builder()
            .failure_threshold(rng.u32(1..4))
            .cooldown(Duration::from_millis(rng.u64(1..3_000)))
            .probe_timeout(secs(1))
            .max_hinted_open(Duration::from_millis(CAP_MS))
            .hint_jitter(0.0)
            .clock(clock)
            .on_transition(move |_| {
                heard.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap();
        let mut now_ms = 0u64;
        let mut held = Vec::new();
        // The hints' ends a trip from the closed period in force would inherit, and the open
        // period's: its transition count, its latest deadline, the latest hint end it must keep.
        let mut pending_end = 0u64;
        let mut period: Option<(u64, u64, u64)> = None;
        for step in 0..200 {
            let seen_before = transitions.load(Ordering::SeqCst);
            let state_before = breaker.state();
            match rng.u8(0..10) {
                0..=2 => {
                    if let Ok(permit) = breaker.try_acquire() {
                        held.push(permit);
                    }
                }
                3..=5 if !held.is_empty() => {
                    let permit = held.swap_remove(rng.usize(..held.len()));
                    let hint = Duration::from_millis(rng.u64(1..120_000));
                    let current = permit.is_current();
                    let outcome = match rng.u8(0..4) {
                        0 => Outcome::Success,
                        1 => FAILED,
                        2 => Outcome::Ignored,
                        _ => limited(hint),
                    };
                    permit.record(outcome);
                    // A success clears the consecutive count, and the hints heard with it.
                    if outcome == Outcome::Success && current && state_before == State::Closed {
                        pending_end = 0;
                    }
                    if outcome.retry_after().is_some() {
                        let end = now_ms + (hint.as_millis() as u64).min(CAP_MS);
                        match (state_before, &mut period) {
                            (State::Open, Some((_, _, must))) => *must = (*must).max(end),
                            (State::Closed | State::HalfOpen, _) if current => {
                                pending_end = pending_end.max(end)
                            }
                            _ => {}
                        }
                    }
                }
                6 if !held.is_empty() => drop(held.swap_remove(rng.usize(..held.len()))),
                7 | 8 => {
                    let by = rng.u64(0..2_500);
                    mock.increment(Duration::from_millis(by));
                    now_ms += by;
                }
                _ => {
                    let config = Config::new(
                        rng.u32(1..4),
                        Duration::from_millis(rng.u64(1..3_000)),
                        secs(1),
                    )
                    .unwrap();
                    let config = CircuitBreaker::builder()
                        .config(config)
                        .max_hinted_open(Duration::from_millis(CAP_MS))
                        .hint_jitter(0.0)
                        .build_config()
                        .unwrap();
                    breaker.reconfigure(config);
                    // A new cooldown applies to the period in force, from its opened-at, as
                    // to any breaker's: only the hint's end stays a floor.
                    if let Some(entry) = &mut period {
                        entry.1 = 0;
                    }
                }
            }
            let seen = transitions.load(Ordering::SeqCst);
            let state = breaker.state();
            if seen != seen_before {
                // A new period: an open one inherits the hints counted before it.
                period = None;
            }
            if state == State::Open {
                let Err(blocked) = breaker.try_acquire() else {
                    panic!("seed {seed} step {step}: open admits")
                };
                if blocked.reason() == toolbreaker::BlockedReason::Isolated {
                    continue;
                }
                let deadline = now_ms + blocked.retry_after().as_millis() as u64;
                let entry = period.get_or_insert((seen, deadline, pending_end));
                assert!(
                    deadline >= entry.1,
                    "seed {seed} step {step}: the deadline moved from {} to {deadline}",
                    entry.1
                );
                assert!(
                    deadline >= entry.2,
                    "seed {seed} step {step}: the deadline {deadline} is before a hint's end {}",
                    entry.2
                );
                entry.1 = deadline;
            }
            if seen != seen_before {
                pending_end = 0;
            }
        }
    }
}

#[test]
fn a_success_that_clears_the_count_forgets_the_hint_heard_with_it() {
    let (breaker, mock) = breaker(3);
    breaker.try_acquire().unwrap().record(limited(secs(600)));
    breaker.try_acquire().unwrap().record(Outcome::Success);
    mock.increment(secs(60));
    for _ in 0..3 {
        breaker.try_acquire().unwrap().record(FAILED);
    }
    assert_eq!(
        waiting(&breaker),
        secs(5),
        "plain 503s trip for the cooldown"
    );
}

#[test]
fn a_longer_cooldown_set_while_open_applies_to_a_hinted_period_too() {
    let (breaker, mock) = breaker(1);
    breaker.try_acquire().unwrap().record(limited(secs(8)));
    assert_eq!(waiting(&breaker), secs(8));
    let longer = Config::new(1, secs(60), secs(1)).unwrap();
    let longer = CircuitBreaker::builder()
        .config(longer)
        .hint_jitter(0.0)
        .build_config()
        .unwrap();
    breaker.reconfigure(longer);
    assert_eq!(
        waiting(&breaker),
        secs(60),
        "the longer of the two, as unhinted"
    );
    mock.increment(secs(10));
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn a_hint_reported_while_open_lengthens_the_period_whoever_reports_it() {
    // A probe that outlives its lease: its late 429 lengthens the reopen at the lease's end, as
    // a stale permit's 429 lengthens an open period (a plain late failure changes nothing).
    let (breaker, mock) = breaker(1);
    breaker.try_acquire().unwrap().record(FAILED);
    mock.increment(secs(5));
    let probe = breaker.try_acquire().expect("the probe");
    mock.increment(secs(1)); // the lease (1 s) ends: open again, for 5 s from its end
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(waiting(&breaker), secs(5));
    assert_eq!(probe.record(limited(secs(30))), None, "stale");
    assert_eq!(waiting(&breaker), secs(30));
    mock.increment(secs(29));
    assert_eq!(breaker.state(), State::Open);
}
