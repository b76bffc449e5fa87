//! The gateway binary with MCP's own TypeScript SDK as its client (the scripts in `clients/`,
//! pinned by its lockfile: `@modelcontextprotocol/sdk` 1.x, which speaks 2025-11-25, and its v2
//! line `@modelcontextprotocol/client`, which speaks 2026-07-28 too):
//!
//! - progress and sampling relayed through the gateway;
//! - each SDK in each era it speaks (`flows.mjs`): discovery or `initialize`, a call, sampling
//!   and elicitation (as `input_required` in 2026-07-28), progress, a call cancelled through an
//!   `AbortSignal` (the upstream sees it cancelled), a breaker opened by failures and the
//!   blocked answer;
//! - a stdio upstream that crashes and comes back;
//! - a reload (SIGHUP) that adds an upstream while a client is connected, and one that a
//!   2026-07-28 client hears of through `subscriptions/listen`;
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
    let installed = ["sdk", "client"].iter().all(|package| {
        dir.join("node_modules/@modelcontextprotocol")
            .join(package)
            .is_dir()
    });
    if installed {
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
            .map_err(|e| e.to_string())?;
        let Some(first) = first else {
            // How it ended (its exit status or the signal that ended it), for the report.
            let status = tokio::time::timeout(STEP, child.wait()).await;
            return Err(format!("the gateway exited before it listened: {status:?}"));
        };
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

    /// Whether it still runs, or how it ended (for the report of a failure).
    fn state(&mut self) -> String {
        match self.child.try_wait() {
            Ok(None) => "running".to_owned(),
            Ok(Some(status)) => format!("exited ({status})"),
            Err(e) => format!("unknown ({e})"),
        }
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

/// [`common::Up`] with two tools more:
/// - `wait` reports progress (so the client knows the upstream holds the call), then answers
///   only when the call is cancelled (counted in `cancelled`) or, never cancelled, after
///   [`STEP`];
/// - `confirm` asks the client to confirm (elicitation: as `input_required` to a 2026-07-28
///   client, the answer coming back with the retry; as a request to a 2025-11-25 session), and
///   answers the action and `ok` it got, as in `accept ok=true`.
#[derive(Clone)]
struct Extended {
    up: common::Up,
    cancelled: std::sync::Arc<tokio::sync::watch::Sender<usize>>,
}

impl Extended {
    /// Served over Streamable HTTP: its URL, and the count of `wait` calls cancelled.
    /// `legacy`: speaking only 2025-11-25 and the revisions before it (no `server/discover`),
    /// so it asks for input with requests of its own, which the gateway turns into
    /// `input_required` (with a sealed `requestState`) for a 2026-07-28 client.
    async fn serve(legacy: bool) -> (String, tokio::sync::watch::Receiver<usize>) {
        let (cancelled, seen) = tokio::sync::watch::channel(0);
        let cancelled = std::sync::Arc::new(cancelled);
        let extended = move || Extended {
            up: common::Up { crashable: false },
            cancelled: cancelled.clone(),
        };
        let url = if legacy {
            common::serve(move || common::Only {
                server: extended(),
                versions: common::LEGACY,
            })
            .await
        } else {
            common::serve(extended).await
        };
        (url, seen)
    }

    async fn wait(
        &self,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        if let Some(token) = context.meta.get_progress_token() {
            let _ = context
                .peer
                .notify_progress(rmcp::model::ProgressNotificationParam::new(token, 0.0))
                .await;
        }
        tokio::select! {
            () = context.ct.cancelled() => {
                self.cancelled.send_modify(|n| *n += 1);
                Err(rmcp::ErrorData::internal_error("cancelled", None))
            }
            () = tokio::time::sleep(STEP) => Ok(rmcp::model::CallToolResult::success(vec![
                rmcp::model::ContentBlock::text("never cancelled"),
            ])
            .into()),
        }
    }

    async fn confirm(
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let invalid = |e: serde_json::Error| rmcp::ErrorData::invalid_params(e.to_string(), None);
        let params: rmcp::model::ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "form",
            "message": "Proceed?",
            "requestedSchema": {
                "type": "object",
                "properties": { "ok": { "type": "boolean" } },
                "required": ["ok"],
            },
        }))
        .map_err(invalid)?;
        let answer = if common::modern(&context) {
            match request
                .input_responses
                .as_ref()
                .and_then(|answers| answers.get("confirm"))
            {
                Some(answer) => serde_json::from_value::<rmcp::model::ElicitResult>(answer.clone())
                    .map_err(invalid)?,
                None => {
                    let ask = rmcp::model::InputRequest::Elicitation(
                        rmcp::model::ElicitRequest::new(params),
                    );
                    return Ok(rmcp::model::InputRequiredResult::from_input_requests(
                        [("confirm".to_owned(), ask)].into(),
                    )
                    .into());
                }
            }
        } else {
            let asked =
                rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
            match context.peer.send_request(asked).await {
                Ok(rmcp::model::ClientResult::ElicitResult(answer)) => answer,
                other => {
                    return Err(rmcp::ErrorData::internal_error(
                        format!("no answer to the elicitation: {other:?}"),
                        None,
                    ));
                }
            }
        };
        let action = serde_json::to_value(&answer.action).map_err(invalid)?;
        let ok = answer.content.as_ref().and_then(|c| c.get("ok")).cloned();
        Ok(
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(format!(
                "{} ok={}",
                action.as_str().unwrap_or_default(),
                ok.unwrap_or_default()
            ))])
            .into(),
        )
    }
}

impl rmcp::ServerHandler for Extended {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        self.up.get_info()
    }

    async fn list_tools(
        &self,
        params: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let mut listed = self.up.list_tools(params, context).await?;
        let schema = std::sync::Arc::new(serde_json::Map::from_iter([(
            "type".to_owned(),
            "object".into(),
        )]));
        listed.tools.push(rmcp::model::Tool::new(
            "wait",
            "answers once cancelled",
            schema.clone(),
        ));
        listed.tools.push(rmcp::model::Tool::new(
            "confirm",
            "asks the client to confirm",
            schema,
        ));
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        match request.name.as_ref() {
            "wait" => self.wait(context).await,
            "confirm" => Extended::confirm(request, context).await,
            _ => self.up.call_tool(request, context).await,
        }
    }
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

/// `flows.mjs` with `client` (`v2-modern`, `v2-auto`, `v2-legacy` or `v1`: which SDK, in which
/// era) through the gateway, in front of `up` (an [`Extended`] speaking `up_era`: 2026-07-28, or
/// 2025-11-25 and before) and `flaky` (2026-07-28), whose breaker opens after
/// [`FLAKY_THRESHOLD`] failures; the upstream sees the call that the client cancelled
/// cancelled, and only `flaky`'s breaker is open.
async fn flows(client: &str, up_era: &str) -> Result<serde_json::Value, String> {
    let (up, mut cancelled) = Extended::serve(up_era != "2026-07-28").await;
    let flaky = common::serve(|| common::Up { crashable: false }).await;
    let config = format!(
        "{}{}failure_threshold = {FLAKY_THRESHOLD}\ncooldown_ms = 600000\n",
        http_upstream("up", "up.", &up),
        http_upstream("flaky", "flaky.", &flaky)
    );
    let mut gateway = Gateway::start(&config, &[]).await?;
    let threshold = FLAKY_THRESHOLD.to_string();
    let out = node(
        "flows.mjs",
        &[&gateway.url, client, "up.", "flaky.", &threshold],
    )
    .await
    .map_err(|why| format!("{why}\nthe gateway: {}", gateway.state()))?;
    tokio::time::timeout(STEP, cancelled.wait_for(|n| *n >= 1))
        .await
        .map_err(|_| format!("the upstream never saw `wait` cancelled: {out}"))?
        .map_err(|e| e.to_string())?;
    check(
        out["sampled"] == 1
            && out["elicited"] == 1
            && out["confirmed"] == "accept ok=true"
            && out["blocked"] == "blocked"
            && out["dependency"] == "flaky",
        format!("{out}"),
    )?;
    let status: serde_json::Value = reqwest::get(gateway.endpoint("/status"))
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    let upstream = |name: &str| {
        status["upstreams"]
            .as_array()
            .and_then(|all| all.iter().find(|u| u["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    let (up, flaky) = (upstream("up"), upstream("flaky"));
    check(
        flaky["state"] == "open" && up["state"] == "closed",
        format!("only flaky's breaker is open: {status}"),
    )?;
    check(
        up["last_failure"].is_null(),
        format!("the cancelled call is no failure of `up`: {status}"),
    )?;
    check(
        up["era"] == up_era && flaky["era"] == "2026-07-28",
        format!("the gateway speaks {up_era} to `up`, 2026-07-28 to `flaky`: {status}"),
    )?;
    if out["era"] == "modern" {
        check(
            status["sessions"] == 0,
            format!("a 2026-07-28 client holds no session: {status}"),
        )?;
    }
    Ok(out)
}

/// Failures in a row that open `flaky`'s breaker in [`flows`].
const FLAKY_THRESHOLD: u32 = 3;

async fn the_v2_sdk_speaks_2026_07_28_through_the_gateway() -> Result<(), String> {
    let out = flows("v2-modern", "2026-07-28").await?;
    check(
        out["era"] == "modern"
            && out["negotiated"] == "2026-07-28"
            && out["methods"][0] == "server/discover",
        format!("{out}"),
    )
}

async fn the_v2_sdk_in_2026_07_28_answers_a_2025_11_25_upstream() -> Result<(), String> {
    // The upstream's requests reach the client as `input_required` with the gateway's sealed
    // `requestState`, which the SDK's retry echoes.
    let out = flows("v2-modern", "2025-11-25").await?;
    check(
        out["era"] == "modern" && out["requestState"] == true,
        format!("{out}"),
    )
}

async fn the_v1_sdk_through_the_gateway_to_a_2025_11_25_upstream() -> Result<(), String> {
    let out = flows("v1", "2025-11-25").await?;
    check(
        out["era"] == "legacy" && out["requestState"] == false,
        format!("{out}"),
    )
}

async fn the_v2_sdk_negotiates_2026_07_28_with_the_gateway() -> Result<(), String> {
    let out = flows("v2-auto", "2026-07-28").await?;
    check(
        out["era"] == "modern" && out["negotiated"] == "2026-07-28",
        format!("{out}"),
    )
}

async fn the_v2_sdk_speaks_2025_11_25_through_the_gateway() -> Result<(), String> {
    let out = flows("v2-legacy", "2026-07-28").await?;
    check(
        out["era"] == "legacy" && out["methods"][0] == "initialize",
        format!("{out}"),
    )
}

async fn the_v1_sdk_speaks_2025_11_25_through_the_gateway() -> Result<(), String> {
    let out = flows("v1", "2026-07-28").await?;
    check(out["methods"][0] == "initialize", format!("{out}"))
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
    reload_while("reload.mjs").await
}

async fn a_reload_reaches_a_2026_07_28_listener() -> Result<(), String> {
    reload_while("listen.mjs").await
}

/// `script` (`reload.mjs`, or `listen.mjs` through `subscriptions/listen`) lists the tools and
/// says so on stderr; a reload then adds upstream `b`, and the script exits 0 once told of it
/// and `b.echo` answers.
async fn reload_while(script: &str) -> Result<(), String> {
    let (a, b) = (
        common::serve(|| common::Up { crashable: false }).await,
        common::serve(|| common::Up { crashable: false }).await,
    );
    let gateway = Gateway::start(&http_upstream("a", "a.", &a), &[]).await?;
    let mut client = Command::new("node")
        .args([script, &gateway.url, "b.echo"])
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
    // The rest of its stderr, for the report of a failure.
    let rest = tokio::spawn(async move {
        let mut rest = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        rest
    });
    if !(listed.starts_with("listed ") && listed.contains("a.echo")) {
        let rest = tokio::time::timeout(STEP, rest)
            .await
            .unwrap_or(Ok(String::new()));
        return Err(format!(
            "{script}'s first line: {listed}\n{}",
            rest.unwrap_or_default()
        ));
    }
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
    let rest = tokio::time::timeout(STEP, rest)
        .await
        .unwrap_or(Ok(String::new()))
        .unwrap_or_default();
    check(
        out.status.success(),
        format!("{script}: {}{rest}", String::from_utf8_lossy(&out.stdout)),
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
    let tests: [(&str, Test); 15] = [
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
        ("the_v2_sdk_speaks_2026_07_28_through_the_gateway", || {
            Box::pin(the_v2_sdk_speaks_2026_07_28_through_the_gateway())
        }),
        (
            "the_v2_sdk_in_2026_07_28_answers_a_2025_11_25_upstream",
            || Box::pin(the_v2_sdk_in_2026_07_28_answers_a_2025_11_25_upstream()),
        ),
        (
            "the_v1_sdk_through_the_gateway_to_a_2025_11_25_upstream",
            || Box::pin(the_v1_sdk_through_the_gateway_to_a_2025_11_25_upstream()),
        ),
        ("the_v2_sdk_negotiates_2026_07_28_with_the_gateway", || {
            Box::pin(the_v2_sdk_negotiates_2026_07_28_with_the_gateway())
        }),
        ("the_v2_sdk_speaks_2025_11_25_through_the_gateway", || {
            Box::pin(the_v2_sdk_speaks_2025_11_25_through_the_gateway())
        }),
        ("the_v1_sdk_speaks_2025_11_25_through_the_gateway", || {
            Box::pin(the_v1_sdk_speaks_2025_11_25_through_the_gateway())
        }),
        ("a_stdio_upstream_that_crashes_comes_back", || {
            Box::pin(a_stdio_upstream_that_crashes_comes_back())
        }),
        (
            "a_reload_adds_an_upstream_while_a_client_is_connected",
            || Box::pin(a_reload_adds_an_upstream_while_a_client_is_connected()),
        ),
        ("a_reload_reaches_a_2026_07_28_listener", || {
            Box::pin(a_reload_reaches_a_2026_07_28_listener())
        }),
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
    let chosen_count = chosen.len();
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
    println!("clients: {} passed, {failed} failed", chosen_count - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
