//! The choice under threads and races (std threads): a member open before a call asks is never
//! picked, checked from inside the operation, and a half-open member's probe slot goes to one
//! caller however many race for it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

use toolbreaker::{BlockedReason, Config, FailureKind, Outcome, Pool, Registry, State};

const THREADS: usize = 8;

/// Members trip as threads record failures on them, and stay open (the mock clock never
/// moves): a member seen open before a call asks the pool is open throughout the call's
/// choice, so picking it would be the pool's fault, not a race. Each operation checks, from
/// inside, that its member was not open when the call began.
#[test]
fn a_member_open_before_the_call_is_never_picked_under_threads() {
    let (clock, _mock) = toolbreaker::quanta::Clock::mock();
    let registry = Registry::builder()
        .default_config(Config::new(20, Duration::from_secs(60), Duration::from_secs(5)).unwrap())
        .clock(clock)
        .build();
    let names: Vec<String> = (0..6).map(|i| format!("m{i}")).collect();
    let pool = Pool::builder("search")
        .group(names[..4].to_vec())
        .group(names[4..].to_vec())
        .build(&registry)
        .unwrap();
    let picked_open = AtomicUsize::new(0);
    let served = Mutex::new(BTreeMap::<String, usize>::new());
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (pool, picked_open, served, start) = (&pool, &picked_open, &served, &start);
            s.spawn(move || {
                start.wait();
                let mut mine = BTreeMap::<String, usize>::new();
                for i in 0..4000usize {
                    let open_before: Vec<bool> =
                        pool.members().map(|m| m.state() == State::Open).collect();
                    // Member `k` fails every call from the thread's call 500 (k + 1) on, so
                    // the members trip one by one while the threads run, until none admits.
                    let answer = pool.call(
                        |member| {
                            let index: usize = member[1..].parse().unwrap();
                            if open_before[index] {
                                picked_open.fetch_add(1, Ordering::Relaxed);
                            }
                            *mine.entry(member.to_owned()).or_default() += 1;
                            if i + t >= 500 * (index + 1) {
                                Err(())
                            } else {
                                Ok(())
                            }
                        },
                        |r: &Result<(), ()>| match r {
                            Ok(()) => Outcome::Success,
                            Err(()) => Outcome::Failure(FailureKind::Unavailable),
                        },
                    );
                    if let Err(toolbreaker::CallError::Blocked(blocked)) = answer {
                        assert_eq!(blocked.reason(), BlockedReason::PoolExhausted);
                    }
                }
                let mut served = served.lock().unwrap();
                for (member, n) in mine {
                    *served.entry(member).or_default() += n;
                }
            });
        }
    });
    assert_eq!(
        picked_open.load(Ordering::Relaxed),
        0,
        "an open member was picked"
    );
    let served = served.into_inner().unwrap();
    assert!(
        served.len() >= 5,
        "calls spread over the members as they tripped: {served:?}"
    );
    assert_eq!(
        pool.members().filter(|m| m.state() == State::Open).count(),
        6,
        "the run tripped members, so the check had open ones to avoid"
    );
}

/// Every member half-open at once, and twice as many threads as members race for them: each
/// member admits exactly one probe, the rest of the callers are blocked by the pool, and no
/// caller gets a member whose probe another holds.
#[test]
fn racing_callers_each_take_a_different_members_probe() {
    for _round in 0..20 {
        let (clock, mock) = toolbreaker::quanta::Clock::mock();
        let registry = Registry::builder()
            .default_config(Config::new(1, Duration::from_secs(1), Duration::from_secs(5)).unwrap())
            .clock(clock)
            .build();
        let pool = Pool::builder("search")
            .group(["a", "b"])
            .group(["c", "d"])
            .build(&registry)
            .unwrap();
        for member in pool.members() {
            member
                .try_acquire()
                .unwrap()
                .record(Outcome::Failure(FailureKind::Timeout));
        }
        mock.increment(Duration::from_secs(1));
        let holding = Mutex::new(BTreeMap::<String, usize>::new());
        let blocked = AtomicUsize::new(0);
        let (taken, done) = (Barrier::new(2 * 4), Barrier::new(2 * 4));
        std::thread::scope(|s| {
            for _ in 0..2 * 4 {
                let (pool, holding, blocked, taken, done) =
                    (&pool, &holding, &blocked, &taken, &done);
                s.spawn(move || {
                    let permit = pool.try_acquire();
                    match &permit {
                        Ok(p) => {
                            assert!(p.is_probe() && !p.is_panic());
                            *holding
                                .lock()
                                .unwrap()
                                .entry(p.member().to_owned())
                                .or_default() += 1;
                        }
                        Err(b) => {
                            assert_eq!(b.reason(), BlockedReason::PoolExhausted);
                            assert_eq!(
                                b.retry_after(),
                                Duration::from_secs(5),
                                "the probes' lease"
                            );
                            blocked.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    taken.wait(); // every permit is held while all the others are asked
                    done.wait();
                    drop(permit);
                });
            }
        });
        let holding = holding.into_inner().unwrap();
        assert_eq!(holding.len(), 4, "{holding:?}");
        assert!(
            holding.values().all(|&n| n == 1),
            "two callers held one probe: {holding:?}"
        );
        assert_eq!(blocked.load(Ordering::Relaxed), 4);
    }
}
