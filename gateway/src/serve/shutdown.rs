//! Serving until a shutdown signal, then a graceful shutdown: stop accepting, drain what is in
//! flight up to a limit, end the MCP sessions.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::app::HttpApp;
use super::tls::TlsServer;

/// How long [`serve`] waits for its connections to close once the MCP sessions are ended: a
/// connection whose client reads nothing more may hold its socket open.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` until `shutdown` completes, then shuts down gracefully:
///
/// 1. the listener is closed (new connections are refused) and idle connections are closed;
/// 2. requests in flight may finish, for at most the app's [`HttpOptions::drain`]; MCP's
///    standalone streams, which last as long as their sessions, are not waited for;
/// 3. every MCP session is ended ([`HttpApp::sessions`] is cancelled): its streams close and
///    the calls still running are cancelled;
/// 4. it returns once the connections have closed, or at most 1 s later.
///
/// It returns at most about the drain limit and 1 s after `shutdown` completes.
///
/// [`HttpOptions::drain`]: super::HttpOptions::drain
///
/// # Errors
///
/// The listener's I/O errors, as `axum::serve` reports them.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use rmcp::ServerHandler;
/// use toolbreaker_gateway::serve::{HttpApp, HttpOptions, serve};
///
/// #[derive(Clone)]
/// struct Nothing;
/// impl ServerHandler for Nothing {}
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let options = HttpOptions::new(listener.local_addr().unwrap());
/// let status = Arc::new(|| serde_json::json!({"upstreams": []}));
/// let app = HttpApp::new(&options, || Ok(Nothing), status, None).unwrap();
/// let sessions = app.sessions();
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = tokio::spawn(serve(listener, app, async move { stopped.await.ok(); }));
/// stop.send(()).unwrap();
/// server.await.unwrap().unwrap();
/// assert!(sessions.is_cancelled());
/// # }
/// ```
pub async fn serve(
    listener: TcpListener,
    app: HttpApp,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_on(no_delay(listener), app, shutdown).await
}

/// [`serve`] in TLS: each connection `listener` accepts is served once its TLS handshake with
/// `tls` is done (within [`HANDSHAKE_TIMEOUT`](super::HANDSHAKE_TIMEOUT); handshakes run side
/// by side, and one that fails is logged and dropped). The same graceful shutdown.
///
/// # Errors
///
/// As [`serve`].
pub async fn serve_tls(
    listener: TcpListener,
    tls: &TlsServer,
    app: HttpApp,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    // Through a `TapIo` (touching nothing) as the plain listener is, which is how axum tells
    // the handlers the peer's address.
    fn untouched<T>(_: &mut T) {}
    let listener = axum::serve::ListenerExt::tap_io(
        tls.listener(listener),
        untouched as fn(&mut tokio_rustls::server::TlsStream<tokio::net::TcpStream>),
    );
    serve_on(listener, app, shutdown).await
}

/// [`serve`] on any of axum's listeners.
async fn serve_on<L>(
    listener: L,
    app: HttpApp,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
    for<'a> SocketAddr: Connected<IncomingStream<'a, L>>,
{
    let (router, sessions, in_flight, drain) = app.into_parts();
    let (told, on_told) = oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        let _ = told.send(());
    };
    let mut server = pin!(
        // The peer's address is what the per-client session cap counts by.
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>()
        )
        .with_graceful_shutdown(signal)
        .into_future()
    );
    // Serving, until the signal (axum stops accepting on the same signal).
    tokio::select! {
        result = &mut server => {
            sessions.cancel();
            return result;
        }
        _ = on_told => {}
    }
    tracing::info!(
        in_flight = in_flight.count(),
        ?drain,
        "shutting down: draining"
    );
    // Draining.
    tokio::select! {
        result = &mut server => {
            sessions.cancel();
            return result;
        }
        drained = tokio::time::timeout(drain, in_flight.idle()) => {
            if drained.is_err() {
                tracing::warn!(
                    in_flight = in_flight.count(),
                    "drain limit reached: cancelling the requests still in flight"
                );
            }
        }
    }
    // Ending the sessions, then waiting for the connections to close.
    sessions.cancel();
    match tokio::time::timeout(CLOSE_GRACE, server).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!("connections still open after the sessions ended; returning anyway");
            Ok(())
        }
    }
}

/// A future that completes on the first SIGINT or SIGTERM (on other platforms than Unix,
/// Ctrl-C), for [`serve`]'s `shutdown`. The handlers are installed by this call, so a signal
/// that arrives before the future is first polled is not lost; once installed they stay for
/// the process's life (a second signal no longer ends it at once).
///
/// # Errors
///
/// A signal handler cannot be installed.
///
/// # Panics
///
/// Called outside a Tokio runtime.
///
/// # Examples
///
/// ```
/// use std::future::Future;
/// use std::task::{Context, Waker};
/// use toolbreaker_gateway::serve::shutdown_signal;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let shutdown = shutdown_signal().unwrap(); // give it to `serve`
/// let mut shutdown = std::pin::pin!(shutdown);
/// // No signal yet.
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(shutdown.as_mut().poll(&mut cx).is_pending());
/// # }
/// ```
pub fn shutdown_signal() -> io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            let name = tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            };
            tracing::info!(signal = name, "shutdown signal received");
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!(signal = "ctrl-c", "shutdown signal received");
            } else {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// `listener`, its connections with `TCP_NODELAY`: an answer streamed in small writes (MCP's
/// SSE events) goes out at once, instead of waiting on the client's delayed ACK (about 40 ms a
/// request with Nagle's algorithm on).
/// (Its type is named: axum tells a peer's address, `ConnectInfo`, through a `TapIo`.)
fn no_delay(
    listener: TcpListener,
) -> axum::serve::TapIo<TcpListener, fn(&mut tokio::net::TcpStream)> {
    fn set(tcp: &mut tokio::net::TcpStream) {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
    }
    axum::serve::ListenerExt::tap_io(listener, set as fn(&mut tokio::net::TcpStream))
}

#[cfg(test)]
mod tests {
    use axum::serve::Listener;

    use super::*;

    /// Every accepted connection has `TCP_NODELAY` (without it each streamed answer waited
    /// about 40 ms for the client's delayed ACK).
    #[tokio::test]
    async fn accepted_connections_have_no_delay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = no_delay(listener);
        let connect = tokio::net::TcpStream::connect(addr);
        let ((accepted, _), _client) = tokio::join!(listener.accept(), connect);
        assert!(accepted.nodelay().unwrap());
    }
}
