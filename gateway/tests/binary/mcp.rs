//! The rmcp client's side: calls, what their answers say, and tool listings.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};

use crate::common::Client;
use crate::process::within;

pub type Service = RunningService<RoleClient, Client>;

/// Calls `tool` with `{"text": text}`.
pub async fn call(service: &Service, tool: &str, text: &str) -> Result<CallToolResult, String> {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), text.into());
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
    within(&format!("the call of {tool}"), service.call_tool(params))
        .await?
        .map_err(|e| format!("the call of {tool}: {e}"))
}

/// The answer's first text content.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// The `status` of the answer's `structuredContent` (the gateway's ToolResult JSON), if any.
pub fn status(result: &CallToolResult) -> Option<&str> {
    result.structured_content.as_ref()?["status"].as_str()
}

/// Every tool the gateway lists, by name, sorted.
pub async fn tool_names(service: &Service) -> Result<Vec<String>, String> {
    let tools = within("the tool listing", service.list_all_tools())
        .await?
        .map_err(|e| format!("tools/list: {e}"))?;
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    Ok(names)
}

/// The listing once it is `want` (sorted): listed again each time the gateway says the tools
/// changed (an upstream whose listing comes after the client's first one).
pub async fn tools_when(
    handler: &Client,
    service: &Service,
    want: &[&str],
) -> Result<Vec<String>, String> {
    let mut last = Vec::new();
    let listed = within("the listing to be complete", async {
        loop {
            let changed = handler.tools_changed.notified();
            last = tool_names(service).await?;
            if last == want {
                return Ok::<_, String>(());
            }
            changed.await;
        }
    })
    .await;
    match listed {
        Ok(Ok(())) => Ok(last),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(format!("{e}; listed {last:?}, want {want:?}")),
    }
}
