//! A cooldown that backs off while the dependency keeps failing its probes, and spreads by a
//! jitter: the cooldown in force, what callers are told of it, its edges and its configuration.

use std::time::Duration;

use toolbreaker::config::Problem;
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{CircuitBreaker, FailureKind, Outcome, RegistryConfig, State, TransitionReason};

const FAILED: Outcome = Outcome::Failure(FailureKind::Unavailable);
const MS: Duration = Duration::from_millis(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn backing_off(multiplier: f64, max: Duration) -> (CircuitBreaker, std::sync::Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(ms(100))
        .probe_timeout(ms(1_000))
        .cooldown_backoff(multiplier, max)
        .clock(clock)
        .build()
        .unwrap();
    (breaker, mock)
}

/// The cooldown left, as a blocked caller is told it.
fn waiting(breaker: &CircuitBreaker) -> Duration {
    breaker.try_acquire().unwrap_err().retry_after()
}

/// Wait out the cooldown in force and fail the probe: a reopen.
fn fail_probe(breaker: &CircuitBreaker, mock: &Mock) -> toolbreaker::Transition {
    mock.increment(waiting(breaker));
    let probe = breaker.try_acquire().expect("the probe after the cooldown");
    assert!(probe.is_probe());
    probe.record(FAILED).expect("the probe's failure reopens")
}

#[test]
fn each_reopen_multiplies_the_cooldown_up_to_its_cap_and_a_close_resets_it() {
    let (breaker, mock) = backing_off(2.0, ms(300));
    let trip = breaker.try_acquire().unwrap().record(FAILED).unwrap();
    assert_eq!(
        trip.cooldown(),
        ms(100),
        "a trip starts from the configured cooldown"
    );
    assert_eq!(waiting(&breaker), ms(100));
    let mut seen = Vec::new();
    for _ in 0..4 {
        let reopen = fail_probe(&breaker, &mock);
        assert_eq!(reopen.reason(), TransitionReason::ProbeFailed);
        assert_eq!(
            waiting(&breaker),
            reopen.cooldown(),
            "told as it is in force"
        );
        seen.push(reopen.cooldown());
    }
    assert_eq!(
        seen,
        [ms(200), ms(300), ms(300), ms(300)],
        "capped at 300 ms"
    );

    // Open until the backed-off cooldown ends, not the configured one.
    mock.increment(ms(299));
    assert_eq!(breaker.state(), State::Open);
    mock.increment(MS);
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = breaker.try_acquire().unwrap();
    assert_eq!(
        probe.record(Outcome::Success).unwrap().reason(),
        TransitionReason::ProbeSucceeded
    );
    let trip = breaker.try_acquire().unwrap().record(FAILED).unwrap();
    assert_eq!(trip.cooldown(), ms(100), "the close reset it");
    assert_eq!(fail_probe(&breaker, &mock).cooldown(), ms(200));
}

#[test]
fn a_probe_that_outlives_its_lease_backs_off_too() {
    let (breaker, mock) = backing_off(3.0, ms(10_000));
    breaker.try_acquire().unwrap().record(FAILED);
    mock.increment(ms(100));
    let probe = breaker.try_acquire().unwrap();
    // The lease (1 s) runs out: open from its end, for 3 × 100 ms.
    mock.increment(ms(1_000));
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(waiting(&breaker), ms(300));
    mock.increment(ms(299));
    assert_eq!(breaker.state(), State::Open);
    mock.increment(MS);
    // Claimed again after the expired lease: that probe's failure backs off once more.
    let next = breaker.try_acquire().expect("a new probe");
    assert_eq!(
        probe.record(Outcome::Success),
        None,
        "the expired probe is stale"
    );
    assert_eq!(next.record(FAILED).unwrap().cooldown(), ms(900));
    assert_eq!(waiting(&breaker), ms(900));
}

#[test]
fn a_multiplier_of_one_keeps_the_cooldown() {
    let (breaker, mock) = backing_off(1.0, ms(100));
    breaker.try_acquire().unwrap().record(FAILED);
    for _ in 0..3 {
        assert_eq!(fail_probe(&breaker, &mock).cooldown(), ms(100));
    }
}

#[test]
fn jitter_spreads_each_cooldown_within_its_range_and_fixes_it_for_the_period() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(ms(1_000))
        .cooldown_jitter(0.25)
        .clock(clock)
        .build()
        .unwrap();
    let mut drawn = Vec::new();
    for _ in 0..200 {
        let trip = breaker.try_acquire().unwrap().record(FAILED).unwrap();
        let cooldown = trip.cooldown();
        assert!(
            (ms(750)..=ms(1_250)).contains(&cooldown),
            "{cooldown:?} outside ±25 %"
        );
        // Every caller reads the same end.
        assert_eq!(waiting(&breaker), cooldown);
        mock.increment(cooldown - MS);
        assert_eq!(waiting(&breaker), MS);
        mock.increment(MS);
        let probe = breaker
            .try_acquire()
            .expect("the probe at the period's end");
        probe.record(Outcome::Success);
        drawn.push(cooldown);
    }
    drawn.sort();
    drawn.dedup();
    assert!(drawn.len() > 100, "spread: {} distinct of 200", drawn.len());
    assert!(
        drawn[0] < ms(850) && drawn[drawn.len() - 1] > ms(1_150),
        "{drawn:?}"
    );
}

#[test]
fn jitter_applies_after_the_backoff_at_its_cap() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(ms(100))
        .probe_timeout(ms(10_000))
        .cooldown_backoff(4.0, ms(1_000))
        .cooldown_jitter(0.1)
        .clock(clock)
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAILED);
    for _ in 0..6 {
        fail_probe(&breaker, &mock);
    }
    let at_cap = waiting(&breaker);
    assert!((ms(900)..=ms(1_100)).contains(&at_cap), "{at_cap:?}");
}

#[test]
fn breakers_that_trip_together_spread_apart() {
    let (clock, _mock) = Clock::mock();
    let cooldowns: Vec<Duration> = (0..50)
        .map(|_| {
            let breaker = CircuitBreaker::builder()
                .failure_threshold(1)
                .cooldown(ms(10_000))
                .cooldown_jitter(0.5)
                .clock(clock.clone())
                .build()
                .unwrap();
            breaker.try_acquire().unwrap().record(FAILED);
            waiting(&breaker)
        })
        .collect();
    let mut distinct = cooldowns.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() > 40, "{cooldowns:?}");
}

#[test]
fn each_bad_value_is_a_config_error_naming_its_field() {
    let b = || CircuitBreaker::builder().cooldown(ms(100));
    let cases = [
        (
            b().cooldown_backoff(0.5, ms(200)),
            "cooldown_multiplier",
            Problem::OutOfRange,
        ),
        (
            b().cooldown_backoff(f64::NAN, ms(200)),
            "cooldown_multiplier",
            Problem::OutOfRange,
        ),
        (
            b().cooldown_backoff(f64::INFINITY, ms(200)),
            "cooldown_multiplier",
            Problem::OutOfRange,
        ),
        (
            b().cooldown_backoff(2.0, ms(99)),
            "max_cooldown",
            Problem::TooShort,
        ),
        (
            b().cooldown_backoff(2.0, Duration::ZERO),
            "max_cooldown",
            Problem::Zero,
        ),
        (
            b().cooldown_backoff(2.0, Duration::MAX),
            "max_cooldown",
            Problem::TooLong,
        ),
        (
            b().cooldown_jitter(1.0),
            "cooldown_jitter",
            Problem::OutOfRange,
        ),
        (
            b().cooldown_jitter(-0.01),
            "cooldown_jitter",
            Problem::OutOfRange,
        ),
        (
            b().cooldown_jitter(f64::NAN),
            "cooldown_jitter",
            Problem::OutOfRange,
        ),
    ];
    for (builder, field, problem) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!((err.field(), err.problem()), (field, problem), "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }
    let edge = b()
        .cooldown_backoff(1.0, ms(100))
        .cooldown_jitter(0.0)
        .build_config()
        .unwrap();
    assert_eq!(
        edge.cooldown_backoff(),
        None,
        "a multiplier of 1 is no backoff"
    );
    assert_eq!(edge.cooldown_jitter(), 0.0);
    assert_eq!(b().build_config().unwrap().cooldown_backoff(), None);
}

#[test]
fn the_shape_goes_through_the_toml_file_and_a_reload() {
    let text = "[default]\ncooldown_ms = 100\ncooldown_multiplier = 2\nmax_cooldown_ms = 400\n\
                cooldown_jitter = 0.1\n[dependencies.search]\ncooldown_jitter = 0\n";
    let config = RegistryConfig::from_toml(text).unwrap();
    let default = config.default_config();
    assert_eq!(default.cooldown_backoff(), Some((2.0, ms(400))));
    assert_eq!(default.cooldown_jitter(), 0.1);
    let search = config.config_for("search");
    assert_eq!(search.cooldown_backoff(), Some((2.0, ms(400))), "inherited");
    assert_eq!(search.cooldown_jitter(), 0.0);

    for (text, field) in [
        (
            "[default]\ncooldown_multiplier = 0.5\nmax_cooldown_ms = 40000\n",
            "cooldown_multiplier",
        ),
        (
            "[default]\ncooldown_multiplier = 2\n",
            "cooldown_multiplier",
        ),
        ("[default]\nmax_cooldown_ms = 1000\n", "max_cooldown_ms"),
        (
            "[default]\ncooldown_ms = 500\ncooldown_multiplier = 2\nmax_cooldown_ms = 499\n",
            "max_cooldown_ms",
        ),
        ("[default]\ncooldown_jitter = 1.5\n", "cooldown_jitter"),
        ("[default]\ncooldown_jitter = \"some\"\n", "cooldown_jitter"),
    ] {
        let err = RegistryConfig::from_toml(text).unwrap_err();
        assert_eq!(err.field(), Some(field), "{text}: {err}");
    }

    let (clock, mock) = Clock::mock();
    let registry = toolbreaker::Registry::builder().clock(clock).build();
    let api = registry.get("api");
    let reload = registry
        .reload_toml("[default]\nfailure_threshold = 1\ncooldown_ms = 100\ncooldown_multiplier = 2\nmax_cooldown_ms = 1000\n")
        .unwrap();
    let change = reload.changes()[0].to_string();
    assert!(
        change.contains("cooldown_backoff off -> 2 up to 1000 ms"),
        "{change}"
    );
    api.try_acquire().unwrap().record(FAILED);
    assert_eq!(fail_probe(&api, &mock).cooldown(), ms(200));
}
