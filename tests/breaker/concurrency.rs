//! The cap on calls in flight: exact under racing threads, its slots given back on record, drop,
//! cancellation and panic, its refusals (`saturated`) never touching the breaker's health, its
//! settings validated and changed live by `reconfigure` and a registry's reload.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use toolbreaker::quanta::Clock;
use toolbreaker::{
    BlockedReason, CallError, CircuitBreaker, FailureKind, Limit, Outcome, Registry,
    RegistryConfig, State, Window,
};

const FAIL: Outcome = Outcome::Failure(FailureKind::Unavailable);

fn capped(n: u32) -> CircuitBreaker {
    CircuitBreaker::builder()
        .max_in_flight(n)
        .metrics(true)
        .clock(Clock::mock().0)
        .build()
        .expect("valid")
}

#[test]
fn the_cap_holds_exactly_under_racing_threads() {
    const THREADS: usize = 8;
    const CALLS: usize = 2_000;
    const N: u32 = 3;
    let breaker = capped(N);
    let inside = AtomicU32::new(0);
    let most = AtomicU32::new(0);
    let ok = AtomicU32::new(0);
    let saturated = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..CALLS {
                    let answer = breaker.call(
                        || {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            assert!(now <= N, "{now} calls inside a cap of {N}");
                            assert!(breaker.in_flight() <= N);
                            thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            Ok::<_, ()>(())
                        },
                        |_| Outcome::Success,
                    );
                    match answer {
                        Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(CallError::Blocked(b)) => {
                            assert_eq!(b.reason(), BlockedReason::Saturated);
                            assert_eq!(b.state(), State::Closed);
                            saturated.fetch_add(1, Ordering::Relaxed)
                        }
                        Err(other) => panic!("{other:?}"),
                    };
                }
            });
        }
    });
    assert!(most.load(Ordering::SeqCst) <= N);
    assert_eq!(breaker.in_flight(), 0, "every slot given back");
    let metrics = breaker.metrics().unwrap();
    let (ok, saturated) = (ok.into_inner(), saturated.into_inner());
    assert_eq!(
        metrics.admitted + metrics.saturated,
        (THREADS * CALLS) as u64
    );
    assert_eq!(
        (metrics.successes, metrics.saturated),
        (u64::from(ok), u64::from(saturated))
    );
    assert_eq!((metrics.blocked, metrics.failures.total()), (0, 0));
    assert_eq!((metrics.in_flight, metrics.concurrency_limit), (0, Some(N)));
}

#[test]
fn a_slot_is_given_back_on_record_drop_into_owned_and_panic() {
    let breaker = Arc::new(capped(1));
    breaker.try_acquire().unwrap().record(Outcome::Success);
    assert_eq!(breaker.in_flight(), 0);
    drop(breaker.try_acquire().unwrap());
    assert_eq!(breaker.in_flight(), 0, "dropped");
    let owned = breaker
        .try_acquire()
        .unwrap()
        .into_owned(Arc::clone(&breaker));
    assert_eq!(breaker.in_flight(), 1, "the owned permit holds the slot");
    assert!(breaker.try_acquire().is_err());
    owned.record(Outcome::Ignored);
    assert_eq!(breaker.in_flight(), 0);
    drop(breaker.try_acquire_owned().unwrap());
    assert_eq!(breaker.in_flight(), 0);

    let panicked = catch_unwind(AssertUnwindSafe(|| {
        breaker.call(
            || -> Result<(), ()> { panic!("the tool panics") },
            |_| Outcome::Success,
        )
    }));
    assert!(panicked.is_err());
    assert_eq!(breaker.in_flight(), 0, "given back while unwinding");
    let metrics = breaker.metrics().unwrap();
    assert_eq!((metrics.dropped, metrics.saturated), (3, 1));
    assert_eq!(breaker.state(), State::Closed);
}

#[cfg(feature = "tokio")]
#[tokio::test(start_paused = true)]
async fn a_cancelled_call_gives_its_slot_back() {
    let breaker = capped(1);
    let hung = std::future::pending::<Result<(), ()>>();
    let mut call = Box::pin(breaker.run(hung, |_| Outcome::Success));
    assert!(
        tokio::time::timeout(Duration::from_millis(5), &mut call)
            .await
            .is_err()
    );
    assert_eq!(breaker.in_flight(), 1, "the pending call holds the slot");
    let refused = breaker
        .run(async { Ok::<_, ()>(()) }, |_| Outcome::Success)
        .await;
    assert!(
        matches!(refused, Err(CallError::Blocked(b)) if b.reason() == BlockedReason::Saturated)
    );
    drop(call);
    assert_eq!(breaker.in_flight(), 0, "cancelled mid-flight");

    let timed = breaker.run_with_timeout(
        Duration::from_secs(1),
        std::future::pending::<Result<(), ()>>(),
        |_| Outcome::Success,
    );
    let mut timed = Box::pin(timed);
    assert!(
        tokio::time::timeout(Duration::from_millis(5), &mut timed)
            .await
            .is_err()
    );
    assert_eq!(breaker.in_flight(), 1);
    drop(timed);
    assert_eq!(
        breaker.in_flight(),
        0,
        "run_with_timeout dropped mid-flight"
    );
    assert!(breaker.try_acquire().is_ok());
}

#[test]
fn a_saturated_refusal_never_touches_the_breakers_health() {
    let breaker = CircuitBreaker::builder()
        .max_in_flight(1)
        .failure_threshold(2)
        .failure_rate(0.5)
        .window(Window::Calls(4))
        .minimum_calls(2)
        .metrics(true)
        .clock(Clock::mock().0)
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAIL);
    let held = breaker.try_acquire().unwrap();
    let (before, config) = (breaker.metrics().unwrap(), breaker.config());
    for _ in 0..100 {
        let refused = breaker.try_acquire().unwrap_err();
        assert_eq!(refused.reason(), BlockedReason::Saturated);
        assert_eq!(refused.retry_after(), Duration::from_millis(1));
        assert!(matches!(
            breaker.call(|| Ok::<_, ()>(()), |_| FAIL),
            Err(CallError::Blocked(_))
        ));
    }
    let after = breaker.metrics().unwrap();
    assert_eq!(after.saturated - before.saturated, 200);
    assert_eq!(
        (
            after.admitted,
            after.blocked,
            after.failures,
            after.successes
        ),
        (
            before.admitted,
            before.blocked,
            before.failures,
            before.successes
        )
    );
    assert_eq!(after.transitions, before.transitions);
    assert_eq!((breaker.state(), breaker.config()), (State::Closed, config));
    // The window and the count are where they were: one more failure judges 2 of 2 and trips.
    let trip = held.record(FAIL).expect("the second failure trips");
    assert_eq!(trip.to(), State::Open);
}

#[test]
fn an_open_breaker_costs_the_cap_nothing_and_a_probe_needs_a_slot() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .max_in_flight(1)
        .failure_threshold(1)
        .cooldown(Duration::from_secs(1))
        .metrics(true)
        .clock(clock)
        .build()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAIL);
    for _ in 0..10 {
        let open = breaker.try_acquire().unwrap_err();
        assert_eq!(open.reason(), BlockedReason::DependencyOpen);
    }
    assert_eq!(breaker.in_flight(), 0);
    mock.increment(Duration::from_secs(1));
    let probe = breaker.try_acquire().unwrap();
    assert!(probe.is_probe());
    assert_eq!(breaker.in_flight(), 1, "the probe holds a slot");
    let refused = breaker.try_acquire().unwrap_err();
    assert_eq!(
        refused.reason(),
        BlockedReason::ProbeInFlight,
        "the breaker answers first"
    );
    probe.record(Outcome::Success);
    assert_eq!((breaker.state(), breaker.in_flight()), (State::Closed, 0));
    let metrics = breaker.metrics().unwrap();
    assert_eq!((metrics.saturated, metrics.blocked), (0, 11));
}

#[test]
fn a_probe_refused_by_the_cap_gives_the_probe_slot_to_the_next_caller() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .max_in_flight(1)
        .failure_threshold(2)
        .cooldown(Duration::from_secs(1))
        .metrics(true)
        .clock(clock)
        .build()
        .unwrap();
    let slow = breaker.try_acquire().unwrap(); // admitted while closed, holds the only slot
    breaker.reconfigure(
        CircuitBreaker::builder()
            .config(breaker.config())
            .max_in_flight(2)
            .build_config()
            .unwrap(),
    );
    breaker.try_acquire().unwrap().record(FAIL);
    breaker.try_acquire().unwrap().record(FAIL);
    assert_eq!(breaker.state(), State::Open);
    breaker.reconfigure(
        CircuitBreaker::builder()
            .config(breaker.config())
            .max_in_flight(1)
            .build_config()
            .unwrap(),
    );
    mock.increment(Duration::from_secs(1));
    let before = breaker.metrics().unwrap();
    let refused = breaker.try_acquire().unwrap_err();
    assert_eq!(
        (refused.reason(), refused.state()),
        (BlockedReason::Saturated, State::HalfOpen)
    );
    let after = breaker.metrics().unwrap();
    assert_eq!(
        after.dropped, before.dropped,
        "the refused probe is not a dropped call"
    );
    assert_eq!(
        breaker.state(),
        State::HalfOpen,
        "the probe slot is free again"
    );
    slow.record(Outcome::Success); // stale: from the closed generation
    let probe = breaker.try_acquire().expect("the next caller is the probe");
    assert!(probe.is_probe());
    probe.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn bad_caps_are_refused_naming_the_field_and_the_key() {
    let field = |b: toolbreaker::breaker::Builder| b.build().unwrap_err().field();
    assert_eq!(
        field(CircuitBreaker::builder().max_in_flight(0)),
        "max_in_flight"
    );
    assert_eq!(
        field(CircuitBreaker::builder().adaptive_concurrency(Limit::aimd(8, 4))),
        "adaptive_concurrency.max"
    );
    let key = |text: &str| {
        let error = RegistryConfig::from_toml(text).unwrap_err();
        (error.field().map(str::to_owned), error.to_string())
    };
    let (k, _) = key("[default]\nmax_in_flight = 0");
    assert_eq!(k.as_deref(), Some("max_in_flight"));
    let (k, text) = key(
        "[dependencies.search]\nadaptive_concurrency = { algorithm = \"aimd\", min = 4, max = 2 }",
    );
    assert_eq!(k.as_deref(), Some("adaptive_concurrency.max"), "{text}");
    let (k, text) = key(
        "[default]\nadaptive_concurrency = { algorithm = \"gradient\", min = 1, max = 9, \
         latency_threshold_ms = 5 }",
    );
    assert_eq!(
        k.as_deref(),
        Some("adaptive_concurrency.latency_threshold_ms")
    );
    assert!(text.contains("unknown key"), "{text}");
    let (k, _) =
        key("[default]\nadaptive_concurrency = { algorithm = \"vegas\", min = 1, max = 9 }");
    assert_eq!(k.as_deref(), Some("adaptive_concurrency.algorithm"));
    let (k, _) = key(
        "[default]\nadaptive_concurrency = { algorithm = \"aimd\", min = 1, max = 9, \
         latency_threshold_ms = 0 }",
    );
    assert_eq!(
        k.as_deref(),
        Some("adaptive_concurrency.latency_threshold_ms")
    );
    let config = RegistryConfig::from_toml(
        "[default]\nmax_in_flight = 8\n[dependencies.search]\nadaptive_concurrency = \
         { algorithm = \"aimd\", min = 2, max = 32, backoff_ratio = 0.5 }",
    )
    .unwrap();
    let search = config.config_for("search");
    assert_eq!(
        search.max_in_flight(),
        Some(8),
        "inherited from the default"
    );
    let Some(Limit::Aimd {
        backoff_ratio,
        min,
        max,
        ..
    }) = search.adaptive_concurrency()
    else {
        panic!("{search:?}");
    };
    assert_eq!((backoff_ratio, min, max), (0.5, 2, 32));
}

#[test]
fn a_reload_changes_the_cap_live_and_calls_in_flight_keep_their_slots() {
    let registry = Registry::new(toolbreaker::Config::default());
    registry
        .reload_toml("[dependencies.search]\nmax_in_flight = 3")
        .unwrap();
    let search = registry.get("search");
    assert_eq!(search.concurrency_limit(), Some(3));
    let held: Vec<_> = (0..3).map(|_| search.try_acquire().unwrap()).collect();
    assert!(search.try_acquire().is_err());

    registry
        .reload_toml("[dependencies.search]\nmax_in_flight = 1")
        .unwrap();
    assert_eq!(
        (search.concurrency_limit(), search.in_flight()),
        (Some(1), 3)
    );
    let mut held = held.into_iter();
    for _ in 0..2 {
        held.next().unwrap().record(Outcome::Success);
        let refused = search.try_acquire().unwrap_err();
        assert_eq!(
            refused.reason(),
            BlockedReason::Saturated,
            "still at or over the new cap"
        );
    }
    held.next().unwrap().record(Outcome::Success);
    let one = search.try_acquire().expect("below the lowered cap");
    assert!(search.try_acquire().is_err());

    registry
        .reload_toml("[dependencies.search]\ncooldown_ms = 1000")
        .unwrap();
    assert_eq!(
        search.concurrency_limit(),
        None,
        "no cap: every call admitted"
    );
    let more: Vec<_> = (0..10).map(|_| search.try_acquire().unwrap()).collect();
    drop(more);
    one.record(Outcome::Success);
    assert_eq!(search.in_flight(), 0);
    assert_eq!(search.config().max_in_flight(), None);
}

/// The model is told a saturated tool is busy, not down, and may be tried again shortly or
/// swapped for another tool; the reason reads `saturated` in logs and JSON.
#[test]
fn the_model_hears_busy_not_down() {
    let breaker = CircuitBreaker::builder().max_in_flight(1).build().unwrap();
    let _held = breaker.try_acquire().unwrap();
    let refused = breaker.try_acquire().unwrap_err();
    assert_eq!(refused.reason().as_str(), "saturated");
    assert!(
        refused.to_string().starts_with("dependency busy"),
        "{refused}"
    );
    let result = toolbreaker::ToolResult::<()>::blocked("search", refused);
    let toolbreaker::ToolResult::Blocked {
        message, reason, ..
    } = &result
    else {
        panic!("{result:?}");
    };
    assert_eq!(*reason, BlockedReason::Saturated);
    assert!(message.contains("busy"), "{message}");
    assert!(message.contains("not down"), "{message}");
    assert!(message.contains("another tool"), "{message}");
    assert!(!message.contains("unavailable"), "{message}");
    #[cfg(feature = "serde")]
    assert_eq!(
        serde_json::to_value(BlockedReason::Saturated).unwrap(),
        serde_json::json!("saturated")
    );
}

/// A pool passes over a saturated member to another, uncounted and not ejected; with every
/// member saturated it refuses as saturated (busy, not down: the model is not told every
/// upstream is unavailable), and no member's health moves; with one member open and the other
/// saturated, the pool is exhausted.
#[test]
fn a_pool_tries_another_member_when_one_is_saturated() {
    let registry = Registry::builder()
        .default_config(
            CircuitBreaker::builder()
                .max_in_flight(1)
                .build_config()
                .unwrap(),
        )
        .metrics(true)
        .build();
    let pool = toolbreaker::Pool::builder("search")
        .group(["a", "b"])
        .build(&registry)
        .unwrap();
    let first = pool.try_acquire().unwrap();
    let second = pool.try_acquire().expect("the other member");
    assert_ne!(first.member(), second.member());
    let refused = pool.try_acquire().unwrap_err();
    assert_eq!(
        (refused.reason(), refused.state()),
        (BlockedReason::Saturated, State::Closed)
    );
    for name in ["a", "b"] {
        let member = registry.get(name);
        let metrics = member.metrics().unwrap();
        assert_eq!((member.state(), member.in_flight()), (State::Closed, 1));
        assert_eq!(
            (metrics.saturated, metrics.blocked),
            (0, 0),
            "passed over, uncounted"
        );
    }
    first.record(Outcome::Success);
    second.record(Outcome::Success);
    assert!(pool.try_acquire().is_ok());

    // One member down and the other busy: not every member is busy, so the pool is exhausted.
    let busy = pool.try_acquire().unwrap();
    let other = if busy.member() == "a" { "b" } else { "a" };
    registry.get(other).force_open();
    let refused = pool.try_acquire().unwrap_err();
    assert_eq!(refused.reason(), BlockedReason::PoolExhausted);
    busy.record(Outcome::Success);
}

/// A dependency's section turns off a cap and an adaptive limit its `[default]` sets with
/// `false`; `u32::MAX`, the cell's "no cap", is refused rather than silently meaning none.
#[test]
fn a_section_turns_off_the_defaults_cap_and_all_ones_is_refused() {
    let config = toolbreaker::RegistryConfig::from_toml(
        "[default]\nmax_in_flight = 4\nadaptive_concurrency = { algorithm = \"aimd\", min = 1, max = 8 }\n\
         [dependencies.free]\nmax_in_flight = false\nadaptive_concurrency = false\n",
    )
    .unwrap();
    let free = config.config_for("free");
    assert_eq!(
        (free.max_in_flight(), free.adaptive_concurrency()),
        (None, None)
    );
    let other = config.config_for("other");
    assert_eq!(other.max_in_flight(), Some(4));
    assert!(other.adaptive_concurrency().is_some());
    let err = CircuitBreaker::builder()
        .max_in_flight(u32::MAX)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "max_in_flight");
    assert!(err.to_string().contains("below 4294967295"), "{err}");
}
