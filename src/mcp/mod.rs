//! MCP (feature `mcp`): every tool call an agent makes over the Model Context Protocol goes
//! through its server's breaker, and an MCP gateway puts breakers in front of upstream MCP
//! servers. Built on `rmcp`, the official Rust SDK.
//!
//! - [`GuardedClient`]: an rmcp client, owning its connection, whose every `call_tool` goes
//!   through the guard pipeline ([`ToolGuard`](crate::ToolGuard)): the run's deadline and
//!   budgets, the server's breaker (one per server, or per tool where configured), the per-call
//!   timeout, classification and bounded retry. Tools are still listed through it.
//! - [`McpClassifier`]: what a call's result says about the server's health (the table is on
//!   its page). A tool's own `isError` answer proves the server reachable and never counts by
//!   default; a transport that closed or failed, a timeout and an internal error do.
//! - `CallToolResult::from(ToolResult<CallToolResult>)`: what the model reads of a blocked,
//!   stopped or failed call, `isError: true` with the model's message as its one text content
//!   and the [`ToolResult`](crate::ToolResult) JSON as `structuredContent`.
//! - [`McpGateway`]: an MCP server (Streamable HTTP on a port, or stdio) that lists its
//!   upstreams' tools as `upstream.tool` and forwards each call through that upstream's
//!   breaker; a client's cancellation cancels the upstream call and gives its probe slot back.
//!
//! # What the model sees
//!
//! A call the breaker blocked sends nothing to the server and answers:
//!
//! ```json
//! {
//!   "content": [{"type": "text", "text": "search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 1.8 s."}],
//!   "structuredContent": {"status": "blocked", "dependency": "search", "reason": "dependency_open",
//!                         "retry_after_ms": 1840, "message": "search is temporarily unavailable; …", "attempts": 0, "elapsed_ms": 0},
//!   "isError": true
//! }
//! ```

mod classify;
mod client;
mod gateway;
mod ping;
mod result;

pub use self::classify::McpClassifier;
pub use self::client::{ErrorWords, GuardedClient, GuardedClientBuilder, rejection_words};
pub use self::gateway::{MCP_PATH, McpGateway, McpGatewayBuilder};
