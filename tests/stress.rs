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

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use toolbreaker::quanta::Clock;
use toolbreaker::{CircuitBreaker, FailureKind, Outcome, Permit, State};

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
