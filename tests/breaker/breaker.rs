//! The behaviour contract of `CircuitBreaker`, on the mock clock: the seed scenario, and every peer
//! case P1–P10 (failure scenarios other breakers shipped), each tested for its whole class.
//!
//! Unless a test says otherwise: failure threshold 2, cooldown 100 ms, probe timeout 1 s, the
//! clock at 0 when the breaker is built.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use quanta::{Clock, Mock};
use toolbreaker::{BlockedReason, CallError, CircuitBreaker, FailureKind, Outcome, Permit, State};

const COOLDOWN: Duration = Duration::from_millis(100);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
const FAIL: Outcome = Outcome::Failure(FailureKind::Unavailable);
const MS: Duration = Duration::from_millis(1);

fn breaker_with(threshold: u32) -> (CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(PROBE_TIMEOUT)
        .clock(clock)
        .build()
        .expect("valid config");
    (breaker, mock)
}

fn new_breaker() -> (CircuitBreaker, Arc<Mock>) {
    breaker_with(2)
}

fn fail_once(breaker: &CircuitBreaker) {
    breaker.try_acquire().expect("admitted").record(FAIL);
}

/// Two counted failures: the breaker opens at the clock's current reading.
fn trip(breaker: &CircuitBreaker) {
    fail_once(breaker);
    fail_once(breaker);
    assert_eq!(breaker.state(), State::Open);
}

/// Trip, then let the cooldown pass.
fn half_open(breaker: &CircuitBreaker, mock: &Mock) {
    trip(breaker);
    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
}

fn poll_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

// ---------------------------------------------------------------------------------------------
// The seed scenario (from the article this crate grew from): two failures open; an open breaker runs
// nothing; at the cooldown it reads half-open; a successful probe closes.

#[test]
fn seed_two_failures_open_nothing_runs_while_open_and_a_probe_closes() {
    let (breaker, mock) = new_breaker();
    let down = |r: &Result<&str, &str>| match r {
        Ok(_) => Outcome::Success,
        Err(_) => FAIL,
    };
    assert!(matches!(
        breaker.call(|| Err("down"), down),
        Err(CallError::Inner("down"))
    ));
    assert!(matches!(
        breaker.call(|| Err("down"), down),
        Err(CallError::Inner("down"))
    ));
    assert_eq!(breaker.state(), State::Open);

    let mut calls = 0;
    let blocked = breaker.call(
        || {
            calls += 1;
            Ok("should not run")
        },
        down,
    );
    assert!(matches!(blocked, Err(CallError::Blocked(_))));
    assert_eq!(calls, 0);

    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(breaker.call(|| Ok("recovered"), down), Ok("recovered"));
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn seed_an_unclassified_error_never_opens_or_clears() {
    let (breaker, _mock) = new_breaker();
    for _ in 0..100 {
        breaker.try_acquire().unwrap().record(Outcome::Ignored);
    }
    assert_eq!(breaker.state(), State::Closed);
    // Ignored does not clear the run of failures either: one failure, ignored calls, one more
    // failure still trips at threshold 2.
    fail_once(&breaker);
    for _ in 0..10 {
        breaker.try_acquire().unwrap().record(Outcome::Ignored);
    }
    fail_once(&breaker);
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn seed_a_success_clears_the_run_of_failures() {
    let (breaker, _mock) = breaker_with(3);
    for _ in 0..10 {
        fail_once(&breaker);
        fail_once(&breaker);
        breaker.try_acquire().unwrap().record(Outcome::Success);
    }
    assert_eq!(breaker.state(), State::Closed, "never three in a row");
}

#[test]
fn seed_a_failed_probe_reopens_with_a_fresh_cooldown() {
    let (breaker, mock) = new_breaker();
    half_open(&breaker, &mock);
    mock.increment(Duration::from_millis(30));
    let probe = breaker.try_acquire().unwrap();
    assert!(probe.is_probe());
    let transition = probe
        .record(Outcome::Failure(FailureKind::Timeout))
        .unwrap();
    assert_eq!(
        (transition.from(), transition.to()),
        (State::HalfOpen, State::Open)
    );
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(
        blocked.retry_after(),
        COOLDOWN,
        "cooldown counted from the probe's failure"
    );
    mock.increment(COOLDOWN - MS);
    assert_eq!(breaker.state(), State::Open);
    mock.increment(MS);
    assert_eq!(breaker.state(), State::HalfOpen);
}

#[test]
fn seed_getstate_has_no_side_effects_and_a_late_success_from_before_the_trip_cannot_close() {
    // The two faults of the seed article's breaker: its state read mutated, and a late success
    // from before the trip closed it.
    let (breaker, mock) = new_breaker();
    let slow = breaker.try_acquire().unwrap();
    trip(&breaker);
    mock.increment(COOLDOWN);
    for _ in 0..10 {
        assert_eq!(breaker.state(), State::HalfOpen);
    }
    assert_eq!(slow.record(Outcome::Success), None);
    assert_eq!(
        breaker.state(),
        State::HalfOpen,
        "the pre-trip success changed nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// P1, and its class: every way a probe can end without a verdict releases the slot at once.

#[derive(Clone, Copy, Debug)]
enum NoVerdict {
    Ignored,
    Dropped,
    Panicked,
    Cancelled,
}

/// End one call without a verdict, `how`; `probe` says whether the call must be the probe.
fn end_without_verdict(breaker: &CircuitBreaker, how: NoVerdict, probe: bool) {
    match how {
        NoVerdict::Ignored => {
            let permit = breaker.try_acquire().unwrap();
            assert_eq!(permit.is_probe(), probe);
            assert_eq!(permit.record(Outcome::Ignored), None);
        }
        NoVerdict::Dropped => {
            let permit = breaker.try_acquire().unwrap();
            assert_eq!(permit.is_probe(), probe);
            drop(permit);
        }
        NoVerdict::Panicked => {
            let ran = AtomicUsize::new(0);
            let result = catch_unwind(AssertUnwindSafe(|| {
                breaker.call(
                    || -> Result<(), ()> {
                        ran.fetch_add(1, Ordering::Relaxed);
                        panic!("tool crashed")
                    },
                    |_: &_| FAIL,
                )
            }));
            assert!(result.is_err(), "the panic propagates to the caller");
            assert_eq!(ran.load(Ordering::Relaxed), 1, "the call did run");
        }
        NoVerdict::Cancelled => {
            let mut fut =
                Box::pin(breaker.run(std::future::pending::<Result<(), ()>>(), |_: &_| FAIL));
            assert!(poll_once(fut.as_mut()).is_pending());
            if probe {
                assert!(
                    breaker.try_acquire().is_err(),
                    "the probe holds the slot mid-call"
                );
            }
            drop(fut);
        }
    }
}

const NO_VERDICTS: [NoVerdict; 4] = [
    NoVerdict::Ignored,
    NoVerdict::Dropped,
    NoVerdict::Panicked,
    NoVerdict::Cancelled,
];

#[test]
fn p1_a_probe_ending_without_a_verdict_releases_the_slot_and_the_next_call_is_the_probe() {
    for how in NO_VERDICTS {
        let (breaker, mock) = new_breaker();
        half_open(&breaker, &mock);
        for round in 0..3 {
            end_without_verdict(&breaker, how, true);
            assert_eq!(breaker.state(), State::HalfOpen, "{how:?} round {round}");
        }
        // Nothing was counted: the very next call is admitted as the probe, with no time passing.
        let probe = breaker
            .try_acquire()
            .unwrap_or_else(|b| panic!("{how:?}: {b}"));
        assert!(probe.is_probe());
        probe.record(Outcome::Success);
        assert_eq!(breaker.state(), State::Closed, "{how:?}");
    }
}

#[test]
fn p1_an_ordinary_call_ending_without_a_verdict_neither_counts_nor_clears() {
    for how in NO_VERDICTS {
        let (breaker, _mock) = new_breaker();
        fail_once(&breaker);
        for _ in 0..3 {
            end_without_verdict(&breaker, how, false);
        }
        assert_eq!(breaker.state(), State::Closed, "{how:?}: nothing counted");
        fail_once(&breaker);
        assert_eq!(
            breaker.state(),
            State::Open,
            "{how:?}: the earlier failure still counted"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// P2, and its class: a probe that never reports is a failed probe at the end of its lease; any
// report after that, of any outcome, changes nothing.

#[test]
fn p2_a_hung_probe_reads_open_at_its_lease_end_and_a_new_probe_follows_a_cooldown_later() {
    for late in [Outcome::Success, FAIL, Outcome::Ignored] {
        let (breaker, mock) = new_breaker();
        half_open(&breaker, &mock);
        let hung = breaker.try_acquire().unwrap();
        assert!(hung.is_probe());

        mock.increment(PROBE_TIMEOUT - MS);
        assert_eq!(breaker.state(), State::HalfOpen);
        let blocked = breaker.try_acquire().unwrap_err();
        assert_eq!(
            (blocked.reason(), blocked.retry_after()),
            (BlockedReason::ProbeInFlight, MS),
            "blocked until the lease ends"
        );

        mock.increment(MS);
        assert_eq!(
            breaker.state(),
            State::Open,
            "the lease ran out: a failed probe"
        );
        let blocked = breaker.try_acquire().unwrap_err();
        assert_eq!(
            (blocked.reason(), blocked.retry_after()),
            (BlockedReason::DependencyOpen, COOLDOWN)
        );

        mock.increment(COOLDOWN);
        assert_eq!(breaker.state(), State::HalfOpen);
        let probe = breaker
            .try_acquire()
            .expect("a new probe a cooldown after the lease");
        assert!(probe.is_probe());

        assert_eq!(
            hung.record(late),
            None,
            "{late:?} from the hung probe is stale"
        );
        assert_eq!(breaker.state(), State::HalfOpen);
        assert!(
            breaker.try_acquire().is_err(),
            "the new probe still holds the slot"
        );
        probe.record(Outcome::Success);
        assert_eq!(breaker.state(), State::Closed);
    }
}

#[test]
fn p2_a_probe_reporting_after_its_lease_but_before_any_new_probe_changes_nothing() {
    for late in [Outcome::Success, FAIL, Outcome::Ignored] {
        let (breaker, mock) = new_breaker();
        half_open(&breaker, &mock);
        let slow = breaker.try_acquire().unwrap();
        mock.increment(PROBE_TIMEOUT + Duration::from_millis(10));
        assert_eq!(slow.record(late), None, "{late:?}");
        assert_eq!(breaker.state(), State::Open);
        let blocked = breaker.try_acquire().unwrap_err();
        assert_eq!(
            blocked.retry_after(),
            Duration::from_millis(90),
            "{late:?}: the cooldown still counts from the lease's end"
        );
    }
}

#[test]
fn p2_a_hung_probe_dropped_after_its_lease_releases_nothing_early() {
    let (breaker, mock) = new_breaker();
    half_open(&breaker, &mock);
    let hung = breaker.try_acquire().unwrap();
    mock.increment(PROBE_TIMEOUT);
    drop(hung);
    assert_eq!(
        breaker.state(),
        State::Open,
        "no probe before a cooldown after the lease"
    );
}

// ---------------------------------------------------------------------------------------------
// P3, and its class: reading the state never changes it, in any state.

#[test]
fn p3_state_reads_never_take_the_probe_slot_or_change_anything_in_any_state() {
    let (breaker, mock) = new_breaker();
    let read_many = |expected: State| {
        for _ in 0..1_000 {
            assert_eq!(breaker.state(), expected);
        }
    };
    read_many(State::Closed);
    fail_once(&breaker);
    read_many(State::Closed);
    fail_once(&breaker);
    read_many(State::Open);
    mock.increment(COOLDOWN);
    read_many(State::HalfOpen);
    let probe = breaker
        .try_acquire()
        .expect("the next try_acquire still gets the probe");
    assert!(probe.is_probe());
    read_many(State::HalfOpen);
    probe.record(Outcome::Success);
    read_many(State::Closed);
}

// ---------------------------------------------------------------------------------------------
// P4: a panicking probe (covered with the rest of its class in P1 above, where
// `p1_an_ordinary_call_ending_without_a_verdict_neither_counts_nor_clears` also leaves the
// failure count untouched by a panicking ordinary call).

#[test]
fn p4_a_probe_that_panics_releases_the_slot_and_the_next_caller_becomes_the_probe() {
    let (breaker, mock) = new_breaker();
    half_open(&breaker, &mock);
    end_without_verdict(&breaker, NoVerdict::Panicked, true);
    assert_eq!(breaker.state(), State::HalfOpen, "nothing was counted");
    let next = breaker.try_acquire().expect("the next caller is the probe");
    assert!(next.is_probe());
}

// ---------------------------------------------------------------------------------------------
// P5, and its class: however many real threads race for the probe, exactly one wins — at the
// cooldown's end, at a lease's end, and after a released slot.

fn race_for_probe(breaker: &CircuitBreaker, threads: usize) -> (usize, Vec<toolbreaker::Blocked>) {
    let barrier = Barrier::new(threads);
    let admitted = AtomicUsize::new(0);
    let blocked = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    match breaker.try_acquire() {
                        Ok(permit) => {
                            assert!(permit.is_probe());
                            admitted.fetch_add(1, Ordering::Relaxed);
                            // Hold the slot until every thread has tried.
                            std::mem::forget(permit);
                            None
                        }
                        Err(blocked) => Some(blocked),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    (admitted.load(Ordering::Relaxed), blocked)
}

#[test]
fn p5_one_hundred_threads_at_the_cooldown_end_admit_exactly_one_probe() {
    for round in 0..20 {
        let (breaker, mock) = new_breaker();
        half_open(&breaker, &mock);
        let (admitted, blocked) = race_for_probe(&breaker, 100);
        assert_eq!(admitted, 1, "round {round}");
        assert_eq!(blocked.len(), 99);
        for b in blocked {
            assert!(b.retry_after() > Duration::ZERO);
            assert_eq!(
                (b.state(), b.reason()),
                (State::HalfOpen, BlockedReason::ProbeInFlight)
            );
        }
    }
}

#[test]
fn p5_racing_threads_admit_exactly_one_probe_after_a_lease_end_and_after_a_release() {
    // After a lease runs out and a cooldown passes.
    let (breaker, mock) = new_breaker();
    half_open(&breaker, &mock);
    std::mem::forget(breaker.try_acquire().unwrap());
    mock.increment(PROBE_TIMEOUT + COOLDOWN);
    let (admitted, blocked) = race_for_probe(&breaker, 64);
    assert_eq!((admitted, blocked.len()), (1, 63));

    // After a probe gives its slot back.
    let (breaker, mock) = new_breaker();
    half_open(&breaker, &mock);
    breaker.try_acquire().unwrap().record(Outcome::Ignored);
    let (admitted, blocked) = race_for_probe(&breaker, 64);
    assert_eq!((admitted, blocked.len()), (1, 63));
}

// ---------------------------------------------------------------------------------------------
// P6, and its class: an outcome from an older generation never moves the state, whatever the
// outcome and whatever state the breaker has moved on to.

#[test]
fn p6_a_slow_call_from_before_the_trip_cannot_move_the_probe_or_the_open_breaker() {
    let (breaker, mock) = new_breaker();
    let a = breaker.try_acquire().unwrap();
    trip(&breaker); // B and C
    mock.increment(COOLDOWN);
    let d = breaker.try_acquire().unwrap();
    assert!(d.is_probe());
    assert_eq!(a.record(FAIL), None, "A's failure is stale");
    assert_eq!(breaker.state(), State::HalfOpen);
    assert!(breaker.try_acquire().is_err(), "D still holds the slot");
    d.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);

    // Mirror: A reports success while the breaker is open.
    let (breaker, _mock) = new_breaker();
    let a = breaker.try_acquire().unwrap();
    trip(&breaker);
    assert_eq!(a.record(Outcome::Success), None);
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn p6_stale_outcomes_of_every_kind_change_nothing_in_every_later_state() {
    for outcome in [Outcome::Success, FAIL, Outcome::Ignored] {
        // Later state: open; half-open free; half-open with a probe; closed again (with a
        // failure on the count, so a stale success would visibly clear it).
        let (breaker, mock) = new_breaker();
        let stale: Vec<Permit<'_>> = (0..4).map(|_| breaker.try_acquire().unwrap()).collect();
        let mut stale = stale.into_iter();
        trip(&breaker);
        assert_eq!(stale.next().unwrap().record(outcome), None);
        assert_eq!(breaker.state(), State::Open);

        mock.increment(COOLDOWN);
        assert_eq!(stale.next().unwrap().record(outcome), None);
        assert_eq!(breaker.state(), State::HalfOpen);

        let probe = breaker.try_acquire().unwrap();
        assert_eq!(stale.next().unwrap().record(outcome), None);
        assert!(
            breaker.try_acquire().is_err(),
            "{outcome:?}: the slot is still taken"
        );
        probe.record(Outcome::Success);

        fail_once(&breaker);
        assert_eq!(stale.next().unwrap().record(outcome), None);
        fail_once(&breaker);
        assert_eq!(
            breaker.state(),
            State::Open,
            "{outcome:?}: the count survived"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// P7, and its class: for any threshold, failures past the trip neither reopen nor move opened-at.

#[test]
fn p7_failures_past_the_threshold_open_once_and_never_move_the_opened_at_time() {
    for threshold in [1, 2, 5, 13] {
        for extra in [1, 3] {
            let (breaker, mock) = breaker_with(threshold);
            let permits: Vec<_> = (0..threshold + extra)
                .map(|_| breaker.try_acquire().unwrap())
                .collect();
            let mut transitions = 0;
            for (i, permit) in permits.into_iter().enumerate() {
                if i as u32 >= threshold {
                    mock.increment(Duration::from_millis(7)); // the late ones a little later
                }
                if permit.record(FAIL).is_some() {
                    transitions += 1;
                }
            }
            assert_eq!(transitions, 1, "threshold {threshold} extra {extra}");
            let late = Duration::from_millis(7 * u64::from(extra));
            // Half-open exactly one cooldown after the tripping failure (at t = 0).
            let blocked = breaker.try_acquire().unwrap_err();
            assert_eq!(blocked.retry_after(), COOLDOWN - late);
            mock.increment(COOLDOWN - late - MS);
            assert_eq!(breaker.state(), State::Open);
            mock.increment(MS);
            assert_eq!(breaker.state(), State::HalfOpen);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// P8, and its class: the clock stepping backwards, by any amount, in open or half-open, never
// panics, never closes, and never admits a probe before a full cooldown on the clock it reads.

fn breaker_built_at(start: Duration) -> (CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    mock.increment(start);
    let breaker = CircuitBreaker::builder()
        .failure_threshold(2)
        .cooldown(COOLDOWN)
        .probe_timeout(PROBE_TIMEOUT)
        .clock(clock)
        .build()
        .unwrap();
    (breaker, mock)
}

#[test]
fn p8_a_clock_stepping_back_an_hour_after_opening_neither_panics_nor_probes_early() {
    const HOUR: Duration = Duration::from_secs(3_600);
    // Build at mock time 2 h so the step back does not underflow the mock itself.
    for back in [MS, Duration::from_millis(50), HOUR, 2 * HOUR] {
        let (breaker, mock) = breaker_built_at(2 * HOUR);
        mock.increment(Duration::from_millis(50));
        trip(&breaker); // open at t = 50 ms
        mock.decrement(back);
        assert_eq!(breaker.state(), State::Open, "back {back:?}");
        let blocked = breaker.try_acquire().unwrap_err();
        assert_eq!(
            blocked.retry_after(),
            COOLDOWN + back,
            "back {back:?}: a full cooldown on the clock it reads"
        );
        // Moving forward again, the probe comes only once the clock it reads passes
        // opened-at + cooldown.
        let until = blocked.retry_after();
        mock.increment(until - MS);
        assert_eq!(breaker.state(), State::Open, "back {back:?}");
        mock.increment(MS);
        assert_eq!(breaker.state(), State::HalfOpen, "back {back:?}");
        let probe = breaker.try_acquire().unwrap();
        probe.record(Outcome::Success);
        assert_eq!(breaker.state(), State::Closed);
    }
}

#[test]
fn p8_a_clock_stepping_back_during_a_probe_keeps_the_probe_leased() {
    let (breaker, mock) = breaker_built_at(Duration::from_secs(7_200));
    half_open(&breaker, &mock);
    let probe = breaker.try_acquire().unwrap();
    mock.decrement(Duration::from_secs(3_600));
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(
        breaker.try_acquire().unwrap_err().reason(),
        BlockedReason::ProbeInFlight
    );
    probe.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// P9, and its class: state is derived from the clock alone, with no call in between, across
// every time-driven change (open → half-open, probing → open → half-open).

#[test]
fn p9_state_follows_the_clock_with_no_call_in_between() {
    let (breaker, mock) = new_breaker();
    trip(&breaker); // open at t = 0
    mock.increment(COOLDOWN - MS);
    assert_eq!(breaker.state(), State::Open);
    mock.increment(MS);
    assert_eq!(
        breaker.state(),
        State::HalfOpen,
        "t = 100 ms, nobody has called"
    );

    let probe = breaker.try_acquire().unwrap();
    mock.increment(PROBE_TIMEOUT);
    assert_eq!(
        breaker.state(),
        State::Open,
        "the lease ran out with nobody calling"
    );
    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
    drop(probe);
}

// ---------------------------------------------------------------------------------------------
// P10, and its class: the operation runs zero times whenever the call is blocked (open, or a
// probe in flight), through both `call` and `run`.

#[test]
fn p10_the_operation_never_runs_while_blocked_through_call_or_run() {
    let (breaker, mock) = new_breaker();
    trip(&breaker);
    let runs = AtomicUsize::new(0);
    let op = || -> Result<(), ()> {
        runs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    };
    let classify = |_: &Result<(), ()>| Outcome::Success;

    for _ in 0..5 {
        assert!(matches!(
            breaker.call(op, classify),
            Err(CallError::Blocked(_))
        ));
        let fut = pin!(breaker.run(async { op() }, classify));
        assert!(matches!(
            poll_once(fut),
            Poll::Ready(Err(CallError::Blocked(_)))
        ));
    }
    assert_eq!(runs.load(Ordering::Relaxed), 0, "zero runs while open");

    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = breaker.try_acquire().unwrap();
    assert!(matches!(
        breaker.call(op, classify),
        Err(CallError::Blocked(_))
    ));
    assert_eq!(
        runs.load(Ordering::Relaxed),
        0,
        "zero runs while a probe is in flight"
    );
    drop(probe);

    assert_eq!(breaker.call(op, classify), Ok(()), "the probe");
    assert_eq!(runs.load(Ordering::Relaxed), 1);
    assert_eq!(breaker.state(), State::Closed);
}

// ---------------------------------------------------------------------------------------------
// The rest of the contract.

#[test]
fn blocked_retry_after_is_the_remaining_cooldown_and_never_zero() {
    let (breaker, mock) = new_breaker();
    trip(&breaker);
    let mut at = 0;
    for elapsed in [0, 1, 50, 99] {
        mock.increment(Duration::from_millis(elapsed - at));
        at = elapsed;
        let blocked = breaker.try_acquire().unwrap_err();
        assert_eq!(
            blocked.retry_after(),
            COOLDOWN - Duration::from_millis(elapsed)
        );
        assert_eq!(
            (blocked.state(), blocked.reason()),
            (State::Open, BlockedReason::DependencyOpen)
        );
    }
}

#[test]
fn transitions_are_reported_by_the_outcome_that_caused_them() {
    let (breaker, mock) = new_breaker();
    assert_eq!(breaker.try_acquire().unwrap().record(FAIL), None);
    let trip = breaker.try_acquire().unwrap().record(FAIL).unwrap();
    assert_eq!((trip.from(), trip.to()), (State::Closed, State::Open));
    mock.increment(COOLDOWN);
    let close = breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Success)
        .unwrap();
    assert_eq!((close.from(), close.to()), (State::HalfOpen, State::Closed));
    assert_ne!(trip.generation(), close.generation());
}

#[test]
fn a_success_while_closed_with_no_failures_changes_nothing() {
    let (breaker, _mock) = new_breaker();
    let gen_before = breaker.try_acquire().unwrap().generation();
    for _ in 0..100 {
        assert_eq!(
            breaker.try_acquire().unwrap().record(Outcome::Success),
            None
        );
    }
    assert_eq!(breaker.try_acquire().unwrap().generation(), gen_before);
}

/// How many generations a permit tells apart: the documented 20-bit field (see `Permit`).
const GENERATIONS: usize = 1 << 20;

#[test]
fn a_breaker_survives_more_generation_changes_than_its_field_holds() {
    // Each round moves the generation twice (trip, close): 2^20 + a few changes in all.
    let (breaker, mock) = breaker_with(1);
    let generations = GENERATIONS;
    let rounds = generations / 2 + 2;
    for _ in 0..rounds {
        fail_once(&breaker);
        mock.increment(COOLDOWN);
        breaker.try_acquire().unwrap().record(Outcome::Success);
    }
    assert_eq!(breaker.state(), State::Closed);
    fail_once(&breaker);
    assert_eq!(breaker.state(), State::Open);
}

/// P6's class at the limit of the generation field: however many times probes give their slot
/// back (a tool answering 400 to every probe, or probes cancelled), a call admitted before the trip
/// stays stale. Releases spend no generation, and an ordinary permit never matches a probe.
#[test]
fn p6_a_call_from_before_the_trip_stays_stale_across_any_number_of_probe_releases() {
    let generations = GENERATIONS;
    // The count at which a generation spent per claim and release would come back round to the
    // old permit's, and more releases than the field holds.
    for releases in [generations / 2 - 1, generations + 2] {
        for (verdict, released_by_drop) in [(Outcome::Success, false), (FAIL, true)] {
            let (breaker, mock) = breaker_with(1);
            let slow = breaker.try_acquire().unwrap();
            let slow_generation = slow.generation();
            fail_once(&breaker);
            mock.increment(COOLDOWN);
            let mut probe_generations = std::collections::BTreeSet::new();
            for _ in 0..releases {
                let probe = breaker.try_acquire().unwrap();
                probe_generations.insert(probe.generation());
                if released_by_drop {
                    drop(probe);
                } else {
                    probe.record(Outcome::Ignored);
                }
            }
            assert_eq!(probe_generations.len(), 1, "releases spend no generation");
            let probe = breaker.try_acquire().unwrap();
            assert!(probe.is_probe());
            assert_eq!(
                slow.record(verdict),
                None,
                "{verdict:?} after {releases} releases"
            );
            assert_eq!(breaker.state(), State::HalfOpen);
            assert!(
                breaker.try_acquire().is_err(),
                "the probe still holds the slot"
            );
            probe.record(Outcome::Success);
            assert_ne!(breaker.try_acquire().unwrap().generation(), slow_generation);
        }
    }
}
