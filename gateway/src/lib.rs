//! The MCP gateway: a Streamable HTTP (or stdio) MCP server in front of upstream MCP servers,
//! each upstream behind its own circuit breaker. The binary `toolbreaker-gateway` runs this
//! library; tests and examples run the same code.

pub mod cli;
pub mod config;
pub mod relay;
pub mod upstream;
