//! Health checks as the probe (`Builder::probe_with`, feature `tokio`): run once per cooldown
//! however many callers and steps race, callers blocked with `probe_in_flight` meanwhile, the
//! check's outcome closing or reopening the breaker (with backoff), a timeout as a failure, the
//! slot given back by a panic or a runtime gone, the background prober waking at the cooldown's
//! end on its own, and the HTTP `GET` check against a real axum server on a loopback port.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use toolbreaker::config::Problem;
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    BlockedReason, CircuitBreaker, FailureKind, Outcome, State, Transition, TransitionReason,
};

const COOLDOWN: Duration = Duration::from_millis(100);
const LEASE: Duration = Duration::from_secs(5);
const FAILED: Outcome = Outcome::Failure(FailureKind::Unavailable);
/// Generous: the machine running these may be loaded.
const WAIT: Duration = Duration::from_secs(20);

/// A check that counts its runs, answers what `healthy` says, and first waits for a permit of
/// `gate` when one is given.
#[derive(Clone)]
struct Check {
    runs: Arc<AtomicUsize>,
    healthy: Arc<AtomicBool>,
    gate: Option<Arc<Semaphore>>,
}

impl Check {
    fn new(healthy: bool) -> Check {
        Check {
            runs: Arc::default(),
            healthy: Arc::new(AtomicBool::new(healthy)),
            gate: None,
        }
    }

    fn gated(healthy: bool) -> (Check, Arc<Semaphore>) {
        let gate = Arc::new(Semaphore::new(0));
        let check = Check {
            gate: Some(Arc::clone(&gate)),
            ..Check::new(healthy)
        };
        (check, gate)
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    fn probe(&self) -> toolbreaker::HealthCheck {
        let check = self.clone();
        toolbreaker::HealthCheck::new(move || {
            let check = check.clone();
            async move {
                check.runs.fetch_add(1, Ordering::SeqCst);
                if let Some(gate) = &check.gate {
                    gate.acquire().await.unwrap().forget();
                }
                if check.healthy.load(Ordering::SeqCst) {
                    Outcome::Success
                } else {
                    FAILED
                }
            }
        })
    }
}

/// A breaker on a mock clock with `check` as its health check, and its transitions as they are
/// heard.
fn breaker(
    check: &Check,
    tune: impl FnOnce(toolbreaker::breaker::Builder) -> toolbreaker::breaker::Builder,
) -> (
    Arc<CircuitBreaker>,
    Arc<Mock>,
    mpsc::UnboundedReceiver<Transition>,
) {
    let (clock, mock) = Clock::mock();
    let (heard, transitions) = mpsc::unbounded_channel();
    let builder = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .probe_timeout(LEASE)
        .clock(clock)
        .on_transition(move |e| {
            let _ = heard.send(*e.transition());
        })
        .probe_with(check.probe());
    (tune(builder).build_arc().unwrap(), mock, transitions)
}

/// Trip the breaker and let its cooldown pass on the mock clock.
fn trip_and_wait_out(breaker: &CircuitBreaker, mock: &Mock) {
    breaker.try_acquire().unwrap().record(FAILED);
    mock.increment(breaker.try_acquire().unwrap_err().retry_after());
}

/// Wait (with a generous limit) for the next transition with `reason`.
async fn heard(transitions: &mut mpsc::UnboundedReceiver<Transition>, reason: TransitionReason) {
    let wait = async {
        while let Some(t) = transitions.recv().await {
            if t.reason() == reason {
                return;
            }
        }
        panic!("the breaker was dropped");
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .unwrap_or_else(|_| panic!("no {reason:?} heard"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_check_runs_once_per_cooldown_however_many_callers_and_steps_race() {
    for round in 0..20 {
        let (check, gate) = Check::gated(true);
        let (breaker, mock, mut transitions) = breaker(&check, |b| b);
        trip_and_wait_out(&breaker, &mock);
        // Threads racing for a permit, and tasks racing the prober's step, at once.
        let start = Arc::new(Barrier::new(9));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (breaker, start) = (Arc::clone(&breaker), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    (0..50)
                        .map(|_| breaker.try_acquire().map(|p| p.is_probe()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let steps: Vec<_> = (0..4)
            .map(|_| {
                let breaker = Arc::clone(&breaker);
                tokio::spawn(async move { breaker.run_health_check().await })
            })
            .collect();
        start.wait();
        for caller in callers {
            for answer in caller.join().unwrap() {
                let blocked = answer.expect_err("no caller is admitted while half-open");
                assert_eq!(
                    blocked.reason(),
                    BlockedReason::ProbeInFlight,
                    "round {round}"
                );
                assert!(blocked.retry_after() <= LEASE);
            }
        }
        // The check started (by a step or by the prober), and is the only one.
        tokio::time::timeout(WAIT, async {
            while check.runs() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the check starts");
        gate.add_permits(1);
        heard(&mut transitions, TransitionReason::ProbeSucceeded).await;
        let mut ran = 0;
        for step in steps {
            ran += usize::from(step.await.unwrap().is_some());
        }
        assert!(ran <= 1, "round {round}: {ran} steps ran the check");
        assert_eq!(check.runs(), 1, "round {round}: once per cooldown");
        assert_eq!(breaker.state(), State::Closed);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn callers_are_blocked_with_probe_in_flight_while_the_check_runs() {
    let (check, gate) = Check::gated(true);
    let (breaker, mock, mut transitions) = breaker(&check, |b| b);
    trip_and_wait_out(&breaker, &mock);
    assert_eq!(breaker.state(), State::HalfOpen);
    // The first caller after the cooldown finds the slot the check's, and wakes the prober.
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
    tokio::time::timeout(WAIT, async {
        while check.runs() == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the prober starts the check");
    mock.increment(Duration::from_secs(1));
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(
        (blocked.state(), blocked.reason(), blocked.retry_after()),
        (
            State::HalfOpen,
            BlockedReason::ProbeInFlight,
            LEASE - Duration::from_secs(1)
        ),
        "the time left on the check's lease"
    );
    assert_eq!(
        breaker.run_health_check().await,
        None,
        "a probe is in flight"
    );
    gate.add_permits(1);
    heard(&mut transitions, TransitionReason::ProbeSucceeded).await;
    assert!(
        breaker
            .try_acquire()
            .unwrap()
            .record(Outcome::Success)
            .is_none(),
        "closed"
    );
    assert_eq!(check.runs(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_check_reopens_with_the_backoff_and_a_later_success_closes() {
    let check = Check::new(false);
    let (breaker, mock, _transitions) =
        breaker(&check, |b| b.cooldown_backoff(2.0, Duration::from_secs(1)));
    trip_and_wait_out(&breaker, &mock);
    // No await between the clock's move and the step: the prober (same thread) cannot run first.
    let probe = breaker.run_health_check().await.expect("due");
    assert_eq!(probe.outcome, FAILED);
    assert_eq!(
        probe.transition.unwrap().reason(),
        TransitionReason::ProbeFailed
    );
    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
    assert_eq!(blocked.retry_after(), 2 * COOLDOWN, "backed off");
    assert_eq!(breaker.run_health_check().await, None, "not due while open");

    mock.increment(2 * COOLDOWN);
    check.healthy.store(true, Ordering::SeqCst);
    let probe = breaker.run_health_check().await.expect("due again");
    assert_eq!(
        probe.transition.unwrap().reason(),
        TransitionReason::ProbeSucceeded
    );
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(
        breaker.run_health_check().await,
        None,
        "not due while closed"
    );
    assert_eq!(check.runs(), 2, "once per cooldown");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_check_that_outlives_the_probe_timeout_is_a_timeout_failure() {
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .probe_timeout(LEASE)
        .clock(clock)
        .probe_with(std::future::pending::<Outcome>)
        .build_arc()
        .unwrap();
    trip_and_wait_out(&breaker, &mock);
    let probe = breaker.run_health_check().await.expect("due");
    assert_eq!(probe.outcome, Outcome::Failure(FailureKind::Timeout));
    assert_eq!(
        probe.transition.unwrap().reason(),
        TransitionReason::ProbeFailed
    );
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test(flavor = "current_thread")]
async fn a_panicking_check_gives_the_slot_back() {
    let panics = Arc::new(AtomicBool::new(true));
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .clock(clock)
        .probe_with({
            let panics = Arc::clone(&panics);
            move || {
                let panics = panics.load(Ordering::SeqCst);
                async move {
                    assert!(!panics, "the check's own bug");
                    Outcome::Success
                }
            }
        })
        .build_arc()
        .unwrap();
    trip_and_wait_out(&breaker, &mock);
    let step = tokio::spawn({
        let breaker = Arc::clone(&breaker);
        async move { breaker.run_health_check().await }
    });
    assert!(step.await.unwrap_err().is_panic());
    assert_eq!(breaker.state(), State::HalfOpen, "the slot is free again");
    panics.store(false, Ordering::SeqCst);
    let probe = breaker
        .run_health_check()
        .await
        .expect("the slot can be claimed again");
    assert_eq!(
        probe.transition.unwrap().reason(),
        TransitionReason::ProbeSucceeded
    );
}

/// The prober wakes at the cooldown's end by itself: no call, no step by hand. With a real
/// clock it sleeps until the deadline it reads; with a mock one it sees the clock's move within
/// `HEALTH_RECHECK`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prober_probes_when_the_cooldown_ends_without_a_call() {
    let check = Check::new(true);
    let (breaker, mock, mut transitions) = breaker(&check, |b| b);
    trip_and_wait_out(&breaker, &mock);
    heard(&mut transitions, TransitionReason::ProbeSucceeded).await;
    assert_eq!((check.runs(), breaker.state()), (1, State::Closed));

    // On the system clock.
    let check = Check::new(true);
    let (heard_tx, mut real) = mpsc::unbounded_channel();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(Duration::from_millis(50))
        .on_transition(move |e| {
            let _ = heard_tx.send(*e.transition());
        })
        .probe_with(check.probe())
        .build_arc()
        .unwrap();
    breaker.try_acquire().unwrap().record(FAILED);
    heard(&mut real, TransitionReason::ProbeSucceeded).await;
    assert_eq!(check.runs(), 1);
}

#[test]
fn without_a_runtime_or_an_arc_or_with_several_probes_the_check_is_refused() {
    let check = || async { Outcome::Success };
    let err = CircuitBreaker::builder()
        .probe_with(check)
        .build_arc()
        .unwrap_err();
    assert_eq!(
        (err.field(), err.problem()),
        ("probe_with", Problem::NoRuntime)
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let err = CircuitBreaker::builder()
        .probe_with(check)
        .build()
        .unwrap_err();
    assert_eq!(
        (err.field(), err.problem()),
        ("probe_with", Problem::NotShared)
    );
    assert!(err.to_string().contains("build_arc"), "{err}");
    let err = CircuitBreaker::builder()
        .probes(2)
        .probe_with(check)
        .build_arc()
        .unwrap_err();
    assert_eq!(
        (err.field(), err.problem()),
        ("probe_with", Problem::Conflict)
    );
    assert!(
        CircuitBreaker::builder().build_arc().is_ok(),
        "no check, no runtime needed"
    );
}

/// The prober's runtime shut down: the prober is gone, so callers take the probe slot again
/// rather than wait for a check that will never run.
#[test]
fn when_the_probers_runtime_is_gone_callers_take_the_probe_again() {
    let check = Check::new(true);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let (breaker, mock, _transitions) = runtime.block_on(async { breaker(&check, |b| b) });
    trip_and_wait_out(&breaker, &mock);
    assert_eq!(
        breaker.try_acquire().unwrap_err().reason(),
        BlockedReason::ProbeInFlight,
        "while the prober lives"
    );
    drop(runtime);
    let probe = breaker.try_acquire().expect("the slot is a caller's again");
    assert!(probe.is_probe());
    assert_eq!(check.runs(), 0);
}

/// The ready-made HTTP check against a real axum server on a loopback port: a 2xx closes, a 503
/// reopens, a refused connection reopens.
#[cfg(feature = "reqwest")]
#[tokio::test(flavor = "current_thread")]
async fn the_http_check_gets_the_health_url() {
    use axum::http::StatusCode;
    let healthy = Arc::new(AtomicBool::new(false));
    let router = axum::Router::new().route(
        "/health",
        axum::routing::get({
            let healthy = Arc::clone(&healthy);
            move || async move {
                if healthy.load(Ordering::SeqCst) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "warming up")
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });

    let (clock, mock) = Clock::mock();
    let url = format!("http://{addr}/health").parse().unwrap();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .clock(clock)
        .probe_with(toolbreaker::HealthCheck::http_get(
            reqwest::Client::new(),
            url,
        ))
        .build_arc()
        .unwrap();
    trip_and_wait_out(&breaker, &mock);
    let probe = breaker.run_health_check().await.expect("due");
    assert_eq!(
        probe.outcome,
        Outcome::Failure(FailureKind::Unavailable),
        "503"
    );
    assert_eq!(breaker.state(), State::Open);

    healthy.store(true, Ordering::SeqCst);
    mock.increment(COOLDOWN);
    let probe = breaker.run_health_check().await.expect("due");
    assert_eq!(probe.outcome, Outcome::Success, "200");
    assert_eq!(breaker.state(), State::Closed);

    // A wrong path (404): a failure, which reopens, never an ignored check that would keep the
    // breaker half-open and its callers blocked for good.
    let wrong = format!("http://{addr}/healthz").parse().unwrap();
    let check = toolbreaker::HealthCheck::http_get(reqwest::Client::new(), wrong);
    assert_eq!(
        (check.run().await.outcome(), check.run().await.http_status()),
        (Outcome::Failure(FailureKind::Other), None)
    );

    // Nothing listens on the port any more: a refused connection.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/health", closed.local_addr().unwrap())
        .parse()
        .unwrap();
    drop(closed);
    let check = toolbreaker::HealthCheck::http_get(reqwest::Client::new(), url);
    assert_eq!(
        check.run().await.outcome(),
        Outcome::Failure(FailureKind::Connect)
    );
}

/// An `Ignored` outcome gives the slot back, and the prober tries again only after
/// `HEALTH_RECHECK`, however many callers wake it meanwhile: no loop hammers a health URL that
/// answers, say, 404. On Tokio's paused clock, which moves only when every task waits.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_ignored_check_is_tried_again_after_the_recheck_interval_not_at_every_wake() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (clock, mock) = Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(COOLDOWN)
        .clock(clock)
        .probe_with({
            let runs = Arc::clone(&runs);
            move || {
                runs.fetch_add(1, Ordering::SeqCst);
                async { Outcome::Ignored }
            }
        })
        .build_arc()
        .unwrap();
    trip_and_wait_out(&breaker, &mock);
    while runs.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(breaker.state(), State::HalfOpen, "the slot is given back");
    for _ in 0..100 {
        let blocked = breaker.try_acquire().unwrap_err(); // each wakes the prober
        assert_eq!(blocked.reason(), BlockedReason::ProbeInFlight);
        tokio::task::yield_now().await;
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the wakes did not run it again"
    );
    tokio::time::sleep(toolbreaker::breaker::HEALTH_RECHECK + Duration::from_millis(10)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "again after the recheck interval"
    );
}

/// The prober holds its breaker weakly: dropping the breaker ends its task.
#[tokio::test(flavor = "current_thread")]
async fn the_prober_ends_with_its_breaker() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let check = Check::new(true);
    let (breaker, _mock, _transitions) = breaker(&check, |b| b);
    tokio::task::yield_now().await;
    assert_eq!(metrics.num_alive_tasks(), 1, "the prober");
    drop(breaker);
    tokio::time::timeout(WAIT, async {
        while metrics.num_alive_tasks() != 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the prober ends");
}

#[test]
fn a_runtime_without_its_time_driver_is_refused_at_build() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = runtime
        .block_on(async {
            CircuitBreaker::builder()
                .probe_with(|| async { Outcome::Success })
                .build_arc()
        })
        .unwrap_err();
    assert_eq!(
        (err.field(), err.problem()),
        ("probe_with", toolbreaker::config::Problem::NoRuntime)
    );
    assert!(err.to_string().contains("time driver"), "{err}");
}
