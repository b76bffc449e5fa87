//! `--stdio`: the gateway as a client starts a stdio MCP server, its stdout holding MCP's
//! messages and nothing else.

use rmcp::ServiceExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::Client;
use crate::mcp::{call, text, tool_names};
use crate::process::{Outcome, TempFile, check, gateway_command, within};
use crate::upstream::Counted;

pub async fn stdio_serves_a_client_and_stdout_carries_only_mcp() -> Outcome {
    let (up, _calls) = Counted::serve().await;
    let file = TempFile::new("toml", &format!("[upstreams.up]\nurl = \"{up}\"\n"))?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    // Debug logging, so that there is much to log, all of it on stderr.
    let mut gateway = gateway_command(&["--stdio", "--config", path, "--log", "debug"])
        .spawn()
        .map_err(|e| format!("cannot start the gateway: {e}"))?;
    let (Some(stdout), Some(stdin), Some(stderr)) = (
        gateway.stdout.take(),
        gateway.stdin.take(),
        gateway.stderr.take(),
    ) else {
        return Err("no stdio pipes".into());
    };
    let logged = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut count = 0_usize;
        while let Ok(Some(_)) = lines.next_line().await {
            count += 1;
        }
        count
    });
    // Every line of stdout is checked to be a JSON-RPC message, then passed on to the client.
    let (mut to_client, client_reads) = tokio::io::duplex(1 << 20);
    let stdout_lines = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        let (mut messages, mut not_mcp) = (0_usize, Vec::new());
        while let Ok(Some(line)) = lines.next_line().await {
            let parsed = serde_json::from_str::<Value>(&line);
            if parsed.is_ok_and(|message| message["jsonrpc"] == "2.0") {
                messages += 1;
                let _ = to_client.write_all(format!("{line}\n").as_bytes()).await;
            } else {
                not_mcp.push(line);
            }
        }
        (messages, not_mcp)
    });

    let service = within(
        "the handshake",
        Client::default().serve((client_reads, stdin)),
    )
    .await?
    .map_err(|e| format!("the handshake: {e}"))?;
    let names = tool_names(&service).await?;
    check(
        names == ["up.ask", "up.echo", "up.fail"],
        format!("the upstream's tools are listed: {names:?}"),
    )?;
    let echoed = call(&service, "up.echo", "over stdio").await?;
    check(text(&echoed) == "over stdio", format!("{echoed:?}"))?;
    // The client closes the gateway's stdin: the gateway ends, cleanly.
    within("the client to close", service.cancel())
        .await?
        .map_err(|e| e.to_string())?;
    let exited = within("the gateway to exit at the end of stdin", gateway.wait())
        .await?
        .map_err(|e| e.to_string())?;
    let (messages, not_mcp) = within("stdout to close", stdout_lines)
        .await?
        .map_err(|e| e.to_string())?;
    let logged = within("stderr to close", logged)
        .await?
        .map_err(|e| e.to_string())?;
    check(
        exited.success(),
        format!("the gateway exited with {exited}"),
    )?;
    check(
        not_mcp.is_empty(),
        format!("stdout carries only MCP; it also carried {not_mcp:?}"),
    )?;
    // The handshake's answer, the listing's and the call's, at least.
    check(messages >= 3, format!("{messages} messages on stdout"))?;
    check(logged > 0, "the gateway logged, on stderr")
}
