//! Several probes in half-open (`Builder::probes`): exactly N admitted under any race, closed
//! when all N succeed, reopened by any counted failure, a slot given back by an ignored or
//! dropped probe, one lease for them all.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use toolbreaker::config::{MAX_PROBES, Problem};
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    BlockedReason, CircuitBreaker, FailureKind, Outcome, RegistryConfig, State, TransitionReason,
};

const FAILED: Outcome = Outcome::Failure(FailureKind::Unavailable);
const COOLDOWN: Duration = Duration::from_millis(100);
const LEASE: Duration = Duration::from_secs(1);

/// Half-open with its slots free: tripped, and the cooldown waited out.
fn half_open(probes: u32) -> (CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .probe_timeout(LEASE)
        .probes(probes)
        .clock(clock)
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAILED);
    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
    (breaker, mock)
}

#[test]
fn exactly_n_are_admitted_and_all_n_must_succeed_to_close() {
    let (breaker, _mock) = half_open(3);
    let probes: Vec<_> = (0..3).map(|_| breaker.try_acquire().unwrap()).collect();
    assert!(probes.iter().all(|p| p.is_probe()));
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
    let mut verdicts = probes.into_iter().map(|p| p.record(Outcome::Success));
    assert_eq!(verdicts.next().unwrap(), None);
    assert_eq!(breaker.state(), State::HalfOpen, "one of three");
    assert_eq!(verdicts.next().unwrap(), None);
    assert!(breaker.try_acquire().is_err(), "the slots stay taken");
    let close = verdicts.next().unwrap().expect("the third success closes");
    assert_eq!(close.reason(), TransitionReason::ProbeSucceeded);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn a_counted_failure_of_any_probe_reopens_at_once_and_the_others_are_stale() {
    let (breaker, _mock) = half_open(3);
    let mut probes: Vec<_> = (0..3).map(|_| breaker.try_acquire().unwrap()).collect();
    assert_eq!(probes.remove(0).record(Outcome::Success), None);
    let reopen = probes.remove(0).record(FAILED).expect("reopens");
    assert_eq!(reopen.reason(), TransitionReason::ProbeFailed);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(probes.remove(0).record(Outcome::Success), None, "stale");
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn an_ignored_or_dropped_probe_gives_its_slot_to_the_next_caller() {
    let (breaker, _mock) = half_open(2);
    let first = breaker.try_acquire().unwrap();
    let second = breaker.try_acquire().unwrap();
    assert!(breaker.try_acquire().is_err());
    assert_eq!(second.record(Outcome::Ignored), None);
    let third = breaker.try_acquire().expect("the slot given back");
    assert!(third.is_probe());
    drop(third);
    let fourth = breaker.try_acquire().expect("given back again");
    assert!(breaker.try_acquire().is_err());
    assert_eq!(first.record(Outcome::Success), None);
    assert_eq!(
        fourth.record(Outcome::Success).map(|t| t.to()),
        Some(State::Closed),
        "two successes of two"
    );
}

#[test]
fn one_lease_covers_every_probe() {
    let (breaker, mock) = half_open(2);
    let first = breaker.try_acquire().unwrap();
    mock.increment(LEASE - Duration::from_millis(1));
    let late = breaker.try_acquire().expect("a slot within the lease");
    assert_eq!(first.record(Outcome::Success), None);
    mock.increment(Duration::from_millis(1));
    // The lease has run out before the second verdict: the probes failed, and it reopens.
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(late.record(Outcome::Success), None, "past the lease");
    assert_eq!(breaker.state(), State::Open);
    // A new half-open period starts its slots afresh.
    mock.increment(COOLDOWN);
    let again: Vec<_> = (0..2).map(|_| breaker.try_acquire().unwrap()).collect();
    assert!(breaker.try_acquire().is_err());
    let verdicts: Vec<_> = again
        .into_iter()
        .map(|p| p.record(Outcome::Success))
        .collect();
    assert_eq!(verdicts[1].map(|t| t.to()), Some(State::Closed));
}

#[test]
fn one_probe_is_the_default_and_keeps_its_behaviour() {
    let (breaker, _mock) = half_open(1);
    assert_eq!(breaker.config().probes(), 1);
    let probe = breaker.try_acquire().unwrap();
    assert!(breaker.try_acquire().is_err());
    assert_eq!(
        probe.record(Outcome::Success).map(|t| t.to()),
        Some(State::Closed)
    );
}

/// N + k racers at the cooldown's end: exactly N are admitted, every round.
#[test]
fn racing_callers_claim_exactly_n_slots() {
    for probes in [2u32, 3, 5] {
        for _ in 0..100 {
            let (breaker, _mock) = half_open(probes);
            let breaker = Arc::new(breaker);
            let racers = probes as usize + 3;
            let start = Arc::new(Barrier::new(racers));
            let admitted: usize = std::thread::scope(|s| {
                let handles: Vec<_> = (0..racers)
                    .map(|_| {
                        let breaker = Arc::clone(&breaker);
                        let start = Arc::clone(&start);
                        s.spawn(move || {
                            start.wait();
                            // Hold the slot until every racer has tried.
                            breaker
                                .try_acquire()
                                .map(std::mem::ManuallyDrop::new)
                                .is_ok()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| usize::from(h.join().unwrap()))
                    .sum()
            });
            assert_eq!(admitted, probes as usize);
        }
    }
}

#[test]
fn bad_values_are_config_errors_naming_probes_and_the_file_sets_them() {
    for (probes, problem) in [(0, Problem::Zero), (MAX_PROBES + 1, Problem::TooLarge)] {
        let err = CircuitBreaker::builder()
            .probes(probes)
            .build()
            .unwrap_err();
        assert_eq!((err.field(), err.problem()), ("probes", problem), "{err}");
    }
    assert_eq!(
        CircuitBreaker::builder()
            .probes(MAX_PROBES)
            .build_config()
            .unwrap()
            .probes(),
        MAX_PROBES
    );
    let config = RegistryConfig::from_toml("[default]\nprobes = 4\n").unwrap();
    assert_eq!(config.default_config().probes(), 4);
    let err = RegistryConfig::from_toml("[default]\nprobes = 0\n").unwrap_err();
    assert_eq!(err.field(), Some("probes"));
}

/// Several probes that all give their slots back (`Ignored`, dropped) before their shared lease
/// ends: the breaker stays half-open with its slots free, as a single probe's would. Nothing
/// failed, so it neither reopens at the lease's end nor backs its cooldown off.
#[test]
fn probes_that_all_give_their_slots_back_leave_it_half_open_past_the_lease() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .probe_timeout(LEASE)
        .probes(3)
        .cooldown_backoff(2.0, Duration::from_secs(10))
        .clock(clock)
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAILED);
    mock.increment(COOLDOWN);
    let probes: Vec<_> = (0..3).map(|_| breaker.try_acquire().unwrap()).collect();
    let mut probes = probes.into_iter();
    assert_eq!(probes.next().unwrap().record(Outcome::Ignored), None);
    drop(probes);
    mock.increment(LEASE + Duration::from_millis(1));
    assert_eq!(breaker.state(), State::HalfOpen);
    let again: Vec<_> = (0..3)
        .map(|_| breaker.try_acquire().expect("three slots free"))
        .collect();
    assert!(breaker.try_acquire().is_err(), "three, no more");
    let mut again = again.into_iter();
    let reopen = again.next().unwrap().record(FAILED).unwrap();
    assert_eq!(reopen.reason(), TransitionReason::ProbeFailed);
    assert_eq!(
        reopen.cooldown(),
        COOLDOWN * 2,
        "one failed probe: one backoff, not two"
    );
}

/// `probes` lowered to 1 while several probes hold slots: one given back frees the slot in a new
/// generation, so the others stay stale after the next caller claims it.
#[test]
fn probes_lowered_mid_period_leave_the_others_stale_after_a_give_back() {
    let (breaker, _mock) = half_open(3);
    let first = breaker.try_acquire().unwrap();
    let second = breaker.try_acquire().unwrap();
    let one = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .probe_timeout(LEASE)
        .build_config()
        .unwrap();
    assert_eq!(breaker.reconfigure(one), None);
    assert_eq!(first.record(Outcome::Ignored), None);
    let next = breaker.try_acquire().expect("the slot given back");
    assert!(next.is_probe());
    assert!(!second.is_current(), "a probe of the earlier period");
    assert_eq!(second.record(Outcome::Success), None, "stale");
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(
        next.record(Outcome::Success).map(|t| t.to()),
        Some(State::Closed)
    );
}
