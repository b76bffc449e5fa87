//! The requests in flight, for the drain of a graceful shutdown: a request counts from when it
//! arrives until its response body has been sent or dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use tokio::sync::watch;

/// How many requests are in flight.
#[derive(Clone)]
pub(crate) struct InFlight(Arc<watch::Sender<usize>>);

impl InFlight {
    /// None yet.
    pub(crate) fn new() -> InFlight {
        InFlight(Arc::new(watch::Sender::new(0)))
    }

    /// One more, until the returned guard is dropped.
    fn enter(&self) -> Entered {
        self.0.send_modify(|count| *count += 1);
        Entered(self.0.clone())
    }

    /// How many now.
    pub(crate) fn count(&self) -> usize {
        *self.0.borrow()
    }

    /// Completes when none is in flight.
    pub(crate) async fn idle(&self) {
        let mut count = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = count.wait_for(|&count| count == 0).await;
    }
}

/// One request in flight.
struct Entered(Arc<watch::Sender<usize>>);

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count -= 1);
    }
}

/// A response body that keeps `held` (a place, a count) until it is done or dropped: what the
/// request holds lasts as long as its answer is streamed.
pub(super) struct HeldBy<G> {
    pub(super) inner: Body,
    pub(super) _held: G,
}

impl<G: Send + Unpin + 'static> http_body::Body for HeldBy<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Counts every request in flight but MCP's standalone stream (a `GET` of `mcp_path`: a
/// session's stream of server-to-client messages, which lasts as long as the session, so a
/// drain does not wait for it; ending the sessions ends it).
pub(crate) async fn track(
    State((in_flight, mcp_path)): State<(InFlight, &'static str)>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::GET && request.uri().path() == mcp_path {
        return next.run(request).await;
    }
    let entered = in_flight.enter();
    let response = next.run(request).await;
    response.map(|inner| {
        Body::new(HeldBy {
            inner,
            _held: entered,
        })
    })
}
