//! Listeners hear a breaker's transitions in the breaker's order, whichever threads landed them.
//!
//! The fault these pin: a caller that landed a transition could be overtaken, between its write
//! and its telling (or by its own slow listener), by another thread's later transitions, so a
//! listener heard `open → half_open`, `half_open → closed`, then `closed → open` for a breaker
//! that was closed, and a gauge that kept the last state it heard showed it open.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State, Transition, TransitionReason};

type Heard = Arc<Mutex<Vec<Transition>>>;

/// Every transition heard comes after the one heard before it.
fn assert_in_order(heard: &[Transition]) {
    for pair in heard.windows(2) {
        assert!(
            pair[1].is_after(&pair[0]),
            "heard out of order: {:?} then {:?}",
            pair[0],
            pair[1]
        );
    }
}

/// The reproducer a new user found, made deterministic: threshold 1; the listener holds the
/// thread that tripped the breaker inside its `failure_threshold` telling while the main thread
/// moves the clock, takes the probe and closes the breaker.
#[test]
fn a_listener_held_up_by_the_trip_still_hears_the_probe_cycle_after_it() {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let heard: Heard = Arc::default();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let entered_tx = Mutex::new(entered_tx);
    let log = Arc::clone(&heard);
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .name("search")
            .failure_threshold(1)
            .cooldown(Duration::from_millis(100))
            .clock(clock)
            .on_transition(move |event| {
                let transition = *event.transition();
                if transition.reason() == TransitionReason::FailureThreshold {
                    entered_tx.lock().unwrap().send(()).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                }
                log.lock().unwrap().push(transition);
            })
            .build()
            .unwrap(),
    );

    let tripping = Arc::clone(&breaker);
    let a = thread::spawn(move || {
        tripping
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Unavailable))
    });
    entered.recv().unwrap(); // thread A is inside the listener, telling of the trip

    mock.increment(Duration::from_millis(100));
    let probe = breaker.try_acquire().expect("the cooldown has passed");
    assert!(probe.is_probe());
    let closed = probe.record(Outcome::Success).expect("the probe closes it");
    assert_eq!(closed.to(), State::Closed);
    assert!(
        heard.lock().unwrap().is_empty(),
        "the main thread did not wait for, nor overtake, the trip's telling"
    );

    release.send(()).unwrap();
    let trip = a.join().unwrap().expect("thread A tripped the breaker");
    let heard = heard.lock().unwrap();
    let steps: Vec<_> = heard.iter().map(|t| (t.from(), t.to())).collect();
    assert_eq!(
        steps,
        [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Closed)
        ]
    );
    assert_eq!(heard[0], trip);
    assert_eq!(heard[2], closed);
    assert_in_order(&heard);
    assert_eq!(heard.last().unwrap().to(), breaker.state());
}

/// The whole class: threads trip, probe, force and reset one breaker at once, with a listener
/// that keeps the last state it heard (a gauge). Whatever the interleaving, the transitions heard
/// are in order, no transition is heard twice, and once every thread is done the gauge reads the
/// breaker's state. Bounded: a fixed number of rounds.
#[test]
fn racing_transitions_are_heard_in_order_and_the_last_heard_is_the_state() {
    for round in 0..200 {
        let (clock, mock) = toolbreaker::quanta::Clock::mock();
        let heard: Heard = Arc::default();
        let log = Arc::clone(&heard);
        let breaker = Arc::new(
            CircuitBreaker::builder()
                .failure_threshold(1)
                .cooldown(Duration::from_millis(1))
                .clock(clock)
                .on_transition(move |event| {
                    if event.transition().generation() % 3 == 0 {
                        thread::yield_now(); // a listener that sometimes takes its time
                    }
                    log.lock().unwrap().push(*event.transition());
                })
                .build()
                .unwrap(),
        );
        let mock = Arc::new(mock);
        let workers: Vec<_> = (0..4)
            .map(|worker| {
                let breaker = Arc::clone(&breaker);
                let mock = Arc::clone(&mock);
                thread::spawn(move || {
                    for step in 0..50 {
                        match (worker + step + round) % 5 {
                            0 => drop(breaker.force_open()),
                            1 => drop(breaker.force_closed()),
                            2 => mock.increment(Duration::from_millis(1)),
                            _ => {
                                if let Ok(permit) = breaker.try_acquire() {
                                    let outcome = if step % 2 == 0 {
                                        Outcome::Failure(FailureKind::Timeout)
                                    } else {
                                        Outcome::Success
                                    };
                                    permit.record(outcome);
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        let heard = heard.lock().unwrap();
        assert_in_order(&heard);
        if let Some(last) = heard.last() {
            // The state as last announced: time-made changes (open → half-open) are told when a
            // caller writes them down, so an open breaker past its cooldown may read half-open.
            let now = breaker.state();
            assert!(
                last.to() == now || (last.to() == State::Open && now == State::HalfOpen),
                "round {round}: the gauge says {} but the breaker is {now}",
                last.to()
            );
        }
    }
}

/// A listener slower than its breaker's transitions: while it is held inside its first telling,
/// another thread makes a hundred changes by hand. They do not wait for it; when it is released
/// the queue it is told is bounded (the oldest waiting transitions are superseded), in order, and
/// ends on the newest, so the thread telling is held by a bounded backlog and a gauge ends on the
/// breaker's state.
#[test]
fn a_slow_listener_hears_a_bounded_backlog_in_order_ending_on_the_newest() {
    let heard: Heard = Arc::default();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, release_rx) = mpsc::channel::<()>();
    let gate = Mutex::new(Some((entered_tx, release_rx)));
    let log = Arc::clone(&heard);
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .on_transition(move |event| {
                // Only the first telling is held.
                if let Some((entered, release)) = gate.lock().unwrap().take() {
                    entered.send(()).unwrap();
                    release.recv().unwrap();
                }
                log.lock().unwrap().push(*event.transition());
            })
            .build()
            .unwrap(),
    );
    let first = Arc::clone(&breaker);
    let a = thread::spawn(move || first.force_open());
    entered.recv().unwrap();

    let mut landed = Vec::new();
    for _ in 0..50 {
        landed.extend(breaker.force_closed());
        landed.extend(breaker.force_open());
    }
    landed.extend(breaker.force_closed());
    assert_eq!(
        landed.len(),
        101,
        "every change landed, none waited on the listener"
    );
    assert!(heard.lock().unwrap().is_empty());

    release.send(()).unwrap();
    let opened = a.join().unwrap().expect("A isolated the breaker");
    let heard = heard.lock().unwrap();
    assert_in_order(&heard);
    assert_eq!(heard[0], opened);
    assert!(
        heard.len() <= 1 + 16,
        "a bounded backlog: {} heard",
        heard.len()
    );
    assert_eq!(
        heard.last(),
        landed.last(),
        "it ends on the newest transition"
    );
    assert_eq!(heard.last().unwrap().to(), breaker.state());
}
