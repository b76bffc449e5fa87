//! The gateway's start: signals from the first instant (SIGINT and SIGTERM stop a start under
//! way and end its children; a SIGHUP is kept until the config in force is known), the port
//! bound before any upstream starts, a host name to listen on, and `/readyz`.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::common;
use crate::mcp::{call, text, tools_when};
use crate::process::{
    Gateway, Lines, Outcome, STEP, TempFile, check, gateway_command, runs, send_signal, within,
};
use crate::upstream::{
    Counted, LINGER, PID_FILE, SILENT, SILENT_LINE, STDERR_LINE, silent_pid, stdio_section,
};

fn utf8(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}

/// Waits for the process `pid` to end (a zombie counts as ended).
async fn ended(pid: u32, what: &str) -> Outcome {
    let gone = tokio::time::timeout(STEP, async {
        while runs(pid) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    check(gone.is_ok(), format!("{what} {pid} still runs"))
}

/// A config whose one upstream, `silent`, is a child that never answers `initialize` and
/// ignores its stdin; `extra` is added to its section.
fn silent_config(extra: &str) -> Result<TempFile, String> {
    let section = stdio_section("silent", &[(SILENT, "1")])?;
    TempFile::new("toml", &format!("{section}{extra}"))
}

/// SIGTERM or SIGINT while the gateway waits for an upstream's `initialize` ends it at once
/// with code 0 and a log line, and ends the children it started: the one it waits for and one
/// already connected, both ignoring their stdin (only the gateway can end them). It used to
/// die of SIGTERM with no line and leave them running, and to go on serving after SIGINT.
pub async fn a_stop_signal_during_start_ends_the_gateway_and_its_child() -> Outcome {
    for signal in ["TERM", "INT"] {
        let pid_file = TempFile::new("pid", "")?;
        let pid_path = utf8(pid_file.path())?;
        let connected = stdio_section("local", &[(PID_FILE, pid_path), (LINGER, "1")])?;
        let config = silent_config(&connected)?;
        let args = ["--config", utf8(config.path())?, "--listen", "127.0.0.1:0"];
        let mut gateway = gateway_command(&args)
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?;
        let mut stdout = gateway.stdout.take().ok_or("no stdout")?;
        let mut stderr = Lines::read(gateway.stderr.take().ok_or("no stderr")?);
        // Both children have started (`local` connects), and the gateway waits for `silent`'s
        // `initialize`.
        let child = silent_pid(&stderr.until(SILENT_LINE).await?)?;
        stderr.until("connected upstream=local").await?;
        let local: u32 = std::fs::read_to_string(pid_file.path())
            .map_err(|e| e.to_string())?
            .trim()
            .parse()
            .map_err(|e| format!("local's pid file: {e}"))?;
        check(runs(child), format!("the silent child {child} runs"))?;
        check(runs(local), format!("the connected child {local} runs"))?;
        send_signal(gateway.id().ok_or("the gateway has exited")?, signal)?;
        let status = within("the gateway's exit", gateway.wait())
            .await?
            .map_err(|e| e.to_string())?;
        let mut printed = String::new();
        within("stdout to close", stdout.read_to_string(&mut printed))
            .await?
            .map_err(|e| e.to_string())?;
        let logged = stderr.all().await?;
        check(
            status.code() == Some(0),
            format!(
                "SIG{signal} during the start ends the gateway with {status}:\n{}",
                logged.join("\n")
            ),
        )?;
        check(
            logged.iter().any(|l| l.contains("stopped during start")),
            format!(
                "SIG{signal}: no line says the start stopped:\n{}",
                logged.join("\n")
            ),
        )?;
        check(
            printed.is_empty(),
            format!("SIG{signal}: the gateway went on to serve: {printed}"),
        )?;
        ended(child, &format!("after SIG{signal}, the silent child")).await?;
        ended(local, &format!("after SIG{signal}, the connected child")).await?;
    }
    Ok(())
}

/// SIGHUP while the gateway waits for an upstream's `initialize` does not end it (the default
/// action did, exit 129): it is kept, and the file reloaded once the gateway has started.
pub async fn a_hangup_during_start_is_a_reload_once_started() -> Outcome {
    // The start waits 5 s at most for the silent child: the SIGHUP comes within it.
    let config = silent_config("per_call_timeout_ms = 5000\n")?;
    let args = ["--config", utf8(config.path())?, "--listen", "127.0.0.1:0"];
    let mut child = gateway_command(&args)
        .spawn()
        .map_err(|e| format!("cannot start the gateway: {e}"))?;
    let mut stderr = Lines::read(child.stderr.take().ok_or("no stderr")?);
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let pid = child.id().ok_or("the gateway has exited")?;
    stderr.until(SILENT_LINE).await?;
    send_signal(pid, "HUP")?;
    let mut stdout = Lines::read(stdout);
    let listening = stdout.until("listening on").await;
    let reloaded = match listening {
        Ok(_) => stderr.until("reloaded").await.map(drop),
        Err(error) => Err(error),
    };
    let alive = matches!(child.try_wait(), Ok(None));
    if alive {
        send_signal(pid, "TERM")?;
    }
    let status = within("the gateway's exit", child.wait())
        .await?
        .map_err(|e| e.to_string())?;
    let logged = stderr.all().await?;
    let logged = logged.join("\n");
    check(
        alive,
        format!("SIGHUP ended the gateway ({status}):\n{logged}"),
    )?;
    reloaded.map_err(|e| format!("after SIGHUP during the start: {e}\n{logged}"))?;
    check(
        status.code() == Some(0),
        format!("SIGTERM then ends it with {status}:\n{logged}"),
    )
}

/// A port in use is reported (exit 1, naming the address) before any upstream is started: no
/// child ran. It used to be said only after every upstream's start, children started.
pub async fn a_busy_port_is_reported_before_any_upstream_starts() -> Outcome {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = busy.local_addr().map_err(|e| e.to_string())?.to_string();
    let pid_file = TempFile::new("pid", "")?;
    let pid_path = utf8(pid_file.path())?;
    let config = TempFile::new("toml", &stdio_section("local", &[(PID_FILE, pid_path)])?)?;
    let args = ["--config", utf8(config.path())?, "--listen", &addr];
    let out = within(
        "the gateway to refuse the port",
        gateway_command(&args)
            .spawn()
            .map_err(|e| format!("cannot start the gateway: {e}"))?
            .wait_with_output(),
    )
    .await?
    .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        out.status.code() == Some(1),
        format!("a busy port exits with 1, not {}:\n{stderr}", out.status),
    )?;
    let started = std::fs::read_to_string(pid_file.path()).map_err(|e| e.to_string())?;
    check(
        started.is_empty() && !stderr.contains(STDERR_LINE),
        format!("an upstream child was started (pid {started:?}):\n{stderr}"),
    )?;
    check(
        stderr.contains(&format!("--listen {addr}: cannot listen")),
        format!("the error names the address: {stderr}"),
    )
}

/// `--listen localhost:0`: the name is resolved, the gateway serves on it. It used to be a
/// usage error (IP:PORT only).
pub async fn a_host_name_is_a_listen_address() -> Outcome {
    let (up, _calls) = Counted::serve().await;
    let config = TempFile::new("toml", &format!("[upstreams.up]\nurl = \"{up}\"\n"))?;
    let args = ["--config", utf8(config.path())?, "--listen", "localhost:0"];
    let (mut gateway, stderr) = Gateway::start_watched(&args).await?;
    let port = gateway
        .url
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.strip_suffix("/mcp"))
        .ok_or_else(|| format!("no port in {}", gateway.url))?
        .to_owned();
    // As a client that was told `localhost` connects: `Host: localhost:PORT`.
    let url = format!("http://localhost:{port}/mcp");
    let (handler, service) = common::client(&url).await;
    tools_when(&handler, &service, &["up.ask", "up.echo", "up.fail"]).await?;
    let echoed = call(&service, "up.echo", "by name").await?;
    check(text(&echoed) == "by name", format!("{echoed:?}"))?;
    drop(service);
    gateway.signal("TERM")?;
    let (status, _) = gateway.exit().await?;
    let logged = stderr.all().await?;
    check(
        status.code() == Some(0),
        format!("{status}:\n{}", logged.join("\n")),
    )
}

/// `/readyz` of the gateway `gateway`: its status code and JSON body.
async fn readyz(gateway: &Gateway) -> Result<(u16, Value), String> {
    let response = within("/readyz", reqwest::get(gateway.endpoint("/readyz")))
        .await?
        .map_err(|e| format!("/readyz: {e}"))?;
    let code = response.status().as_u16();
    let body = response.json().await.map_err(|e| format!("/readyz: {e}"))?;
    Ok((code, body))
}

/// Rewrites `file` with `config`, sends SIGHUP and waits for the reload's line.
async fn reload(gateway: &Gateway, stderr: &mut Lines, file: &TempFile, config: &str) -> Outcome {
    std::fs::write(file.path(), config).map_err(|e| e.to_string())?;
    gateway.signal("HUP")?;
    stderr.until("reloaded").await.map(drop)
}

/// `/readyz` is 503 naming the required upstreams not connected, 200 once none is; with none
/// required, 200 while one upstream at least is connected, 503 naming them all when none is.
/// It follows the config in force (reloads). `/healthz` stays 200 throughout.
pub async fn readyz_follows_the_required_upstreams() -> Outcome {
    let (up, _calls) = Counted::serve().await;
    // A port where nothing listens.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    let up = format!("[upstreams.up]\nurl = \"{up}\"\n");
    let down = format!("[upstreams.down]\nurl = \"http://{closed}/mcp\"\n");
    let file = TempFile::new("toml", &format!("{up}{down}required = true\n"))?;
    let args = ["--config", utf8(file.path())?, "--listen", "127.0.0.1:0"];
    let (mut gateway, mut stderr) = Gateway::start_watched(&args).await?;
    let checked = async {
        let (code, body) = readyz(&gateway).await?;
        check(
            code == 503 && body == serde_json::json!({"ready": false, "not_connected": ["down"]}),
            format!("a required upstream down: {code} {body}"),
        )?;
        let health = within("/healthz", reqwest::get(gateway.endpoint("/healthz")))
            .await?
            .map_err(|e| e.to_string())?;
        check(health.status() == 200, "/healthz is liveness: 200")?;
        // `up` required instead: it is connected.
        reload(
            &gateway,
            &mut stderr,
            &file,
            &format!("{up}required = true\n{down}"),
        )
        .await?;
        let (code, body) = readyz(&gateway).await?;
        check(
            code == 200 && body == serde_json::json!({"ready": true}),
            format!("the required upstream connected: {code} {body}"),
        )?;
        // None required, one connected.
        reload(&gateway, &mut stderr, &file, &format!("{up}{down}")).await?;
        let (code, body) = readyz(&gateway).await?;
        check(
            code == 200,
            format!("one upstream connected: {code} {body}"),
        )?;
        // None required, none connected.
        reload(&gateway, &mut stderr, &file, &down).await?;
        let (code, body) = readyz(&gateway).await?;
        check(
            code == 503 && body == serde_json::json!({"ready": false, "not_connected": ["down"]}),
            format!("no upstream connected: {code} {body}"),
        )
    }
    .await;
    gateway.signal("TERM")?;
    gateway.exit().await?;
    let logged = stderr.all().await?;
    checked.map_err(|e| format!("{e}\n{}", logged.join("\n")))
}
