//! [`ToolGuard::call_pool`]: the guard pipeline for a pool of equivalent upstreams, each
//! attempt sent to the member the pool chooses, a retry to another.

use core::future::Future;

use super::guard::{ErrorText, ToolGuard};
use super::pipeline::Attempt;
use super::result::ToolResult;
use super::run::AgentRun;
use super::target::Target;
use crate::classify::Classified;
use crate::pool::Pool;

impl<X> ToolGuard<X> {
    /// [`call`](Self::call) for a [`Pool`]: every guard in the same order, with each attempt
    /// sent to the member the pool chooses (see [`Pool::try_acquire`]); `attempt` is given the
    /// member's name (its dependency name in the registry) and makes one attempt to it.
    ///
    /// A retry after a counted failure goes to another member: the pool is asked again with the
    /// member that just failed passed over, and that member is asked only when no other admits
    /// (groups in order, as always). Before the retry's wait the pool is checked as a breaker
    /// is: when no member could admit it and no panic would, the call ends `blocked` at once.
    ///
    /// What the model reads names the pool: a `blocked` result (reason `pool_exhausted` when no
    /// member admits, with the earliest retry-after of the members) and a `failed` one. The
    /// call's span names the pool too; each attempt's span names its member.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{AgentRun, FailureKind, Outcome, Pool, Registry, RetryPolicy, ToolGuard, ToolResult};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let registry = Registry::default();
    /// let pool = Pool::builder("search").group(["eu"]).group(["us"]).build(&registry).unwrap();
    /// let guard = ToolGuard::new(Duration::from_secs(2), RetryPolicy::default());
    /// let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
    /// let mut asked = Vec::new();
    /// let result = guard
    ///     .call_pool(&run, &pool, |r| match r {
    ///         Ok(_) => Outcome::Success,
    ///         Err(_) => Outcome::Failure(FailureKind::Unavailable),
    ///     }, |member| {
    ///         asked.push(member);
    ///         let answer = if member == "eu" { Err("503") } else { Ok("hits") };
    ///         async move { answer }
    ///     })
    ///     .await;
    /// assert!(matches!(result, ToolResult::Ok { value: "hits", .. }));
    /// assert_eq!(asked, ["eu", "us"], "the retry went to the other member");
    /// # });
    /// ```
    pub async fn call_pool<'p, T, E, O, Fut>(
        &self,
        run: &AgentRun,
        pool: &'p Pool,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut(&'p str) -> Fut,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        self.call_pool_observed(run, pool, classify, attempt, |_| {})
            .await
    }

    /// [`call_pool`](Self::call_pool), reporting every attempt that reached a member to
    /// `observe` as it ends, as [`call_observed`](Self::call_observed) does.
    pub async fn call_pool_observed<'p, T, E, O, Fut>(
        &self,
        run: &AgentRun,
        pool: &'p Pool,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut(&'p str) -> Fut,
        observe: impl FnMut(&Attempt),
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let mut attempt = attempt;
        let target = Target::Pool(pool);
        self.guard(
            run,
            target,
            classify,
            move |member, _| attempt(member),
            observe,
        )
        .await
    }
}
