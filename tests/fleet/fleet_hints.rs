//! A dependency's hint in fleet mode: the open period's hinted end is the fleet's, kept in the
//! shared record, adopted by every instance, and no probe lease is granted before it.

use std::time::{Duration, Instant};

use super::fleet::{COOLDOWN, LIMIT, connect, instance, record, until};
use super::redis_server::RedisServer;
use toolbreaker::{BlockedReason, FailureKind, Outcome, State};

const HINT: Duration = Duration::from_millis(2_500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hinted_trip_s_deadline_is_the_fleet_s_and_no_probe_goes_before_it() {
    let server = RedisServer::start();
    let (a, b, sa, sb) = connect(
        &server,
        instance(&server, "a", 1),
        instance(&server, "b", 1),
    )
    .await;
    let limited = Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(HINT),
    });
    let tripped = Instant::now();
    sa.try_acquire().unwrap().record(limited);
    assert_eq!(sa.state(), State::Open);
    until("b opens", LIMIT, || sb.state() == State::Open).await;
    let shared = record(&server, "search");
    let (at, hinted): (u64, u64) = (shared["at"].parse().unwrap(), shared["hu"].parse().unwrap());
    assert!(
        hinted >= at + HINT.as_millis() as u64 - 100,
        "the record keeps the hint's end: {shared:?}"
    );
    // B never saw the 429, yet tells its callers the hinted wait, not its 300 ms cooldown: the
    // time since the trip plus the wait b tells reaches the hint's end, however late b heard.
    let blocked = sb.try_acquire().unwrap_err();
    assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
    let told_end = tripped.elapsed() + blocked.retry_after();
    assert!(
        told_end >= HINT - Duration::from_millis(100),
        "b's wait ends {told_end:?} after the trip"
    );
    // Long past the cooldown and before the hint's end, neither instance gets a probe.
    let mut admitted = None;
    until("a probe after the hint's end", LIMIT, || {
        for breaker in [&sa, &sb] {
            if let Ok(permit) = breaker.try_acquire() {
                admitted = Some(tripped.elapsed());
                permit.record(Outcome::Success);
                return true;
            }
        }
        false
    })
    .await;
    let admitted = admitted.unwrap();
    assert!(
        admitted >= HINT - Duration::from_millis(100) && admitted > COOLDOWN * 4,
        "the first probe went {admitted:?} after the trip"
    );
    until("both close", LIMIT, || {
        sa.state() == State::Closed && sb.state() == State::Closed
    })
    .await;
    assert_eq!(record(&server, "search")["hu"], "0", "a close clears it");
    drop((a, b));
}
