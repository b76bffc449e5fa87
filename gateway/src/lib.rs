//! The MCP gateway: a Streamable HTTP (or stdio) MCP server in front of upstream MCP servers,
//! each upstream behind its own circuit breaker. The binary `toolbreaker-gateway` is this
//! library's [`cli::main`]; tests and examples run the same code.

pub mod serve;
