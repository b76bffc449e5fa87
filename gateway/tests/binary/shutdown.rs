//! Graceful shutdown of the binary: SIGTERM ends the gateway with exit code 0, and its stdio
//! upstream's process with it, whether it serves HTTP or one client on stdio.

use std::path::Path;
use std::process::ExitStatus;

use rmcp::ServiceExt;

use crate::common::{self, Client};
use crate::mcp::{Service, call, text, tools_when};
use crate::process::{
    Gateway, Outcome, STEP, TempFile, check, collect_lines, gateway_command, runs, send_signal,
    within,
};
use crate::upstream::{LINGER, PID_FILE, stdio_section};

/// A config with one stdio upstream, `local`, that outlives the end of its stdin (only the
/// gateway ending it ends it) and writes its pid to the first file.
fn lingering_upstream() -> Result<(TempFile, TempFile), String> {
    let pid_file = TempFile::new("pid", "")?;
    let pid_path = pid_file.path().to_str().ok_or("a path that is not UTF-8")?;
    let config = stdio_section("local", &[(PID_FILE, pid_path), (LINGER, "1")])?;
    Ok((pid_file, TempFile::new("toml", &config)?))
}

fn utf8(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))
}

/// Once `local`'s tools are listed and one call went through: the upstream's pid.
async fn serving_child(
    handler: &Client,
    service: &Service,
    pid_file: &Path,
) -> Result<u32, String> {
    tools_when(
        handler,
        service,
        &[
            "local.ask",
            "local.crash",
            "local.echo",
            "local.fail",
            "local.getenv",
        ],
    )
    .await?;
    let echoed = call(service, "local.echo", "up").await?;
    check(text(&echoed) == "up", format!("{echoed:?}"))?;
    let child: u32 = std::fs::read_to_string(pid_file)
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("the child's pid file: {e}"))?;
    check(runs(child), format!("the stdio upstream {child} runs"))?;
    Ok(child)
}

/// The gateway exited 0, and the upstream `child` ends.
async fn both_ended(status: ExitStatus, stderr: &[String], child: u32) -> Outcome {
    check(
        status.code() == Some(0),
        format!(
            "SIGTERM ends the gateway with {status}:\n{}",
            stderr.join("\n")
        ),
    )?;
    let ended = tokio::time::timeout(STEP, async {
        while runs(child) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    check(
        ended.is_ok(),
        format!("the stdio upstream {child} still runs after the gateway exited"),
    )
}

pub async fn sigterm_ends_the_http_gateway_with_code_0_and_its_stdio_child() -> Outcome {
    let (pid_file, config) = lingering_upstream()?;
    let args = ["--config", utf8(config.path())?, "--log", "warn"];
    let mut gateway = Gateway::start(&args).await?;
    let (handler, service) = common::client(&gateway.url).await;
    let child = serving_child(&handler, &service, pid_file.path()).await?;
    // With the client's session still open.
    gateway.signal("TERM")?;
    let (status, stderr) = gateway.exit().await?;
    both_ended(status, &stderr, child).await
}

pub async fn sigterm_ends_the_stdio_gateway_with_code_0_and_its_stdio_child() -> Outcome {
    let (pid_file, config) = lingering_upstream()?;
    let args = ["--stdio", "--config", utf8(config.path())?, "--log", "warn"];
    let mut gateway = gateway_command(&args)
        .spawn()
        .map_err(|e| format!("cannot start the gateway: {e}"))?;
    let (Some(stdout), Some(stdin), Some(stderr)) = (
        gateway.stdout.take(),
        gateway.stdin.take(),
        gateway.stderr.take(),
    ) else {
        return Err("no stdio pipes".into());
    };
    let stderr = collect_lines(stderr);
    let handler = Client::default();
    let service = within("the handshake", handler.clone().serve((stdout, stdin)))
        .await?
        .map_err(|e| format!("the handshake: {e}"))?;
    let child = serving_child(&handler, &service, pid_file.path()).await?;
    // With the client's stdin still open.
    send_signal(gateway.id().ok_or("the gateway has exited")?, "TERM")?;
    let status = within("the gateway's exit", gateway.wait())
        .await?
        .map_err(|e| e.to_string())?;
    let stderr = within("stderr to close", stderr)
        .await?
        .map_err(|e| e.to_string())?;
    both_ended(status, &stderr, child).await
}
