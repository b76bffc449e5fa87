//! Serving one client on stdin and stdout (`--stdio`), as Claude Desktop starts an MCP server.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use rmcp::{ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// Serves `handler` to the one client on this process's stdin and stdout, as [`serve_io`]
/// does.
///
/// When both are pipes (as an MCP client starts a stdio server) they are read and written
/// without blocking (rmcp's `stdio_pipes`), so nothing is left reading stdin once this returns
/// and the runtime shuts down at once. Otherwise (a terminal, a file, another platform than
/// Linux) stdin is read on Tokio's blocking pool, whose read cannot be cancelled: after a
/// shutdown, dropping the runtime may wait for a line of input, so the binary should end the
/// process (or shut the runtime down with a timeout) once this returns.
///
/// # Errors
///
/// As [`serve_io`].
///
/// # Panics
///
/// Called outside a Tokio runtime with I/O enabled.
///
/// # Examples
///
/// ```no_run
/// use rmcp::ServerHandler;
/// use toolbreaker_gateway::serve::{serve_stdio, shutdown_signal};
///
/// #[derive(Clone)]
/// struct Nothing;
/// impl ServerHandler for Nothing {}
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// // Until the client closes stdin, SIGINT or SIGTERM.
/// serve_stdio(Nothing, shutdown_signal()?).await
/// # }
/// ```
pub async fn serve_stdio<S: ServerHandler>(
    handler: S,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let (input, output) = rmcp::transport::stdio_pipes();
    serve_io(handler, input, output, shutdown).await
}

/// Serves `handler` to the one client that writes newline-delimited JSON-RPC to `input` and
/// reads it from `output`, until the client closes `input` (MCP's way for a client to end a
/// stdio server) or `shutdown` completes. The handler's calls still running then are
/// cancelled.
///
/// # Errors
///
/// The handshake failed: `input` ended, or sent something other than `initialize`, before the
/// session began (an `io::Error` with rmcp's reason); or the serving task panicked.
///
/// # Examples
///
/// ```
/// use rmcp::{ServerHandler, ServiceExt};
/// use toolbreaker_gateway::serve::serve_io;
///
/// #[derive(Clone)]
/// struct Nothing;
/// impl ServerHandler for Nothing {}
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (client_end, server_end) = tokio::io::duplex(64 * 1024);
/// let (input, output) = tokio::io::split(server_end);
/// let server = tokio::spawn(serve_io(Nothing, input, output, std::future::pending()));
/// let client = ().serve(client_end).await.unwrap();
/// assert!(client.peer_info().is_some(), "the handshake is done");
/// client.cancel().await.unwrap(); // closes the server's input
/// server.await.unwrap().unwrap();
/// # }
/// ```
pub async fn serve_io<S, R, W>(
    handler: S,
    input: R,
    output: W,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()>
where
    S: ServerHandler,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (closed, on_close) = oneshot::channel();
    let input = EndOfInput {
        input,
        closed: Some(closed),
    };
    let mut shutdown = pin!(shutdown);
    let running = tokio::select! {
        running = handler.serve((input, output)) => running.map_err(io::Error::other)?,
        () = &mut shutdown => return Ok(()),
    };
    // rmcp lets a closed transport's handlers run for a while before it cancels them; a closed
    // input is the client gone, so its calls are cancelled at once.
    let cancel = running.cancellation_token();
    let mut waiting = pin!(running.waiting());
    let quit = tokio::select! {
        quit = &mut waiting => quit,
        _ = on_close => {
            cancel.cancel();
            waiting.await
        }
        () = &mut shutdown => {
            tracing::info!("stdio: shutting down");
            cancel.cancel();
            waiting.await
        }
    };
    quit.map_err(io::Error::other)?;
    Ok(())
}

/// Input that says when it has ended: the first read that returns no bytes (end of file) or an
/// error sends on `closed`.
struct EndOfInput<R> {
    input: R,
    closed: Option<oneshot::Sender<()>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let asked = buf.remaining() > 0;
        let polled = Pin::new(&mut self.input).poll_read(cx, buf);
        let ended = match &polled {
            Poll::Ready(Ok(())) => asked && buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended && let Some(closed) = self.closed.take() {
            let _ = closed.send(());
        }
        polled
    }
}
