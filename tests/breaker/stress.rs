//! Eight real threads cycle one breaker for about two seconds (longer on a loaded machine, until
//! it has been through enough cycles) through trips, cooldowns and probes
//! with random outcomes, on a shared mock clock that one thread advances.
//!
//! Checked: never more than one probe in flight, and the counts add up — every admitted call was
//! recorded, dropped or timed out, and the breaker's transitions agree with its final state.
//!
//! Time is frozen while a call is in flight (callers hold a read lock on the clock; the clock
//! thread takes the write lock to advance it), so an ordinary probe cannot outlive its lease by
//! accident. Some probes hang on purpose: they are handed to the clock thread, which lets their
//! lease run out and counts them as timed out, in the same critical section that made time pass
//! their lease's end, before any new probe can be admitted.
//!
//! The same cycle runs again on breakers with rate rules (a count window, a time window, a
//! slow-call rule with elapsed times reported, and both rate rules with the consecutive rule),
//! each for about three quarters of a second. Checked besides: the transitions heard come in the
//! breaker's order, and every trip is one its rules allow — a rate trip only once at least
//! `minimum_calls` judged calls of the closed generation it ends were recorded, with a count
//! that reaches the ratio of that minimum and exceeds neither the judged calls recorded nor the
//! failures (or slow calls) among them.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use toolbreaker::quanta::Clock;
use toolbreaker::{
    CircuitBreaker, FailureKind, Outcome, Permit, State, Transition, TransitionReason, Window,
};

const WORKERS: usize = 7; // plus the clock thread: eight
const RUN_FOR: Duration = Duration::from_secs(2);
const RUN_AT_MOST: Duration = Duration::from_secs(20);
const COOLDOWN_MS: u64 = 20;
const PROBE_TIMEOUT_MS: u64 = 50;
/// The clock thread's largest step: below the cooldown, so a lease's end is always processed
/// before the step that could admit the next probe.
const MAX_STEP_NS: u64 = 2_000_000;

#[derive(Default)]
struct Counts {
    attempted: AtomicU64,
    admitted: AtomicU64,
    blocked: AtomicU64,
    probes: AtomicU64,
    recorded: AtomicU64,
    dropped: AtomicU64,
    timed_out: AtomicU64,
    trips: AtomicU64,
    closes: AtomicU64,
    reopens: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

#[test]
fn eight_threads_cycling_one_breaker_never_run_two_probes_and_every_call_is_accounted_for() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(3)
        .cooldown(Duration::from_millis(COOLDOWN_MS))
        .probe_timeout(Duration::from_millis(PROBE_TIMEOUT_MS))
        .clock(clock)
        .build()
        .unwrap();
    let time = RwLock::new(());
    let probes_in_flight = AtomicUsize::new(0);
    let most_in_flight = AtomicUsize::new(0);
    let hung: Mutex<Vec<(Permit<'_>, u64)>> = Mutex::new(Vec::new());
    let counts = Counts::default();
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + RUN_FOR;
    let give_up = Instant::now() + RUN_AT_MOST;

    let note_transition = |t: Option<toolbreaker::Transition>| match t.map(|t| (t.from(), t.to())) {
        Some((State::Closed, State::Open)) => bump(&counts.trips),
        Some((State::HalfOpen, State::Closed)) => bump(&counts.closes),
        Some((State::HalfOpen, State::Open)) => bump(&counts.reopens),
        Some(other) => panic!("unexpected transition {other:?}"),
        None => {}
    };

    std::thread::scope(|s| {
        // The clock: advance, then time out the hung probes whose lease this step passed.
        s.spawn(|| {
            let mut rng = fastrand::Rng::with_seed(7);
            // At least `RUN_FOR`, and on a loaded machine longer (up to `RUN_AT_MOST`), until
            // the run has been through enough whole cycles to mean something.
            let enough = || {
                counts.trips.load(Ordering::Relaxed) >= 10
                    && counts.reopens.load(Ordering::Relaxed) >= 10
                    && counts.closes.load(Ordering::Relaxed) >= 10
                    && counts.timed_out.load(Ordering::Relaxed) >= 1
            };
            while Instant::now() < deadline || (!enough() && Instant::now() < give_up) {
                let _write = time.write().unwrap();
                mock.increment(rng.u64(0..=MAX_STEP_NS));
                let now_ms = mock.value() / 1_000_000;
                let mut hung = hung.lock().unwrap();
                hung.retain(|(_, started_ms)| {
                    if now_ms >= started_ms + PROBE_TIMEOUT_MS {
                        probes_in_flight.fetch_sub(1, Ordering::SeqCst);
                        bump(&counts.timed_out);
                        false // dropping the permit now changes nothing: its lease is over
                    } else {
                        true
                    }
                });
            }
            stop.store(true, Ordering::SeqCst);
        });

        for id in 0..WORKERS {
            let (breaker, time, hung, counts) = (&breaker, &time, &hung, &counts);
            let (probes_in_flight, most_in_flight, stop) =
                (&probes_in_flight, &most_in_flight, &stop);
            let note_transition = &note_transition;
            let mock = &mock;
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(id as u64);
                while !stop.load(Ordering::SeqCst) {
                    let _frozen = time.read().unwrap();
                    bump(&counts.attempted);
                    let permit = match breaker.try_acquire() {
                        Ok(permit) => permit,
                        Err(blocked) => {
                            assert!(blocked.retry_after() > Duration::ZERO);
                            bump(&counts.blocked);
                            continue;
                        }
                    };
                    bump(&counts.admitted);
                    if permit.is_probe() {
                        bump(&counts.probes);
                        let before = probes_in_flight.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(before, 0, "a second probe in flight");
                        most_in_flight.fetch_max(before + 1, Ordering::SeqCst);
                        if rng.u8(0..10) == 0 {
                            // Hang: hand the probe to the clock thread, which times it out.
                            let started_ms = mock.value() / 1_000_000;
                            hung.lock().unwrap().push((permit, started_ms));
                            continue;
                        }
                        // Leaving flight before the slot is given back keeps the count honest.
                        probes_in_flight.fetch_sub(1, Ordering::SeqCst);
                    }
                    match rng.u8(0..10) {
                        0 => {
                            drop(permit);
                            bump(&counts.dropped);
                        }
                        roll => {
                            let outcome = match roll {
                                1..=4 => Outcome::Failure(FailureKind::Unavailable),
                                5 => Outcome::Ignored,
                                _ => Outcome::Success,
                            };
                            note_transition(permit.record(outcome));
                            bump(&counts.recorded);
                        }
                    }
                }
            });
        }
    });

    // Probes still hanging at the end are dropped here; they never timed out.
    let leftover = hung.into_inner().unwrap().len() as u64;
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let (attempted, admitted, blocked) = (
        load(&counts.attempted),
        load(&counts.admitted),
        load(&counts.blocked),
    );
    let (recorded, dropped, timed_out) = (
        load(&counts.recorded),
        load(&counts.dropped),
        load(&counts.timed_out),
    );
    let (trips, closes, reopens) = (
        load(&counts.trips),
        load(&counts.closes),
        load(&counts.reopens),
    );
    let summary = format!(
        "attempted {attempted}, admitted {admitted}, blocked {blocked}, probes {}, recorded \
         {recorded}, dropped {dropped}, timed out {timed_out}, left hanging {leftover}, trips \
         {trips}, closes {closes}, reopens {reopens}",
        load(&counts.probes)
    );
    eprintln!("{summary}");
    assert_eq!(most_in_flight.load(Ordering::SeqCst), 1, "{summary}");
    assert_eq!(attempted, admitted + blocked, "{summary}");
    assert_eq!(
        admitted,
        recorded + dropped + timed_out + leftover,
        "{summary}"
    );
    // The run went through the whole cycle many times.
    assert!(trips >= 10 && closes >= 10 && reopens >= 10, "{summary}");
    assert!(timed_out >= 1 && blocked > 0, "{summary}");
    // Every close ends an open period that a trip began: closes trail trips by the final one.
    let open_at_end = u64::from(breaker.state() != State::Closed);
    assert_eq!(trips, closes + open_at_end, "{summary}");
}

/// A breaker's rules for the mixed-policy run.
struct Policy {
    name: &'static str,
    failure_rate: Option<f64>,
    slow_calls: Option<(Duration, f64)>,
    window: Window,
    minimum_calls: u32,
    failure_threshold: Option<u32>,
    /// Probes half-open admits (`Builder::probes`).
    probes: u32,
    /// The cooldown's backoff (`Builder::cooldown_backoff`).
    backoff: Option<(f64, Duration)>,
}

const SLOW: Duration = Duration::from_millis(100);

const POLICIES: [Policy; 5] = [
    Policy {
        name: "count window",
        failure_rate: Some(0.5),
        slow_calls: None,
        window: Window::Calls(20),
        minimum_calls: 8,
        failure_threshold: None,
        probes: 1,
        backoff: None,
    },
    Policy {
        name: "time window",
        failure_rate: Some(0.5),
        slow_calls: None,
        // Buckets of 6 ms: calls leave the window as the clock thread moves time on.
        window: Window::Time(Duration::from_millis(60)),
        minimum_calls: 8,
        failure_threshold: None,
        probes: 1,
        backoff: None,
    },
    Policy {
        name: "slow calls",
        failure_rate: None,
        slow_calls: Some((SLOW, 0.5)),
        window: Window::Calls(20),
        minimum_calls: 8,
        failure_threshold: None,
        probes: 1,
        backoff: None,
    },
    Policy {
        name: "both rate rules and the consecutive rule",
        failure_rate: Some(0.3),
        slow_calls: Some((SLOW, 0.5)),
        // Bucketed: buckets of 2 calls.
        window: Window::Calls(50),
        minimum_calls: 10,
        failure_threshold: Some(8),
        probes: 1,
        backoff: None,
    },
    Policy {
        name: "three probes, a backed-off cooldown",
        failure_rate: Some(0.5),
        slow_calls: None,
        window: Window::Calls(20),
        minimum_calls: 8,
        // Above the 10 failures in a row that fill half the window after a healthy stretch, so
        // the rate rule can trip first: at 4 it won only when racing successes broke a run of
        // failures, and a busy machine could run a whole scenario without one.
        failure_threshold: Some(12),
        probes: 3,
        backoff: Some((2.0, Duration::from_millis(4 * COOLDOWN_MS))),
    },
];

const RATE_RUN_FOR: Duration = Duration::from_millis(750);
/// Admitted calls of a healthy stretch after each close, and the probes that fail in the outage
/// that follows (unless one succeeds first).
const HEALTHY_CALLS: u64 = 200;
const OUTAGE_REOPENS: u64 = 2;
/// Generations a run may reach: the per-generation counts are kept in an array this long.
const GENERATIONS: usize = 1 << 16;

/// What the workers recorded in each closed generation (indexed by the permit's generation),
/// counted before the record is made, so at a trip they are at least what the window can hold:
/// a call counts into the window of its permit's generation only, since time is frozen while it
/// is in flight and no generation can close, trip and close again (a cooldown) meanwhile. (A time
/// window may have let some of them go: the counts are an upper bound.)
struct Recorded {
    judged: Box<[AtomicU64]>,
    failed: Box<[AtomicU64]>,
    slow: Box<[AtomicU64]>,
}

impl Recorded {
    fn new() -> Self {
        let counts = || (0..GENERATIONS).map(|_| AtomicU64::new(0)).collect();
        Recorded {
            judged: counts(),
            failed: counts(),
            slow: counts(),
        }
    }
}

/// The ratio in millionths, as the breaker keeps it.
fn ppm(ratio: f64) -> u64 {
    (ratio * 1_000_000.0).round() as u64
}

/// A trip `trip`, returned to the caller whose record made it, is one the policy allows. Called
/// after an acquire fence that pairs with the release fence each worker makes between counting
/// a call and recording it, so every call the window counted is in `recorded`.
fn check_trip(policy: &Policy, trip: &Transition, recorded: &Recorded) {
    let name = policy.name;
    let closed = trip
        .generation()
        .checked_sub(1)
        .expect("a trip ends a closed generation");
    let closed = closed as usize;
    let judged = recorded.judged[closed].load(Ordering::Relaxed);
    let failed = recorded.failed[closed].load(Ordering::Relaxed);
    let slow = recorded.slow[closed].load(Ordering::Relaxed);
    let minimum = u64::from(policy.minimum_calls);
    let counted = trip.failures();
    let rate_trip = |ratio: Option<f64>, among: u64| {
        let ratio = ratio.unwrap_or_else(|| panic!("{name}: {trip:?} by a rule not set"));
        assert!(
            judged >= minimum,
            "{name}: {trip:?} after {judged} judged calls, below the minimum {minimum}"
        );
        assert!(
            counted <= among && counted <= judged,
            "{name}: {trip:?} counts more than the {among} of {judged} judged calls recorded"
        );
        assert!(
            u128::from(counted) * 1_000_000 >= u128::from(ppm(ratio)) * u128::from(minimum),
            "{name}: {trip:?} below {ratio} of the minimum {minimum}"
        );
    };
    match trip.reason() {
        TransitionReason::FailureRate => rate_trip(policy.failure_rate, failed),
        TransitionReason::SlowCallRate => rate_trip(policy.slow_calls.map(|(_, r)| r), slow),
        TransitionReason::FailureThreshold => {
            let threshold = policy
                .failure_threshold
                .unwrap_or_else(|| panic!("{name}: {trip:?} with no consecutive rule"));
            assert!(
                counted >= u64::from(threshold) && counted <= failed,
                "{name}: {trip:?}: threshold {threshold}, {failed} failures recorded"
            );
        }
        other => panic!("{name}: a trip with reason {other:?}"),
    }
}

#[test]
fn breakers_with_rate_rules_trip_only_as_their_rules_allow_under_eight_threads() {
    for policy in &POLICIES {
        cycle_rated(policy);
    }
}

/// The cycle of the test above, on a breaker with `policy`'s rules: seven workers with a mix of
/// outcomes (and elapsed times on both sides of the slow-call threshold), and the clock thread.
/// A blocked worker and the clock thread yield after each try and each step, so the calls of a
/// healthy stretch fill the windows within a stretch of mock time rather than one call per
/// cooldown.
fn cycle_rated(policy: &Policy) {
    let name = policy.name;
    let (clock, mock) = Clock::mock();
    let heard: Arc<Mutex<Vec<Transition>>> = Arc::default();
    let listener = Arc::clone(&heard);
    let mut builder = CircuitBreaker::builder()
        .window(policy.window)
        .minimum_calls(policy.minimum_calls)
        .cooldown(Duration::from_millis(COOLDOWN_MS))
        .probe_timeout(Duration::from_millis(PROBE_TIMEOUT_MS))
        .clock(clock)
        .on_transition(move |event| listener.lock().unwrap().push(*event.transition()));
    if let Some(ratio) = policy.failure_rate {
        builder = builder.failure_rate(ratio);
    }
    if let Some((threshold, ratio)) = policy.slow_calls {
        builder = builder.slow_calls(threshold, ratio);
    }
    if let Some(threshold) = policy.failure_threshold {
        builder = builder.failure_threshold(threshold);
    }
    if let Some((multiplier, max)) = policy.backoff {
        builder = builder.cooldown_backoff(multiplier, max);
    }
    let breaker = builder.probes(policy.probes).build().unwrap();
    let time = RwLock::new(());
    let probes_in_flight = AtomicUsize::new(0);
    let most_in_flight = AtomicUsize::new(0);
    let hung: Mutex<Vec<(Permit<'_>, u64)>> = Mutex::new(Vec::new());
    let counts = Counts::default();
    let recorded = Recorded::new();
    let rate_trips = AtomicU64::new(0);
    // The outage begins once this many calls were admitted, and lasts until this many probes
    // have failed; each close starts a new healthy stretch.
    let outage_from = AtomicU64::new(HEALTHY_CALLS);
    let outage_until = AtomicU64::new(OUTAGE_REOPENS);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + RATE_RUN_FOR;
    let give_up = Instant::now() + RUN_AT_MOST;

    let note_transition = |t: Option<Transition>| {
        let Some(t) = t else { return };
        match (t.from(), t.to()) {
            (State::Closed, State::Open) => {
                // Pairs with the workers' release fences: every call counted into the window
                // before this trip was counted in `recorded` first.
                fence(Ordering::Acquire);
                check_trip(policy, &t, &recorded);
                if t.reason() != TransitionReason::FailureThreshold {
                    bump(&rate_trips);
                }
                bump(&counts.trips);
            }
            (State::HalfOpen, State::Closed) => {
                let admitted = counts.admitted.load(Ordering::Relaxed);
                outage_from.store(admitted + HEALTHY_CALLS, Ordering::Relaxed);
                let reopens = counts.reopens.load(Ordering::Relaxed);
                outage_until.store(reopens + OUTAGE_REOPENS, Ordering::Relaxed);
                bump(&counts.closes);
            }
            (State::HalfOpen, State::Open) => bump(&counts.reopens),
            other => panic!("{name}: unexpected transition {other:?}"),
        }
    };

    std::thread::scope(|s| {
        // The clock, as in the test above.
        s.spawn(|| {
            let mut rng = fastrand::Rng::with_seed(7);
            // Everything asserted below, a trip by a rate rule too: on a loaded machine the run
            // lasts until then (up to `RUN_AT_MOST`), not `RATE_RUN_FOR` of wall-clock time.
            let enough = || {
                counts.trips.load(Ordering::Relaxed) >= 10
                    && counts.reopens.load(Ordering::Relaxed) >= 10
                    && counts.closes.load(Ordering::Relaxed) >= 10
                    && counts.timed_out.load(Ordering::Relaxed) >= 1
                    && rate_trips.load(Ordering::Relaxed) >= 1
            };
            while Instant::now() < deadline || (!enough() && Instant::now() < give_up) {
                let write = time.write().unwrap();
                mock.increment(rng.u64(0..=MAX_STEP_NS));
                let now_ms = mock.value() / 1_000_000;
                let mut hung = hung.lock().unwrap();
                // A hung probe is over when the breaker says so: its lease, shared with the other
                // probes of its half-open period, ran from the period's first probe (so a probe
                // admitted later in it may be over before its own timeout), or a verdict or a
                // change made it stale.
                hung.retain(|(permit, started_ms)| {
                    if now_ms >= started_ms + PROBE_TIMEOUT_MS || !permit.is_current() {
                        probes_in_flight.fetch_sub(1, Ordering::SeqCst);
                        bump(&counts.timed_out);
                        false
                    } else {
                        true
                    }
                });
                drop((hung, write));
                // Let the workers call between steps, so a window of calls fills within a
                // stretch of mock time.
                std::thread::yield_now();
            }
            stop.store(true, Ordering::SeqCst);
        });

        for id in 0..WORKERS {
            let (breaker, time, hung, counts, recorded) =
                (&breaker, &time, &hung, &counts, &recorded);
            let (probes_in_flight, most_in_flight, stop) =
                (&probes_in_flight, &most_in_flight, &stop);
            let (outage_from, outage_until) = (&outage_from, &outage_until);
            let note_transition = &note_transition;
            let mock = &mock;
            s.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(100 + id as u64);
                while !stop.load(Ordering::SeqCst) {
                    let frozen = time.read().unwrap();
                    bump(&counts.attempted);
                    let permit = match breaker.try_acquire() {
                        Ok(permit) => permit,
                        Err(blocked) => {
                            assert!(blocked.retry_after() > Duration::ZERO);
                            bump(&counts.blocked);
                            // Blocked until time passes: let the clock thread move it.
                            drop(frozen);
                            std::thread::yield_now();
                            continue;
                        }
                    };
                    bump(&counts.admitted);
                    if permit.is_probe() {
                        bump(&counts.probes);
                        let before = probes_in_flight.fetch_add(1, Ordering::SeqCst);
                        assert!(
                            before < policy.probes as usize,
                            "{name}: {} probes in flight",
                            before + 1
                        );
                        most_in_flight.fetch_max(before + 1, Ordering::SeqCst);
                        if rng.u8(0..10) == 0 {
                            let started_ms = mock.value() / 1_000_000;
                            hung.lock().unwrap().push((permit, started_ms));
                            continue;
                        }
                        probes_in_flight.fetch_sub(1, Ordering::SeqCst);
                    }
                    // Outages come and go: after each close a healthy stretch (one call in ten
                    // fails, two in ten are slow) long enough to fill the windows and age the
                    // time window's buckets, then an outage (seven in ten fail or are slow)
                    // until a few probes have failed.
                    let outage = counts.admitted.load(Ordering::Relaxed)
                        >= outage_from.load(Ordering::Relaxed)
                        && counts.reopens.load(Ordering::Relaxed)
                            < outage_until.load(Ordering::Relaxed);
                    let bad = if outage { 7 } else { 1 };
                    let outcome = match rng.u8(0..10) {
                        0 => {
                            drop(permit);
                            bump(&counts.dropped);
                            continue;
                        }
                        1 => Outcome::Ignored,
                        roll if roll < 2 + bad => Outcome::Failure(FailureKind::Unavailable),
                        _ => Outcome::Success,
                    };
                    // Most calls report an elapsed time, slow or not (a breaker without a
                    // slow-call rule must ignore it); the rest are never slow.
                    let slow = rng.u8(0..10) < bad + 1;
                    let elapsed = (rng.u8(0..4) != 0).then(|| match slow {
                        true => SLOW + SLOW * rng.u32(0..10) / 10,
                        false => SLOW * rng.u32(0..10) / 10,
                    });
                    let generation = permit.generation() as usize;
                    assert!(generation < GENERATIONS, "{name}: too many generations");
                    if !permit.is_probe() && outcome != Outcome::Ignored {
                        bump(&recorded.judged[generation]);
                        if outcome != Outcome::Success {
                            bump(&recorded.failed[generation]);
                        }
                        if policy.slow_calls.is_some() && elapsed.is_some_and(|e| e >= SLOW) {
                            bump(&recorded.slow[generation]);
                        }
                    }
                    // Pairs with the acquire fence before a trip is checked.
                    fence(Ordering::Release);
                    note_transition(match elapsed {
                        Some(elapsed) => permit.record_elapsed(outcome, elapsed),
                        None => permit.record(outcome),
                    });
                    bump(&counts.recorded);
                }
            });
        }
    });

    let leftover = hung.into_inner().unwrap().len() as u64;
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let (attempted, admitted, blocked) = (
        load(&counts.attempted),
        load(&counts.admitted),
        load(&counts.blocked),
    );
    let (recorded_calls, dropped, timed_out) = (
        load(&counts.recorded),
        load(&counts.dropped),
        load(&counts.timed_out),
    );
    let (trips, closes, reopens) = (
        load(&counts.trips),
        load(&counts.closes),
        load(&counts.reopens),
    );
    let summary = format!(
        "{name}: {} ms of mock time, attempted {attempted}, admitted {admitted}, blocked \
         {blocked}, probes {}, recorded {recorded_calls}, dropped {dropped}, timed out \
         {timed_out}, left hanging {leftover}, trips {trips} ({} by a rate), closes {closes}, \
         reopens {reopens}",
        mock.value() / 1_000_000,
        load(&counts.probes),
        load(&rate_trips),
    );
    eprintln!("{summary}");
    let most = most_in_flight.load(Ordering::SeqCst);
    assert!(
        (1..=policy.probes as usize).contains(&most),
        "{most} probes at once: {summary}"
    );
    assert_eq!(attempted, admitted + blocked, "{summary}");
    assert_eq!(
        admitted,
        recorded_calls + dropped + timed_out + leftover,
        "{summary}"
    );
    assert!(trips >= 10 && closes >= 10 && reopens >= 10, "{summary}");
    assert!(timed_out >= 1 && blocked > 0, "{summary}");
    // The rate rules did trip the breaker, not only the consecutive rule.
    assert!(load(&rate_trips) >= 1, "{summary}");
    let open_at_end = u64::from(breaker.state() != State::Closed);
    assert_eq!(trips, closes + open_at_end, "{summary}");

    // Heard in the breaker's order, and the newest one heard agrees with the final state.
    let heard = heard.lock().unwrap();
    for pair in heard.windows(2) {
        assert!(pair[1].is_after(&pair[0]), "{name}: {pair:?}");
    }
    let last = heard.last().expect("transitions were heard");
    assert_eq!(
        last.to() == State::Closed,
        breaker.state() == State::Closed,
        "{name}: last heard {last:?}, state {:?}",
        breaker.state()
    );
}
