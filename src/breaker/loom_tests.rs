//! Model checks of the real breaker code under loom: the interleavings loom explores for 2–3
//! threads (all of them, or up to the preemption bound the script sets). Built only under
//! `--cfg loom`, as the crate's unit tests, so they reach the breaker's crate-private side (the
//! fleet's hooks) without any hidden public item. Run with
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p toolbreaker --release --lib loom_tests
//! ```
//!
//! Loom cannot model a clock, so time is a `quanta` mock clock that only the test moves, before the
//! threads start or from inside one thread (a plain value read, not an explored atomic).
use std::sync::Arc;
use std::time::Duration;

use loom::thread;
use quanta::{Clock, Mock};
use smol_str::SmolStr;

use super::hook::Hook;
use super::machine::{CircuitBreaker, Extras};
use crate::classify::{FailureKind, Outcome};
use crate::config::{Config, Window};
use crate::state::decide::Remote;
use crate::types::{BlockedReason, State, Transition, TransitionReason};

const COOLDOWN: Duration = Duration::from_millis(100);
const FAIL: Outcome = Outcome::Failure(FailureKind::Unavailable);

/// A breaker for one model execution. Permits borrow their breaker and loom threads need
/// `'static` data, so each execution leaks one breaker (a few hundred bytes).
fn breaker(threshold: u32) -> (&'static CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(Duration::from_secs(1))
        .clock(clock)
        .build()
        .unwrap();
    (Box::leak(Box::new(breaker)), mock)
}

/// Trip with `threshold` failures and let the cooldown pass: half-open, slot free.
fn half_open(breaker: &CircuitBreaker, mock: &Mock, threshold: u32) {
    for _ in 0..threshold {
        breaker.try_acquire().unwrap().record(FAIL);
    }
    mock.increment(COOLDOWN);
    assert_eq!(breaker.state(), State::HalfOpen);
}

/// Model 1: Threads racing `try_acquire` at the end of the cooldown: exactly one probe is admitted.
#[test]
fn racing_acquires_at_the_cooldown_end_admit_exactly_one_probe() {
    loom::model(|| {
        let (breaker, mock) = breaker(1);
        half_open(breaker, &mock, 1);
        let racers: Vec<_> = (0..3)
            .map(|_| {
                thread::spawn(move || match breaker.try_acquire() {
                    // Keep the slot until every racer has tried.
                    Ok(permit) => Ok(std::mem::ManuallyDrop::new(permit)),
                    Err(blocked) => Err(blocked),
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let admitted: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(admitted.len(), 1, "exactly one of three admitted");
        assert!(admitted[0].is_probe());
        for blocked in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
            assert!(blocked.retry_after() > Duration::ZERO);
        }
    });
}

/// Model 2: Concurrent counted failures at the threshold: the breaker opens exactly once, and the
/// opened-at time is the tripping failure's (one thread moves the clock before it reports).
#[test]
fn concurrent_failures_at_the_threshold_open_exactly_once_at_the_tripping_time() {
    loom::model(|| {
        let (breaker, mock) = breaker(2);
        let reporters: Vec<_> = (0..3)
            .map(|i| {
                let permit = breaker.try_acquire().unwrap();
                let mock = Arc::clone(&mock);
                thread::spawn(move || {
                    if i == 2 {
                        mock.increment(Duration::from_millis(50));
                    }
                    let before = mock.value();
                    let transition = permit.record(FAIL);
                    let after = mock.value();
                    transition.map(|t| (t.from(), t.to(), before, after))
                })
            })
            .collect();
        let trips: Vec<_> = reporters
            .into_iter()
            .filter_map(|r| r.join().unwrap())
            .collect();
        assert_eq!(trips.len(), 1, "opens exactly once: {trips:?}");
        let (from, to, before, after) = trips[0];
        assert_eq!((from, to), (State::Closed, State::Open));
        // Opened at the tripping failure's time, read somewhere between `before` and `after`
        // (another thread may move the clock while this one reports): half-open exactly one
        // cooldown after it, never moved by the failure that came after the trip.
        let now = mock.value();
        let remaining = breaker.try_acquire().unwrap_err().retry_after();
        let earliest = COOLDOWN - Duration::from_nanos(now - before);
        let latest = COOLDOWN - Duration::from_nanos(now - after);
        assert!(
            (earliest..=latest).contains(&remaining),
            "{remaining:?} not in {earliest:?}..={latest:?}"
        );
    });
}

/// Model 3: A late outcome from an older generation racing the probe's outcome: only the probe's
/// outcome moves the state.
#[test]
fn a_stale_outcome_racing_the_probe_never_moves_the_state() {
    for (stale, verdict, expected) in [
        (FAIL, Outcome::Success, State::Closed),
        (Outcome::Success, FAIL, State::Open),
        (FAIL, Outcome::Ignored, State::HalfOpen),
    ] {
        loom::model(move || {
            let (breaker, mock) = breaker(1);
            let slow = breaker.try_acquire().unwrap(); // admitted while closed, reports late
            breaker.try_acquire().unwrap().record(FAIL);
            mock.increment(COOLDOWN);
            let probe = breaker.try_acquire().unwrap();
            // The late thread yields first: loom does not explore a new thread whose first step
            // is an atomic load ahead of another thread's (tokio-rs/loom#166), and without the
            // yield the probe's verdict never lands before the stale report is judged. (With the
            // generation check removed, this model then fails; without the yield it passed.)
            let late = thread::spawn(move || {
                thread::yield_now();
                slow.record(stale)
            });
            let prober = thread::spawn(move || probe.record(verdict));
            assert_eq!(
                late.join().unwrap(),
                None,
                "the stale outcome is no transition"
            );
            let moved = prober.join().unwrap();
            assert_eq!(
                moved.map(|t| t.to()),
                (expected != State::HalfOpen).then_some(expected)
            );
            assert_eq!(breaker.state(), expected);
        });
    }
}

/// Model 4: A probe permit dropped unrecorded racing other callers' `try_acquire`: the slot is released
/// exactly once, so exactly one later caller becomes the probe.
#[test]
fn a_dropped_probe_releases_its_slot_exactly_once() {
    loom::model(|| {
        let (breaker, mock) = breaker(1);
        half_open(breaker, &mock, 1);
        let probe = breaker.try_acquire().unwrap();
        let dropper = thread::spawn(move || drop(probe));
        let racer = thread::spawn(move || {
            breaker
                .try_acquire()
                .map(|p| std::mem::ManuallyDrop::new(p).is_probe())
        });
        dropper.join().unwrap();
        let raced = racer.join().unwrap();
        let after = breaker
            .try_acquire()
            .map(|p| std::mem::ManuallyDrop::new(p).is_probe());
        let probes = [&raced, &after].iter().filter(|r| r.is_ok()).count();
        assert_eq!(probes, 1, "raced {raced:?}, after {after:?}");
        assert!(
            raced.unwrap_or(true) && after.unwrap_or(true),
            "only probes are admitted"
        );
    });
}

/// Model 5: A success clearing the failure count racing a counted failure: no interleaving loses the
/// failure. Either it came last and the count it left trips on the next failure, or it came
/// first and tripped.
#[test]
fn a_success_racing_a_failure_never_loses_the_failure() {
    loom::model(|| {
        let (breaker, _mock) = breaker(2);
        breaker.try_acquire().unwrap().record(FAIL); // one failure on the count
        let success = breaker.try_acquire().unwrap();
        let failure = breaker.try_acquire().unwrap();
        let s = thread::spawn(move || success.record(Outcome::Success));
        let f = thread::spawn(move || failure.record(FAIL));
        assert_eq!(
            s.join().unwrap(),
            None,
            "a success while closed is no transition"
        );
        match f.join().unwrap() {
            Some(trip) => {
                // The failure came before the success: two in a row, tripped.
                assert_eq!((trip.from(), trip.to()), (State::Closed, State::Open));
                assert_eq!(breaker.state(), State::Open);
            }
            None => {
                // The success cleared the count first; the failure is on the count now.
                assert_eq!(breaker.state(), State::Closed);
                let next = breaker.try_acquire().unwrap().record(FAIL);
                assert_eq!(
                    next.map(|t| t.to()),
                    Some(State::Open),
                    "the racing failure counted"
                );
            }
        }
    });
}

/// Model 6: An expired probe's late verdict racing the claim of the next probe (the clock moves
/// past the lease and a cooldown from inside the claiming thread): never both. If the new probe
/// was admitted, the expired one's success changed nothing; if the success landed first, inside
/// its lease, the breaker closed and no probe was admitted.
#[test]
fn an_expired_probe_racing_the_next_claim_never_both_count() {
    loom::model(|| {
        let (breaker, mock) = breaker(1);
        half_open(breaker, &mock, 1);
        let old = breaker.try_acquire().unwrap();
        let late = thread::spawn(move || {
            thread::yield_now();
            old.record(Outcome::Success)
        });
        let claimer = thread::spawn(move || {
            thread::yield_now();
            mock.increment(Duration::from_secs(1) + COOLDOWN); // the lease ends, a cooldown passes
            breaker
                .try_acquire()
                .map(|p| std::mem::ManuallyDrop::new(p).is_probe())
        });
        let verdict = late.join().unwrap();
        let claim = claimer.join().unwrap();
        match claim {
            Ok(true) => assert_eq!(verdict, None, "a new probe, yet the expired one closed it"),
            Ok(false) => assert_eq!(verdict.map(|t| t.to()), Some(State::Closed)),
            Err(blocked) => panic!("blocked after the lease and a cooldown: {blocked}"),
        }
    });
}

/// Model 7: Memory ordering: what the probe did before recording its success is visible to a
/// caller whose `try_acquire` observes the closed breaker (the `# Memory ordering` guarantee).
#[test]
fn a_close_publishes_what_the_probe_did_before_it() {
    use loom::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::Relaxed;

    loom::model(|| {
        let (breaker, mock) = breaker(1);
        half_open(breaker, &mock, 1);
        let probe = breaker.try_acquire().unwrap();
        let data: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        let prober = thread::spawn(move || {
            data.store(42, Relaxed); // the probe's own work, published only by the close
            probe.record(Outcome::Success);
        });
        let reader = thread::spawn(move || {
            thread::yield_now();
            if let Ok(permit) = breaker.try_acquire() {
                if !permit.is_probe() {
                    assert_eq!(
                        data.load(Relaxed),
                        42,
                        "the close did not publish the probe's work"
                    );
                }
                std::mem::forget(permit);
            }
        });
        prober.join().unwrap();
        reader.join().unwrap();
    });
}

/// Model 8 (run with the preemption bound only: unbounded it takes two minutes): A threshold
/// lowered while failures are recorded. However the reconfiguration's stores
/// and read-modify-write interleave with the reports' loads and swaps, a closed breaker never
/// ends at or past its threshold: it trips, exactly once, by the reconfiguration or by a report.
#[test]
fn a_lowered_threshold_racing_failures_always_trips_exactly_once() {
    loom::model(|| {
        let (breaker, _mock) = breaker(3);
        breaker.try_acquire().unwrap().record(FAIL); // one failure of three
        let permits: Vec<_> = (0..2).map(|_| breaker.try_acquire().unwrap()).collect();
        let reporters: Vec<_> = permits
            .into_iter()
            .map(|permit| thread::spawn(move || permit.record(FAIL)))
            .collect();
        let lowered = Config::new(2, COOLDOWN, Duration::from_secs(1)).unwrap();
        let reconfigured = thread::spawn(move || breaker.reconfigure(lowered));
        let mut trips: Vec<_> = reporters.into_iter().map(|r| r.join().unwrap()).collect();
        trips.push(reconfigured.join().unwrap());
        let trips: Vec<_> = trips.into_iter().flatten().collect();
        assert_eq!(
            breaker.state(),
            State::Open,
            "3 failures against a threshold of 2"
        );
        assert_eq!(trips.len(), 1, "one trip: {trips:?}");
        assert_eq!(trips[0].to(), State::Open);
    });
}

/// Model 9: A single failure racing a lowered threshold: with one failure already counted and the
/// threshold lowered from 3 to 2, the breaker ends open whichever comes first (the report that
/// read the old threshold is checked again against the new one).
#[test]
fn one_failure_racing_a_lowered_threshold_is_never_lost() {
    loom::model(|| {
        let (breaker, _mock) = breaker(3);
        breaker.try_acquire().unwrap().record(FAIL);
        let permit = breaker.try_acquire().unwrap();
        let reporter = thread::spawn(move || permit.record(FAIL));
        let lowered = Config::new(2, COOLDOWN, Duration::from_secs(1)).unwrap();
        let reconfigured = thread::spawn(move || breaker.reconfigure(lowered));
        let trips = [reporter.join().unwrap(), reconfigured.join().unwrap()];
        assert_eq!(breaker.state(), State::Open);
        assert_eq!(trips.iter().flatten().count(), 1, "{trips:?}");
    });
}

/// Model 10: Isolating a breaker while its probe reports success. Whichever lands first, the
/// breaker ends isolated: the success closes it and the isolation opens it again, or the
/// isolation makes the probe stale. The isolation always reports a change; the probe does only
/// when it came first.
#[test]
fn isolating_while_the_probe_succeeds_always_ends_isolated() {
    loom::model(|| {
        let (breaker, mock) = breaker(1);
        half_open(breaker, &mock, 1);
        let probe = breaker.try_acquire().unwrap();
        let prober = thread::spawn(move || probe.record(Outcome::Success));
        let isolator = thread::spawn(move || breaker.force_open());
        let closed = prober.join().unwrap();
        let isolated = isolator
            .join()
            .unwrap()
            .expect("the isolation changes the state");
        assert_eq!(
            breaker.try_acquire().unwrap_err().reason(),
            BlockedReason::Isolated
        );
        match closed {
            Some(t) => {
                assert_eq!(t.to(), State::Closed);
                assert_eq!(isolated.from(), State::Closed, "the isolation came second");
            }
            None => assert_eq!(isolated.from(), State::HalfOpen, "the probe came second"),
        }
    });
}

/// Model 11: a trip and a change by hand racing, each told by the thread that landed it. Whatever
/// the interleaving of the writes and the tellings, the listener hears the transitions in the
/// breaker's order (a superseded one is not heard), and the last one heard left the breaker in
/// the state it is in.
#[test]
fn transitions_racing_to_be_told_are_heard_in_order_ending_at_the_state() {
    loom::model(|| {
        let heard = Arc::new(loom::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let (clock, _mock) = Clock::mock();
        let breaker = CircuitBreaker::builder()
            .failure_threshold(1)
            .cooldown(COOLDOWN)
            .clock(clock)
            .on_transition(move |event| log.lock().unwrap().push(*event.transition()))
            .build()
            .unwrap();
        let breaker: &'static CircuitBreaker = Box::leak(Box::new(breaker));
        let permit = breaker.try_acquire().unwrap();
        let tripper = thread::spawn(move || permit.record(FAIL));
        let closer = thread::spawn(move || breaker.force_closed());
        let tripped = tripper.join().unwrap();
        let closed = closer.join().unwrap();
        assert!(tripped.is_some(), "the permit is current until the trip");
        let heard = heard.lock().unwrap();
        assert!(!heard.is_empty() && heard.len() <= 2);
        for pair in heard.windows(2) {
            assert!(pair[1].is_after(&pair[0]), "{heard:?}");
        }
        let state = breaker.state();
        assert_eq!(heard.last().unwrap().to(), state);
        assert_eq!(state == State::Closed, closed.is_some());
    });
}

// ---- Fleet mode: the local word adopting another instance's transition (`CircuitBreaker::adopt`,
// and the fleet task's other calls, made here as the task makes them) while local callers
// race it. Each model also checks that loom explored every outcome it names.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Transitions a listener heard, kept in a plain lock: nothing inside it is a loom operation, so
/// it is never held across a preemption and adds nothing to the explored state.
type Heard = Arc<std::sync::Mutex<Vec<Transition>>>;

/// [`breaker`] with a listener that keeps what it hears.
fn heard_breaker(threshold: u32) -> (&'static CircuitBreaker, Arc<Mock>, Heard) {
    let heard = Heard::default();
    let log = Arc::clone(&heard);
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(Duration::from_secs(1))
        .clock(clock)
        .on_transition(move |event| log.lock().unwrap().push(*event.transition()))
        .build()
        .unwrap();
    (Box::leak(Box::new(breaker)), mock, heard)
}

/// The fleet's gate as the fleet's tap (`fleet::tap`, built only with feature `redis`) keeps it
/// while connected: a local caller may claim the probe slot only in the generation the fleet
/// granted. The grant's window never lapses in these models (each revokes first), so only its
/// generation is kept; its store and load have the tap's orderings.
#[derive(Debug, Default)]
struct Grant {
    /// The granted generation plus one; 0 for none.
    granted: crate::sync::AtomicU64,
}

impl Hook for Grant {
    fn count_changed(&self) {}
    fn reset(&self) {}
    fn transition(&self, _: Transition) {}
    fn gate(&self, generation: u32, _now_ms: u64) -> Option<u64> {
        // Acquire: as the tap's, a caller that sees a grant sees the word freed before it.
        if self.granted.load(crate::sync::Ordering::Acquire) == u64::from(generation) + 1 {
            None
        } else {
            Some(50)
        }
    }
}

/// The breaker's grant, as the fleet's task finds its tap behind the breaker's hook.
fn grant_of(breaker: &CircuitBreaker) -> &Grant {
    let hook: &dyn core::any::Any = breaker.hook().expect("a fleet breaker has a hook");
    hook.downcast_ref::<Grant>().unwrap()
}

/// What the fleet's task does when the fleet gives this instance the probe
/// (`fleet::tap::take_fleet_probe`): free the slot, then grant it.
fn take_fleet_probe(breaker: &CircuitBreaker) -> Option<u32> {
    let generation = breaker.free_probe_slot()?;
    // Release: the word freed above is seen by a caller that sees the grant.
    grant_of(breaker)
        .granted
        .store(u64::from(generation) + 1, crate::sync::Ordering::Release);
    Some(generation)
}

/// A breaker whose probe slot the fleet governs, as a registry with a fleet builds it, and no
/// fleet task (the model plays it): a local caller may claim the slot only in the generation the
/// fleet granted (`take_fleet_probe`).
fn fleet_breaker() -> (&'static CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let config = Config::new(1, COOLDOWN, Duration::from_secs(1)).unwrap();
    let extras = Extras {
        name: SmolStr::default(),
        listener: None,
        metrics: false,
        hook: Some(Arc::new(Grant::default())),
    };
    let breaker = CircuitBreaker::with_extras(config, clock, extras);
    (Box::leak(Box::new(breaker)), mock)
}

/// What the fleet's task does when another instance's trip arrives: adopt open, since now.
fn adopt_open_now(breaker: &CircuitBreaker) -> Option<Transition> {
    let opened_at_ms = breaker.now_ms();
    breaker.adopt(Remote::Open { opened_at_ms }).1
}

/// What the fleet's task does when the fleet's probe is no longer this instance's: take the
/// grant back.
fn revoke(breaker: &CircuitBreaker) {
    grant_of(breaker)
        .granted
        .store(0, crate::sync::Ordering::Release);
}

/// What was heard since the last take.
fn take(heard: &Heard) -> Vec<Transition> {
    std::mem::take(&mut *heard.lock().unwrap())
}

/// What the listener heard of the transitions that `landed` (oldest first; with a claim's, which
/// `try_acquire` does not return): some of them, in the breaker's order, always the last one (a
/// transition whose telling is overtaken by a newer one's is not heard: see model 11), and
/// nothing else.
fn assert_heard(heard: &[Transition], landed: &[Transition]) {
    for pair in landed.windows(2) {
        assert!(
            pair[1].is_after(&pair[0]),
            "landed out of order: {landed:?}"
        );
    }
    let mut rest = landed.iter();
    for t in heard {
        assert!(
            rest.any(|l| l == t),
            "heard {heard:?}, landed {landed:?}: not a subsequence"
        );
    }
    assert_eq!(heard.last(), landed.last(), "the newest is always heard");
}

/// Open since now in `generation`: blocked for exactly a cooldown, then the probe claims the slot
/// in that same generation (a claim of an open word keeps it). Leaves the probe holding the slot.
fn assert_open_since_now(breaker: &'static CircuitBreaker, mock: &Mock, generation: u32) {
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(
        (blocked.state(), blocked.reason(), blocked.retry_after()),
        (State::Open, BlockedReason::DependencyOpen, COOLDOWN)
    );
    mock.increment(COOLDOWN);
    let probe = std::mem::ManuallyDrop::new(breaker.try_acquire().unwrap());
    assert!(probe.is_probe());
    assert_eq!(probe.generation(), generation, "open in another generation");
}

fn assert_all_seen(seen: &[AtomicBool], names: &[&str]) {
    for (seen, name) in seen.iter().zip(names) {
        assert!(seen.load(Relaxed), "loom never explored: {name}");
    }
}

/// Model 12: another instance's trip adopted (`Remote::Open`, opened now) while a local failure
/// trips the breaker. Exactly one of them opens it, into the next generation: the adoption
/// (reason `fleet`), after which the local failure is stale; or the local trip, after which the
/// adoption finds the word open no later than the fleet says and changes nothing. One transition
/// is heard, and a permit issued before the race is not current after it and changes nothing.
#[test]
fn a_remote_trip_racing_a_local_trip_opens_once_in_the_next_generation() {
    static SEEN: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    loom::model(|| {
        let (breaker, mock, heard) = heard_breaker(2);
        breaker.try_acquire().unwrap().record(FAIL); // one failure of two
        let bystander = breaker.try_acquire().unwrap(); // admitted before the race, reports after
        let start = bystander.generation();
        let failing = breaker.try_acquire().unwrap();
        let local = thread::spawn(move || failing.record(FAIL));
        let remote = thread::spawn(move || adopt_open_now(breaker));
        let tripped = local.join().unwrap();
        let adopted = remote.join().unwrap();
        let opened = match (tripped, adopted) {
            (Some(t), None) => {
                assert_eq!(t.reason(), TransitionReason::FailureThreshold);
                SEEN[0].store(true, Relaxed);
                t
            }
            (None, Some(t)) => {
                assert_eq!(t.reason(), TransitionReason::Fleet);
                SEEN[1].store(true, Relaxed);
                t
            }
            other => panic!("not exactly one opening: {other:?}"),
        };
        assert_eq!((opened.from(), opened.to()), (State::Closed, State::Open));
        assert_eq!(opened.generation(), start.wrapping_add(1));
        assert_eq!(take(&heard), [opened], "only the opening is heard");
        assert!(!bystander.is_current());
        assert_eq!(
            bystander.record(FAIL),
            None,
            "the stale report changes nothing"
        );
        assert_open_since_now(breaker, &mock, start + 1);
        assert!(take(&heard).iter().all(|t| t.to() == State::HalfOpen));
    });
    assert_all_seen(&SEEN, &["the local trip first", "the adoption first"]);
}

/// Model 13: another instance's verdict `open` adopted while the local probe reports success.
/// Adopted first: the probe in flight is this instance's one probe and is kept (the adoption
/// changes nothing), so its success closes, in the next generation. Success first: closed, then
/// open again by the adoption, each in the next generation. Either way the probe is never made
/// stale under its caller, and the listener hears only transitions that landed, in order.
#[test]
fn a_remote_open_racing_the_probes_success_never_makes_the_probe_stale() {
    static SEEN: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    loom::model(|| {
        let (breaker, mock, heard) = heard_breaker(1);
        half_open(breaker, &mock, 1);
        let probe = breaker.try_acquire().unwrap();
        let start = probe.generation();
        take(&heard);
        let prober = thread::spawn(move || probe.record(Outcome::Success));
        let remote = thread::spawn(move || adopt_open_now(breaker));
        let closed = prober
            .join()
            .unwrap()
            .expect("the probe is never made stale by the adoption");
        let adopted = remote.join().unwrap();
        assert_eq!(
            (closed.from(), closed.to(), closed.reason()),
            (
                State::HalfOpen,
                State::Closed,
                TransitionReason::ProbeSucceeded
            )
        );
        assert_eq!(closed.generation(), start.wrapping_add(1));
        let landed = match adopted {
            None => {
                SEEN[0].store(true, Relaxed);
                vec![closed]
            }
            Some(adopted) => {
                SEEN[1].store(true, Relaxed);
                assert_eq!(
                    (adopted.from(), adopted.to(), adopted.reason()),
                    (State::Closed, State::Open, TransitionReason::Fleet)
                );
                assert_eq!(adopted.generation(), start.wrapping_add(2));
                vec![closed, adopted]
            }
        };
        assert_heard(&take(&heard), &landed);
        match adopted {
            None => assert_eq!(breaker.state(), State::Closed),
            Some(adopted) => assert_open_since_now(breaker, &mock, adopted.generation()),
        }
    });
    assert_all_seen(&SEEN, &["the adoption first", "the success first"]);
}

/// Model 14: another instance's verdict `closed` adopted while a local caller claims the probe
/// slot (open past its cooldown) and reports a failure, a success, or nothing yet (the probe
/// still holds the slot when the race ends). Whatever the interleaving the breaker ends closed
/// and the listener hears only transitions that landed, in order, ending closed. A probe claimed
/// before the adoption is stale after it: its report changes nothing. A caller that comes after
/// the adoption gets an ordinary permit of the closed generation, whose failure counts.
#[test]
fn a_remote_close_racing_a_probe_claim_and_report_ends_closed() {
    static SEEN: [[AtomicBool; 3]; 3] = [const { [const { AtomicBool::new(false) }; 3] }; 3];
    for (v, verdict) in [Some(FAIL), Some(Outcome::Success), None]
        .into_iter()
        .enumerate()
    {
        loom::model(move || {
            let (breaker, mock, heard) = heard_breaker(2);
            half_open(breaker, &mock, 2);
            let open = take(&heard);
            let local = thread::spawn(move || {
                let permit = breaker
                    .try_acquire()
                    .expect("open past its cooldown, or closed");
                let (probe, generation) = (permit.is_probe(), permit.generation());
                match verdict {
                    Some(outcome) => (probe, generation, permit.record(outcome), None),
                    None => (probe, generation, None, Some(permit)),
                }
            });
            let remote = thread::spawn(move || breaker.adopt(Remote::Closed).1);
            let (probe, generation, verdict_landed, held) = local.join().unwrap();
            let adopted = remote.join().unwrap();
            assert_eq!(breaker.state(), State::Closed);
            if let Some(adopted) = adopted {
                assert_eq!(
                    (adopted.to(), adopted.reason()),
                    (State::Closed, TransitionReason::Fleet)
                );
            }
            let mut landed = Vec::new();
            let branch = if !probe {
                // Adopted before the claim: an ordinary permit of the closed generation.
                let adopted = adopted.expect("open: the adoption closes");
                assert_eq!(adopted.from(), State::Open);
                assert_eq!(generation, adopted.generation());
                assert_eq!(verdict_landed, None, "an ordinary report while closed");
                if let Some(permit) = held {
                    assert!(permit.is_current());
                    drop(permit);
                }
                landed.push(adopted);
                0
            } else {
                let claimed = open[0].generation();
                assert_eq!(generation, claimed, "the claim keeps the open generation");
                match verdict_landed {
                    None => {
                        // Claimed, then adopted before the report: the probe is stale.
                        let adopted = adopted.expect("half-open: the adoption closes");
                        assert_eq!(adopted.from(), State::HalfOpen);
                        assert_eq!(adopted.generation(), claimed.wrapping_add(1));
                        if let Some(permit) = held {
                            assert!(!permit.is_current(), "the probe counts after the adoption");
                            assert_eq!(permit.record(FAIL), None);
                            assert_eq!(breaker.state(), State::Closed);
                        }
                        landed.push(adopted);
                        1
                    }
                    Some(verdict) => {
                        // Claimed and reported before the adoption.
                        assert_eq!(verdict.generation(), claimed.wrapping_add(1));
                        landed.push(verdict);
                        match adopted {
                            Some(adopted) => {
                                assert_eq!(verdict.to(), State::Open);
                                assert_eq!(adopted.from(), State::Open);
                                landed.push(adopted);
                            }
                            None => assert_eq!(verdict.to(), State::Closed, "nothing to adopt"),
                        }
                        2
                    }
                }
            };
            SEEN[v][branch].store(true, Relaxed);
            let mut heard = take(&heard);
            // The claim's own `open → half-open` (cooldown elapsed), if heard, comes first.
            if let Some(claim) = heard.first().copied()
                && claim.reason() == TransitionReason::CooldownElapsed
            {
                assert!(probe, "{heard:?}");
                assert_eq!((claim.from(), claim.to()), (State::Open, State::HalfOpen));
                assert_eq!(claim.generation(), open[0].generation());
                heard.remove(0);
            }
            assert_heard(&heard, &landed);
            // Closed with no failures, unless the report was an ordinary failure after the close.
            let counted = !probe && verdict == Some(FAIL);
            let next = breaker.try_acquire().unwrap();
            assert!(!next.is_probe());
            assert_eq!(
                next.record(FAIL).is_some(),
                counted,
                "the failure count after the race"
            );
        });
    }
    for (v, seen) in SEEN.iter().enumerate() {
        // With no report in the race, "reported before the adoption" cannot happen.
        let n = if v == 2 { 2 } else { 3 };
        let names = [
            "adopted before the claim",
            "adopted between claim and report",
            "reported before the adoption",
        ];
        assert_all_seen(&seen[..n], &names[..n]);
    }
}

/// Model 15: the fleet grants this instance its probe (`ProbeHere`, then the grant: the agent's
/// two steps) while a local caller asks for a permit. Before the grant the gate blocks the claim
/// (probe in flight: the fleet is choosing); after it the caller takes the slot, in the granted
/// generation. Either way exactly one probe is admitted here, by the caller or by the next one.
/// Also from a word whose local probe outlived its lease unnoticed (no caller wrote it down):
/// the granted slot must be the one a local claim takes.
#[test]
fn the_fleets_probe_granted_while_a_caller_asks_is_taken_exactly_once() {
    static SEEN: [[AtomicBool; 2]; 2] = [const { [const { AtomicBool::new(false) }; 2] }; 2];
    for (e, expired) in [false, true].into_iter().enumerate() {
        loom::model(move || {
            let (breaker, mock) = fleet_breaker();
            breaker.try_acquire().unwrap().record(FAIL);
            mock.increment(COOLDOWN);
            if expired {
                // A probe granted earlier hangs past its lease and a cooldown after it.
                take_fleet_probe(breaker).unwrap();
                std::mem::forget(breaker.try_acquire().unwrap());
                mock.increment(Duration::from_secs(1) + COOLDOWN);
                revoke(breaker);
            }
            let caller = thread::spawn(move || {
                // Yields first, or loom never runs the agent ahead of it (see model 3).
                thread::yield_now();
                breaker
                    .try_acquire()
                    .map(|p| std::mem::ManuallyDrop::new(p).generation())
            });
            let agent = thread::spawn(move || take_fleet_probe(breaker));
            let raced = caller.join().unwrap();
            let granted = agent.join().unwrap().expect("open: the slot is freed here");
            let after = breaker
                .try_acquire()
                .map(|p| std::mem::ManuallyDrop::new(p).generation());
            match (&raced, &after) {
                (Ok(g), Err(blocked)) => {
                    SEEN[e][0].store(true, Relaxed);
                    assert_eq!(*g, granted, "claimed outside the granted generation");
                    assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
                }
                (Err(blocked), Ok(g)) => {
                    SEEN[e][1].store(true, Relaxed);
                    assert_eq!(*g, granted, "claimed outside the granted generation");
                    assert_eq!(
                        (blocked.state(), blocked.reason()),
                        (State::HalfOpen, BlockedReason::ProbeInFlight)
                    );
                }
                other => panic!("not exactly one probe (expired {expired}): {other:?}"),
            }
        });
    }
    for (seen, variant) in SEEN.iter().zip(["", " (expired)"]) {
        assert_all_seen(
            seen,
            &[
                &format!("the caller after the grant{variant}"),
                &format!("the caller before it{variant}"),
            ],
        );
    }
}

/// Model 16: the fleet's probe lost (another instance holds it now: the agent adopts the fleet's
/// `open` and takes the grant back) while a local caller claims the granted slot. Claimed first:
/// the probe in flight is this instance's one probe and is kept (the adoption changes nothing),
/// no second probe is admitted while it runs, and its verdict decides. Adopted first: the caller
/// is blocked, the breaker is open from now, and after the cooldown the gate keeps the slot for
/// the fleet.
#[test]
fn a_lost_fleet_probe_racing_the_local_claim_leaves_one_probe_at_most() {
    static SEEN: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    loom::model(|| {
        let (breaker, mock) = fleet_breaker();
        breaker.try_acquire().unwrap().record(FAIL);
        mock.increment(COOLDOWN);
        let granted = take_fleet_probe(breaker).unwrap();
        let caller = thread::spawn(move || breaker.try_acquire().ok());
        let agent = thread::spawn(move || {
            let adopted = adopt_open_now(breaker);
            revoke(breaker);
            adopted
        });
        let probe = caller.join().unwrap();
        let adopted = agent.join().unwrap();
        match probe {
            Some(probe) => {
                SEEN[0].store(true, Relaxed);
                assert!(probe.is_probe());
                assert_eq!(probe.generation(), granted);
                assert_eq!(adopted, None, "the probe in flight is kept");
                assert!(probe.is_current());
                let blocked = breaker.try_acquire().unwrap_err();
                assert_eq!(
                    blocked.reason(),
                    BlockedReason::ProbeInFlight,
                    "no second probe while it runs"
                );
                let closed = probe.record(Outcome::Success).expect("its verdict decides");
                assert_eq!(closed.to(), State::Closed);
            }
            None => {
                SEEN[1].store(true, Relaxed);
                let adopted = adopted.expect("half-open: opens");
                assert_eq!(
                    (adopted.from(), adopted.to()),
                    (State::HalfOpen, State::Open)
                );
                assert_eq!(adopted.generation(), granted + 1);
                let blocked = breaker.try_acquire().unwrap_err();
                assert_eq!(
                    (blocked.state(), blocked.reason(), blocked.retry_after()),
                    (State::Open, BlockedReason::DependencyOpen, COOLDOWN)
                );
                mock.increment(COOLDOWN);
                let blocked = breaker.try_acquire().unwrap_err();
                assert_eq!(
                    blocked.reason(),
                    BlockedReason::ProbeInFlight,
                    "not granted"
                );
            }
        }
    });
    assert_all_seen(&SEEN, &["claimed before the loss", "blocked"]);
}

/// A breaker with only a failure-rate rule: 50 % of a window of 2 calls, judged from 2.
fn rated_breaker() -> (&'static CircuitBreaker, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_rate(0.5)
        .window(Window::Calls(2))
        .minimum_calls(2)
        .cooldown(COOLDOWN)
        .probe_timeout(Duration::from_secs(1))
        .clock(clock)
        .build()
        .unwrap();
    (Box::leak(Box::new(breaker)), mock)
}

/// Model 17: A window trip racing a probe's verdict. One success is in the window, so either of
/// two failures trips it; the thread that finds it open waits out the cooldown, takes the probe
/// and closes it. The failure that lost the trip judged a generation that is over: its window
/// trip, fenced by generation, never reopens the closed breaker, and exactly one trip is made.
#[test]
fn a_window_trip_racing_a_probe_verdict_never_reopens_the_new_generation() {
    static SEEN: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    loom::model(|| {
        let (breaker, mock) = rated_breaker();
        breaker.try_acquire().unwrap().record(Outcome::Success);
        let late = breaker.try_acquire().unwrap();
        let first = breaker.try_acquire().unwrap();
        let judge = thread::spawn(move || late.record(FAIL));
        let prober = thread::spawn(move || {
            let trip = first.record(FAIL);
            // Open, by this failure or by the other.
            assert_eq!(breaker.state(), State::Open);
            mock.increment(COOLDOWN);
            let probe = breaker.try_acquire().expect("the probe after the cooldown");
            assert!(probe.is_probe());
            let close = probe.record(Outcome::Success).expect("the probe closes it");
            (trip, close)
        });
        let late_trip = judge.join().unwrap();
        let (first_trip, close) = prober.join().unwrap();
        assert_eq!(close.to(), State::Closed);
        assert_eq!(
            breaker.state(),
            State::Closed,
            "the stale judgement never reopened it"
        );
        let trips: Vec<_> = [late_trip, first_trip].into_iter().flatten().collect();
        assert_eq!(trips.len(), 1, "{trips:?}");
        assert_eq!(trips[0].reason(), TransitionReason::FailureRate);
        assert!(close.is_after(&trips[0]));
        SEEN[usize::from(late_trip.is_some())].store(true, Relaxed);
    });
    assert_all_seen(
        &SEEN,
        &["the prober's failure trips", "the late failure trips"],
    );
}

/// Model 18: A window trip racing a reset by hand. Whichever lands first, the breaker ends
/// closed: the trip is undone by the reset (which reports `open → closed`), or the reset moves
/// the generation and the failure's judgement, fenced by it, trips nothing. The window the reset
/// starts is empty: one failure after it is below the minimum.
#[test]
fn a_window_trip_racing_a_reset_ends_closed_with_an_empty_window() {
    static SEEN: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    loom::model(|| {
        let (breaker, _mock) = rated_breaker();
        breaker.try_acquire().unwrap().record(Outcome::Success);
        let permit = breaker.try_acquire().unwrap();
        let judge = thread::spawn(move || permit.record(FAIL));
        let resetter = thread::spawn(move || breaker.reset());
        let trip = judge.join().unwrap();
        let reset = resetter.join().unwrap();
        assert_eq!(breaker.state(), State::Closed);
        match trip {
            Some(trip) => {
                let reset = reset.expect("the reset undid the trip");
                assert_eq!((reset.from(), reset.to()), (State::Open, State::Closed));
                assert!(reset.is_after(&trip));
            }
            None => assert_eq!(reset, None, "closed to closed is no transition"),
        }
        SEEN[usize::from(trip.is_some())].store(true, Relaxed);
        assert_eq!(
            breaker.try_acquire().unwrap().record(FAIL),
            None,
            "1 call in the window"
        );
        assert_eq!(breaker.state(), State::Closed);
    });
    assert_all_seen(&SEEN, &["the reset first", "the trip first"]);
}

/// Model 19: N probes claimed by N + 1 racers. With two probes, three callers race at the end of
/// the cooldown: exactly two are admitted as probes (one through the word, one through the
/// slots, in whichever order the slots are started), the third is blocked with the probe in
/// flight; the two successes close the breaker, the second of them making the verdict.
#[test]
fn n_probes_claimed_by_n_plus_one_racers_admit_exactly_n() {
    static SEEN: [AtomicBool; 3] = [const { AtomicBool::new(false) }; 3];
    loom::model(|| {
        let (clock, mock) = Clock::mock();
        let breaker: &'static CircuitBreaker = Box::leak(Box::new(
            CircuitBreaker::builder()
                .failure_threshold(1)
                .cooldown(COOLDOWN)
                .probe_timeout(Duration::from_secs(1))
                .probes(2)
                .clock(clock)
                .build()
                .unwrap(),
        ));
        half_open(breaker, &mock, 1);
        let racers: Vec<_> = (0..3)
            .map(|_| {
                thread::spawn(move || match breaker.try_acquire() {
                    Ok(permit) => Ok(permit),
                    Err(blocked) => Err(blocked),
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let blocked: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(blocked.len(), 1, "exactly two of three admitted");
        let loser = results.iter().position(Result::is_err).unwrap();
        SEEN[loser].store(true, Relaxed);
        assert_eq!(blocked[0].reason(), BlockedReason::ProbeInFlight);
        let admitted: Vec<_> = results.into_iter().filter_map(Result::ok).collect();
        assert!(admitted.iter().all(|p| p.is_probe()));
        let verdicts: Vec<_> = admitted
            .into_iter()
            .map(|p| p.record(Outcome::Success))
            .collect();
        assert_eq!(verdicts[0], None);
        assert_eq!(verdicts[1].map(|t| t.to()), Some(State::Closed));
        assert_eq!(breaker.state(), State::Closed);
    });
    assert_all_seen(
        &SEEN,
        &[
            "the first blocked",
            "the second blocked",
            "the third blocked",
        ],
    );
}

/// Model 20: a local probe (taken while the fleet cannot be asked: Redis unreachable) racing the
/// adoption of the fleet's open state (another instance's probe, heard on the link that still
/// delivers: `Remote::Open`, opened now). Claimed first: the adoption keeps the probe, which
/// stays current, and no second probe is admitted while it runs, even once a cooldown from the
/// adopted opening has passed. Adopted first: the caller is blocked, open from now, and after the
/// cooldown exactly one probe is admitted. No instance holds two probes at once.
#[test]
fn a_local_probe_racing_the_fleet_s_opening_is_never_joined_by_a_second() {
    static SEEN: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
    loom::model(|| {
        let (breaker, mock, _heard) = heard_breaker(1);
        half_open(breaker, &mock, 1);
        let caller = thread::spawn(move || breaker.try_acquire().ok());
        let remote = thread::spawn(move || adopt_open_now(breaker));
        let probe = caller.join().unwrap();
        let adopted = remote.join().unwrap();
        match probe {
            Some(probe) => {
                SEEN[0].store(true, Relaxed);
                assert!(probe.is_probe());
                mock.increment(COOLDOWN);
                let second = breaker.try_acquire();
                assert!(
                    second.is_err(),
                    "a second probe while the first runs: {:?}",
                    second.map(|p| p.generation())
                );
                assert!(probe.is_current(), "the adoption made the probe stale");
                assert_eq!(adopted, None, "the probe is kept: nothing announced");
                let closed = probe.record(Outcome::Success).expect("its verdict decides");
                assert_eq!(closed.to(), State::Closed);
            }
            None => {
                SEEN[1].store(true, Relaxed);
                assert_eq!(adopted, None, "open to open: nothing announced");
                let blocked = breaker.try_acquire().unwrap_err();
                assert_eq!(
                    (blocked.state(), blocked.reason(), blocked.retry_after()),
                    (State::Open, BlockedReason::DependencyOpen, COOLDOWN)
                );
                mock.increment(COOLDOWN);
                let probe = breaker.try_acquire().unwrap();
                assert!(probe.is_probe());
                let second = breaker.try_acquire().unwrap_err();
                assert_eq!(second.reason(), BlockedReason::ProbeInFlight);
                drop(probe);
            }
        }
    });
    assert_all_seen(&SEEN, &["the claim first", "the adoption first"]);
}

/// A breaker half-open with its slot free, whose health check's prober runs (the check itself,
/// and its task, are tokio's: here the claim alone is modelled).
fn probed_breaker() -> &'static CircuitBreaker {
    let (breaker, mock) = breaker(1);
    let prober = Arc::new(super::prober::Prober::without_check(|| {}));
    assert!(breaker.set_prober(prober));
    half_open(breaker, &mock, 1);
    breaker
}

/// The prober's claim of the probe slot, as `run_health_check` makes it: the generation claimed,
/// or `None`. The slot, once claimed, is held (no permit gives it back).
fn prober_claim(breaker: &CircuitBreaker) -> Option<u32> {
    let claimed = breaker.acquire_decided(breaker.word(), None, true, |generation, probe| {
        (generation, probe)
    });
    claimed
        .ok()
        .filter(|(_, probe)| *probe)
        .map(|(generation, _)| generation)
}

/// Model: a health check's prober claiming the probe slot at the cooldown's end, racing two
/// callers: the prober claims it in every interleaving, and each caller is blocked with
/// `probe_in_flight` (whether it came before the claim, when the gate turned its admission
/// away, or after, when the word said a probe is out).
#[test]
fn the_probers_claim_racing_callers_is_always_the_probe() {
    loom::model(|| {
        let breaker = probed_breaker();
        let callers: Vec<_> = (0..2)
            .map(|_| {
                thread::spawn(move || {
                    breaker
                        .try_acquire()
                        .map(|p| std::mem::ManuallyDrop::new(p).is_probe())
                })
            })
            .collect();
        let claimed = prober_claim(breaker);
        assert_eq!(
            claimed,
            Some(breaker.generation()),
            "the prober's claim always lands"
        );
        for caller in callers {
            let blocked = caller.join().unwrap().expect_err("no caller is the probe");
            assert_eq!(
                (blocked.state(), blocked.reason()),
                (State::HalfOpen, BlockedReason::ProbeInFlight)
            );
        }
    });
}

/// Model: two steps of the prober (its task's and one run by hand) racing a caller: exactly one
/// step claims the slot, so the check runs once per cooldown.
#[test]
fn racing_prober_steps_claim_the_slot_exactly_once() {
    loom::model(|| {
        let breaker = probed_breaker();
        let step = thread::spawn(move || prober_claim(breaker));
        let caller = thread::spawn(move || {
            breaker
                .try_acquire()
                .map(|p| std::mem::ManuallyDrop::new(p).is_probe())
        });
        let here = prober_claim(breaker);
        let there = step.join().unwrap();
        assert_eq!(
            usize::from(here.is_some()) + usize::from(there.is_some()),
            1,
            "here {here:?}, there {there:?}"
        );
        assert!(
            caller.join().unwrap().is_err(),
            "the caller is never the probe"
        );
    });
}

/// A breaker with a cap of `n` calls in flight and the consecutive rule at `threshold`, counting.
fn capped_breaker(n: u32, threshold: u32) -> &'static CircuitBreaker {
    let breaker = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .max_in_flight(n)
        .metrics(true)
        .clock(Clock::mock().0)
        .build()
        .unwrap();
    Box::leak(Box::new(breaker))
}

/// One caller of a capped breaker: ask, and if admitted, count itself inside (asserting at most
/// `n` are), leave, and record `outcome`. Whether it was admitted, or why not.
fn capped_call(
    breaker: &CircuitBreaker,
    inside: &loom::sync::atomic::AtomicU32,
    n: u32,
    outcome: Outcome,
) -> Result<(), BlockedReason> {
    use loom::sync::atomic::Ordering::SeqCst;
    let permit = breaker.try_acquire().map_err(|blocked| blocked.reason())?;
    let now = inside.fetch_add(1, SeqCst) + 1;
    assert!(now <= n, "{now} inside a cap of {n}");
    inside.fetch_sub(1, SeqCst);
    permit.record(outcome);
    Ok(())
}

/// A counter of the callers inside, for one model execution.
fn inside() -> &'static loom::sync::atomic::AtomicU32 {
    Box::leak(Box::new(loom::sync::atomic::AtomicU32::new(0)))
}

/// Model: two callers race a cap of 1, one of them failing at a threshold of 1. Never both
/// inside; every slot given back; the failure, if admitted, trips the breaker as without a cap;
/// a refusal is saturated, and counted as saturated only, never as a failure or a block.
#[test]
fn a_cap_of_one_admits_one_at_a_time_and_a_racing_trip_lands() {
    loom::model(|| {
        let breaker = capped_breaker(1, 1);
        let inside = inside();
        let failing = thread::spawn(move || capped_call(breaker, inside, 1, FAIL));
        let succeeding = capped_call(breaker, inside, 1, Outcome::Success);
        let failing = failing.join().unwrap();
        assert_eq!(breaker.in_flight(), 0, "every slot given back");
        for refused in [failing, succeeding].into_iter().filter_map(Result::err) {
            assert_eq!(refused, BlockedReason::Saturated);
        }
        let expected = if failing.is_ok() {
            State::Open
        } else {
            State::Closed
        };
        assert_eq!(breaker.state(), expected);
        let metrics = breaker.metrics().unwrap();
        let admitted = u64::from(failing.is_ok()) + u64::from(succeeding.is_ok());
        assert_eq!(
            (metrics.admitted, metrics.saturated),
            (admitted, 2 - admitted)
        );
        assert_eq!(metrics.blocked, 0);
        assert_eq!(metrics.failures.total(), u64::from(failing.is_ok()));
    });
}

/// Model: three callers race a cap of 2 at a threshold of 2, two of them failing, while the
/// third gives its slot back by dropping its permit. Never more than 2 inside, every slot given
/// back; two admitted failures (a drop clears no count) trip the breaker as without a cap, and
/// a failing caller is refused only as saturated (two inside), never as open.
#[test]
fn a_cap_of_two_holds_while_failures_trip_and_a_permit_is_dropped() {
    loom::model(|| {
        let breaker = capped_breaker(2, 2);
        let inside = inside();
        let dropping = thread::spawn(move || breaker.try_acquire().map(drop));
        let second = thread::spawn(move || capped_call(breaker, inside, 2, FAIL));
        let third = capped_call(breaker, inside, 2, FAIL);
        let dropping = dropping.join().unwrap();
        let second = second.join().unwrap();
        assert_eq!(breaker.in_flight(), 0, "every slot given back");
        if let Err(blocked) = dropping {
            assert!(
                matches!(
                    blocked.reason(),
                    BlockedReason::Saturated | BlockedReason::DependencyOpen
                ),
                "{blocked:?}"
            );
        }
        let failures = breaker.metrics().unwrap().failures.total();
        match (second, third) {
            (Ok(()), Ok(())) => assert_eq!((breaker.state(), failures), (State::Open, 2)),
            (a, b) => {
                assert_eq!(a.err().or(b.err()), Some(BlockedReason::Saturated));
                assert_eq!((breaker.state(), failures), (State::Closed, 1));
            }
        }
    });
}
