//! The MCP gateway: a Streamable HTTP (or stdio) MCP server in front of upstream MCP servers,
//! each upstream behind its own circuit breaker. The binary `toolbreaker-gateway` is this
//! library's [`run::main`]; tests and examples run the same code.
//!
//! - [`config`]: the upstreams, from a TOML file or an `mcpServers` JSON file.
//! - [`relay`]: all of MCP between client sessions and upstreams ([`relay::Gateway`]).
//! - [`upstream`]: one shared, supervised connection per upstream, behind its breaker.
//! - [`serve`]: `/mcp`, `/metrics`, `/healthz`, `/status`; auth, Host/Origin, size limit.
//! - [`cli`] and [`run`]: the command line and the program; [`redact`]: credentials out of
//!   the log.

pub mod cli;
pub mod config;
pub mod redact;
pub mod relay;
pub mod run;
pub mod serve;
pub mod upstream;
