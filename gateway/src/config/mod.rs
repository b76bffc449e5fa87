//! The gateway's configuration: the TOML file (`--config`) or an `mcpServers` JSON file
//! (`--mcp-config`), read into a [`GatewayConfig`] at start and on each reload.
//!
//! The files: `types` (what the relay consumes), `secret` ([`Secret`]), `error`
//! ([`GatewayConfigError`]), `env` (`${VAR}` expansion), `rules` (the checks both forms share),
//! `toml_file`, `toml_upstream` and `breakers` (the TOML form; its breaker keys read by the crate's own parser),
//! `json` (the `mcpServers` form) and `load` (the entry points and [`Format`]).

mod breakers;
mod env;
mod error;
mod import;
mod json;
mod load;
mod resolved;
mod rules;
mod secret;
mod toml_file;
mod toml_upstream;
mod types;

pub use self::error::GatewayConfigError;
pub use self::load::Format;
pub(crate) use self::rules::cwd as check_cwd;
pub use self::rules::names_matching_no_tool;
pub use self::secret::{Redaction, SHORTEST_ENV_VALUE, Secret};
pub use self::types::{
    DEFAULT_PER_CALL_TIMEOUT, Era, GatewayConfig, MAX_CALL, ToolConfig, Transport, UpstreamConfig,
};
