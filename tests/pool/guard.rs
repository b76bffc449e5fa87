//! The guard pipeline with a pool (`ToolGuard::call_pool`): a retry after a counted failure
//! moves to another member, group order holds, and a pool none of whose members admits ends
//! the call `blocked` with the pool's own reason and words. On tokio's paused clock (waits take
//! no real time) and the registry's mock clock.

use std::cell::RefCell;
use std::time::Duration;

use toolbreaker::{
    AgentRun, BlockedReason, Config, FailureKind, Outcome, Pool, Registry, RetryPolicy, State,
    ToolGuard, ToolResult,
};

fn classify(result: &Result<String, u16>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure(FailureKind::Unavailable),
    }
}

fn registry(threshold: u32) -> (Registry, std::sync::Arc<toolbreaker::quanta::Mock>) {
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let config = Config::new(threshold, Duration::from_secs(30), Duration::from_secs(5)).unwrap();
    (
        Registry::builder()
            .default_config(config)
            .clock(clock)
            .build(),
        mock,
    )
}

fn guard(retries: u32) -> ToolGuard {
    let retry = RetryPolicy::default()
        .max_retries(retries)
        .min_delay(Duration::from_millis(100))
        .jitter(false);
    ToolGuard::new(Duration::from_secs(2), retry)
}

/// The members asked, in order; `down` answer 503.
async fn call(
    guard: &ToolGuard,
    run: &AgentRun,
    pool: &Pool,
    down: &[&str],
    asked: &RefCell<Vec<String>>,
) -> ToolResult<String> {
    guard
        .call_pool(run, pool, classify, |member| {
            asked.borrow_mut().push(member.to_owned());
            let answer = if down.contains(&member) {
                Err(503)
            } else {
                Ok(format!("hits from {member}"))
            };
            async move { answer }
        })
        .await
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_a_counted_failure_goes_to_another_member() {
    // A threshold of 5: the failed member still admits, yet the retry goes elsewhere.
    let (registry, _mock) = registry(5);
    let pool = Pool::builder("search")
        .group(["a", "b", "c"])
        .build(&registry)
        .unwrap();
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let mut a_first = 0;
    for _ in 0..30 {
        let asked = RefCell::new(Vec::new());
        let result = call(&guard(2), &run, &pool, &["a"], &asked).await;
        let asked = asked.into_inner();
        let ToolResult::Ok { value, .. } = &result else {
            panic!("{result:?}")
        };
        assert_eq!(value, &format!("hits from {}", asked.last().unwrap()));
        assert!(asked.len() <= 2, "{asked:?}");
        if asked[0] == "a" {
            a_first += 1;
            assert_ne!(
                asked[1], "a",
                "the retry avoided the member that just failed"
            );
        }
        // a succeeded nowhere; reset it so it never trips.
        registry.get("a").reset();
    }
    assert!(
        a_first > 0,
        "the draw never started at a: nothing was checked"
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_fails_over_across_groups_and_the_same_member_is_retried_only_when_alone() {
    let (registry, _mock) = registry(5);
    let pool = Pool::builder("search")
        .group(["a"])
        .group(["b"])
        .build(&registry)
        .unwrap();
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let asked = RefCell::new(Vec::new());
    let result = call(&guard(2), &run, &pool, &["a"], &asked).await;
    assert_eq!(
        asked.take(),
        ["a", "b"],
        "a failed once: its retry went to the next group"
    );
    assert!(matches!(result, ToolResult::Ok { .. }));
    let asked = RefCell::new(Vec::new());
    call(&guard(0), &run, &pool, &[], &asked).await;
    assert_eq!(
        asked.take(),
        ["a"],
        "a new call starts from the first group again"
    );

    let alone = Pool::builder("alone")
        .group(["x"])
        .build(&registry)
        .unwrap();
    let asked = RefCell::new(Vec::new());
    let result = call(&guard(2), &run, &alone, &["x"], &asked).await;
    assert_eq!(
        asked.take(),
        ["x", "x", "x"],
        "no other member: the same one is retried"
    );
    let ToolResult::Failed { dependency, .. } = &result else {
        panic!("{result:?}")
    };
    assert_eq!(dependency, "alone", "the model reads the pool's name");
}

#[tokio::test(start_paused = true)]
async fn a_pool_whose_members_trip_on_the_attempts_ends_blocked_with_its_own_words() {
    let (registry, _mock) = registry(1);
    let pool = Pool::builder("search")
        .group(["a", "b"])
        .build(&registry)
        .unwrap();
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let asked = RefCell::new(Vec::new());
    let result = call(&guard(3), &run, &pool, &["a", "b"], &asked).await;
    let mut asked = asked.into_inner();
    asked.sort();
    assert_eq!(asked, ["a", "b"], "each member tried once, each tripped");
    assert_eq!(registry.get("a").state(), State::Open);
    let ToolResult::Blocked {
        dependency,
        reason,
        retry_after_ms,
        message,
        tried,
        ..
    } = &result
    else {
        panic!("{result:?}")
    };
    assert_eq!(
        (dependency.as_str(), *reason),
        ("search", BlockedReason::PoolExhausted)
    );
    assert_eq!(*retry_after_ms, 30_000);
    assert_eq!(tried.as_ref().unwrap().count, 2);
    assert_eq!(
        message,
        "Every upstream of search is unavailable; do not call it again now. Answer with what you \
         know, use another tool, or try after 30.0 s. This call failed twice before that; the \
         last failure: unavailable."
    );
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["status"], "blocked");
    assert_eq!(json["reason"], "pool_exhausted");
    assert_eq!(json["dependency"], "search");

    // A new call is blocked at once, the operation never run.
    let asked = RefCell::new(Vec::new());
    let result = call(&guard(3), &run, &pool, &[], &asked).await;
    assert!(asked.take().is_empty());
    assert_eq!(
        result.to_json().unwrap(),
        r#"{"status":"blocked","dependency":"search","reason":"pool_exhausted","retry_after_ms":30000,"message":"Every upstream of search is unavailable; do not call it again now. Answer with what you know, use another tool, or try after 30.0 s.","attempts":0,"elapsed_ms":0}"#
    );
}

/// A member's 429 with a long `Retry-After` does not hold back the retry that goes to another
/// member: the failover waits the policy's delay only. (The hint still governs a retry of the
/// same member, when no other admits: the single-breaker rule.)
#[tokio::test(start_paused = true)]
async fn a_failover_after_a_hinted_429_does_not_wait_out_the_hint() {
    let (registry, _mock) = registry(5);
    let pool = Pool::builder("llm")
        .group(["a", "b"])
        .build(&registry)
        .unwrap();
    let run = AgentRun::new("r", Duration::from_secs(60), 100);
    let limited = |result: &Result<String, u16>| match result {
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure(FailureKind::RateLimited {
            retry_after: Some(Duration::from_secs(120)),
        }),
    };
    for _ in 0..20 {
        let asked = RefCell::new(Vec::new());
        let started = tokio::time::Instant::now();
        let result = guard(2)
            .call_pool(&run, &pool, limited, |member| {
                asked.borrow_mut().push(member.to_owned());
                let answer = if member == "a" {
                    Err(429)
                } else {
                    Ok(format!("hits from {member}"))
                };
                async move { answer }
            })
            .await;
        assert!(matches!(result, ToolResult::Ok { .. }), "{result:?}");
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_secs(1),
            "{:?} took {waited:?}",
            asked.borrow()
        );
        registry.get("a").reset();
    }
    // Alone, the member's hint is waited out (up to the run's deadline).
    let alone = Pool::builder("one").group(["a"]).build(&registry).unwrap();
    let started = tokio::time::Instant::now();
    let asked = RefCell::new(0);
    let result = guard(1)
        .call_pool(&run, &alone, limited, |_| {
            *asked.borrow_mut() += 1;
            async { Err::<String, u16>(429) }
        })
        .await;
    assert!(matches!(result, ToolResult::Failed { .. }), "{result:?}");
    assert_eq!(*asked.borrow(), 1, "a 120 s wait does not fit the 60 s run");
    assert!(started.elapsed() < Duration::from_secs(1));
}
