//! Guarded calls: acquire, run, classify and record in one step, sync or async.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, ready};
use core::time::Duration;

use super::cap::Cap;
use super::machine::CircuitBreaker;
use super::permit::Permit;
use crate::classify::Classified;
use crate::state::word::Word;
use crate::types::Blocked;

/// Why a guarded call returned no value.
///
/// An error that wraps another one says what happened in its own words and returns the other
/// from [`source`](std::error::Error::source), as the `std::error::Error` docs ask: an error
/// reporter that walks the chain (anyhow, eyre) shows each message once.
///
/// ```
/// use std::error::Error;
/// use toolbreaker::CallError;
///
/// let error: CallError<std::io::Error> = CallError::Inner(std::io::Error::other("connection reset"));
/// assert_eq!(error.to_string(), "the operation failed");
/// assert_eq!(error.source().unwrap().to_string(), "connection reset");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError<E> {
    /// The breaker did not admit the call; the operation never ran.
    Blocked(Blocked),
    /// The operation ran and returned this error (already classified and recorded).
    Inner(E),
    /// The operation did not finish within this per-call timeout; recorded as
    /// [`FailureKind::Timeout`](crate::FailureKind::Timeout). Only
    /// `run_with_timeout` (feature `tokio`) returns it.
    TimedOut(Duration),
}

impl<E> CallError<E> {
    /// The `Blocked` value, if the call was blocked.
    pub fn blocked(&self) -> Option<&Blocked> {
        match self {
            CallError::Blocked(blocked) => Some(blocked),
            _ => None,
        }
    }

    /// The operation's own error, if it returned one.
    pub fn into_inner(self) -> Option<E> {
        match self {
            CallError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

/// The wrapper's own words; the rejection or the operation's error is the [`source`](std::error::Error::source).
impl<E> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Blocked(_) => f.write_str("call blocked by its circuit breaker"),
            CallError::Inner(_) => f.write_str("the operation failed"),
            CallError::TimedOut(after) => {
                write!(f, "call timed out after {:.3} s", after.as_secs_f64())
            }
        }
    }
}

/// `source` is the [`Blocked`] rejection or the operation's error; a timeout has none.
impl<E: std::error::Error + 'static> std::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Blocked(blocked) => Some(blocked),
            CallError::Inner(e) => Some(e),
            CallError::TimedOut(_) => None,
        }
    }
}

impl CircuitBreaker {
    /// Run `op` if the breaker admits it, classify its result and record the outcome.
    ///
    /// The operation is not run when the call is blocked. If it panics, the panic propagates, the
    /// permit is dropped unrecorded: a probe's slot is released and no outcome is recorded.
    ///
    /// `classify` is the call's classification, a function from the result to an
    /// [`Outcome`](crate::Outcome) (or a [`Classified`]): a closure written in place (`|r| match
    /// r { .. }`, its argument's type inferred), a named function, or a classifier type through
    /// [`classify::with`](crate::classify::with) (see [Closures in place, types through
    /// `with`](crate::Classify#closures-in-place-types-through-with)).
    ///
    /// # Errors
    ///
    /// [`CallError::Blocked`] when the breaker does not admit the call, [`CallError::Inner`] with
    /// the operation's error otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CallError, CircuitBreaker, FailureKind, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(1).build()?;
    /// assert_eq!(breaker.call(|| Ok::<u32, &str>(7), |_| Outcome::Success), Ok(7));
    ///
    /// // A classification kept for several calls names its argument's type.
    /// let classify = |r: &Result<u32, &str>| match r {
    ///     Ok(_) => Outcome::Success,
    ///     Err(_) => Outcome::Failure(FailureKind::Unavailable),
    /// };
    /// assert_eq!(breaker.call(|| Err("503"), classify), Err(CallError::Inner("503")));
    ///
    /// let mut ran = false;
    /// let blocked = breaker.call(|| { ran = true; Ok(1) }, classify);
    /// assert!(matches!(blocked, Err(CallError::Blocked(_))));
    /// assert!(!ran, "an open breaker never runs the operation");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn call<T, E, O: Into<Classified>>(
        &self,
        op: impl FnOnce() -> Result<T, E>,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>> {
        // `try_acquire`'s closed path, inline; every other word goes out of line whole, so the
        // caller neither saves registers for it nor copies a permit-or-rejection into its
        // answer: an open breaker's rejection is written once, as this call's `Err`.
        let word = self.word();
        let Some(permit) = self.closed_permit(word) else {
            return self.call_not_closed(word, op, classify);
        };
        if let Some(cap) = self.cap() {
            return self.call_capped(permit, cap, op, classify);
        }
        self.call_admitted(permit, op, classify)
    }

    /// [`call`](Self::call) of a closed breaker with a cap on calls in flight: the slot taken
    /// (or the saturated rejection), then the call. Out of line, so a breaker without a cap
    /// pays one load and a branch.
    #[inline(never)]
    fn call_capped<T, E, O: Into<Classified>>(
        &self,
        permit: Permit<'_>,
        cap: &Cap,
        op: impl FnOnce() -> Result<T, E>,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>> {
        match permit.take_slot(cap, true) {
            Ok(permit) => self.call_admitted(permit, op, classify),
            Err(blocked) => Err(CallError::Blocked(blocked)),
        }
    }

    /// The call of an admitted permit. Two paths, so a call that is not timed (no slow-call
    /// rule: the permit knows from the word it was issued from) compiles to what it was before
    /// calls could be timed, and the timed one is out of line: it holds the clock's reading
    /// across the call, which would cost every caller registers to save.
    #[inline(always)]
    fn call_admitted<T, E, O: Into<Classified>>(
        &self,
        permit: Permit<'_>,
        op: impl FnOnce() -> Result<T, E>,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>> {
        if permit.times_call() {
            return self.call_timed(permit, op, classify);
        }
        let result = op();
        permit.record(classify(&result).into().outcome());
        result.map_err(CallError::Inner)
    }

    /// [`call`](Self::call) for a word that is not closed, out of line: the open rejection
    /// answered from the word (as `try_acquire` answers it), else the decided admission and, if
    /// admitted (a probe), the call.
    #[inline(never)]
    fn call_not_closed<T, E, O: Into<Classified>>(
        &self,
        word: Word,
        op: impl FnOnce() -> Result<T, E>,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>> {
        let permit = match self.reject_open(word) {
            Ok(blocked) => return Err(CallError::Blocked(blocked)),
            Err(now) => self
                .acquire_past_open(word, now)
                .map_err(CallError::Blocked)?,
        };
        self.call_admitted(permit, op, classify)
    }

    /// [`call`](Self::call) for a breaker with a slow-call rule: the call is timed. Out of line
    /// and cold, so the healthy untimed path stays small in every caller.
    #[cold]
    #[inline(never)]
    fn call_timed<T, E, O: Into<Classified>>(
        &self,
        permit: Permit<'_>,
        op: impl FnOnce() -> Result<T, E>,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>> {
        let started = self.start_timing(true);
        let result = op();
        let elapsed = self.timed_since(started);
        permit.record_elapsed_if(classify(&result).into().outcome(), elapsed);
        result.map_err(CallError::Inner)
    }

    /// The async twin of [`call`](Self::call), for any executor.
    ///
    /// `fut` is not polled when the call is blocked. Dropping the returned future mid-call (a
    /// cancelled request, a `select!` that went the other way) drops the permit unrecorded: a
    /// probe's slot is released and no outcome is recorded.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    ///
    /// # Examples
    ///
    /// No runtime is needed: here a ready future is polled once by hand.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// use toolbreaker::{CircuitBreaker, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder().build()?;
    /// let call = pin!(breaker.run(async { Ok::<_, ()>(42) }, |_| Outcome::Success));
    /// let polled = call.poll(&mut Context::from_waker(Waker::noop()));
    /// assert_eq!(polled, Poll::Ready(Ok(42)));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    #[inline]
    pub fn run<F, T, E, C, O>(&self, fut: F, classify: C) -> RunFuture<'_, F, C>
    where
        F: Future<Output = Result<T, E>>,
        C: Fn(&Result<T, E>) -> O,
        O: Into<Classified>,
    {
        RunFuture {
            breaker: self,
            stage: Stage::Start,
            classify,
            fut,
        }
    }

    /// [`run`](Self::run) under a per-call timeout (feature `tokio`; needs a tokio runtime with
    /// time enabled).
    ///
    /// A call that does not finish within `timeout` is dropped, recorded as
    /// [`FailureKind::Timeout`](crate::FailureKind::Timeout) (so a timed-out probe reopens the
    /// breaker rather than holding its slot) and returned as [`CallError::TimedOut`].
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call), plus [`CallError::TimedOut`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CallError, CircuitBreaker, Outcome, State};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let breaker = CircuitBreaker::builder().failure_threshold(1).build().unwrap();
    /// let hung = std::future::pending::<Result<(), ()>>();
    /// let answer = breaker.run_with_timeout(Duration::from_millis(200), hung, |_| Outcome::Success).await;
    /// assert_eq!(answer, Err(CallError::TimedOut(Duration::from_millis(200))));
    /// assert_eq!(breaker.state(), State::Open);
    /// # });
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn run_with_timeout<F, T, E, O>(
        &self,
        timeout: Duration,
        fut: F,
        classify: impl Fn(&Result<T, E>) -> O,
    ) -> Result<T, CallError<E>>
    where
        F: Future<Output = Result<T, E>>,
        O: Into<Classified>,
    {
        let permit = self.try_acquire().map_err(CallError::Blocked)?;
        let started = self.start_timing(permit.times_call());
        match tokio::time::timeout(timeout, fut).await {
            Ok(result) => {
                let outcome = classify(&result).into().outcome();
                permit.record_elapsed_if(outcome, self.timed_since(started));
                result.map_err(CallError::Inner)
            }
            Err(_elapsed) => {
                permit.record_elapsed_if(
                    crate::classify::Outcome::Failure(crate::classify::FailureKind::Timeout),
                    self.timed_since(started),
                );
                Err(CallError::TimedOut(timeout))
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The future [`CircuitBreaker::run`] returns: asks the breaker on its first poll, then polls
    /// the call, then classifies and records its result.
    ///
    /// Dropping it mid-call drops the permit unrecorded. Like every future, it must not be polled
    /// again after it has completed (it panics).
    #[must_use = "futures do nothing unless polled"]
    pub struct RunFuture<'a, F, C> {
        breaker: &'a CircuitBreaker,
        stage: Stage<'a>,
        classify: C,
        #[pin]
        fut: F,
    }
}

enum Stage<'a> {
    Start,
    /// The permit, and the clock's reading when the call began if calls are timed.
    Admitted(Permit<'a>, Option<u64>),
    Done,
}

impl<F, C> fmt::Debug for RunFuture<'_, F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match self.stage {
            Stage::Start => "start",
            Stage::Admitted(..) => "admitted",
            Stage::Done => "done",
        };
        f.debug_struct("RunFuture")
            .field("stage", &stage)
            .finish_non_exhaustive()
    }
}

impl<'a, F, C, T, E, O> Future for RunFuture<'a, F, C>
where
    F: Future<Output = Result<T, E>>,
    C: Fn(&Result<T, E>) -> O,
    O: Into<Classified>,
{
    type Output = Result<T, CallError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.stage {
            Stage::Start => match this.breaker.try_acquire() {
                Ok(permit) => {
                    let started = this.breaker.start_timing(permit.times_call());
                    *this.stage = Stage::Admitted(permit, started);
                }
                Err(blocked) => {
                    *this.stage = Stage::Done;
                    return Poll::Ready(Err(CallError::Blocked(blocked)));
                }
            },
            Stage::Admitted(..) => {}
            Stage::Done => panic!("`RunFuture` polled after completion"),
        }
        let result = ready!(this.fut.poll(cx));
        if let Stage::Admitted(permit, started) = core::mem::replace(this.stage, Stage::Done) {
            let elapsed = this.breaker.timed_since(started);
            permit.record_elapsed_if((this.classify)(&result).into().outcome(), elapsed);
        }
        Poll::Ready(result.map_err(CallError::Inner))
    }
}
