//! What a call through the guard pipeline is guarded by: one breaker, or a pool of equivalent
//! upstreams, asked the same way.

use crate::breaker::CircuitBreaker;
use crate::pool::{Pool, PoolPermit};
use crate::types::Blocked;

/// The breaker, or the pool, a call through the pipeline asks before each attempt.
#[derive(Clone, Copy, Debug)]
pub(super) enum Target<'a> {
    /// One dependency's breaker.
    Breaker(&'a CircuitBreaker),
    /// A pool: each attempt goes to the member it chooses.
    Pool(&'a Pool),
}

impl<'a> Target<'a> {
    /// The name the model and the call's span see: the breaker's or the pool's.
    pub(super) fn name(&self) -> &'a str {
        match self {
            Target::Breaker(breaker) => breaker.name(),
            Target::Pool(pool) => pool.name(),
        }
    }

    /// A permit for the next attempt; a pool's avoids the member at `avoid` (the one whose
    /// attempt just failed) while another admits.
    #[inline]
    pub(super) fn acquire(&self, avoid: Option<usize>) -> Result<PoolPermit<'a>, Blocked> {
        match self {
            Target::Breaker(breaker) => breaker
                .try_acquire()
                .map(|permit| PoolPermit::new(breaker, 0, Some(permit))),
            Target::Pool(pool) => pool.acquire(avoid),
        }
    }

    /// Whether a retry after the attempt of the member at `failed` waits out that attempt's hint
    /// (`Retry-After`): always for one breaker; for a pool only when no other member would admit
    /// now (a retry that goes to another member owes the failed one's hint nothing).
    pub(super) fn retry_waits_for_hint(&self, failed: usize) -> bool {
        match self {
            Target::Breaker(_) => true,
            Target::Pool(pool) => !pool.admits_other(failed),
        }
    }

    /// `Blocked` if a retry could not be admitted now, asked without taking anything (see
    /// `CircuitBreaker::check_open` and `Pool::check_open`).
    pub(super) fn check_open(&self) -> Result<(), Blocked> {
        match self {
            Target::Breaker(breaker) => breaker.check_open(),
            Target::Pool(pool) => pool.check_open(),
        }
    }
}
