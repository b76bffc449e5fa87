//! The examples package's test binary: the MCP gateway example's scenario run in-process, and
//! the check of its JSON report (`gateway_mcp`). It is here, not among the crate's tests, because
//! the example's gateway is the `toolbreaker-gateway` package's relay and server, which the crate
//! itself cannot depend on. Named `examples`, as the crate's test binary of the examples' other
//! checks, so that one command runs both: e.g.
//! `MCP_GATEWAY_JSON=target/mcp_gateway.json cargo test --all-features --test examples -- --ignored gateway_mcp::`.
//!
//! The example's files are declared here, at the root, where their own `crate::` paths (to each
//! other) point, as in the example itself.

#![cfg(feature = "mcp_gateway")]

mod gateway_mcp;

#[path = "../mcp_gateway/agents.rs"]
mod agents;
#[path = "../gateway/listen.rs"]
#[allow(dead_code)]
mod listen;
#[path = "../mcp_gateway/report.rs"]
mod report;
#[path = "../mcp_gateway/scenario.rs"]
#[allow(dead_code)]
mod scenario;
#[path = "../mcp_gateway/upstream.rs"]
mod upstream;
