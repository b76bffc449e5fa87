//! [`CircuitBreakerService`]: a service behind a breaker, and how it answers readiness.

use core::fmt;
use core::mem;
use core::task::{Context, Poll};
use std::sync::Arc;

use ::tower::{BoxError, Service};

use super::future::ResponseFuture;
use crate::breaker::CircuitBreaker;
use crate::breaker::OwnedPermit;
use crate::classify::Classify;
use crate::types::Blocked;

/// A [`Service`] behind a [`CircuitBreaker`]: requests the breaker does not admit fail at once
/// with a [`Blocked`] error and never reach the inner service; the results of the others are
/// classified by `C` and recorded. Usually made by a
/// [`CircuitBreakerLayer`](super::CircuitBreakerLayer).
///
/// Its error is a [`BoxError`]: either the [`Blocked`] value of a rejection (check with
/// `error.downcast_ref::<Blocked>()`) or the inner service's error, boxed. How readiness works
/// is [below](#readiness).
///
/// # Readiness
///
/// The breaker is looked at in [`poll_ready`](::tower::Service::poll_ready), before the inner
/// service:
///
/// - **Blocked** (open, isolated, or half-open with a probe in flight): `poll_ready` returns
///   `Ready(Ok(()))` at once, whatever the inner service's readiness (a service that would never
///   be ready, a full connection pool), and the next `call` returns the ready error future
///   without calling the inner service. So callers waiting on readiness are never held up by a
///   dependency whose breaker would refuse them.
/// - **Would admit** (closed, or half-open with the probe slot free): the inner service's
///   readiness is polled first, and the permit is taken only once it is ready. While the inner
///   service is pending nothing is taken from the breaker, however often the service is polled:
///   no admission is counted, no probe slot is held (another client of the dependency that can
///   send may take it, and no probe's lease runs out while it waits), nothing is written. When the
///   inner service is ready, the permit is kept in the service, as tower's contract has a
///   successful `poll_ready` reserve capacity for one call, `Ready(Ok(()))` is returned and `call`
///   moves the permit into the response future; if the breaker has moved on meanwhile (the slot
///   taken by another caller, a trip), the next `call` is rejected instead. A breaker that trips
///   while the inner service is pending is noticed when the inner service next wakes the task.
/// - **The inner service's readiness fails**: the error is classified as a call's error would be
///   and recorded (a connection that cannot be made says the dependency is unhealthy), when the
///   breaker admits it, then returned boxed.
///
/// Each `poll_ready` that finds no permit held asks the breaker again, so a rejection reflects the
/// breaker at the last poll. `call` without a successful `poll_ready` breaks tower's contract; here
/// the breaker is asked in `call` instead, and the inner service is called without its own
/// `poll_ready` if admitted.
///
/// A ready service holds its permit until `call` or until it is dropped. The reservation is
/// checked against the breaker (one load) at the next `poll_ready` and at `call`: if the breaker
/// has moved on since (a trip, a probe's verdict, a probe lease run out), the stale permit is
/// dropped and the breaker asked again, so a reservation never sends a request the breaker would
/// no longer admit, and never makes a second probe. Keep the gap short all the same, as
/// `ServiceExt::ready` followed by `call` does: a probe's permit held past the probe timeout
/// counts as a failed probe. A clone of a service never carries the permit its original holds: it
/// starts unpolled. Dropping a ready service, or a response future before it completes, drops the
/// permit unrecorded: no outcome is recorded, and a probe's slot is released for the next request.
///
/// # Examples
///
/// The breaker is asked before the inner service, so an open breaker makes the service ready
/// even when the inner service never will be:
///
/// ```
/// use std::convert::Infallible;
/// use std::sync::Arc;
/// use std::task::{Context, Poll, Waker};
/// use toolbreaker::tower::CircuitBreakerService;
/// use toolbreaker::{Blocked, CircuitBreaker, FailureKind, Outcome};
/// use tower::Service;
///
/// /// A service that is never ready: a pool with no free connection.
/// struct Saturated;
///
/// impl Service<()> for Saturated {
///     type Response = ();
///     type Error = Infallible;
///     type Future = std::future::Ready<Result<(), Infallible>>;
///
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Pending
///     }
///
///     fn call(&mut self, _: ()) -> Self::Future {
///         unreachable!("never ready, so never called")
///     }
/// }
///
/// let breaker = Arc::new(CircuitBreaker::builder().failure_threshold(1).build()?);
/// let classify = |_: &Result<(), Infallible>| Outcome::Success;
/// let mut service = CircuitBreakerService::new(Saturated, Arc::clone(&breaker), classify);
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(service.poll_ready(&mut cx).is_pending(), "closed: waits for the inner service");
///
/// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
/// assert!(matches!(service.poll_ready(&mut cx), Poll::Ready(Ok(()))), "open: ready at once");
/// let rejected = std::pin::pin!(service.call(()));
/// let Poll::Ready(Err(error)) = rejected.poll(&mut cx) else { panic!("ready with an error") };
/// assert!(error.is::<Blocked>());
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
pub struct CircuitBreakerService<S, C> {
    inner: S,
    breaker: Arc<CircuitBreaker>,
    classifier: Arc<C>,
    admission: Admission,
}

/// What the last `poll_ready` decided, for the next `call`.
#[derive(Debug)]
enum Admission {
    /// No `poll_ready` since the last `call` (or ever), or the inner service was not ready.
    Unpolled,
    /// Admitted, and the inner service is ready: the permit the next call takes.
    Admitted(OwnedPermit),
    /// Not admitted: the next call fails with this.
    Blocked(Blocked),
}

impl<S, C> CircuitBreakerService<S, C> {
    /// `inner` behind `breaker`, its results classified by `classifier` (any [`Classify`]
    /// implementation, closures included).
    pub fn new(inner: S, breaker: Arc<CircuitBreaker>, classifier: C) -> Self {
        Self::from_shared(inner, breaker, Arc::new(classifier))
    }

    pub(crate) fn from_shared(inner: S, breaker: Arc<CircuitBreaker>, classifier: Arc<C>) -> Self {
        CircuitBreakerService {
            inner,
            breaker,
            classifier,
            admission: Admission::Unpolled,
        }
    }

    /// The breaker guarding this service.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    /// The classifier of this service's results.
    pub fn classifier(&self) -> &C {
        &self.classifier
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service; a permit held from `poll_ready` is dropped unrecorded.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, C, Request> Service<Request> for CircuitBreakerService<S, C>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match mem::replace(&mut self.admission, Admission::Unpolled) {
            // Ready before, and not called since: the reservation stands while the breaker has
            // not moved on (a trip, a verdict, a lease run out) since it was made.
            Admission::Admitted(permit) if permit.is_current() => {
                return self.poll_inner_with(permit, cx);
            }
            // Otherwise ask again: a cooldown may have passed since a rejection, or the
            // reservation is stale (dropping it releases a probe slot it held).
            Admission::Admitted(_) | Admission::Unpolled | Admission::Blocked(_) => {}
        }
        // The breaker first: an open breaker, or one whose probe is in flight, must not wait on
        // the inner service's readiness. Asked without taking anything.
        if !self.breaker.would_admit() {
            match self.breaker.try_acquire_owned() {
                Err(blocked) => {
                    self.admission = Admission::Blocked(blocked);
                    return Poll::Ready(Ok(()));
                }
                // Admitted after all: the cooldown ended between the two looks.
                Ok(permit) => return self.poll_inner_with(permit, cx),
            }
        }
        // The breaker would admit: the inner service next, and the permit only once it is ready,
        // so that waiting takes nothing from the breaker (no admission counted, no probe slot
        // held, no write) however often it is polled.
        match self.inner.poll_ready(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => {
                self.admission = match self.breaker.try_acquire_owned() {
                    Ok(permit) => Admission::Admitted(permit),
                    // The breaker moved on meanwhile (another caller took the probe slot, or
                    // tripped it): the next call is rejected.
                    Err(blocked) => Admission::Blocked(blocked),
                };
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => {
                let result: Result<S::Response, S::Error> = Err(error);
                // Recorded as a call's error would be, when the breaker admits it now.
                if let Ok(permit) = self.breaker.try_acquire() {
                    permit.record(self.classifier.classify(&result));
                }
                Poll::Ready(result.map(|_| ()).map_err(Into::into))
            }
        }
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Readiness counts once: whatever happens, the next call needs a new `poll_ready`.
        let permit = match mem::replace(&mut self.admission, Admission::Unpolled) {
            Admission::Admitted(permit) if permit.is_current() => permit,
            Admission::Blocked(blocked) => return ResponseFuture::rejected(blocked),
            // Called without `poll_ready`, or with a reservation the breaker has moved on from
            // since: ask the breaker now rather than send what it would no longer admit.
            Admission::Admitted(_) | Admission::Unpolled => {
                match self.breaker.try_acquire_owned() {
                    Ok(permit) => permit,
                    Err(blocked) => return ResponseFuture::rejected(blocked),
                }
            }
        };
        // Timed from before the inner service's `call`, which may do work of its own.
        let started = self.breaker.start_timing(permit.times_call());
        ResponseFuture::called(
            self.inner.call(request),
            permit,
            Arc::clone(&self.classifier),
            started,
        )
    }
}

impl<S, C> CircuitBreakerService<S, C> {
    /// Poll the inner service's readiness holding `permit`: kept as the reservation when ready,
    /// given the readiness error's outcome when that fails, and dropped unrecorded when the inner
    /// service is not ready after all (it was, or the breaker had only just begun to admit).
    fn poll_inner_with<Request>(
        &mut self,
        permit: OwnedPermit,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), BoxError>>
    where
        S: Service<Request>,
        S::Error: Into<BoxError>,
        C: Classify<S::Response, S::Error>,
    {
        match self.inner.poll_ready(cx) {
            Poll::Ready(Ok(())) => {
                self.admission = Admission::Admitted(permit);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => {
                let result: Result<S::Response, S::Error> = Err(error);
                permit.record(self.classifier.classify(&result));
                Poll::Ready(result.map(|_| ()).map_err(Into::into))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

// By hand: a clone must not carry the permit (or the rejection) its original holds, and the
// classifier is shared, so `C: Clone` is not needed.
impl<S: Clone, C> Clone for CircuitBreakerService<S, C> {
    fn clone(&self) -> Self {
        CircuitBreakerService {
            inner: self.inner.clone(),
            breaker: Arc::clone(&self.breaker),
            classifier: Arc::clone(&self.classifier),
            admission: Admission::Unpolled,
        }
    }
}

impl<S: fmt::Debug, C> fmt::Debug for CircuitBreakerService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerService")
            .field("inner", &self.inner)
            .field("breaker", &self.breaker)
            .field("admission", &self.admission)
            .finish_non_exhaustive()
    }
}
