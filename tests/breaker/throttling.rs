//! Client-side adaptive throttling (`Builder::adaptive_throttling`): the shed share against the
//! SRE book's formula, shedding before the trip, what a shed call leaves alone, the window's end
//! and restart, reconfiguration and reload, and the settings refused by name.
//!
//! The draws come from the thread's generator, seeded in each test that sheds, so a run is
//! reproducible; the bounds asserted hold for any seed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolbreaker::config::{MAX_DURATION, Problem};
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    BlockedReason, CircuitBreaker, FailureKind, Outcome, State, TransitionReason, Window,
};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);
const FAILED: Outcome = Outcome::Failure(FailureKind::Unavailable);

/// The book's probability.
fn formula(requests: f64, accepts: f64, k: f64) -> f64 {
    ((requests - k * accepts) / (requests + 1.0)).max(0.0)
}

/// Ask until admitted and record `outcome`; the calls shed on the way.
fn record_admitted(breaker: &CircuitBreaker, outcome: Outcome) -> u64 {
    let mut shed = 0;
    loop {
        match breaker.try_acquire() {
            Ok(permit) => {
                permit.record(outcome);
                return shed;
            }
            Err(blocked) => {
                assert_eq!(
                    (blocked.reason(), blocked.state()),
                    (BlockedReason::Throttled, State::Closed)
                );
                shed += 1;
            }
        }
    }
}

fn throttled(k: f64, window: Duration) -> (CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(u32::MAX)
        .adaptive_throttling(k, window)
        .metrics(true)
        .clock(clock)
        .build()
        .unwrap();
    (breaker, mock)
}

/// At every step the probability in force is the formula over the requests and accepts so far
/// (a shed call is a request), and the calls shed over 20 000 asks are the sum of the
/// probabilities they were asked at, within 5 standard deviations (the draws are independent
/// given the past, so the sum of their variances bounds the spread).
#[test]
fn the_shed_share_matches_the_formula_call_by_call() {
    fastrand::seed(22);
    let k = 2.0;
    let (breaker, _mock) = throttled(k, 10 * S);
    let (mut requests, mut accepts) = (0.0, 0.0);
    let (mut expected, mut variance, mut shed) = (0.0, 0.0, 0u64);
    for _ in 0..20_000 {
        let p = breaker.throttle_probability();
        assert_eq!(p, formula(requests, accepts, k), "{requests} {accepts}");
        expected += p;
        variance += p * (1.0 - p);
        requests += 1.0;
        match breaker.try_acquire() {
            Err(blocked) => {
                assert_eq!(blocked.reason(), BlockedReason::Throttled);
                shed += 1;
            }
            // The dependency accepts while p is above 0.3 and fails below: p stays near it.
            Ok(permit) if p > 0.3 => {
                permit.record(Outcome::Success);
                accepts += 1.0;
            }
            Ok(permit) => {
                permit.record(FAILED);
            }
        }
    }
    let sigma = variance.sqrt();
    assert!(expected > 4_000.0, "most asks draw: {expected}");
    assert!(
        (shed as f64 - expected).abs() <= 5.0 * sigma,
        "shed {shed}, expected {expected:.1} ± {:.1}",
        5.0 * sigma
    );
    let metrics = breaker.metrics().unwrap();
    assert_eq!((metrics.throttled, metrics.blocked), (shed, 0));
    assert_eq!(metrics.admitted, 20_000 - shed);
}

/// Threads recording at once, more of them than the breaker has stripes: no request or accept
/// is lost. Each thread counts its calls shed and its outcomes; after they are done, one more
/// failure computes the probability from every count, and it is the formula's exactly.
#[test]
fn no_count_is_lost_under_threads() {
    let k = 1.0;
    let (breaker, _mock) = throttled(k, 10 * S);
    let threads = 2 * std::thread::available_parallelism().map_or(1, |n| n.get()) + 20;
    let totals = Mutex::new((0u64, 0u64)); // (requests, accepts)
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (breaker, totals) = (&breaker, &totals);
            scope.spawn(move || {
                fastrand::seed(t as u64);
                let (mut requests, mut accepts) = (0, 0);
                for i in 0..2_000 {
                    requests += 1;
                    if let Ok(permit) = breaker.try_acquire() {
                        if i % 4 == 0 {
                            permit.record(FAILED);
                        } else {
                            permit.record(Outcome::Success);
                            accepts += 1;
                        }
                    }
                }
                let mut totals = totals.lock().unwrap();
                totals.0 += requests;
                totals.1 += accepts;
            });
        }
    });
    let (requests, accepts) = totals.into_inner().unwrap();
    if let Ok(permit) = breaker.try_acquire() {
        permit.record(FAILED);
    }
    // The last ask, shed or failed, is one more request either way.
    assert_eq!(
        breaker.throttle_probability(),
        formula((requests + 1) as f64, accepts as f64, k)
    );
    assert!(breaker.throttle_probability() > 0.0);
}

/// An upstream whose share of 503s grows from 0 to all over a minute, called every 10 ms by a
/// breaker with a failure-rate rule (80 % of 10 s) and throttling (k = 2 over 10 s): shedding
/// begins while closed, once more calls fail than are accepted, grows with the failure share,
/// and the rule trips later.
#[test]
fn throttling_sheds_gradually_before_the_trip() {
    fastrand::seed(7);
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_rate(0.8)
        .window(Window::Time(10 * S))
        .minimum_calls(20)
        .adaptive_throttling(2.0, 10 * S)
        .metrics(true)
        .clock(clock)
        .build()
        .unwrap();
    // Per 5 s: calls asked, calls shed.
    let mut segments = [(0u64, 0u64); 12];
    let (mut carried, mut sent, mut failed) = (0.0, 0u64, 0u64);
    let mut first_shed_at = None;
    let mut tripped_at = None;
    for tick in 0..6_000u64 {
        let share = tick as f64 / 6_000.0; // the upstream's 503 share now
        let segment = &mut segments[(tick / 500) as usize];
        segment.0 += 1;
        match breaker.try_acquire() {
            Ok(permit) => {
                sent += 1;
                carried += share;
                let outcome = if carried >= 1.0 {
                    carried -= 1.0;
                    failed += 1;
                    FAILED
                } else {
                    Outcome::Success
                };
                if let Some(trip) = permit.record(outcome) {
                    assert_eq!(trip.reason(), TransitionReason::FailureRate);
                    tripped_at = Some(tick);
                    break;
                }
            }
            Err(blocked) => {
                assert_eq!(blocked.state(), State::Closed, "nothing else blocks here");
                assert_eq!(blocked.reason(), BlockedReason::Throttled);
                segment.1 += 1;
                first_shed_at.get_or_insert(tick);
            }
        }
        mock.increment(10 * MS);
    }
    let tripped_at = tripped_at.expect("the rate rule trips");
    let first_shed_at = first_shed_at.expect("calls are shed");
    assert!(first_shed_at < tripped_at);
    assert!(
        first_shed_at as f64 / 6_000.0 > 0.5,
        "nothing is shed while at least half the calls are accepted (k = 2)"
    );
    let shed: u64 = segments.iter().map(|s| s.1).sum();
    let asked: u64 = segments.iter().map(|s| s.0).sum();
    let shares: Vec<f64> = segments
        .iter()
        .filter(|s| s.0 > 0)
        .map(|s| s.1 as f64 / s.0 as f64)
        .collect();
    println!(
        "shed {shed} of {asked} calls before the trip ({:.1} %): first at {:.1} s (503 share \
         {:.2}), trip at {:.1} s (503 share {:.2}); shed share per 5 s: {shares:.2?}",
        100.0 * shed as f64 / asked as f64,
        first_shed_at as f64 / 100.0,
        first_shed_at as f64 / 6_000.0,
        tripped_at as f64 / 100.0,
        tripped_at as f64 / 6_000.0,
    );
    // Grows with the failure share: each 5 s from the first with shedding sheds at least as
    // large a share as the one two before it, and the last more than the first.
    let shedding: Vec<f64> = shares.iter().copied().skip_while(|s| *s == 0.0).collect();
    assert!(shedding.len() >= 2, "{shares:?}");
    assert!(shedding.last() > shedding.first(), "{shares:?}");
    for pair in shedding.windows(3) {
        assert!(pair[2] >= pair[0], "{shares:?}");
    }
    let metrics = breaker.metrics().unwrap();
    assert_eq!(metrics.throttled, shed);
    assert_eq!(
        metrics.failures.total(),
        failed,
        "a shed call is no failure"
    );
    assert_eq!(metrics.admitted, sent);
    assert_eq!(metrics.transitions.total(), 1, "the trip alone");
}

/// Shed calls never move the state, the consecutive count, the rate window, the counts or the
/// transitions: a breaker one failure short of its threshold, whose window would trip on one
/// more failure, sheds thousands and stays as it was.
#[test]
fn a_shed_call_changes_no_state_count_window_or_transition() {
    fastrand::seed(3);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let (clock, _mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .failure_rate(0.6)
        .window(Window::Calls(100))
        .minimum_calls(2)
        .adaptive_throttling(2.0, 10 * S)
        .metrics(true)
        .on_transition(move |event| log.lock().unwrap().push(*event.transition()))
        .clock(clock)
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAILED);
    assert_eq!(breaker.throttle_probability(), 0.5);
    let mut kept = None;
    let mut shed = 0u64;
    for _ in 0..5_000 {
        match breaker.try_acquire() {
            Ok(permit) => {
                kept.get_or_insert(permit);
            }
            Err(_) => shed += 1,
        }
    }
    assert!(shed > 4_000, "{shed}");
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.retry_after(), None, "closed: nothing to wait for");
    // One failure and one success in the window: 50 %, below the rule; a shed call counted as a
    // failure would have tripped both rules.
    assert_eq!(kept.expect("some admitted").record(Outcome::Success), None);
    assert_eq!(breaker.state(), State::Closed);
    let metrics = breaker.metrics().unwrap();
    assert_eq!(
        (metrics.failures.total(), metrics.successes, metrics.blocked),
        (1, 1, 0)
    );
    assert_eq!((metrics.throttled, metrics.transitions.total()), (shed, 0));
    assert!(heard.lock().unwrap().is_empty());
}

/// Old failures leave with the window: right away when nothing was asked since (the last
/// computation came after them), and one success at a time while they are still inside it.
#[test]
fn the_probability_returns_to_0_as_the_window_passes_with_successes() {
    fastrand::seed(5);
    let k = 2.0;
    let (breaker, mock) = throttled(k, S);
    let mut requests = 0.0;
    for _ in 0..10 {
        requests += record_admitted(&breaker, FAILED) as f64 + 1.0;
    }
    assert_eq!(breaker.throttle_probability(), formula(requests, 0.0, k));
    mock.increment(1_500 * MS);
    let permit = breaker.try_acquire();
    permit
        .expect("the window holds nothing: p is 0")
        .record(Outcome::Success);
    assert_eq!(breaker.throttle_probability(), 0.0);

    // Failures, then a call every 10 ms that the dependency accepts. The calls shed are
    // requests too, so with all of a window's admitted calls accepted p falls to about 2p − 1
    // a window (the book's dynamics), from near 1 to 0 in a few seconds; then nothing is shed.
    for _ in 0..10 {
        record_admitted(&breaker, FAILED);
    }
    let mut per_window = vec![breaker.throttle_probability()];
    let mut ticks = 0;
    while breaker.throttle_probability() > 0.0 {
        mock.increment(10 * MS);
        ticks += 1;
        if let Ok(permit) = breaker.try_acquire() {
            permit.record(Outcome::Success);
        }
        if ticks % 100 == 0 {
            per_window.push(breaker.throttle_probability());
        }
        assert!(ticks <= 3_000, "p by window: {per_window:?}");
    }
    assert!(per_window[0] > 0.99, "{per_window:?}");
    println!("p by window of successes: {per_window:.3?}, 0 after {ticks} calls");
    for _ in 0..1_000 {
        breaker
            .try_acquire()
            .expect("nothing shed at 0")
            .record(Outcome::Success);
    }
}

/// A probe is never shed, and the close it makes starts the window afresh: a recovered
/// dependency is judged by what it does from then on.
#[test]
fn a_probe_is_never_shed_and_its_close_starts_the_window_afresh() {
    fastrand::seed(11);
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(5)
        .cooldown(S)
        .adaptive_throttling(2.0, 60 * S)
        .clock(clock)
        .build()
        .unwrap();
    while breaker.state() == State::Closed {
        record_admitted(&breaker, FAILED);
    }
    assert!(
        breaker.throttle_probability() >= 5.0 / 6.0,
        "the failures and the calls shed"
    );
    mock.increment(S);
    let probe = breaker.try_acquire().expect("the probe is never shed");
    assert!(probe.is_probe());
    probe.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.throttle_probability(), 0.0, "a new window");
    for _ in 0..100 {
        breaker
            .try_acquire()
            .expect("nothing shed")
            .record(Outcome::Success);
    }
    // One failure after 100 accepts: the window since the close only.
    breaker.try_acquire().unwrap().record(FAILED);
    assert_eq!(breaker.throttle_probability(), 0.0);
}

/// Reconfiguration turns throttling on and off; a new `k` judges the window as it stands, a new
/// window starts afresh.
#[test]
fn reconfigure_turns_throttling_on_changes_k_and_window_and_turns_it_off() {
    fastrand::seed(13);
    let (clock, _mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(u32::MAX)
        .clock(clock)
        .build()
        .unwrap();
    let plain = || CircuitBreaker::builder().failure_threshold(u32::MAX);
    let with = |k, window| {
        plain()
            .adaptive_throttling(k, window)
            .build_config()
            .unwrap()
    };
    breaker.try_acquire().unwrap().record(FAILED);
    assert_eq!(breaker.throttle_probability(), 0.0, "off");

    assert_eq!(breaker.reconfigure(with(2.0, 10 * S)), None);
    assert_eq!(breaker.config().adaptive_throttling(), Some((2.0, 10 * S)));
    let (mut requests, mut accepts) = (0.0, 0.0);
    for outcome in [Outcome::Success, Outcome::Success, Outcome::Ignored] {
        requests += record_admitted(&breaker, outcome) as f64 + 1.0;
        accepts += 1.0;
    }
    for _ in 0..6 {
        requests += record_admitted(&breaker, FAILED) as f64 + 1.0;
    }
    assert_eq!(
        breaker.throttle_probability(),
        formula(requests, accepts, 2.0)
    );
    assert!(breaker.throttle_probability() > 0.0);

    breaker.reconfigure(with(1.5, 10 * S));
    assert_eq!(
        breaker.throttle_probability(),
        formula(requests, accepts, 1.5),
        "the same window under the new k"
    );
    breaker.reconfigure(with(1.5, 20 * S));
    assert_eq!(breaker.throttle_probability(), 0.0, "a new window");
    breaker.try_acquire().unwrap().record(FAILED);
    assert_eq!(breaker.throttle_probability(), 0.5);

    breaker.reconfigure(plain().build_config().unwrap());
    assert_eq!(breaker.config().adaptive_throttling(), None);
    assert_eq!(breaker.throttle_probability(), 0.0);
    for _ in 0..100 {
        breaker.try_acquire().expect("off").record(FAILED);
    }
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn bad_settings_are_refused_naming_the_field() {
    for (k, window, field, problem) in [
        (0.5, S, "adaptive_throttling.k", Problem::OutOfRange),
        (f64::NAN, S, "adaptive_throttling.k", Problem::OutOfRange),
        (
            f64::INFINITY,
            S,
            "adaptive_throttling.k",
            Problem::OutOfRange,
        ),
        (
            2.0,
            Duration::ZERO,
            "adaptive_throttling.window",
            Problem::Zero,
        ),
        (
            2.0,
            MAX_DURATION + MS,
            "adaptive_throttling.window",
            Problem::TooLong,
        ),
    ] {
        let err = CircuitBreaker::builder()
            .adaptive_throttling(k, window)
            .build()
            .unwrap_err();
        assert_eq!(
            (err.field(), err.problem()),
            (field, problem),
            "{k} {window:?}"
        );
        assert!(err.to_string().contains(field), "{err}");
    }
    let config = CircuitBreaker::builder()
        .adaptive_throttling(1.0, MAX_DURATION)
        .build_config()
        .unwrap();
    assert_eq!(config.adaptive_throttling(), Some((1.0, MAX_DURATION)));
    let again = CircuitBreaker::builder().config(config).build().unwrap();
    assert_eq!(
        again.config(),
        config,
        "kept through the builder and the breaker"
    );
}

#[cfg(feature = "toml")]
mod toml {
    use toolbreaker::{Registry, RegistryConfig};

    use super::*;

    const BASE: &str = "\
[default]
adaptive_throttling = { k = 2.0, window_ms = 10000 }

[dependencies.search]
adaptive_throttling = { k = 3, window_ms = 500 }

[dependencies.weather]
adaptive_throttling = false
";

    #[test]
    fn a_file_sets_inherits_and_turns_off_throttling_and_reload_changes_it() {
        let (clock, _mock) = Clock::mock();
        let registry = Registry::builder()
            .config(RegistryConfig::from_toml(BASE).unwrap())
            .clock(clock)
            .build();
        let throttling = |name: &str| registry.get(name).config().adaptive_throttling();
        assert_eq!(throttling("search"), Some((3.0, 500 * MS)));
        assert_eq!(throttling("weather"), None);
        assert_eq!(throttling("other"), Some((2.0, 10 * S)));

        let search = registry.get("search");
        search.try_acquire().unwrap().record(FAILED);
        assert_eq!(search.throttle_probability(), 0.5);
        let reload = registry
            .reload_toml(
                "[dependencies.search]\nadaptive_throttling = { k = 2, window_ms = 500 }\n",
            )
            .unwrap();
        let shown: Vec<String> = reload.changes().iter().map(ToString::to_string).collect();
        assert!(
            shown
                .iter()
                .any(|c| c.contains("adaptive_throttling k 3 over 500 ms -> k 2 over 500 ms")),
            "{shown:?}"
        );
        assert_eq!(throttling("search"), Some((2.0, 500 * MS)));
        assert_eq!(
            search.throttle_probability(),
            0.5,
            "the window as it stands"
        );
        registry.reload_toml("[default]\n").unwrap();
        assert_eq!((throttling("search"), throttling("other")), (None, None));
        assert_eq!(search.throttle_probability(), 0.0);
    }

    #[test]
    fn a_bad_setting_in_a_file_names_its_key() {
        for (value, key) in [
            ("{ k = 0.5, window_ms = 1000 }", "adaptive_throttling.k"),
            ("{ k = \"2\", window_ms = 1000 }", "adaptive_throttling.k"),
            (
                "{ k = 2.0, window_ms = 0 }",
                "adaptive_throttling.window_ms",
            ),
            (
                "{ k = 2.0, window_ms = 1099511627777 }",
                "adaptive_throttling.window_ms",
            ),
            (
                "{ k = 2.0, window_ms = 1.5 }",
                "adaptive_throttling.window_ms",
            ),
            ("{ window_ms = 1000 }", "adaptive_throttling.k"),
            ("{ k = 2.0 }", "adaptive_throttling.window_ms"),
            (
                "{ k = 2.0, window_ms = 1000, ratio = 1 }",
                "adaptive_throttling.ratio",
            ),
            ("true", "adaptive_throttling"),
            ("2", "adaptive_throttling"),
        ] {
            let text = format!("[dependencies.search]\nadaptive_throttling = {value}\n");
            let err = RegistryConfig::from_toml(&text).unwrap_err();
            assert_eq!(
                (err.dependency(), err.field()),
                (Some("search"), Some(key)),
                "{text}: {err}"
            );
            assert!(err.to_string().contains(key), "{err}");
            assert!(
                !err.to_string().contains("window`"),
                "no builder name: {err}"
            );
        }
    }
}
