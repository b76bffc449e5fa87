//! The retry budget in the guard pipeline (`ToolGuard::retry_budget`, a registry's budgets):
//! retries bounded by a share of first attempts under real concurrency, refusals as
//! `stopped` (`retry_budget`), pools, and withdrawals that never overspend. The budgets read
//! a mock clock that no test moves unless it says so, so every count falls in one window.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use toolbreaker::quanta::Clock;
use toolbreaker::{
    AgentRun, CircuitBreaker, Config, FailureKind, Outcome, Pool, Registry, RegistryConfig,
    RetryBudget, RetryPolicy, StopReason, ToolGuard, ToolResult,
};

/// Every attempt the upstream sees fails 503.
fn unavailable(_: &Result<(), u16>) -> Outcome {
    Outcome::Failure(FailureKind::Unavailable)
}

/// Three retries, with no wait between attempts (so no test waits on tokio's clock).
fn eager_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(3)
        .min_delay(Duration::ZERO)
        .max_delay(Duration::ZERO)
        .jitter(false)
}

/// 64 callers on a multi-thread runtime, 8 calls each, against an upstream that always fails
/// 503 and a breaker that never opens: the budget (0.2 of first attempts, plus 1/s over 10 s)
/// bounds the retries the upstream sees to `0.2 × 512 + 10`, and every call the budget cut
/// short says so.
#[test]
fn the_budget_bounds_retries_at_64_concurrent_callers() {
    const CALLERS: u64 = 64;
    const CALLS: u64 = 8;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let (clock, _mock) = Clock::mock();
    let budget = RetryBudget::new(0.2, 1, Duration::from_secs(10))
        .unwrap()
        .clock(clock);
    let breaker = Arc::new(
        CircuitBreaker::builder()
            .name("search")
            .failure_threshold(u32::MAX)
            .build()
            .unwrap(),
    );
    let reached = Arc::new(AtomicU64::new(0));
    let guard =
        ToolGuard::new(Duration::from_secs(5), eager_retries()).retry_budget(budget.clone());
    let results: Vec<ToolResult<()>> = runtime.block_on(async {
        let callers: Vec<_> = (0..CALLERS)
            .map(|caller| {
                let (guard, breaker, reached) =
                    (guard.clone(), Arc::clone(&breaker), Arc::clone(&reached));
                tokio::spawn(async move {
                    let run =
                        AgentRun::new(format!("run-{caller}"), Duration::from_secs(600), 1000);
                    let mut results = Vec::new();
                    for _ in 0..CALLS {
                        let attempt = || {
                            reached.fetch_add(1, Ordering::Relaxed);
                            async { Err(503) }
                        };
                        results.push(guard.call(&run, &breaker, unavailable, attempt).await);
                    }
                    results
                })
            })
            .collect();
        let mut all = Vec::new();
        for caller in callers {
            all.extend(caller.await.unwrap());
        }
        all
    });
    let first_attempts = CALLERS * CALLS;
    let retries = reached.load(Ordering::Relaxed) - first_attempts;
    let bound = (0.2 * first_attempts as f64 + 1.0 * 10.0).floor() as u64;
    assert!(retries <= bound, "{retries} retries, bound {bound}");
    assert!(retries >= 10, "the floor alone allows 10: {retries}");
    let refused = results
        .iter()
        .filter(|result| {
            matches!(result, ToolResult::Stopped { stop_reason: StopReason::RetryBudget, tried: Some(tried), .. } if tried.count >= 1)
        })
        .count() as u64;
    assert!(refused > 0, "some retries were refused");
    assert_eq!(refused, budget.refused(), "one refusal ends one call");
    let failed = results
        .iter()
        .filter(|r| matches!(r, ToolResult::Failed { .. }))
        .count() as u64;
    assert_eq!(
        refused + failed,
        first_attempts,
        "every call either ran out of retries or was refused"
    );
    let attempts: u64 = results
        .iter()
        .map(|r| u64::from(r.stats().unwrap().attempts))
        .sum();
    assert_eq!(attempts, reached.load(Ordering::Relaxed));
    // The load the upstream saw: at most (1 + ratio) × first attempts + min_per_second × window.
    assert!(reached.load(Ordering::Relaxed) as f64 <= 1.2 * first_attempts as f64 + 10.0);
}

/// Threads hammering `try_withdraw` take exactly what the budget holds, never more: 0.5 × 100
/// deposits plus a floor of 2/s over 5 s is 60 retries, however many threads ask at once; then
/// deposits made while others withdraw keep the bound.
#[test]
fn concurrent_withdrawals_never_overspend() {
    let (clock, _mock) = Clock::mock();
    let budget = RetryBudget::new(0.5, 2, Duration::from_secs(5))
        .unwrap()
        .clock(clock);
    for _ in 0..100 {
        budget.deposit();
    }
    let taken = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..1_000 {
                    if budget.try_withdraw() {
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(taken.load(Ordering::Relaxed), 60);
    assert_eq!(budget.refused(), 8_000 - 60);

    // Depositors and withdrawers at once: never more than 0.5 × deposits + 10 in all.
    std::thread::scope(|s| {
        for thread in 0..8 {
            let (budget, taken) = (&budget, &taken);
            s.spawn(move || {
                for i in 0..2_000 {
                    if (i + thread) % 2 == 0 {
                        budget.deposit();
                    } else if budget.try_withdraw() {
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let deposits = 100 + 8 * 1_000;
    let taken = taken.load(Ordering::Relaxed);
    assert!(
        taken <= deposits / 2 + 10,
        "{taken} withdrawn of {deposits} deposits"
    );
    assert_eq!(budget.retries_left() as u64, deposits / 2 + 10 - taken);
}

/// A pool's retry goes to another member, and is a retry all the same: a budget with no room
/// stops the call after the first member failed, before the second is asked.
#[tokio::test(start_paused = true)]
async fn a_retry_to_another_pool_member_draws_on_the_budget() {
    let registry = Registry::default();
    let pool = Pool::builder("search")
        .group(["eu", "us"])
        .build(&registry)
        .unwrap();
    let (clock, _mock) = Clock::mock();
    let budget = RetryBudget::new(0.0, 0, Duration::from_secs(10))
        .unwrap()
        .clock(clock);
    let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default()).retry_budget(budget);
    let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
    let mut asked = Vec::new();
    let result = guard
        .call_pool(&run, &pool, unavailable, |member| {
            asked.push(member);
            async { Err(503) }
        })
        .await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let ToolResult::Stopped {
        stop_reason,
        message,
        ..
    } = &result
    else {
        panic!("{result:?}")
    };
    assert_eq!(*stop_reason, StopReason::RetryBudget);
    assert!(
        message.starts_with("search failed, and a retry was refused by its retry budget"),
        "{message}"
    );
    assert_eq!(run.stop_reason(), None, "the run goes on");
    let json = result.to_json().unwrap();
    assert!(
        json.starts_with(r#"{"status":"stopped","run_id":"run-1","stop_reason":"retry_budget","#),
        "{json}"
    );
    assert!(
        json.contains(r#""failed_attempts":1,"last_failure":"unavailable","attempts":1,"#),
        "{json}"
    );
}

/// A guard with no budget of its own uses the registry's for the dependency; a reload changes
/// its rules in place, keeping its counts.
#[tokio::test(start_paused = true)]
async fn a_guard_without_a_budget_uses_the_registrys() {
    let (clock, _mock) = Clock::mock();
    let none = RetryBudget::new(0.0, 0, Duration::from_secs(10)).unwrap();
    // A breaker that stays closed through every failure here.
    let lenient = Config::new(1000, Duration::from_secs(30), Duration::from_secs(30)).unwrap();
    let registry = Registry::builder()
        .default_config(lenient)
        .clock(clock)
        .retry_budget(&none)
        .build();
    let search = registry.get("search");
    let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default());
    let run = AgentRun::new("run-1", Duration::from_secs(60), 100);
    let result = guard
        .call(&run, &search, unavailable, || async { Err(503) })
        .await;
    assert!(
        matches!(
            result,
            ToolResult::Stopped {
                stop_reason: StopReason::RetryBudget,
                ..
            }
        ),
        "{result:?}"
    );
    let budget = registry.retry_budget("search").unwrap();
    assert_eq!(budget.refused(), 1);

    // One retry per first attempt: the first call's deposit still counts.
    let generous = RetryBudget::new(1.0, 0, Duration::from_secs(10)).unwrap();
    registry.reload(RegistryConfig::new(lenient).with_retry_budget(Some(&generous)));
    assert_eq!(budget.retries_left(), 1, "the first call's deposit, kept");
    let result = guard
        .call(&run, &search, unavailable, || async { Err(503) })
        .await;
    assert_eq!(
        result.stats().unwrap().attempts,
        3,
        "two deposits, two retries: {result:?}"
    );
    assert!(
        matches!(result, ToolResult::Failed { .. }),
        "the policy's retries ran out first"
    );
    assert_eq!(budget.retries_left(), 0);

    // Taken out of the configuration: no budget, the policy's retries alone.
    registry.reload(RegistryConfig::new(lenient));
    let result = guard
        .call(&run, &search, unavailable, || async { Err(503) })
        .await;
    assert!(matches!(result, ToolResult::Failed { .. }), "{result:?}");
    assert_eq!(
        result.stats().unwrap().attempts,
        3,
        "RetryPolicy::default: 2 retries"
    );
}
