//! The gateway binary with MCP's own TypeScript SDK as its client (the scripts in `clients/`,
//! `@modelcontextprotocol/sdk` pinned by its lockfile):
//!
//! - progress and sampling relayed through the gateway;
//! - a stdio upstream that crashes and comes back;
//! - a reload (SIGHUP) that adds an upstream while a client is connected;
//! - `/metrics` scraped and parsed;
//! - a request refused without the bearer token.
//!
//! Its own `main` (no libtest): the binary is also the stdio upstream the crash test starts as
//! a child, and it installs the scripts' packages (`npm ci`) once before the tests. Node.js 20
//! and npm must be on `PATH`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Set in a child started by this binary: it serves the test upstream on stdio instead.
const STDIO_UPSTREAM: &str = "TOOLBREAKER_TEST_STDIO_UPSTREAM";
/// Set (to an address) in a child started by this binary: it serves the test upstream over
/// Streamable HTTP there instead.
const HTTP_UPSTREAM: &str = "TOOLBREAKER_TEST_HTTP_UPSTREAM";
/// The longest any one step may take (a machine busy with other builds is slow).
const STEP: Duration = Duration::from_secs(120);

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// `npm ci` in `tests/clients` when its packages are not installed.
fn install_scripts() -> Result<(), String> {
    let dir = scripts();
    if dir.join("node_modules/@modelcontextprotocol/sdk").is_dir() {
        return Ok(());
    }
    let status = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .map_err(|e| {
            format!(
                "npm cannot be run ({e}): install Node.js 20 and npm, then `npm ci --prefix {}`",
                dir.display()
            )
        })?;
    if !status.success() {
        return Err(format!(
            "`npm ci` failed in {}: run it by hand to see why",
            dir.display()
        ));
    }
    Ok(())
}

/// A running gateway binary: killed when dropped.
struct Gateway {
    child: Child,
    url: String,
    config: PathBuf,
}

impl Gateway {
    /// Starts the binary with `config` (TOML) and `extra` flags, on a free loopback port.
    async fn start(config: &str, extra: &[&str]) -> Result<Gateway, String> {
        Gateway::start_with_env(config, extra, &[]).await
    }

    /// [`start`](Self::start), with `env` set for the gateway's process only.
    async fn start_with_env(
        config: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Gateway, String> {
        let path = std::env::temp_dir().join(format!(
            "toolbreaker-gateway-test-{}-{}.toml",
            std::process::id(),
            fastrand_suffix()
        ));
        std::fs::write(&path, config).map_err(|e| e.to_string())?;
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolbreaker-gateway"))
            .arg("--config")
            .arg(&path)
            .args(["--listen", "127.0.0.1:0", "--log", "warn"])
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(STEP, lines.next_line())
            .await
            .map_err(|_| "the gateway printed no address".to_owned())?
            .map_err(|e| e.to_string())?
            .ok_or("the gateway exited before it listened")?;
        let url = first
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first line: {first}"))?
            .to_owned();
        Ok(Gateway {
            child,
            url,
            config: path,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap_or_default()
    }

    fn endpoint(&self, path: &str) -> String {
        self.url.replace("/mcp", path)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.config);
    }
}

fn fastrand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    h.finish()
}

/// Runs `node SCRIPT ARGS` in `tests/clients`; its stdout (one JSON line) when it exits 0.
async fn node(script: &str, args: &[&str]) -> Result<serde_json::Value, String> {
    let run = Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(scripts())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(STEP, run)
        .await
        .map_err(|_| format!("{script} did not finish"))?
        .map_err(|e| format!("node cannot be run ({e}): install Node.js 20"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{script} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_str(stdout.trim()).map_err(|e| format!("{script} printed {stdout}: {e}"))
}

fn http_upstream(name: &str, prefix: &str, url: &str) -> String {
    format!("[upstreams.{name}]\nurl = \"{url}\"\nprefix = \"{prefix}\"\n")
}

async fn progress_and_sampling_are_relayed() -> Result<(), String> {
    let up = common::serve(|| common::Up { crashable: false }).await;
    let gateway = Gateway::start(&http_upstream("up", "up.", &up), &[]).await?;
    let out = node("progress_sampling.mjs", &[&gateway.url, "up.ask"]).await?;
    check(out["sampled"] == 1, format!("{out}"))
}

async fn a_stdio_upstream_that_crashes_comes_back() -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let config = format!(
        "[upstreams.s]\ncommand = {:?}\nenv = {{ {STDIO_UPSTREAM} = \"1\" }}\nprefix = \"s.\"\nfailure_threshold = 2\ncooldown_ms = 200\n",
        me.display().to_string()
    );
    let gateway = Gateway::start(&config, &[]).await?;
    let out = node("crash.mjs", &[&gateway.url, "s.echo", "s.crash"]).await?;
    let status = reqwest::get(gateway.endpoint("/status"))
        .await
        .map_err(|e| e.to_string())?;
    let status: serde_json::Value = status.json().await.map_err(|e| e.to_string())?;
    let upstream = &status["upstreams"][0];
    check(
        upstream["state"] == "closed" && upstream["connected"] == true,
        format!("{status}"),
    )?;
    check(
        upstream["last_failure"] == "connect",
        format!("the crash was a counted connect failure: {status}"),
    )?;
    check(
        out["calls"].as_u64().is_some_and(|n| n >= 1),
        format!("{out}"),
    )
}

async fn a_reload_adds_an_upstream_while_a_client_is_connected() -> Result<(), String> {
    let (a, b) = (
        common::serve(|| common::Up { crashable: false }).await,
        common::serve(|| common::Up { crashable: false }).await,
    );
    let gateway = Gateway::start(&http_upstream("a", "a.", &a), &[]).await?;
    let mut client = Command::new("node")
        .args(["reload.mjs", &gateway.url, "b.echo"])
        .current_dir(scripts())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let stderr = client.stderr.take().ok_or("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let listed = tokio::time::timeout(STEP, lines.next_line())
        .await
        .map_err(|_| "the client did not list".to_owned())?
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    check(
        listed.starts_with("listed ") && listed.contains("a.echo"),
        format!("the client's first line: {listed}"),
    )?;
    let both = format!(
        "{}{}",
        http_upstream("a", "a.", &a),
        http_upstream("b", "b.", &b)
    );
    std::fs::write(&gateway.config, both).map_err(|e| e.to_string())?;
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &gateway.pid().to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    check(hup.success(), "kill -HUP".into())?;
    let out = tokio::time::timeout(STEP, client.wait_with_output())
        .await
        .map_err(|_| "the client never saw b.echo".to_owned())?
        .map_err(|e| e.to_string())?;
    check(
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

async fn metrics_are_scraped_and_parsed() -> Result<(), String> {
    let up = common::serve(|| common::Up { crashable: false }).await;
    let gateway = Gateway::start(&http_upstream("up", "up.", &up), &[]).await?;
    let out = node(
        "metrics.mjs",
        &[&gateway.url, "up.echo", &gateway.endpoint("/metrics"), "up"],
    )
    .await?;
    check(
        out["calls"].as_f64().is_some_and(|n| n >= 1.0),
        format!("{out}"),
    )
}

async fn a_request_without_the_token_is_refused() -> Result<(), String> {
    let up = common::serve(|| common::Up { crashable: false }).await;
    // The child reads the token from this variable; set here, in the parent, for it only.
    let token = format!("t-{}", fastrand_suffix());
    let gateway = Gateway::start_with_env(
        &http_upstream("up", "up.", &up),
        &["--auth-token-env", "TB_TEST_TOKEN"],
        &[("TB_TEST_TOKEN", &token)],
    )
    .await?;
    let out = node("auth.mjs", &[&gateway.url, &token]).await?;
    check(
        out["status"] == 401 && out["refused"] == 2,
        format!("{out}"),
    )
}

/// This binary as an HTTP upstream on `addr`, in a process of its own (killed when dropped).
fn http_upstream_process(addr: std::net::SocketAddr) -> Result<Child, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    Command::new(me)
        .env(HTTP_UPSTREAM, addr.to_string())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())
}

async fn an_http_upstream_that_restarts_is_reconnected_with_a_new_session() -> Result<(), String> {
    let free = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = free.local_addr().map_err(|e| e.to_string())?;
    drop(free);
    let mut upstream = http_upstream_process(addr)?;
    let url = format!("http://{addr}/mcp");
    let config = format!(
        "{}failure_threshold = 2\ncooldown_ms = 200\n",
        http_upstream("up", "up.", &url)
    );
    // The upstream's child may take a moment to listen: the gateway lists it when it can.
    let gateway = Gateway::start(&config, &[]).await?;
    let (_handler, client) = common::client(&gateway.url).await;
    let echo = |text: &str| {
        let mut args = serde_json::Map::new();
        args.insert("text".into(), text.into());
        rmcp::model::CallToolRequestParams::new("up.echo").with_arguments(args)
    };
    let until_ok = |text: &'static str| {
        let client = &client;
        async move {
            for _ in 0..1200 {
                if let Ok(r) = client.call_tool(echo(text)).await
                    && r.is_error != Some(true)
                {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(format!("no answer to `{text}` within 60 s"))
        }
    };
    until_ok("before").await?;
    upstream.kill().await.map_err(|e| e.to_string())?;
    let down = client
        .call_tool(echo("down"))
        .await
        .map_err(|e| e.to_string())?;
    check(
        down.is_error == Some(true),
        format!("a call while it is down: {down:?}"),
    )?;
    let _restarted = http_upstream_process(addr)?;
    // A new process, with none of the old sessions: calls must be answered again.
    until_ok("after").await
}

async fn a_stdio_upstream_sees_its_own_env_and_none_of_the_gateways_secrets() -> Result<(), String>
{
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let config = format!(
        "[upstreams.s]\ncommand = {:?}\nenv = {{ {STDIO_UPSTREAM} = \"1\", PASSED = \"yes\" }}\nprefix = \"s.\"\n",
        me.display().to_string()
    );
    let gateway = Gateway::start_with_env(
        &config,
        &["--auth-token-env", "TB_TEST_TOKEN"],
        &[
            ("TB_TEST_TOKEN", "the-gateways-token"),
            ("TB_GATEWAY_ONLY", "a-secret-of-the-gateway"),
        ],
    )
    .await?;
    let url = gateway.url.clone();
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header("the-gateways-token"),
    );
    use rmcp::ServiceExt;
    let client = ().serve(transport).await.map_err(|e| e.to_string())?;
    let mut seen = Vec::new();
    for name in ["PASSED", "TB_GATEWAY_ONLY", "TB_TEST_TOKEN", "PATH"] {
        let mut args = serde_json::Map::new();
        args.insert("text".into(), name.into());
        let answer = client
            .call_tool(rmcp::model::CallToolRequestParams::new("s.getenv").with_arguments(args))
            .await
            .map_err(|e| e.to_string())?;
        let text = answer
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        seen.push((name, text));
    }
    check(seen[0].1 == "yes", format!("its own env: {seen:?}"))?;
    check(
        seen[1].1 == "<unset>" && seen[2].1 == "<unset>",
        format!("the gateway's secrets: {seen:?}"),
    )?;
    check(
        seen[3].1 != "<unset>",
        format!("PATH is passed on: {seen:?}"),
    )
}

async fn no_credential_reaches_the_log() -> Result<(), String> {
    let free = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let dead = free.local_addr().map_err(|e| e.to_string())?;
    drop(free);
    let config = format!(
        "[upstreams.down]\nurl = \"http://user:PWSECRET77@{dead}/mcp?api_key=QSTOKEN123\"\nheaders = {{ Authorization = \"Bearer ${{TB_HDR}}\" }}\n"
    );
    let path = std::env::temp_dir().join(format!(
        "toolbreaker-gateway-redact-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, config).map_err(|e| e.to_string())?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbreaker-gateway"))
        .arg("--config")
        .arg(&path)
        .args(["--listen", "127.0.0.1:0", "--log", "trace"])
        .env("TB_HDR", "HDRSECRET99")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    // The upstream is listed (and fails) before the gateway listens.
    let _ = tokio::time::timeout(STEP, BufReader::new(stdout).lines().next_line()).await;
    child.start_kill().map_err(|e| e.to_string())?;
    let out = tokio::time::timeout(STEP, child.wait_with_output())
        .await
        .map_err(|_| "the gateway did not end".to_owned())?
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&path);
    let log = String::from_utf8_lossy(&out.stderr);
    for secret in ["QSTOKEN123", "PWSECRET77", "HDRSECRET99"] {
        check(
            !log.contains(secret),
            format!("{secret} is in the log:\n{log}"),
        )?;
    }
    check(
        log.contains("<redacted>"),
        format!("the connection's failure, redacted, is logged:\n{log}"),
    )
}

fn check(ok: bool, what: String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what) }
}

type Test = fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    if std::env::var_os(STDIO_UPSTREAM).is_some() {
        runtime.block_on(common::serve_stdio());
        return ExitCode::SUCCESS;
    }
    if let Some(addr) = std::env::var_os(HTTP_UPSTREAM) {
        let addr = addr.to_string_lossy().into_owned();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .expect("the upstream's port");
            common::serve_on(listener, || common::Up { crashable: false }).await;
            std::future::pending::<()>().await;
        });
        return ExitCode::SUCCESS;
    }
    let tests: [(&str, Test); 8] = [
        ("no_credential_reaches_the_log", || {
            Box::pin(no_credential_reaches_the_log())
        }),
        (
            "a_stdio_upstream_sees_its_own_env_and_none_of_the_gateways_secrets",
            || Box::pin(a_stdio_upstream_sees_its_own_env_and_none_of_the_gateways_secrets()),
        ),
        (
            "an_http_upstream_that_restarts_is_reconnected_with_a_new_session",
            || Box::pin(an_http_upstream_that_restarts_is_reconnected_with_a_new_session()),
        ),
        ("progress_and_sampling_are_relayed", || {
            Box::pin(progress_and_sampling_are_relayed())
        }),
        ("a_stdio_upstream_that_crashes_comes_back", || {
            Box::pin(a_stdio_upstream_that_crashes_comes_back())
        }),
        (
            "a_reload_adds_an_upstream_while_a_client_is_connected",
            || Box::pin(a_reload_adds_an_upstream_while_a_client_is_connected()),
        ),
        ("metrics_are_scraped_and_parsed", || {
            Box::pin(metrics_are_scraped_and_parsed())
        }),
        ("a_request_without_the_token_is_refused", || {
            Box::pin(a_request_without_the_token_is_refused())
        }),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let chosen: Vec<_> = tests
        .iter()
        .filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
        .collect();
    if chosen.is_empty() {
        return ExitCode::SUCCESS;
    }
    if let Err(error) = install_scripts() {
        eprintln!("clients: {error}");
        return ExitCode::FAILURE;
    }
    let mut failed = 0;
    for (name, test) in chosen {
        match runtime.block_on(async { tokio::spawn(test()).await }) {
            Ok(Ok(())) => println!("test {name} ... ok"),
            Ok(Err(why)) => {
                failed += 1;
                println!("test {name} ... FAILED\n{why}");
            }
            Err(panic) => {
                failed += 1;
                println!("test {name} ... FAILED (panicked: {panic})");
            }
        }
    }
    println!("clients: {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
