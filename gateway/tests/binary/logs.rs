//! `--log-format json`: every line the gateway writes on stderr is one JSON object, its
//! stdio upstream's stderr and a refusal to start included.

use serde_json::Value;

use crate::common;
use crate::mcp::{call, tools_when};
use crate::process::{Gateway, Outcome, TempFile, check, gateway_command, within};
use crate::upstream::{Counted, STDERR_LINE, stdio_section};

/// The lines of `stderr` that are not a JSON object.
fn not_json(stderr: &[String]) -> Vec<&String> {
    let object = |line: &String| serde_json::from_str::<Value>(line).is_ok_and(|v| v.is_object());
    stderr.iter().filter(|line| !object(line)).collect()
}

/// Whether a line of `stderr` is an event whose fields (its message among them) hold `words`.
fn logged(stderr: &[String], words: &str) -> bool {
    stderr.iter().any(|line| {
        serde_json::from_str::<Value>(line)
            .is_ok_and(|event| event["fields"].to_string().contains(words))
    })
}

pub async fn every_stderr_line_is_a_json_object() -> Outcome {
    let (up, _calls) = Counted::serve().await;
    let config = format!(
        "[upstreams.up]\nurl = \"{up}\"\n{}",
        stdio_section("local", &[])?
    );
    let file = TempFile::new("toml", &config)?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let args = ["--config", path, "--log", "debug", "--log-format", "json"];
    let mut gateway = Gateway::start(&args).await?;
    let (handler, service) = common::client(&gateway.url).await;
    let all = [
        "local.ask",
        "local.crash",
        "local.echo",
        "local.fail",
        "local.getenv",
        "up.ask",
        "up.echo",
        "up.fail",
    ];
    tools_when(&handler, &service, &all).await?;
    call(&service, "up.echo", "a").await?;
    call(&service, "local.echo", "b").await?;
    call(&service, "up.fail", "").await?;
    gateway.signal("TERM")?;
    let (status, stderr) = gateway.exit().await?;
    drop(service);
    check(
        status.success(),
        format!("the gateway exited with {status}"),
    )?;
    check(stderr.len() > 1, format!("the gateway logged: {stderr:?}"))?;
    let bad = not_json(&stderr);
    check(
        bad.is_empty(),
        format!("stderr lines that are not JSON objects: {bad:?}"),
    )?;
    check(
        logged(&stderr, STDERR_LINE),
        "the stdio upstream's stderr is logged as JSON too",
    )
}

pub async fn a_gateway_that_cannot_start_says_why_in_json() -> Outcome {
    let file = TempFile::new(
        "toml",
        "[upstreams.up]\nurl = \"http://127.0.0.1:9/mcp\"\nretries = 3\n",
    )?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let args = ["--config", path, "--log-format", "json"];
    let gateway = gateway_command(&args)
        .spawn()
        .map_err(|e| format!("cannot start the gateway: {e}"))?;
    let out = within(
        "the gateway to refuse its config",
        gateway.wait_with_output(),
    )
    .await?
    .map_err(|e| e.to_string())?;
    let stderr: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect();
    check(
        out.status.code() == Some(1),
        format!("a bad config file exits with 1, not {}", out.status),
    )?;
    let bad = not_json(&stderr);
    check(
        bad.is_empty(),
        format!("stderr lines that are not JSON objects: {bad:?}"),
    )?;
    check(
        logged(&stderr, "retries"),
        format!("the error names the unknown key: {stderr:?}"),
    )
}

/// A client that sends the same bad request again and again (here, an unknown tool, which
/// rmcp warns of at each answer) makes one warning per interval, not one per request.
pub async fn a_warning_a_client_repeats_is_logged_once_per_interval() -> Outcome {
    let (up, _calls) = Counted::serve().await;
    let config = format!("[upstreams.up]\nurl = \"{up}\"\n");
    let file = TempFile::new("toml", &config)?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let args = ["--config", path, "--log-format", "json"];
    let mut gateway = Gateway::start(&args).await?;
    let (_handler, service) = common::client(&gateway.url).await;
    let unknown = "no-such-tool-".repeat(8);
    for _ in 0..20 {
        let answer = service
            .peer()
            .call_tool(rmcp::model::CallToolRequestParams::new(unknown.clone()))
            .await;
        check(
            answer.is_err(),
            format!("an unknown tool was answered: {answer:?}"),
        )?;
    }
    gateway.signal("TERM")?;
    let (status, stderr) = gateway.exit().await?;
    drop(service);
    check(
        status.success(),
        format!("the gateway exited with {status}"),
    )?;
    let warned = stderr
        .iter()
        .filter(|line| line.contains("unknown tool"))
        .count();
    check(
        (1..=2).contains(&warned),
        format!(
            "20 refusals were logged {warned} times (one, or two across an interval): {stderr:?}"
        ),
    )
}
