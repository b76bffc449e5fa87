//! Serving one client on stdin and stdout (`--stdio`), as Claude Desktop starts an MCP server.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, ReadBuf};
use tokio::sync::{Mutex, oneshot};

use super::jsonrpc::{Refusal, bad_params, sort_unreadable, too_long};

/// The longest line (one message) read from the client, in bytes: 16 MiB, rmcp's limit on a
/// line of stdio and on an HTTP response's event.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

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
/// A line that is not a message is answered on `output` with JSON-RPC's error for it, and
/// serving goes on: `-32700` (Parse error, `id` null) for a line that is not JSON, `-32600`
/// (Invalid Request) for JSON that is not a JSON-RPC 2.0 request, notification or response (a
/// number, an array: MCP has no batches) or a line over [`MAX_LINE_BYTES`], `-32602` (Invalid
/// params) for a request whose params do not fit its method; its `id` the request's when it
/// can be read, `null` otherwise. A bad notification is not answered (JSON-RPC answers no
/// notification). Each is logged at warn with its cause, capped (never the line itself), at
/// most once per cause every 10 s.
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
        running = handler.serve(Lines::new(input, output)) => running.map_err(io::Error::other)?,
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

/// rmcp's transport of newline-delimited JSON-RPC, but a line that is not a message the
/// handler can read is answered with JSON-RPC's error for it (rmcp drops a line that is not
/// JSON, unanswered). Each message written is one whole line: the writer is shared, under a
/// lock, by the handler's messages and these answers.
struct Lines<R, W> {
    read: BufReader<R>,
    /// The line read so far: a read cancelled mid-line (`receive` is polled in a `select!`)
    /// leaves its bytes here for the next.
    line: Vec<u8>,
    /// Skipping the rest of a line over [`MAX_LINE_BYTES`] (already answered).
    discarding: bool,
    write: Arc<Mutex<Option<W>>>,
}

/// What one read of a line ended with.
enum LineRead {
    /// A whole line is in `line`.
    Line,
    /// A line over the limit, dropped.
    TooLong,
    /// The input ended.
    End,
    Failed(io::Error),
}

/// What a line holds.
enum Message {
    Read(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to do (a blank line, a notification that cannot be read).
    Skip,
    Refused(Refusal),
}

impl<R: AsyncRead + Unpin, W> Lines<R, W> {
    fn new(read: R, write: W) -> Self {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(Some(write))),
        }
    }

    /// Reads up to the end of a line into `line`, never holding more than [`MAX_LINE_BYTES`]
    /// of it; cancel-safe (what was consumed from the reader is in `line`).
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (taken, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) => available,
                    Err(error) => return LineRead::Failed(error),
                };
                if available.is_empty() {
                    return LineRead::End;
                }
                let newline = available.iter().position(|&byte| byte == b'\n');
                let taken = newline.map_or(available.len(), |at| at + 1);
                if !self.discarding {
                    if self.line.len().saturating_add(taken) > MAX_LINE_BYTES {
                        self.line.clear();
                        self.discarding = true;
                    } else {
                        self.line.extend_from_slice(&available[..taken]);
                    }
                }
                (taken, newline.is_some())
            };
            self.read.consume(taken);
            if !ended {
                continue;
            }
            if std::mem::take(&mut self.discarding) {
                return LineRead::TooLong;
            }
            return LineRead::Line;
        }
    }
}

/// What `line` (one line, its newline included) holds.
fn message_of(line: &[u8]) -> Message {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.trim_ascii().is_empty() {
        return Message::Skip;
    }
    // A known method whose params rmcp's type cannot read: rmcp would take it for a method
    // of its own ("method not found").
    if let Some(refusal) = bad_params(line, false) {
        return Message::Refused(refusal);
    }
    match serde_json::from_slice(line) {
        Ok(message) => Message::Read(Box::new(message)),
        Err(_) => {
            let refusal = sort_unreadable(line);
            if refusal.is_notification() {
                tracing::debug!("stdio: dropped a notification whose params cannot be read");
                Message::Skip
            } else {
                Message::Refused(refusal)
            }
        }
    }
}

/// Writes `line` (newline included) whole, under the writer's lock.
async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<W>>,
    line: &[u8],
) -> io::Result<()> {
    let mut write = write.lock().await;
    let Some(write) = write.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    write.write_all(line).await?;
    write.flush().await
}

impl<R, W> Lines<R, W>
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Answers a line with `refusal`, logged; written in a task of its own, so that a
    /// cancelled `receive` cannot cut the answer short.
    fn answer(&self, refusal: &Refusal) {
        refusal.log();
        let mut line = refusal.json().into_bytes();
        line.push(b'\n');
        let write = Arc::clone(&self.write);
        tokio::spawn(async move {
            let _ = write_line(&write, &line).await;
        });
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            write_line(&write, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::TooLong => {
                    self.answer(&too_long(MAX_LINE_BYTES));
                    continue;
                }
                LineRead::End => return None,
                LineRead::Failed(error) => {
                    tracing::error!(%error, "stdio: cannot read the client's input");
                    return None;
                }
            }
            let message = message_of(&self.line);
            self.line.clear();
            match message {
                Message::Read(message) => return Some(*message),
                Message::Skip => {}
                Message::Refused(refusal) => self.answer(&refusal),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> Option<(i32, serde_json::Value)> {
        match message_of(line.as_bytes()) {
            Message::Refused(refusal) => {
                let answer: serde_json::Value = serde_json::from_str(&refusal.json()).unwrap();
                Some((
                    answer["error"]["code"].as_i64().unwrap() as i32,
                    answer["id"].clone(),
                ))
            }
            _ => None,
        }
    }

    #[test]
    fn each_kind_of_bad_line_gets_its_error() {
        use serde_json::json;
        assert_eq!(refused("garbage\n"), Some((-32700, json!(null))));
        assert_eq!(refused("{\"a\":\n"), Some((-32700, json!(null))));
        assert_eq!(refused("[1,2]\n"), Some((-32600, json!(null))));
        assert_eq!(refused("5\n"), Some((-32600, json!(null))));
        let no_version = r#"{"id":3,"method":"ping"}"#;
        assert_eq!(refused(no_version), Some((-32600, json!(3))));
        let bad = r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{}}"#;
        assert_eq!(refused(bad), Some((-32602, json!("x"))));
        for skipped in [
            "\n",
            "  \r\n",
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#,
        ] {
            assert!(
                matches!(message_of(skipped.as_bytes()), Message::Skip),
                "{skipped:?}"
            );
        }
        let ping = "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n";
        assert!(matches!(message_of(ping.as_bytes()), Message::Read(_)));
    }
}
