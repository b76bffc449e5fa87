//! MCP (feature `mcp`): the guarded client, the gateway, how an MCP call's result is classified,
//! and what the model sees. The rules they keep are the [contract](super::contract)'s 21 to 24; the
//! example and one run of it are in [`examples`](super::examples).
//!
//! Agents call tools over the Model Context Protocol. With feature `mcp` (on `rmcp` 3.x, the
//! official Rust SDK), every `tools/call` an agent makes through a `GuardedClient` goes through the
//! guard pipeline and its server's breaker, and `McpGateway` is an MCP server that puts a breaker in
//! front of each upstream MCP server.
//!
//! A client of its own needs `rmcp` in its `Cargo.toml` beside toolbreaker (`rmcp = { version =
//! "3.11", features = ["client", "transport-streamable-http-client-reqwest"] }`, and Tokio's
//! `macros` and `rt-multi-thread` for `#[tokio::main]`). A `GuardedClient` makes no retries unless
//! given a `RetryPolicy` (`.guard(ToolGuard::new(timeout, policy))`): a tool call may have effects,
//! and a timed-out or cut-off attempt may have run.
//!
#![cfg_attr(feature = "mcp", doc = "```rust,no_run")]
#![cfg_attr(not(feature = "mcp"), doc = "```ignore")]
//! use std::time::Duration;
//! use rmcp::{ServiceExt, model::CallToolRequestParams, transport::StreamableHttpClientTransport};
//! use toolbreaker::{AgentRun, Registry, mcp::{GuardedClient, McpGateway}};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = Registry::builder().build(); // or a fleet-mode registry: it works as it is
//!     let search = ().serve(StreamableHttpClientTransport::from_uri("http://127.0.0.1:9001/mcp")).await?;
//!     // The client owns the connection: it lives as long as any clone of `search`.
//!     let search = GuardedClient::builder("search", search, &registry).build()?;
//!
//!     // An agent's tool call: blocked at once, without sending, while the server's breaker is open.
//!     let run = AgentRun::new("run-1", Duration::from_secs(60), 20);
//!     let answer = search.call_tool(&run, CallToolRequestParams::new("query")).await;
//!     println!("isError: {:?}", answer.is_error);
//!
//!     // Or a gateway in front of it: tools listed as `search.query`, Streamable HTTP on a port.
//!     let gateway = McpGateway::builder().upstream(search).build()?;
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//!     gateway.serve_http(listener, std::future::pending()).await?; // or gateway.serve_stdio()
//!     Ok(())
//! }
//! ```
//!
//! **Classification** (`McpClassifier`; each server, and each tool, can override it). Only what says
//! the server is unhealthy counts; a tool's own `isError` answer proves the server is reachable.
//!
//! | result of `call_tool` | counts as |
//! |---|---|
//! | a `CallToolResult` | success |
//! | a `CallToolResult` with `isError: true` (the tool answered) | ignored (`McpClassifier::tool_error` for a tool whose error text relays an upstream 503) |
//! | transport closed or failed (refused, reset, a child process that died) | counted: `connect` |
//! | a Streamable HTTP status: 408 / 504, 429 (with `Retry-After`), other 5xx | counted: `timeout`, `rate_limited`, `unavailable` |
//! | HTTP 401 / 403 (an auth challenge), 404 and every other 4xx | ignored |
//! | request timeout (rmcp's, or the pipeline's per-call timeout) | counted: `timeout` |
//! | an answer that is not MCP (not JSON-RPC, HTML, the wrong shape) | counted: `other` |
//! | JSON-RPC `-32603` internal error; `-32000` connection closed; `-32001` request timeout | counted: `unavailable`, `unavailable`, `timeout` |
//! | JSON-RPC `-32602` invalid params (and an unknown tool), `-32601`, `-32600`, any other code | ignored (`McpClassifier::code` overrides one) |
//! | cancelled by the caller, or cut at the run's deadline | not recorded |
//!
//! **What the model sees.** An answer is the server's own `CallToolResult`. A blocked, stopped or
//! failed call becomes one the model can act on: `isError: true`, one text content with the message
//! written for the model, and `structuredContent` holding the same `ToolResult` JSON. Nothing is sent
//! to the server while its breaker is open, and no transport error's text reaches the model (only
//! its kind and HTTP status; the message of a JSON-RPC invalid-params or method-not-found error,
//! which says what to correct, is shown):
//!
//! ```json
//! {
//!   "content": [{"type": "text", "text": "search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 0.5 s."}],
//!   "structuredContent": {"status": "blocked", "dependency": "search", "reason": "dependency_open", "retry_after_ms": 480,
//!                         "message": "search is temporarily unavailable; do not call it again now. Answer with what you know, use another tool, or try after 0.5 s.",
//!                         "attempts": 0, "elapsed_ms": 0},
//!   "isError": true
//! }
//! ```
//!
//! The gateway lists every upstream's tools under namespaced names (`search.query`), forwards each
//! call through that upstream's breaker (one upstream's outage never blocks another's tools), and
//! serves Streamable HTTP (stateless, on a loopback port) and stdio. A client's cancellation
//! (`notifications/cancelled`, a dropped HTTP connection, a closed stdin) cancels the upstream call
//! and gives its probe slot back.
