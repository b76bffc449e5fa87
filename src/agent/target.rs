//! What a call through the guard pipeline is guarded by: one breaker, or a pool of equivalent
//! upstreams, asked the same way.

use super::result::ToolResult;
use super::run::AgentRun;
use super::spans::CallSpan;
use crate::breaker::{CircuitBreaker, RetryBudget};
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

/// The retry budget one call draws on: the guard's own, else (from the call's first attempt)
/// the registry's for the dependency that attempt went to; none if neither has one.
#[derive(Clone, Copy, Debug)]
pub(super) struct CallBudget<'b>(Option<&'b RetryBudget>);

impl<'b> CallBudget<'b> {
    pub(super) fn new(own: Option<&'b RetryBudget>) -> Self {
        CallBudget(own)
    }

    /// Attempt `number` of the call goes to `breaker`'s dependency: the first deposits.
    #[inline]
    pub(super) fn attempt(&mut self, number: u32, breaker: &'b CircuitBreaker) {
        if number == 1 {
            self.0 = self.0.or_else(|| breaker.retry_budget());
            if let Some(budget) = self.0 {
                budget.deposit();
            }
        }
    }

    /// Whether a retry may go: asked last before the wait, so a retry that would not go anyway
    /// spends nothing. A refusal is the call's `stopped` (`retry_budget`) result, and an event.
    pub(super) fn retry<T>(
        &self,
        run: &AgentRun,
        dependency: &str,
        span: &CallSpan,
    ) -> Result<(), ToolResult<T>> {
        match self.0 {
            Some(budget) if !budget.try_withdraw() => {
                span.retry_refused(dependency, budget);
                Err(ToolResult::retry_refused(run.id(), dependency))
            }
            _ => Ok(()),
        }
    }
}
