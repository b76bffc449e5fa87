//! `--mcp-config`: the `mcpServers` JSON of Claude Desktop, as that app writes it.

use std::sync::atomic::Ordering;

use crate::common;
use crate::mcp::{call, text, tools_when};
use crate::process::{Gateway, Outcome, TempFile, check};
use crate::upstream::{Counted, STDIO_UPSTREAM};

pub async fn an_mcp_servers_file_is_served() -> Outcome {
    let (up, calls) = Counted::serve().await;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // Claude Desktop's file holds its own settings besides `mcpServers`.
    let file = serde_json::json!({
        "globalShortcut": "",
        "mcpServers": {
            "up": { "url": up },
            "local": { "command": me, "env": { STDIO_UPSTREAM: "1" } }
        }
    });
    let file = TempFile::new("json", &file.to_string())?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let gateway = Gateway::start(&["--mcp-config", path, "--log", "warn"]).await?;
    let (handler, service) = common::client(&gateway.url).await;
    // Each server's tools under its name and a dot; the stdio one has `crash` besides.
    tools_when(
        &handler,
        &service,
        &[
            "local.ask",
            "local.crash",
            "local.echo",
            "local.fail",
            "local.getenv",
            "up.ask",
            "up.echo",
            "up.fail",
        ],
    )
    .await?;
    let over_http = call(&service, "up.echo", "to the url").await?;
    check(text(&over_http) == "to the url", format!("{over_http:?}"))?;
    let reached = calls.load(Ordering::SeqCst);
    check(
        reached == 1,
        format!("{reached} calls reached the HTTP server"),
    )?;
    let over_stdio = call(&service, "local.echo", "to the command").await?;
    check(
        text(&over_stdio) == "to the command",
        format!("{over_stdio:?}"),
    )
}
