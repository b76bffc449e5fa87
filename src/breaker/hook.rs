//! The breaker's hook: what its slow paths tell, and the one thing they ask, whoever shares the
//! breaker's transitions with other instances (fleet mode installs one; see `fleet::tap`).
//!
//! A breaker built without a hook never reaches here, and the healthy path never does either:
//! the hook is called only where a failure is counted, a count is cleared, a transition lands, or
//! the probe slot is about to be claimed. A hook's methods must not block or wait: they run on a
//! caller's thread, inside a call.

use core::any::Any;
use core::panic::{RefUnwindSafe, UnwindSafe};

use crate::types::Transition;

/// What a breaker's slow paths tell and ask its hook (see the module's docs).
///
/// `Any` so the hook's owner can find its own type behind a breaker's hook again; unwind-safe, so
/// the breaker stays so.
pub(crate) trait Hook:
    Any + Send + Sync + RefUnwindSafe + UnwindSafe + core::fmt::Debug
{
    /// A closed count changed: a failure was counted, or a success cleared the count. The word
    /// holds the count, so any number of changes may be told as one.
    fn count_changed(&self);

    /// `reset` was called (it clears a closed count without a transition).
    fn reset(&self);

    /// A transition landed here (not one adopted through `CircuitBreaker::adopt`).
    fn transition(&self, transition: Transition);

    /// Whether a caller may claim the probe slot of local `generation` at local time `now_ms`
    /// (ms since the breaker's origin): `None` to claim it; `Some(retry_after_ms)` (≥ 1) if
    /// another instance probes, or the instances are choosing, and the caller is blocked for that
    /// long.
    fn gate(&self, generation: u32, now_ms: u64) -> Option<u64>;
}
