//! The `tracing` events of blocked calls, counted failures and a pool's panic admissions
//! (feature `tracing`; without it these functions are empty).

use core::time::Duration;

use crate::types::Blocked;

/// A call was blocked. The level check is inline; the event, when wanted, is out of line.
#[inline(always)]
pub(crate) fn blocked(dependency: &str, blocked: &Blocked) {
    #[cfg(feature = "tracing")]
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        blocked_event(dependency, blocked);
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (dependency, blocked);
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn blocked_event(dependency: &str, blocked: &Blocked) {
    tracing::debug!(
        target: "toolbreaker",
        dependency,
        state = blocked.state().as_str(),
        reason = blocked.reason().as_str(),
        retry_after_ms = crate::time::millis_floor(blocked.retry_after()),
        "call blocked"
    );
}

/// The adaptive limit on calls in flight of `dependency` moved to `limit` (only on a change, so
/// no more often than samples move it). Out of line: only adaptive breakers reach it.
#[inline(never)]
pub(crate) fn limit_changed(dependency: &str, limit: u32) {
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "toolbreaker", dependency, limit, "concurrency limit changed");
    #[cfg(not(feature = "tracing"))]
    let _ = (dependency, limit);
}

/// Pool `pool` admitted a call to its open member `member` by its panic rule (no member of the
/// pool admitted it). Out of line: a pool in panic is already off its healthy path.
#[inline(never)]
pub(crate) fn pool_panic(pool: &str, member: &str) {
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "toolbreaker", pool, member, "pool panic");
    #[cfg(not(feature = "tracing"))]
    let _ = (pool, member);
}

/// A counted failure was recorded; `elapsed` is the call's duration when the caller timed it (the
/// pipeline does; a bare permit is not timed, so the healthy path reads no clock).
#[inline(always)]
pub(crate) fn failure(dependency: &str, kind: &'static str, elapsed: Option<Duration>) {
    #[cfg(feature = "tracing")]
    if tracing::level_enabled!(tracing::Level::DEBUG) {
        failure_event(dependency, kind, elapsed);
    }
    #[cfg(not(feature = "tracing"))]
    let _ = (dependency, kind, elapsed);
}

#[cfg(feature = "tracing")]
#[inline(never)]
fn failure_event(dependency: &str, kind: &'static str, elapsed: Option<Duration>) {
    tracing::debug!(
        target: "toolbreaker",
        dependency,
        failure_kind = kind,
        duration_ms = elapsed.map(|d| d.as_secs_f64() * 1e3),
        "counted failure"
    );
}
