//! One test binary for MCP (feature `mcp`) over Streamable HTTP: `GuardedClient` and `McpGateway`
//! against real rmcp servers, and an MCP gateway on a fleet-mode registry (with feature `redis`).
//! The stdio tests are a binary of their own (`mcp_stdio.rs`: it is its own child server).

#[path = "../common/mcp.rs"]
mod common;
#[allow(clippy::module_inception)]
mod mcp;
#[cfg(feature = "redis")]
mod mcp_fleet;
mod mcp_health;
#[cfg(feature = "redis")]
#[path = "../common/redis.rs"]
mod redis_server;
