//! What the agent runtime sees: the [`ToolResult`] the model is shown and, with feature `tokio`,
//! the guard pipeline that makes it.
//!
//! A breaker alone does not stop an agent from looping: the model sees an error and asks for the
//! same tool again, and a retry loop inside the tool can recreate the very load the breaker was
//! meant to stop. [`ToolGuard::call`] composes the guards in one order, for every tool call:
//!
//! 1. **Run deadline and budgets** ([`AgentRun`]): a run past its deadline, or with its tool-call
//!    or token budget spent, starts no call; the result is `stopped`, and so is every later call
//!    on the run.
//! 2. **Breaker**: if the dependency's breaker does not admit the call, the result is `blocked`
//!    at once; the operation never starts. With a pool (`ToolGuard::call_pool`), the pool's
//!    choice of a member that admits (see [`pool`](crate::pool)), blocked only when none does.
//! 3. **Per-call timeout**: the attempt runs under [`ToolGuard::per_call_timeout`], cut to the
//!    time left before the run's deadline; running out of the per-call time is
//!    [`FailureKind::Timeout`](crate::FailureKind::Timeout). Running into the run's deadline
//!    says nothing about the dependency: nothing is recorded and the result is `stopped`
//!    (`deadline`). When the time left is no more than the per-call timeout, the deadline is the
//!    limit that binds, so an attempt that runs out of time then has run into the deadline.
//! 4. **Classification** of the attempt's result, recorded on the breaker. A `failed` result
//!    tells the model the failure's kind and HTTP status, never an error's text unless the guard
//!    was told to show it ([`ToolGuard::error_text`]).
//! 5. **Bounded retry** ([`RetryPolicy`]), only for counted failures of a retryable kind
//!    (timeout, connect, unavailable, rate-limited), never for `Ignored`: capped exponential
//!    backoff with jitter (`backon`), at least the `Retry-After` hint, never past the deadline.
//!    Before every retry the breaker is asked again: once it has opened, retrying stops and the
//!    result is `blocked`, at once rather than after the wait. A pool's retry goes to another
//!    member than the one that just failed, while another admits. Every attempt draws on the run's
//!    tool-call budget; a spent budget also ends the call before the wait. A call blocked or
//!    stopped after failed attempts tells the model how many failed and how the last did
//!    ([`FailedAttempts`]). With a retry budget (`ToolGuard::retry_budget`, or the dependency's
//!    registry's), every first attempt deposits and every retry, a pool's to another member
//!    included, must be allowed by it, asked last before the wait: a refused retry ends the call
//!    `stopped` ([`StopReason::RetryBudget`]), the run going on.
//!
//! The order follows the practice the crate's source article describes (run deadline, breaker,
//! per-call timeout, classification, then a short retry) and AWS's guidance on retries with
//! backoff: a retry only for transient failures, and never one that recreates an outage's load.
//!
// Without feature `tokio` the pipeline's items do not exist: its links point at this page.
#![cfg_attr(not(feature = "tokio"), doc = "[`ToolGuard::call`]: self")]
#![cfg_attr(not(feature = "tokio"), doc = "[`AgentRun`]: self")]
#![cfg_attr(not(feature = "tokio"), doc = "[`ToolGuard::per_call_timeout`]: self")]
#![cfg_attr(not(feature = "tokio"), doc = "[`ToolGuard::error_text`]: self")]
#![cfg_attr(not(feature = "tokio"), doc = "[`RetryPolicy`]: self")]
// Without feature `tokio` the pipeline's types do not exist, and the docs above cannot link them.
#![cfg_attr(not(feature = "tokio"), allow(rustdoc::broken_intra_doc_links))]

mod fields;
#[cfg(feature = "tokio")]
mod guard;
mod message;
#[cfg(feature = "tokio")]
mod pipeline;
#[cfg(feature = "tokio")]
mod pool_call;
mod result;
#[cfg(feature = "tokio")]
mod retry;
#[cfg(feature = "tokio")]
mod run;
#[cfg(feature = "tokio")]
mod spans;
#[cfg(feature = "tokio")]
mod target;
#[cfg(feature = "tokio")]
mod tool_call;

pub use self::fields::{CallStats, FailedAttempts, FailedKind, StopReason};
pub use self::result::ToolResult;
#[cfg(feature = "tokio")]
pub use self::{
    guard::{ErrorText, Redacted, ToolGuard},
    pipeline::Attempt,
    retry::RetryPolicy,
    run::AgentRun,
};
