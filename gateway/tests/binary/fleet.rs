//! Fleet mode: two gateway processes share their breakers through one real `redis-server`.

use std::sync::atomic::Ordering;

use crate::common;
use crate::mcp::{call, status, text};
use crate::process::{Gateway, Outcome, Redis, TempFile, check};
use crate::upstream::Counted;

/// The upstream `up` of both gateways: the fleet shares the breaker of that name. Its own
/// `failure_threshold` is also the fleet's (the fleet trips when the instances' runs of
/// counted failures sum to it, or when one instance trips on its own), so three failures in a
/// row through one gateway open `up` on both. The cooldown outlasts the test: no probe.
fn config(url: &str) -> String {
    format!("[upstreams.up]\nurl = \"{url}\"\nfailure_threshold = 3\ncooldown_ms = 600000\n")
}

pub async fn a_trip_through_one_gateway_blocks_the_next_call_through_the_other() -> Outcome {
    let redis = Redis::start().await?;
    let (up, calls) = Counted::serve().await;
    let file = TempFile::new("toml", &config(&up))?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let redis_url = redis.url();
    let args = ["--config", path, "--redis", &redis_url, "--log", "warn"];
    let one = Gateway::start(&args).await?;
    let two = Gateway::start(&args).await?;
    let (_h1, through_one) = common::client(&one.url).await;
    let (_h2, through_two) = common::client(&two.url).await;

    let echoed = call(&through_two, "up.echo", "before").await?;
    check(text(&echoed) == "before", format!("{echoed:?}"))?;
    for n in 1..=3 {
        let failed = call(&through_one, "up.fail", "").await?;
        check(
            failed.is_error == Some(true) && status(&failed) == Some("failed"),
            format!("failure {n} through gateway 1 is a failed call: {failed:?}"),
        )?;
    }
    let open = |s: &serde_json::Value| s["upstreams"][0]["state"] == "open";
    let status_one = one.status().await?;
    check(
        open(&status_one),
        format!("three counted failures trip gateway 1: {status_one}"),
    )?;
    // The trip reaches gateway 2 through Redis (pub/sub): it opens having seen no failure.
    two.status_when("gateway 2 to adopt the fleet's trip", open)
        .await?;

    let reached = calls.load(Ordering::SeqCst);
    check(
        reached == 4,
        format!("one echo and three failures reached the upstream, not {reached}"),
    )?;
    let blocked = call(&through_two, "up.echo", "after").await?;
    check(
        blocked.is_error == Some(true) && status(&blocked) == Some("blocked"),
        format!("gateway 2 blocks the next call: {blocked:?}"),
    )?;
    let structured = blocked.structured_content.clone().unwrap_or_default();
    check(
        structured["dependency"] == "up",
        format!("the blocked answer names the upstream: {structured}"),
    )?;
    let reached = calls.load(Ordering::SeqCst);
    check(
        reached == 4,
        format!("the blocked call did not reach the upstream ({reached} calls did)"),
    )
}
