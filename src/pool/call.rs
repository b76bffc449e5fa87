//! Guarded calls through a pool: acquire a member, run, classify and record in one step, sync
//! ([`Pool::call`]) or async ([`Pool::run`]).

use core::future::Future;

use super::members::Pool;
use super::permit::PoolPermit;
use crate::breaker::CallError;
use crate::classify::Classified;

impl Pool {
    /// Run `op` against the member the pool chooses ([`try_acquire`](Self::try_acquire)),
    /// classify its result and record the outcome on that member: the pool's twin of
    /// [`CircuitBreaker::call`](crate::CircuitBreaker::call). `op` is given the member's name.
    ///
    /// The operation is not run when the call is blocked. If it panics, the panic propagates
    /// and the permit is dropped unrecorded (a probe's slot is given back). A call on a member
    /// with a slow-call rule is timed, as the breaker's own `call` times it.
    ///
    /// # Errors
    ///
    /// [`CallError::Blocked`] (the pool's one `Blocked`) when no member admits the call,
    /// [`CallError::Inner`] with the operation's error otherwise. There is no retry here: a
    /// retry on another member is the guard pipeline's (`ToolGuard::call_pool`, feature
    /// `tokio`), or a second `call`, which asks the pool again.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CallError, FailureKind, Outcome, Pool, Registry};
    ///
    /// let registry = Registry::default();
    /// let pool = Pool::builder("search").group(["eu", "us"]).build(&registry)?;
    /// registry.get("eu").force_open();
    /// let classify = |r: &Result<String, u16>| match r {
    ///     Ok(_) => Outcome::Success,
    ///     Err(_) => Outcome::Failure(FailureKind::Unavailable),
    /// };
    /// let answer = pool.call(|member| Ok(format!("hits from {member}")), classify);
    /// assert_eq!(answer, Ok("hits from us".to_owned()));
    ///
    /// registry.get("us").force_open();
    /// let mut ran = false;
    /// let blocked = pool.call(|_| { ran = true; Ok(String::new()) }, classify);
    /// assert!(matches!(blocked, Err(CallError::Blocked(_))));
    /// assert!(!ran, "no member admits: nothing runs");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    #[inline]
    pub fn call<'p, T, E, O: Into<Classified>>(
        &'p self,
        op: impl FnOnce(&'p str) -> Result<T, E>,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>> {
        let permit = self.try_acquire().map_err(CallError::Blocked)?;
        if permit.times_call() {
            return call_timed(permit, op, classify);
        }
        let result = op(permit.member());
        permit.record(classify(&result).into().outcome());
        result.map_err(CallError::Inner)
    }

    /// The async twin of [`call`](Self::call), for any executor: the pool is asked on the
    /// first poll, then `op`'s future (made from the member's name) is polled, then its result
    /// classified and recorded.
    ///
    /// `op` is not called when the call is blocked. Dropping the future mid-call drops the
    /// permit unrecorded: a probe's slot is given back and no outcome is recorded.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// use toolbreaker::{Outcome, Pool, Registry};
    ///
    /// let registry = Registry::default();
    /// let pool = Pool::builder("search").group(["eu"]).build(&registry)?;
    /// let call = pin!(pool.run(|member| async move { Ok::<_, ()>(member.len()) }, |_| Outcome::Success));
    /// assert_eq!(call.poll(&mut Context::from_waker(Waker::noop())), Poll::Ready(Ok(2)));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub async fn run<'p, F, T, E, O>(
        &'p self,
        op: impl FnOnce(&'p str) -> F,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>>
    where
        F: Future<Output = Result<T, E>>,
        O: Into<Classified>,
    {
        let permit = self.try_acquire().map_err(CallError::Blocked)?;
        let member = permit.breaker();
        let started = member.start_timing(permit.times_call());
        let result = op(permit.member()).await;
        let elapsed = member.timed_since(started);
        permit.record_elapsed_if(classify(&result).into().outcome(), elapsed);
        result.map_err(CallError::Inner)
    }
}

/// [`Pool::call`] on a member with a slow-call rule: timed, out of line.
#[cold]
#[inline(never)]
fn call_timed<'p, T, E, O: Into<Classified>>(
    permit: PoolPermit<'p>,
    op: impl FnOnce(&'p str) -> Result<T, E>,
    classify: impl Fn(&Result<T, E>) -> O,
) -> Result<T, CallError<E>> {
    let member = permit.breaker();
    let started = member.start_timing(true);
    let result = op(permit.member());
    let elapsed = member.timed_since(started);
    permit.record_elapsed_if(classify(&result).into().outcome(), elapsed);
    result.map_err(CallError::Inner)
}
