//! The processes the tests run: the gateway binary (its stderr captured line by line), a
//! `redis-server`, files the gateway reads, and what a test waits for.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest any one step may take (a machine busy with other builds is slow).
pub const STEP: Duration = Duration::from_secs(120);

/// What a test answers: `Err` says what was wrong.
pub type Outcome = Result<(), String>;

/// `Ok` when `ok`, else `Err(what)`.
pub fn check(ok: bool, what: impl Into<String>) -> Outcome {
    if ok { Ok(()) } else { Err(what.into()) }
}

/// `future`, or an error naming `what` when it takes longer than [`STEP`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(STEP, future)
        .await
        .map_err(|_| format!("{what}: not within {STEP:?}"))
}

/// A file in the temporary directory, removed when dropped.
pub struct TempFile(PathBuf);

impl TempFile {
    /// A new file named for this process and a counter, ending in `.EXT`, holding `contents`.
    pub fn new(ext: &str, contents: &str) -> Result<TempFile, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "toolbreaker-gateway-binary-{}-{}.{ext}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TempFile(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Reads `stream` line by line until it ends; the lines.
pub fn collect_lines(stream: impl AsyncRead + Unpin + Send + 'static) -> JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        let mut all = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            all.push(line);
        }
        all
    })
}

/// A stream's lines as they come (a process's stderr), for a test to wait on one.
pub struct Lines {
    coming: mpsc::UnboundedReceiver<String>,
    /// Every line read so far.
    pub seen: Vec<String>,
}

impl Lines {
    /// Reads `stream` line by line until it ends.
    pub fn read(stream: impl AsyncRead + Unpin + Send + 'static) -> Lines {
        let (send, coming) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            coming,
            seen: Vec::new(),
        }
    }

    /// Waits for the next line that holds `words`; that line. An error, with every line seen,
    /// when the stream ends first or none comes within [`STEP`].
    pub async fn until(&mut self, words: &str) -> Result<String, String> {
        let (coming, seen) = (&mut self.coming, &mut self.seen);
        let found = tokio::time::timeout(STEP, async {
            while let Some(line) = coming.recv().await {
                seen.push(line.clone());
                if line.contains(words) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => Ok(line),
            Ok(None) => Err(format!(
                "the stream ended with no line holding `{words}`:\n{}",
                self.seen.join("\n")
            )),
            Err(_) => Err(format!(
                "no line holding `{words}` within {STEP:?}:\n{}",
                self.seen.join("\n")
            )),
        }
    }

    /// Every line, once the stream has ended (within [`STEP`]).
    pub async fn all(mut self) -> Result<Vec<String>, String> {
        let (coming, seen) = (&mut self.coming, &mut self.seen);
        within("the stream to end", async {
            while let Some(line) = coming.recv().await {
                seen.push(line);
            }
        })
        .await?;
        Ok(self.seen)
    }
}

/// The gateway binary, started with `args`, stdin, stdout and stderr piped; stderr is read
/// all along (so a chatty log never blocks it). Killed when dropped.
pub fn gateway_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbreaker-gateway"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// A running gateway binary serving HTTP: killed when dropped.
pub struct Gateway {
    child: Child,
    stderr: Option<JoinHandle<Vec<String>>>,
    /// Its `/mcp` URL, as its first line on stdout says.
    pub url: String,
}

impl Gateway {
    /// Starts the binary with `args` and `--listen 127.0.0.1:0`; returns once it has printed
    /// where it listens.
    pub async fn start(args: &[&str]) -> Result<Gateway, String> {
        let mut child = gateway_command(args)
            .args(["--listen", "127.0.0.1:0"])
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?;
        let stderr = child.stderr.take().map(collect_lines);
        Gateway::listening(child, stderr).await
    }

    /// Starts the binary with `args` (a `--listen` among them); returns once it has printed
    /// where it listens, with its stderr as it comes (and none for [`exit`](Self::exit)).
    pub async fn start_watched(args: &[&str]) -> Result<(Gateway, Lines), String> {
        let mut child = gateway_command(args)
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?;
        let stderr = Lines::read(child.stderr.take().ok_or("no stderr")?);
        let gateway = Gateway::listening(child, None).await;
        match gateway {
            Ok(gateway) => Ok((gateway, stderr)),
            Err(error) => Err(format!("{error}\n{}", stderr.all().await?.join("\n"))),
        }
    }

    /// `child`, once it has printed where it listens.
    async fn listening(
        mut child: Child,
        stderr: Option<JoinHandle<Vec<String>>>,
    ) -> Result<Gateway, String> {
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut gateway = Gateway {
            child,
            stderr,
            url: String::new(),
        };
        let mut lines = BufReader::new(stdout).lines();
        let first = within("the gateway's address", lines.next_line())
            .await?
            .map_err(|e| e.to_string())?;
        let Some(first) = first else {
            let (status, stderr) = gateway.exit().await?;
            return Err(format!(
                "the gateway exited ({status}) before it listened:\n{}",
                stderr.join("\n")
            ));
        };
        gateway.url = first
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first line: {first}"))?
            .to_owned();
        // Nothing more is expected on stdout; what comes is read (and dropped) so that the
        // gateway never blocks on it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(gateway)
    }

    pub fn pid(&self) -> Result<u32, String> {
        self.child
            .id()
            .ok_or_else(|| "the gateway has exited".into())
    }

    /// `path` on the gateway's address, such as `/status`.
    pub fn endpoint(&self, path: &str) -> String {
        self.url.replace("/mcp", path)
    }

    /// Its `/status` JSON.
    pub async fn status(&self) -> Result<serde_json::Value, String> {
        let response = reqwest::get(self.endpoint("/status"))
            .await
            .map_err(|e| format!("/status: {e}"))?;
        response.json().await.map_err(|e| format!("/status: {e}"))
    }

    /// Its `/status` once `ready` holds of it; an error naming `what` when it does not within
    /// [`STEP`].
    pub async fn status_when(
        &self,
        what: &str,
        ready: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<serde_json::Value, String> {
        let mut last = serde_json::Value::Null;
        let waited = tokio::time::timeout(STEP, async {
            loop {
                last = self.status().await?;
                if ready(&last) {
                    return Ok::<_, String>(last.clone());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        waited.unwrap_or_else(|_| Err(format!("{what}: not within {STEP:?}; /status: {last}")))
    }

    /// Sends it `signal` (`TERM`, `HUP`).
    pub fn signal(&self, signal: &str) -> Outcome {
        send_signal(self.pid()?, signal)
    }

    /// Waits for it to exit: its exit status and every line it wrote on stderr.
    pub async fn exit(&mut self) -> Result<(ExitStatus, Vec<String>), String> {
        let status = within("the gateway's exit", self.child.wait())
            .await?
            .map_err(|e| e.to_string())?;
        let stderr = match self.stderr.take() {
            Some(lines) => within("the gateway's stderr to close", lines)
                .await?
                .map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        Ok((status, stderr))
    }
}

/// Sends `signal` (`TERM`, `HUP`) to the process `pid`.
pub fn send_signal(pid: u32, signal: &str) -> Outcome {
    let sent = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .map_err(|e| format!("kill: {e}"))?;
    check(sent.success(), format!("kill -{signal} {pid}: {sent}"))
}

/// Whether the process `pid` still runs: it exists and is not a zombie (one that has ended
/// and waits to be reaped counts as ended).
pub fn runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `PID (COMM) STATE ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// A real `redis-server` on a free loopback port with no persistence; killed when dropped.
pub struct Redis {
    _child: Child,
    port: u16,
}

impl Redis {
    /// Starts one and returns once it accepts connections (it says so on stdout).
    pub async fn start() -> Result<Redis, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start redis-server ({e}): fleet mode is tested against a real Redis \
                     server; install it with `apt-get install -y redis-server`"
                )
            })?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = within("redis-server to accept connections", async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Ready to accept connections") {
                    return true;
                }
            }
            false
        })
        .await?;
        check(ready, "redis-server exited before it accepted connections")?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Redis {
            _child: child,
            port,
        })
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}
