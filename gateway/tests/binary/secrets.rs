//! Values from the environment (`${VAR}`) in a `url`, `command` and `args`, not only in the
//! fields meant for secrets: none reaches stderr (the gateway's lines, rmcp's, a child's
//! stderr relayed) or `/status`; `<redacted>` stands in their place.

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::mpsc;

use crate::process::{Outcome, STEP, TempFile, check, gateway_command, within};
use crate::upstream::STDIO_UPSTREAM;

/// The variable the tests' configs name, and its value: a key no line may show.
pub const VAR: &str = "TOOLBREAKER_TEST_KEY";
pub const KEY: &str = "k3y-from-the-environment-0123";

/// A gateway binary with [`VAR`] set, whose stderr is read as it comes.
pub struct Watched {
    pub child: Child,
    /// Its `/mcp` URL (empty with `--check`).
    pub url: String,
    lines: mpsc::UnboundedReceiver<String>,
    /// Every stderr line read so far.
    pub seen: Vec<String>,
}

impl Watched {
    /// Starts the binary with `args` (and `--listen 127.0.0.1:0`); returns once it listens.
    pub async fn start(args: &[&str]) -> Result<Watched, String> {
        let mut command = gateway_command(args);
        command.args(["--listen", "127.0.0.1:0"]).env(VAR, KEY);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?;
        let lines = read_stderr(&mut child)?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut out = BufReader::new(stdout).lines();
        let first = within("the gateway's address", out.next_line())
            .await?
            .map_err(|e| e.to_string())?
            .ok_or("the gateway exited before it listened")?;
        let url = first
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first line: {first}"))?
            .to_owned();
        tokio::spawn(async move { while let Ok(Some(_)) = out.next_line().await {} });
        Ok(Watched {
            child,
            url,
            lines,
            seen: Vec::new(),
        })
    }

    /// Waits for a stderr line that `wanted` holds of (bounded by [`STEP`]); that line.
    pub async fn line_when(
        &mut self,
        what: &str,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let found = tokio::time::timeout(STEP, async {
            while let Some(line) = self.lines.recv().await {
                self.seen.push(line.clone());
                if wanted(&line) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => Ok(line),
            Ok(None) => Err(format!(
                "{what}: stderr ended; it said:\n{}",
                self.seen.join("\n")
            )),
            Err(_) => Err(format!(
                "{what}: not within {STEP:?}; stderr:\n{}",
                self.seen.join("\n")
            )),
        }
    }

    /// Sends SIGTERM and waits for the exit: every stderr line.
    pub async fn stop(mut self) -> Result<Vec<String>, String> {
        let pid = self.child.id().ok_or("the gateway has exited")?;
        crate::process::send_signal(pid, "TERM")?;
        within("the gateway's exit", self.child.wait())
            .await?
            .map_err(|e| e.to_string())?;
        while let Ok(Some(line)) = within("stderr to close", self.lines.recv()).await {
            self.seen.push(line);
        }
        Ok(self.seen)
    }
}

/// Each line of `child`'s stderr, as it comes.
fn read_stderr(child: &mut Child) -> Result<mpsc::UnboundedReceiver<String>, String> {
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

/// The config: the key in an HTTP upstream's URL path (nothing listens there: every connect
/// fails and is logged), in the args of a stdio child that prints its argv on stderr, and in
/// the command of one that cannot start.
fn config() -> Result<String, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let me = me.to_str().ok_or("this binary's path is not UTF-8")?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "[upstreams.web]\nurl = \"http://{closed}/k/${{{VAR}}}/mcp\"\n\
         [upstreams.child]\ncommand = {me:?}\nargs = [\"--key=${{{VAR}}}\"]\n\
         env = {{ {STDIO_UPSTREAM} = \"1\" }}\n\
         [upstreams.missing]\ncommand = \"/nonexistent/${{{VAR}}}/server\"\n"
    ))
}

pub async fn a_key_from_the_environment_never_reaches_stderr_or_status() -> Outcome {
    let file = TempFile::new("toml", &config()?)?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let mut gateway = Watched::start(&["--config", path, "--log", "debug"]).await?;
    gateway
        .line_when("the child's argv relayed", |l| {
            l.contains("stdio upstream: argv")
        })
        .await?;
    gateway
        .line_when("the missing command's refusal", |l| {
            l.contains("cannot start")
        })
        .await?;
    gateway
        .line_when("the HTTP upstream's refusal", |l| {
            l.contains("cannot connect") && l.contains("upstream=web")
        })
        .await?;
    let status = within(
        "/status",
        reqwest::get(gateway.url.replace("/mcp", "/status")),
    )
    .await?
    .map_err(|e| e.to_string())?
    .text()
    .await
    .map_err(|e| e.to_string())?;
    let stderr = gateway.stop().await?;
    check(
        !status.contains(KEY),
        format!("/status shows the key: {status}"),
    )?;
    let shown: Vec<&String> = stderr.iter().filter(|l| l.contains(KEY)).collect();
    check(
        shown.is_empty(),
        format!("stderr shows the key: {shown:#?}"),
    )?;
    for (what, marker) in [
        ("the child's argv", "--key=<redacted>"),
        (
            "the command",
            "cannot start `/nonexistent/<redacted>/server`",
        ),
        ("the URL", "/k/<redacted>/mcp"),
    ] {
        check(
            stderr.iter().any(|l| l.contains(marker)),
            format!("{what} is not shown redacted ({marker}): {stderr:#?}"),
        )?;
    }
    Ok(())
}
