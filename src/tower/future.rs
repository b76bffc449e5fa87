//! [`ResponseFuture`], the future of a [`CircuitBreakerService`](super::CircuitBreakerService).

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, ready};
use std::sync::Arc;

use ::tower::BoxError;
use pin_project_lite::pin_project;

use crate::breaker::OwnedPermit;
use crate::classify::Classify;
use crate::types::Blocked;

pin_project! {
    /// The response future of a [`CircuitBreakerService`](super::CircuitBreakerService).
    ///
    /// For an admitted call it polls the inner service's future, classifies the result, records
    /// the outcome on the call's permit and returns the result, the inner error boxed. For a
    /// rejected call it is ready at once with the [`Blocked`] error, and the inner service was
    /// never called.
    ///
    /// Dropping it before it completes (a cancelled request, a timeout layer above giving up)
    /// drops the permit unrecorded: no outcome is recorded, and a probe's slot is released so the
    /// next request becomes the probe.
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<F, C> {
        #[pin]
        state: State<F, C>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, C> {
        // Admitted: the inner call, and what is needed to report how it went. `permit` is taken
        // when the result is recorded.
        Called {
            #[pin]
            fut: F,
            permit: Option<OwnedPermit>,
            classifier: Arc<C>,
            // The breaker's clock when the call began, if its slow-call rule times calls.
            started: Option<u64>,
        },
        // Not admitted; nothing was sent. `blocked` is taken when the future completes.
        Rejected {
            blocked: Option<Blocked>,
        },
    }
}

impl<F, C> ResponseFuture<F, C> {
    /// An admitted call: `started` is the breaker's clock when it began, if it is timed.
    pub(super) fn called(
        fut: F,
        permit: OwnedPermit,
        classifier: Arc<C>,
        started: Option<u64>,
    ) -> Self {
        ResponseFuture {
            state: State::Called {
                fut,
                permit: Some(permit),
                classifier,
                started,
            },
        }
    }

    pub(super) fn rejected(blocked: Blocked) -> Self {
        ResponseFuture {
            state: State::Rejected {
                blocked: Some(blocked),
            },
        }
    }
}

impl<F, C, T, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    C: Classify<T, E>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Called {
                fut,
                permit,
                classifier,
                started,
            } => {
                let result = ready!(fut.poll(cx));
                if let Some(permit) = permit.take() {
                    let elapsed = permit.breaker().timed_since(*started);
                    permit.record_elapsed_if(classifier.classify(&result), elapsed);
                }
                Poll::Ready(result.map_err(Into::into))
            }
            StateProj::Rejected { blocked } => {
                let blocked = blocked
                    .take()
                    .expect("`ResponseFuture` polled after completion");
                Poll::Ready(Err(Box::new(blocked)))
            }
        }
    }
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            State::Called { permit, .. } => f
                .debug_struct("ResponseFuture")
                .field("permit", permit)
                .finish_non_exhaustive(),
            State::Rejected { blocked } => f
                .debug_struct("ResponseFuture")
                .field("blocked", blocked)
                .finish(),
        }
    }
}
