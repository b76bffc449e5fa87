//! STUB (replaced by the config module at merge): the shapes the relay consumes.
#![allow(missing_docs)]
use std::path::PathBuf;
use std::time::Duration;

use toolbreaker::mcp::McpClassifier;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);
impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    Http {
        url: String,
        headers: Vec<(String, Secret)>,
    },
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, Secret)>,
        cwd: Option<PathBuf>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolConfig {
    pub name: String,
    pub own_breaker: bool,
    pub classifier: Option<McpClassifier>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamConfig {
    pub name: String,
    pub prefix: String,
    pub transport: Transport,
    pub allow: Option<Vec<String>>,
    pub deny: Vec<String>,
    pub per_call_timeout: Duration,
    pub classifier: McpClassifier,
    pub tools: Vec<ToolConfig>,
}

#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub upstreams: Vec<UpstreamConfig>,
    pub registry: toolbreaker::RegistryConfig,
}
