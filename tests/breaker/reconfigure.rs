//! Live reconfiguration and changes by hand, on the mock clock: an open breaker keeps its
//! opened-at, a probe keeps its start, a closed breaker keeps its count; `force_open`,
//! `force_closed` and `reset` are transitions with reason `manual` that make older permits stale;
//! a registry's listener hears every transition once, with the dependency's name.

use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Outcome, Registry, RegistryConfig, State,
    Transition, TransitionReason,
};

const FAIL: Outcome = Outcome::Failure(FailureKind::Unavailable);
const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

fn cfg(threshold: u32, cooldown: Duration, probe_timeout: Duration) -> Config {
    Config::new(threshold, cooldown, probe_timeout).expect("valid config")
}

/// A breaker on a mock clock that has already run for a while, so that no deadline in a test
/// coincides with the breaker's construction.
fn breaker(config: Config) -> (CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    mock.increment(1_000 * S);
    let breaker = CircuitBreaker::builder()
        .config(config)
        .clock(clock)
        .build()
        .expect("valid config");
    mock.increment(7 * S);
    (breaker, mock)
}

/// A breaker whose transitions are also collected, in the order they were announced.
fn heard_breaker(config: Config) -> (CircuitBreaker, Arc<Mock>, Arc<Mutex<Vec<Transition>>>) {
    let (clock, mock) = Clock::mock();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let breaker = CircuitBreaker::builder()
        .config(config)
        .clock(clock)
        .name("search")
        .on_transition(move |event| {
            assert_eq!(event.dependency(), "search");
            log.lock().unwrap().push(*event.transition());
        })
        .build()
        .expect("valid config");
    mock.increment(7 * S);
    (breaker, mock, heard)
}

fn fail(breaker: &CircuitBreaker) -> Option<Transition> {
    breaker.try_acquire().expect("admitted").record(FAIL)
}

/// Record `n` failures, asserting that none but possibly the last one trips; returns the last
/// one's transition.
fn fail_n(breaker: &CircuitBreaker, n: u32) -> Option<Transition> {
    let mut last = None;
    for i in 0..n {
        assert_eq!(last, None, "failure {i} of {n} came after a trip");
        last = fail(breaker);
    }
    last
}

fn blocked(breaker: &CircuitBreaker) -> (State, BlockedReason, Duration) {
    let blocked = breaker.try_acquire().expect_err("blocked");
    (blocked.state(), blocked.reason(), blocked.retry_after())
}

fn summary(t: &Transition) -> (State, State, TransitionReason, u64) {
    (t.from(), t.to(), t.reason(), t.failures())
}

// ---------------------------------------------------------------------------------------------
// Open: the new cooldown counts from the original opened-at time.

#[test]
fn an_open_breaker_given_a_shorter_cooldown_stays_open_until_its_opening_plus_the_new_one() {
    let (breaker, mock) = breaker(cfg(1, 10 * S, S));
    let trip = fail(&breaker).expect("trips at t0");
    mock.increment(3 * S);

    assert_eq!(breaker.reconfigure(cfg(1, 5 * S, S)), None);
    assert_eq!(breaker.config().cooldown(), 5 * S);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, 2 * S)
    );

    mock.increment(2 * S - MS);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, MS)
    );
    mock.increment(MS);
    assert_eq!(breaker.state(), State::HalfOpen, "t0 + 5 s");
    let probe = breaker.try_acquire().expect("the probe");
    assert!(probe.is_probe());
    assert_eq!(
        probe.generation(),
        trip.generation(),
        "reconfigure moved no generation"
    );
    assert_eq!(
        probe.record(Outcome::Success).map(|t| t.reason()),
        Some(TransitionReason::ProbeSucceeded)
    );
}

#[test]
fn an_open_breaker_given_a_longer_cooldown_stays_open_until_its_opening_plus_the_new_one() {
    let (breaker, mock) = breaker(cfg(1, 10 * S, S));
    fail(&breaker).expect("trips at t0");
    mock.increment(3 * S);

    assert_eq!(breaker.reconfigure(cfg(1, 20 * S, S)), None);
    mock.increment(2 * S);
    assert_eq!(breaker.state(), State::Open, "t0 + 5 s: no longer enough");
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, 15 * S)
    );
    mock.increment(5 * S);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, 10 * S),
        "t0 + 10 s, the old cooldown's end, is not the end any more"
    );
    mock.increment(10 * S - MS);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, MS)
    );
    mock.increment(MS);
    assert_eq!(breaker.state(), State::HalfOpen, "t0 + 20 s");
    assert!(breaker.try_acquire().expect("the probe").is_probe());
}

#[test]
fn an_open_breaker_given_a_cooldown_already_elapsed_is_half_open_at_once() {
    // Exactly elapsed and long elapsed.
    for new_cooldown in [3 * S, MS] {
        let (breaker, mock, heard) = heard_breaker(cfg(1, 10 * S, S));
        let trip = fail(&breaker).expect("trips at t0");
        mock.increment(3 * S);
        assert_eq!(breaker.state(), State::Open);

        assert_eq!(breaker.reconfigure(cfg(1, new_cooldown, S)), None);
        assert_eq!(breaker.state(), State::HalfOpen, "{new_cooldown:?}");
        let probe = breaker.try_acquire().expect("the probe, at once");
        assert!(probe.is_probe());
        assert_eq!(probe.generation(), trip.generation());
        assert_eq!(
            blocked(&breaker),
            (State::HalfOpen, BlockedReason::ProbeInFlight, S),
            "only one probe"
        );
        let heard = heard.lock().unwrap().clone();
        assert_eq!(heard.len(), 2, "{heard:?}");
        assert_eq!(
            summary(&heard[1]),
            (
                State::Open,
                State::HalfOpen,
                TransitionReason::CooldownElapsed,
                0
            )
        );
        assert_eq!(heard[1].cooldown(), new_cooldown);
        assert_eq!(heard[1].generation(), trip.generation());
    }
}

#[test]
fn reconfigure_moves_no_generation_so_permits_from_before_are_judged_as_before() {
    let (breaker, _mock) = breaker(cfg(2, 10 * S, S));
    let held = breaker.try_acquire().unwrap();
    let generation = held.generation();

    assert_eq!(breaker.reconfigure(cfg(3, 5 * S, 2 * S)), None);
    assert!(held.is_current());
    assert_eq!(fail_n(&breaker, 2), None, "2 of 3");
    let trip = held
        .record(FAIL)
        .expect("the held permit's failure counts: 3 of 3");
    assert_eq!(trip.failures(), 3);
    assert_eq!(trip.generation(), generation + 1);

    // And a permit from the closed period, stale since the trip, stays stale across a change.
    let (breaker, _mock) = self::breaker(cfg(1, 10 * S, S));
    let old = breaker.try_acquire().unwrap();
    fail(&breaker).expect("trips");
    assert_eq!(breaker.reconfigure(cfg(1, MS, S)), None);
    assert_eq!(breaker.force_closed().map(|t| t.to()), Some(State::Closed));
    assert!(!old.is_current());
    assert_eq!(old.record(FAIL), None, "stale before, stale after");
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn a_lowered_threshold_does_not_trip_an_open_or_half_open_breaker() {
    let (breaker, mock) = breaker(cfg(3, 10 * S, 5 * S));
    fail_n(&breaker, 3).expect("trips");
    assert_eq!(breaker.reconfigure(cfg(1, 10 * S, 5 * S)), None);
    assert_eq!(breaker.state(), State::Open);
    mock.increment(10 * S);
    assert_eq!(breaker.reconfigure(cfg(2, 10 * S, 5 * S)), None);
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = breaker.try_acquire().unwrap();
    assert_eq!(breaker.reconfigure(cfg(1, 10 * S, 5 * S)), None);
    assert!(probe.is_current());
    assert_eq!(
        probe.record(Outcome::Success).map(|t| t.to()),
        Some(State::Closed)
    );
}

// ---------------------------------------------------------------------------------------------
// Half-open with a probe in flight: the new probe timeout counts from the probe's start.

#[test]
fn a_probe_lease_shortened_past_now_is_a_timed_out_probe_and_its_late_report_is_stale() {
    let (breaker, mock, heard) = heard_breaker(cfg(1, 10 * S, 5 * S));
    fail(&breaker).expect("trips");
    mock.increment(10 * S);
    let probe = breaker.try_acquire().expect("the probe, started at ps");
    mock.increment(3 * S);
    assert!(probe.is_current());

    assert_eq!(breaker.reconfigure(cfg(1, 10 * S, 2 * S)), None);
    // The lease ended at ps + 2 s: open, with the cooldown counted from there (ps + 12 s).
    assert!(!probe.is_current());
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, 9 * S)
    );
    assert_eq!(probe.record(Outcome::Success), None, "the late report");
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, 9 * S)
    );

    {
        let heard = heard.lock().unwrap();
        assert_eq!(heard.len(), 3, "trip, cooldown, time-out: {heard:?}");
        assert_eq!(
            summary(&heard[2]),
            (
                State::HalfOpen,
                State::Open,
                TransitionReason::ProbeTimedOut,
                1
            ),
            "announced once, by the first rejection"
        );
    }

    mock.increment(9 * S - MS);
    assert_eq!(breaker.state(), State::Open);
    mock.increment(MS);
    assert_eq!(breaker.state(), State::HalfOpen, "ps + 12 s");
    let next = breaker.try_acquire().expect("a new probe");
    assert!(next.is_probe());
    assert_eq!(heard.lock().unwrap().len(), 4);
}

#[test]
fn a_probe_lease_lengthened_or_shortened_counts_from_the_probes_start() {
    // Lengthened: the probe outlives its old lease and still counts.
    let (breaker, mock) = breaker(cfg(1, 10 * S, 5 * S));
    fail(&breaker).expect("trips");
    mock.increment(10 * S);
    let probe = breaker.try_acquire().expect("the probe, started at ps");
    mock.increment(4 * S);
    assert_eq!(breaker.reconfigure(cfg(1, 10 * S, 20 * S)), None);
    assert_eq!(
        blocked(&breaker),
        (State::HalfOpen, BlockedReason::ProbeInFlight, 16 * S)
    );
    mock.increment(6 * S);
    assert_eq!(
        breaker.state(),
        State::HalfOpen,
        "ps + 10 s, past the old lease"
    );
    assert!(probe.is_current());
    assert_eq!(
        probe.record(Outcome::Success).map(|t| summary(&t)),
        Some((
            State::HalfOpen,
            State::Closed,
            TransitionReason::ProbeSucceeded,
            0
        ))
    );

    // Shortened, not yet past now: in flight for the rest of the new lease.
    let (breaker, mock) = self::breaker(cfg(1, 10 * S, 5 * S));
    fail(&breaker).expect("trips");
    mock.increment(10 * S);
    let probe = breaker.try_acquire().expect("the probe, started at ps");
    mock.increment(S);
    assert_eq!(breaker.reconfigure(cfg(1, 10 * S, 3 * S)), None);
    assert_eq!(
        blocked(&breaker),
        (State::HalfOpen, BlockedReason::ProbeInFlight, 2 * S)
    );
    mock.increment(2 * S);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::DependencyOpen, 10 * S),
        "ps + 3 s: timed out, open for a cooldown from the lease's end"
    );
    assert_eq!(probe.record(Outcome::Failure(FailureKind::Timeout)), None);
}

// ---------------------------------------------------------------------------------------------
// Closed: the count is kept.

#[test]
fn a_closed_breaker_keeps_its_count_when_the_threshold_is_raised() {
    let (breaker, _mock) = breaker(cfg(5, 10 * S, S));
    assert_eq!(fail_n(&breaker, 3), None);
    assert_eq!(breaker.reconfigure(cfg(10, 10 * S, S)), None);
    assert_eq!(breaker.config().failure_threshold(), Some(10));
    for i in 4..10 {
        assert_eq!(fail(&breaker), None, "failure {i} of 10");
        assert_eq!(breaker.state(), State::Closed);
    }
    let trip = fail(&breaker).expect("the 7th after the change is the 10th in all");
    assert_eq!(
        summary(&trip),
        (
            State::Closed,
            State::Open,
            TransitionReason::FailureThreshold,
            10
        )
    );
}

#[test]
fn a_threshold_lowered_to_a_count_already_reached_trips_at_once() {
    for (lowered, count) in [(3, 3), (2, 3), (1, 3), (1, 1)] {
        let (breaker, mock, heard) = heard_breaker(cfg(5, 10 * S, S));
        assert_eq!(fail_n(&breaker, count), None);
        mock.increment(S);
        let trip = breaker
            .reconfigure(cfg(lowered, 4 * S, S))
            .expect("the count already reaches the new threshold");
        assert_eq!(
            summary(&trip),
            (
                State::Closed,
                State::Open,
                TransitionReason::FailureThreshold,
                u64::from(count)
            ),
            "threshold {lowered}, count {count}"
        );
        assert_eq!(trip.generation(), 1);
        assert_eq!(trip.cooldown(), 4 * S, "the new cooldown");
        assert_eq!(breaker.state(), State::Open);
        assert_eq!(*heard.lock().unwrap(), [trip], "announced once");
        // Open from the moment of the change, for the new cooldown.
        assert_eq!(
            blocked(&breaker),
            (State::Open, BlockedReason::DependencyOpen, 4 * S)
        );
        // Reconfiguring again changes nothing more.
        assert_eq!(breaker.reconfigure(cfg(lowered, 4 * S, S)), None);
        assert_eq!(heard.lock().unwrap().len(), 1);
    }
}

#[test]
fn a_threshold_lowered_to_a_count_not_yet_reached_trips_on_the_failure_that_reaches_it() {
    let (breaker, _mock) = breaker(cfg(10, 10 * S, S));
    assert_eq!(fail_n(&breaker, 3), None);
    assert_eq!(breaker.reconfigure(cfg(5, 10 * S, S)), None);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(fail(&breaker), None, "4 of 5");
    let trip = fail(&breaker).expect("5 of 5");
    assert_eq!(trip.failures(), 5);
    assert_eq!(trip.reason(), TransitionReason::FailureThreshold);
}

#[test]
fn a_closed_breaker_with_no_failures_never_trips_on_reconfigure() {
    let (breaker, _mock) = breaker(cfg(10, 10 * S, S));
    assert_eq!(breaker.reconfigure(cfg(1, 10 * S, S)), None);
    assert_eq!(breaker.state(), State::Closed);
    fail(&breaker).expect("the first failure reaches 1");
}

// ---------------------------------------------------------------------------------------------
// Isolated: stays isolated.

#[test]
fn an_isolated_breaker_stays_isolated_across_reconfigure() {
    let (breaker, mock) = breaker(cfg(5, 10 * S, S));
    fail_n(&breaker, 2);
    breaker.force_open().expect("closed → isolated");
    for config in [cfg(1, MS, MS), cfg(2, 3 * S, S), cfg(u32::MAX, 10 * S, S)] {
        assert_eq!(breaker.reconfigure(config), None);
        mock.increment(1_000 * S);
        assert_eq!(breaker.state(), State::Open);
        assert_eq!(
            blocked(&breaker),
            (State::Open, BlockedReason::Isolated, config.cooldown()),
            "the new cooldown is the interval to ask again"
        );
    }
    assert_eq!(breaker.force_open(), None, "still isolated");
}

// ---------------------------------------------------------------------------------------------
// Changes by hand.

#[test]
fn force_open_from_closed_isolates_for_good_and_reports_the_count() {
    let (breaker, mock) = breaker(cfg(5, 10 * S, S));
    let old = breaker.try_acquire().unwrap();
    fail_n(&breaker, 2);
    let isolated = breaker.force_open().expect("closed → open");
    assert_eq!(
        summary(&isolated),
        (State::Closed, State::Open, TransitionReason::Manual, 2)
    );
    assert_eq!(isolated.generation(), old.generation() + 1);
    assert_eq!(isolated.cooldown(), 10 * S);
    assert!(!old.is_current());
    assert_eq!(old.record(FAIL), None);

    for step in [MS, 10 * S, 3_600 * S, 86_400 * 365 * S] {
        mock.increment(step);
        assert_eq!(breaker.state(), State::Open);
        assert_eq!(
            blocked(&breaker),
            (State::Open, BlockedReason::Isolated, 10 * S),
            "no probe, ever"
        );
    }
    assert_eq!(breaker.force_open(), None, "already isolated");
}

#[test]
fn force_open_from_open_and_from_half_open() {
    // From open (tripped): no cooldown ends it any more.
    let (breaker, mock) = breaker(cfg(1, 10 * S, S));
    let trip = fail(&breaker).unwrap();
    let isolated = breaker.force_open().expect("open → isolated");
    assert_eq!(
        summary(&isolated),
        (State::Open, State::Open, TransitionReason::Manual, 0)
    );
    assert_eq!(isolated.generation(), trip.generation() + 1);
    mock.increment(100 * S);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::Isolated, 10 * S)
    );

    // From half-open with the slot free.
    let (breaker, mock) = self::breaker(cfg(1, 10 * S, S));
    fail(&breaker).unwrap();
    mock.increment(10 * S);
    assert_eq!(breaker.state(), State::HalfOpen);
    let isolated = breaker.force_open().expect("half-open → isolated");
    // No caller claimed the slot, so `open → half-open` was never announced: the change is
    // heard as from open, and the transitions a listener hears still chain.
    assert_eq!(
        summary(&isolated),
        (State::Open, State::Open, TransitionReason::Manual, 0)
    );
    mock.increment(100 * S);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::Isolated, 10 * S)
    );
}

#[test]
fn force_open_with_a_probe_in_flight_makes_its_success_stale() {
    let (breaker, mock) = breaker(cfg(1, 10 * S, 5 * S));
    fail(&breaker).unwrap();
    mock.increment(10 * S);
    let probe = breaker.try_acquire().expect("the probe");
    let isolated = breaker.force_open().expect("half-open → isolated");
    assert_eq!(
        summary(&isolated),
        (State::HalfOpen, State::Open, TransitionReason::Manual, 0)
    );
    assert_eq!(isolated.generation(), probe.generation() + 1);
    assert!(!probe.is_current());
    mock.increment(S);
    assert_eq!(
        probe.record(Outcome::Success),
        None,
        "stale: does not close"
    );
    assert_eq!(breaker.state(), State::Open);
    for _ in 0..3 {
        mock.increment(1_000 * S);
        assert_eq!(
            blocked(&breaker),
            (State::Open, BlockedReason::Isolated, 10 * S)
        );
    }

    // A probe dropped after the isolation gives back no slot either.
    let (breaker, mock) = self::breaker(cfg(1, 10 * S, 5 * S));
    fail(&breaker).unwrap();
    mock.increment(10 * S);
    let probe = breaker.try_acquire().expect("the probe");
    breaker.force_open().unwrap();
    drop(probe);
    assert_eq!(
        blocked(&breaker),
        (State::Open, BlockedReason::Isolated, 10 * S)
    );
}

#[test]
fn force_closed_from_isolated_open_and_half_open_closes_with_no_count() {
    type Setup = fn(&CircuitBreaker, &Mock);
    // (name, the state now, the state last announced: the transition's `from`, setup)
    let cases: [(&str, State, State, Setup); 5] = [
        ("isolated", State::Open, State::Open, |b, _| {
            b.force_open().unwrap();
        }),
        ("open", State::Open, State::Open, |b, _| {
            fail_n(b, 3).unwrap();
        }),
        // Half-open by time alone: no claim announced `open → half-open` yet.
        (
            "half-open, unclaimed",
            State::HalfOpen,
            State::Open,
            |b, m| {
                fail_n(b, 3).unwrap();
                m.increment(10 * S);
            },
        ),
        // Half-open after a probe claimed the slot and gave it back.
        (
            "half-open, slot given back",
            State::HalfOpen,
            State::HalfOpen,
            |b, m| {
                fail_n(b, 3).unwrap();
                m.increment(10 * S);
                drop(b.try_acquire().unwrap());
            },
        ),
        ("isolated after a trip", State::Open, State::Open, |b, _| {
            fail_n(b, 3).unwrap();
            b.force_open().unwrap();
        }),
    ];
    for (name, now, from, setup) in cases {
        let (breaker, mock) = breaker(cfg(3, 10 * S, S));
        let old = breaker.try_acquire().unwrap();
        setup(&breaker, &mock);
        assert_eq!(breaker.state(), now, "{name}");

        let closed = breaker.force_closed().expect(name);
        assert_eq!(
            summary(&closed),
            (from, State::Closed, TransitionReason::Manual, 0),
            "{name}"
        );
        assert_eq!(breaker.state(), State::Closed);
        assert_eq!(breaker.force_closed(), None, "{name}: closed now");
        assert!(!old.is_current(), "{name}");
        assert_eq!(old.record(FAIL), None, "{name}");
        assert_eq!(fail_n(&breaker, 2), None, "{name}: the count starts over");
        assert_eq!(fail(&breaker).map(|t| t.failures()), Some(3), "{name}");
    }
}

#[test]
fn force_closed_with_a_probe_in_flight_makes_its_report_stale() {
    for outcome in [Outcome::Success, FAIL, Outcome::Ignored] {
        let (breaker, mock) = breaker(cfg(1, 10 * S, 5 * S));
        fail(&breaker).unwrap();
        mock.increment(10 * S);
        let probe = breaker.try_acquire().expect("the probe");
        let closed = breaker.force_closed().expect("half-open → closed");
        assert_eq!(
            summary(&closed),
            (State::HalfOpen, State::Closed, TransitionReason::Manual, 0)
        );
        assert_eq!(closed.generation(), probe.generation() + 1);
        assert_eq!(probe.record(outcome), None, "{outcome:?}");
        assert_eq!(breaker.state(), State::Closed, "{outcome:?}");
        assert!(breaker.try_acquire().is_ok());
    }
}

#[test]
fn force_closed_when_closed_is_nothing_and_keeps_the_count() {
    let (breaker, _mock) = breaker(cfg(3, 10 * S, S));
    assert_eq!(breaker.force_closed(), None);
    let held = breaker.try_acquire().unwrap();
    fail_n(&breaker, 2);
    assert_eq!(breaker.force_closed(), None);
    assert!(held.is_current(), "no transition, no new generation");
    assert_eq!(
        fail(&breaker).map(|t| t.failures()),
        Some(3),
        "the count was kept"
    );
}

#[test]
fn reset_clears_a_closed_count_in_a_new_generation_without_a_transition_and_closes_an_open_breaker()
{
    let (breaker, mock) = breaker(cfg(3, 10 * S, S));
    assert_eq!(breaker.reset(), None, "nothing to clear");
    let held = breaker.try_acquire().unwrap();
    fail_n(&breaker, 2);
    assert_eq!(
        breaker.reset(),
        None,
        "closed: the count is cleared, no transition"
    );
    assert!(
        !held.is_current(),
        "a reset starts a new generation: a call admitted before it no longer counts"
    );
    assert_eq!(held.record(FAIL), None);
    assert_eq!(
        fail_n(&breaker, 2),
        None,
        "2 since the reset (the held one not among them)"
    );
    assert_eq!(breaker.reset(), None);

    // Open → closed.
    let trip = fail_n(&breaker, 3).unwrap();
    let reset = breaker.reset().expect("open → closed");
    assert_eq!(
        summary(&reset),
        (State::Open, State::Closed, TransitionReason::Manual, 0)
    );
    assert_eq!(reset.generation(), trip.generation() + 1);
    assert_eq!(fail_n(&breaker, 2), None);

    // Isolated → closed, and half-open with a probe → closed.
    breaker.force_open().unwrap();
    assert_eq!(
        breaker.reset().map(|t| summary(&t)),
        Some((State::Open, State::Closed, TransitionReason::Manual, 0))
    );
    fail_n(&breaker, 3).unwrap();
    mock.increment(10 * S);
    let probe = breaker.try_acquire().unwrap();
    assert_eq!(
        breaker.reset().map(|t| summary(&t)),
        Some((State::HalfOpen, State::Closed, TransitionReason::Manual, 0))
    );
    assert_eq!(probe.record(FAIL), None);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn every_change_by_hand_makes_older_permits_stale() {
    let (breaker, _mock) = breaker(cfg(1, 10 * S, S));
    let before_open = breaker.try_acquire().unwrap();
    breaker.force_open().unwrap();
    breaker.force_closed().unwrap();
    // Closed again, but in a later generation: the old permit's failure would trip at threshold 1.
    assert!(!before_open.is_current());
    assert_eq!(before_open.record(FAIL), None);
    assert_eq!(breaker.state(), State::Closed);

    let before_isolation = breaker.try_acquire().unwrap();
    breaker.force_open().unwrap();
    breaker.reset().unwrap();
    assert_eq!(before_isolation.record(FAIL), None);
    assert_eq!(breaker.state(), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// The registry's listener.

#[test]
fn a_registry_listener_hears_every_transition_of_every_dependency_once_with_its_name() {
    let (clock, mock) = Clock::mock();
    let heard: Arc<Mutex<Vec<(String, Transition)>>> = Arc::default();
    let log = Arc::clone(&heard);
    let base = cfg(2, 10 * S, 5 * S);
    let registry = Registry::builder()
        .default_config(base)
        .dependency("search", cfg(1, 10 * S, 5 * S))
        .clock(clock)
        .on_transition(move |event| {
            log.lock()
                .unwrap()
                .push((event.dependency().to_owned(), *event.transition()));
        })
        .build();
    let search = registry.get("search");
    let weather = registry.get("weather");
    let api = registry.get("api.example.com");
    assert_eq!(
        (search.name(), weather.name(), api.name()),
        ("search", "weather", "api.example.com")
    );

    let mut expected: Vec<(&str, Transition)> = Vec::new();
    expected.push(("search", fail(&search).expect("trip")));
    assert_eq!(fail(&weather), None);
    let changes = registry.reload(
        RegistryConfig::new(base)
            .dependency("search", cfg(1, 10 * S, 5 * S))
            .dependency("weather", cfg(1, 10 * S, 5 * S)),
    );
    let weather_trip = *changes.changes()[0]
        .transition()
        .expect("weather trips on reload");
    expected.push(("weather", weather_trip));
    expected.push(("api.example.com", api.force_open().unwrap()));

    mock.increment(10 * S);
    for _ in 0..5 {
        assert_eq!(search.state(), State::HalfOpen, "reading writes nothing");
    }
    let probe = search.try_acquire().expect("probe");
    let probe_generation = probe.generation();
    let closed = probe.record(Outcome::Success).unwrap();
    let weather_probe = weather.try_acquire().expect("weather's probe");
    mock.increment(5 * S);
    for _ in 0..3 {
        assert!(weather.try_acquire().is_err(), "timed out, found once");
    }
    drop(weather_probe);
    expected.push(("api.example.com", api.reset().unwrap()));
    assert_eq!(api.reset(), None);
    assert_eq!(search.reset(), None);

    let heard = heard.lock().unwrap().clone();
    let got: Vec<(&str, State, State, TransitionReason)> = heard
        .iter()
        .map(|(d, t)| (d.as_str(), t.from(), t.to(), t.reason()))
        .collect();
    use State::{Closed, HalfOpen, Open};
    use TransitionReason::*;
    assert_eq!(
        got,
        [
            ("search", Closed, Open, FailureThreshold),
            ("weather", Closed, Open, FailureThreshold),
            ("api.example.com", Closed, Open, Manual),
            ("search", Open, HalfOpen, CooldownElapsed),
            ("search", HalfOpen, Closed, ProbeSucceeded),
            ("weather", Open, HalfOpen, CooldownElapsed),
            ("weather", HalfOpen, Open, ProbeTimedOut),
            ("api.example.com", Open, Closed, Manual),
        ]
    );
    // The returned transitions are the ones heard, value for value.
    let returned = [
        (0, &expected[0]),
        (1, &expected[1]),
        (2, &expected[2]),
        (7, &expected[3]),
    ];
    for (i, (dependency, transition)) in returned {
        assert_eq!(
            (heard[i].0.as_str(), heard[i].1),
            (*dependency, *transition)
        );
    }
    assert_eq!(heard[4].1, closed);
    assert_eq!(heard[3].1.generation(), probe_generation);
}

// ---------------------------------------------------------------------------------------------
// Concurrency: failures racing changes of the threshold and resets.

#[test]
fn failures_racing_threshold_changes_and_resets_never_leave_a_closed_breaker_past_its_threshold() {
    const LOW: u32 = 3;
    const HIGH: u32 = 40;
    const FAILERS: usize = 3;
    const ROUNDS: usize = 20;
    const CALLS: usize = 2_000;
    const CHANGES: usize = 300;

    // The clock never moves: no cooldown elapses, so every transition is a trip or a change by
    // hand, and each is returned to exactly one caller.
    let (clock, _mock) = Clock::mock();
    let heard: Arc<Mutex<Vec<Transition>>> = Arc::default();
    let log = Arc::clone(&heard);
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .failure_threshold(HIGH)
            .cooldown(10 * S)
            .probe_timeout(S)
            .clock(clock)
            .metrics(true)
            .on_transition(move |event| log.lock().unwrap().push(*event.transition()))
            .build()
            .unwrap(),
    );
    let mut returned: Vec<Transition> = Vec::new();

    for round in 0..ROUNDS {
        let start = Arc::new(Barrier::new(FAILERS + 1));
        let failers: Vec<_> = (0..FAILERS)
            .map(|_| {
                let (breaker, start) = (Arc::clone(&breaker), Arc::clone(&start));
                thread::spawn(move || {
                    let mut mine = Vec::new();
                    start.wait();
                    let mut blocked = 0u32;
                    for _ in 0..CALLS {
                        match breaker.try_acquire() {
                            Ok(permit) => mine.extend(permit.record(FAIL)),
                            Err(_) => {
                                blocked += 1;
                                if blocked.is_multiple_of(16) {
                                    mine.extend(breaker.reset());
                                }
                            }
                        }
                    }
                    mine
                })
            })
            .collect();
        let changer = {
            let (breaker, start) = (Arc::clone(&breaker), Arc::clone(&start));
            thread::spawn(move || {
                let mut mine = Vec::new();
                start.wait();
                // One more change each round, so rounds end on either threshold.
                for i in 0..CHANGES + round {
                    let threshold = if i % 2 == 0 { LOW } else { HIGH };
                    mine.extend(breaker.reconfigure(cfg(threshold, 10 * S, S)));
                    if i % 5 == 4 {
                        mine.extend(breaker.reset());
                    }
                    thread::yield_now();
                }
                mine
            })
        };
        for failer in failers {
            returned.extend(failer.join().unwrap());
        }
        returned.extend(changer.join().unwrap());

        // Everyone has joined. If the breaker is closed, its count must be below the threshold:
        // the failures that trip it must then number exactly the threshold on the trip.
        if breaker.state() == State::Closed {
            let threshold = u64::from(breaker.config().failure_threshold().unwrap());
            let trip = loop {
                if let Some(trip) = fail(&breaker) {
                    break trip;
                }
            };
            assert_eq!(
                trip.failures(),
                threshold,
                "round {round}: a closed breaker was left at or past its threshold"
            );
            returned.push(trip);
        }
        returned.extend(breaker.reset());
        assert_eq!(breaker.state(), State::Closed);
    }

    // Every transition was returned once and counted once; the listener heard them in the
    // breaker's order, each at most once: all of them but those a later one superseded before
    // they could be told.
    let heard = heard.lock().unwrap().clone();
    let by_reason =
        |list: &[Transition], reason| list.iter().filter(|t| t.reason() == reason).count();
    let metrics = breaker.metrics().unwrap();
    for (reason, counted) in [
        (
            TransitionReason::FailureThreshold,
            metrics.transitions.failure_threshold,
        ),
        (TransitionReason::Manual, metrics.transitions.manual),
    ] {
        assert_eq!(by_reason(&returned, reason) as u64, counted, "{reason}");
        assert!(
            by_reason(&heard, reason) <= by_reason(&returned, reason),
            "{reason}"
        );
    }
    assert_eq!(metrics.transitions.total(), returned.len() as u64);
    for pair in heard.windows(2) {
        assert!(pair[1].is_after(&pair[0]), "heard out of order: {pair:?}");
    }
    for t in &heard {
        assert!(returned.contains(t), "heard but never landed: {t:?}");
    }
    assert!(
        metrics.transitions.failure_threshold > 0,
        "the race tripped"
    );
    for trip in heard
        .iter()
        .filter(|t| t.reason() == TransitionReason::FailureThreshold)
    {
        assert!(
            (u64::from(LOW)..=u64::from(HIGH)).contains(&trip.failures()),
            "{trip:?}"
        );
    }
    // The generations heard are all different: each transition took a new one.
    let mut generations: Vec<u32> = heard.iter().map(|t| t.generation()).collect();
    generations.sort_unstable();
    generations.dedup();
    assert_eq!(generations.len(), heard.len());
}

/// A listener runs outside every lock: one that reconfigures its breaker, or creates and
/// reconfigures breakers through the registry, while a reload or a reconfiguration announces a
/// trip, neither deadlocks nor is lost. (Run on a thread with a generous deadline, so a deadlock
/// fails the test instead of hanging it.)
#[test]
fn a_listener_may_reconfigure_and_use_the_registry_while_a_change_is_announced() {
    use std::sync::OnceLock;
    use std::sync::mpsc;

    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let registry: Arc<OnceLock<Arc<Registry>>> = Arc::default();
        let from_listener = Arc::clone(&registry);
        let built = Arc::new(
            Registry::builder()
                .on_transition(move |event| {
                    if event.transition().to() != State::Open {
                        return;
                    }
                    let registry = from_listener.get().expect("set before any call");
                    // Create a breaker and change settings from inside the listener.
                    registry.get("audit").reconfigure(cfg(7, S, S));
                    registry.get(event.dependency()).reconfigure(cfg(50, S, S));
                })
                .build(),
        );
        registry.set(Arc::clone(&built)).unwrap();
        let search = built.get("search");
        for _ in 0..3 {
            search.try_acquire().unwrap().record(FAIL);
        }
        // A reload that trips `search` (3 failures against a threshold of 2) announces it.
        let changes = built.reload(RegistryConfig::default().dependency("search", cfg(2, S, S)));
        done.send((
            changes.changes().len(),
            search.state(),
            search.config(),
            built.get("audit").config(),
        ))
        .unwrap();
    });
    let (changes, state, config, audit) = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the reload finished: no deadlock");
    assert_eq!(changes, 1);
    assert_eq!(state, State::Open);
    assert_eq!(
        config,
        cfg(50, S, S),
        "the listener's change came after the reload's"
    );
    assert_eq!(audit, cfg(7, S, S));
}

/// A listener that panics while a caller's claim of the probe slot is announced: the panic
/// unwinds through the caller's permit, which gives the slot back, so the next caller is the
/// probe (behaviour contract 5: a probe's permit dropped by a panic releases the slot).
#[test]
fn a_listener_panicking_on_a_probe_claim_leaves_the_slot_free() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(S)
        .probe_timeout(Duration::from_secs(30))
        .clock(clock)
        .on_transition(|event| {
            if event.transition().reason() == TransitionReason::CooldownElapsed {
                panic!("the alerting hook failed");
            }
        })
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAIL);
    mock.increment(S);
    let claim = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        breaker.try_acquire().map(|p| p.is_probe())
    }));
    assert!(claim.is_err(), "the listener's panic reaches the caller");
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = breaker
        .try_acquire()
        .expect("the slot was given back, not stranded");
    assert!(probe.is_probe());
    assert_eq!(
        probe.record(Outcome::Success).map(|t| t.to()),
        Some(State::Closed)
    );
}

/// A change by hand that finds a probe past its lease writes the timeout down first, so the
/// transitions heard stay a chain: `half-open → open` (probe timed out), then the change from
/// open, in the generation after it. For every change by hand.
#[test]
fn a_change_by_hand_after_an_unfound_probe_timeout_is_heard_after_the_timeout() {
    type Change = fn(&CircuitBreaker) -> Option<Transition>;
    let changes: [(Change, State); 3] = [
        (CircuitBreaker::force_open, State::Open),
        (CircuitBreaker::force_closed, State::Closed),
        (CircuitBreaker::reset, State::Closed),
    ];
    for (change, to) in changes {
        let (breaker, mock, heard) = heard_breaker(cfg(1, S, S));
        fail(&breaker);
        mock.increment(S);
        let probe = breaker.try_acquire().unwrap();
        mock.increment(S); // the lease ran out; no caller has come since
        heard.lock().unwrap().clear();

        let made = change(&breaker).expect("a change of state");
        let heard = heard.lock().unwrap().clone();
        let chain: Vec<_> = heard
            .iter()
            .map(|t| (t.from(), t.to(), t.reason()))
            .collect();
        assert_eq!(
            chain,
            [
                (
                    State::HalfOpen,
                    State::Open,
                    TransitionReason::ProbeTimedOut
                ),
                (State::Open, to, TransitionReason::Manual)
            ]
        );
        assert_eq!(heard[1], made);
        assert_eq!(made.generation(), heard[0].generation() + 1);
        assert_eq!(
            probe.record(Outcome::Success),
            None,
            "the timed-out probe is stale"
        );
    }
}

/// The chain holds even when the cooldown after the timed-out probe has also run out: the change
/// by hand is heard from `open`, the state the last announced transition left.
#[test]
fn a_change_by_hand_long_after_an_unfound_probe_timeout_still_chains() {
    type Change = fn(&CircuitBreaker) -> Option<Transition>;
    let changes: [(Change, State); 3] = [
        (CircuitBreaker::force_open, State::Open),
        (CircuitBreaker::force_closed, State::Closed),
        (CircuitBreaker::reset, State::Closed),
    ];
    for (change, to) in changes {
        let (breaker, mock, heard) = heard_breaker(cfg(1, S, S));
        fail(&breaker);
        mock.increment(S);
        let _probe = breaker.try_acquire().unwrap();
        mock.increment(3 * S); // past the lease and the cooldown after it
        assert_eq!(breaker.state(), State::HalfOpen);
        heard.lock().unwrap().clear();
        change(&breaker).expect("a change of state");
        let chain: Vec<_> = heard
            .lock()
            .unwrap()
            .iter()
            .map(|t| (t.from(), t.to(), t.reason()))
            .collect();
        assert_eq!(
            chain,
            [
                (
                    State::HalfOpen,
                    State::Open,
                    TransitionReason::ProbeTimedOut
                ),
                (State::Open, to, TransitionReason::Manual)
            ]
        );
    }
}

/// A listener that panics loses no transition: every transition that landed with it is counted,
/// logged and heard, the change it announced stands, and the panic reaches the caller afterwards.
#[test]
fn a_panicking_listener_loses_no_transition_and_stops_no_change() {
    type Heard = Arc<Mutex<Vec<(String, TransitionReason)>>>;
    fn registry_panicking_on(
        dependency: &'static str,
        on: TransitionReason,
    ) -> (Arc<Registry>, Arc<Mock>, Heard) {
        let (clock, mock) = Clock::mock();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let registry = Registry::builder()
            .default_config(cfg(3, S, S))
            .clock(clock)
            .metrics(true)
            .on_transition(move |event| {
                let reason = event.transition().reason();
                log.lock()
                    .unwrap()
                    .push((event.dependency().to_owned(), reason));
                if event.dependency() == dependency && reason == on {
                    panic!("the alerting hook failed");
                }
            })
            .build();
        (Arc::new(registry), mock, heard)
    }
    let caught = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();

    // A reload that trips three breakers, with a listener that panics on the first.
    let (registry, _mock, heard) = registry_panicking_on("a", TransitionReason::FailureThreshold);
    for name in ["a", "b", "c"] {
        let breaker = registry.get(name);
        fail_n(&breaker, 2);
    }
    assert!(caught(&|| {
        registry.reload(RegistryConfig::new(cfg(2, S, S)));
    }));
    let heard_names: Vec<_> = heard
        .lock()
        .unwrap()
        .iter()
        .map(|(d, _)| d.clone())
        .collect();
    assert_eq!(heard_names, ["a", "b", "c"], "every trip was heard");
    for (name, metrics) in registry.metrics() {
        assert_eq!(metrics.state, State::Open, "{name}");
        assert_eq!(metrics.transitions.failure_threshold, 1, "{name} counted");
    }

    // A claim that writes down a timed-out probe and takes the slot: two transitions, the
    // listener panics on the first; the second is heard and counted, and the slot is free.
    let (registry, mock, heard) = registry_panicking_on("s", TransitionReason::ProbeTimedOut);
    let breaker = registry.get("s");
    fail_n(&breaker, 3);
    mock.increment(S);
    let probe = breaker.try_acquire().unwrap();
    std::mem::forget(probe); // hangs: never reports
    mock.increment(2 * S); // past the lease and the cooldown after it
    heard.lock().unwrap().clear();
    assert!(caught(&|| {
        let _ = breaker.try_acquire();
    }));
    let reasons: Vec<_> = heard.lock().unwrap().iter().map(|(_, r)| *r).collect();
    assert_eq!(
        reasons,
        [
            TransitionReason::ProbeTimedOut,
            TransitionReason::CooldownElapsed
        ]
    );
    let metrics = breaker.metrics().unwrap();
    assert_eq!(
        (
            metrics.transitions.probe_timed_out,
            metrics.transitions.cooldown_elapsed
        ),
        (1, 2)
    );
    assert!(
        breaker.try_acquire().unwrap().is_probe(),
        "the slot was given back"
    );

    // A change by hand that first writes down a timed-out probe: the panic on that announcement
    // does not stop the change.
    let (registry, mock, _heard) = registry_panicking_on("m", TransitionReason::ProbeTimedOut);
    let breaker = registry.get("m");
    fail_n(&breaker, 3);
    mock.increment(S);
    std::mem::forget(breaker.try_acquire().unwrap());
    mock.increment(S);
    assert!(caught(&|| {
        breaker.force_open();
    }));
    assert_eq!(
        breaker.try_acquire().unwrap_err().reason(),
        BlockedReason::Isolated,
        "isolated despite the panic"
    );
}
