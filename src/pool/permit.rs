//! [`PoolPermit`]: a pool's permission to call one member, recorded like a breaker's
//! [`Permit`].

use core::time::Duration;

use crate::breaker::{CircuitBreaker, Permit};
use crate::classify::Outcome;
use crate::types::Transition;

/// Permission to make one call to one member of a [`Pool`](super::Pool); report how it went
/// with [`record`](Self::record).
///
/// An ordinary permit is the member's own [`Permit`], with its rules: recorded, the outcome
/// counts on the member's breaker (a counted failure may trip it, a probe's outcome closes or
/// reopens it); dropped unrecorded (a cancelled call, a panic), nothing is recorded and a
/// probe's slot is given back. A *panic* permit ([`is_panic`](Self::is_panic)) lets a call
/// through to an open member (see the [panic rule](crate::pool#panic)): it records nothing, and
/// the member's breaker leaves open by its own cooldown and probe.
///
/// # Examples
///
/// ```
/// use toolbreaker::{FailureKind, Outcome, Pool, Registry, State, TransitionReason};
///
/// let registry = Registry::default();
/// let pool = Pool::builder("search").group(["search-eu"]).build(&registry)?;
/// let permit = pool.try_acquire().unwrap();
/// assert_eq!(permit.member(), "search-eu");
/// assert!(!permit.is_probe() && !permit.is_panic());
/// assert_eq!(permit.record(Outcome::Success), None);
///
/// registry.get("search-eu").force_open();
/// assert_eq!(registry.get("search-eu").state(), State::Open);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[must_use = "a permit must be used to make the call and then recorded; dropping it records no outcome"]
#[derive(Debug)]
pub struct PoolPermit<'a> {
    member: &'a CircuitBreaker,
    /// The member's place in the pool, group by group (the guard pipeline's retry avoids it).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    index: usize,
    /// The member's permit; `None` for a panic permit.
    permit: Option<Permit<'a>>,
}

impl<'a> PoolPermit<'a> {
    #[inline(always)]
    pub(crate) fn new(
        member: &'a CircuitBreaker,
        index: usize,
        permit: Option<Permit<'a>>,
    ) -> Self {
        PoolPermit {
            member,
            index,
            permit,
        }
    }

    /// The member's dependency name: the upstream to call.
    #[inline]
    pub fn member(&self) -> &'a str {
        self.member.name()
    }

    /// The member's breaker.
    #[inline]
    pub fn breaker(&self) -> &'a CircuitBreaker {
        self.member
    }

    /// Whether this permit holds the member's half-open probe slot.
    pub fn is_probe(&self) -> bool {
        self.permit.as_ref().is_some_and(Permit::is_probe)
    }

    /// Whether this is a panic permit: the member is open, and the call goes through because
    /// its group is in panic. It records nothing.
    pub fn is_panic(&self) -> bool {
        self.permit.is_none()
    }

    /// Report the call's outcome, consuming the permit: as [`Permit::record`] for an ordinary
    /// permit; `None`, recording nothing, for a panic permit.
    #[inline]
    pub fn record(self, outcome: Outcome) -> Option<Transition> {
        self.permit?.record(outcome)
    }

    /// As [`Permit::record_elapsed`] for an ordinary permit; `None`, recording nothing, for a
    /// panic permit.
    #[inline]
    pub fn record_elapsed(self, outcome: Outcome, elapsed: Duration) -> Option<Transition> {
        self.permit?.record_elapsed(outcome, elapsed)
    }

    /// The member's place in the pool.
    #[cfg(feature = "tokio")]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Whether the call is to be timed (the member has a slow-call rule).
    #[inline(always)]
    pub(crate) fn times_call(&self) -> bool {
        self.permit.as_ref().is_some_and(Permit::times_call)
    }

    /// [`record_elapsed`](Self::record_elapsed), for the guard pipeline's timed attempts.
    #[cfg(feature = "tokio")]
    pub(crate) fn record_timed(self, outcome: Outcome, elapsed: Duration) -> Option<Transition> {
        self.permit?.record_timed(outcome, elapsed)
    }

    /// [`record`](Self::record), or [`record_elapsed`](Self::record_elapsed) for a timed call.
    #[inline(always)]
    pub(crate) fn record_elapsed_if(
        self,
        outcome: Outcome,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        self.permit?.record_elapsed_if(outcome, elapsed)
    }
}
