//! The gateway's configuration as the relay consumes it: [`GatewayConfig`], one
//! [`UpstreamConfig`] per upstream, its [`Transport`] and its [`ToolConfig`]s.

use std::path::PathBuf;
use std::time::Duration;

use toolbreaker::RegistryConfig;
use toolbreaker::mcp::McpClassifier;

use super::{Redaction, Secret};

/// The per-call timeout of an upstream that sets no `per_call_timeout_ms`: 10 s, the
/// `GuardedClient` default.
pub const DEFAULT_PER_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest one call may run while the upstream's progress keeps putting its timeout back
/// (`max_call_ms`), when the config sets none, and the most it may be set to: 300 s, the
/// gateway's own limit on one tool call.
pub const MAX_CALL: Duration = Duration::from_secs(300);

/// A whole gateway configuration, read from the TOML file or an `mcpServers` JSON file
/// ([`from_toml_str`](Self::from_toml_str), [`from_mcp_servers_json_str`](Self::from_mcp_servers_json_str),
/// [`load`](Self::load)); valid in full once made.
///
/// `registry` holds the breaker settings under the names the relay asks the registry for:
/// one dependency per upstream, named as the upstream (`search`), and one per tool given a
/// breaker of its own, named `upstream.tool` (`search.query`: the name
/// `GuardedClientBuilder::tool_breaker` uses). Its `[default]` is the file's `[default]`. Put
/// it in force with `Registry::reload` on a reload: breakers keep their state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The upstreams, in file order; names are unique.
    pub upstreams: Vec<UpstreamConfig>,
    /// The breakers' settings (see above).
    pub registry: RegistryConfig,
}

/// One upstream MCP server: `[upstreams.NAME]`, or one entry of `mcpServers`.
///
/// Equal when every setting is (secrets compared by value), so a reload tells a changed
/// upstream (reconnect it) from an unchanged one (keep its connection). Breaker settings are not
/// here but in [`GatewayConfig::registry`]: a changed cooldown needs no reconnection.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::config::GatewayConfig;
///
/// let config = GatewayConfig::from_toml_str(
///     "[upstreams.search]\nurl = \"http://127.0.0.1:9000/mcp\"\ndeny = [\"drop_index\"]\n\
///      [upstreams.search.tools.query]\ncooldown_ms = 1000\n",
/// )?;
/// let search = config.upstream("search").unwrap();
/// assert!(search.exposes("query") && !search.exposes("drop_index"));
/// assert_eq!(search.breaker_name("query"), "search.query", "its own breaker");
/// assert_eq!(search.breaker_name("suggest"), "search", "the upstream's");
/// assert_eq!(search.transport.kind(), "http");
/// # Ok::<(), toolbreaker_gateway::config::GatewayConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// The upstream's name: non-empty, with no `.`, whitespace or control character. Its
    /// breaker's name, and the default prefix.
    pub name: String,
    /// What the gateway puts before each of the upstream's tool (and prompt) names: by default
    /// `NAME.`; `""` passes names as they are.
    pub prefix: String,
    /// How the gateway reaches it.
    pub transport: Transport,
    /// The only tools shown and callable (the upstream's own names); `None`: every tool not in
    /// `deny`.
    pub allow: Option<Vec<String>>,
    /// Tools hidden and refused (the upstream's own names).
    pub deny: Vec<String>,
    /// How long one call may go without an answer or a progress notification from the
    /// upstream (`per_call_timeout_ms`; default [`DEFAULT_PER_CALL_TIMEOUT`]): each progress
    /// notification of the call starts the timeout afresh, up to `max_call`.
    pub per_call_timeout: Duration,
    /// How long one call may run in all, however often its progress put the timeout back
    /// (`max_call_ms`; default and most [`MAX_CALL`]); never less than `per_call_timeout`.
    pub max_call: Duration,
    /// The upstream's classification: the crate's table with the file's `tool_error` and
    /// `error_codes` overrides.
    pub classifier: McpClassifier,
    /// The tools with a section of their own (`[upstreams.NAME.tools.TOOL]`), in file order.
    pub tools: Vec<ToolConfig>,
    /// Which of MCP's eras the gateway speaks to it in (`era`; default [`Era::Newest`]).
    pub era: Era,
    /// Whether the gateway is ready (`/readyz`) only while this upstream is connected
    /// (`required`; default `false`).
    pub required: bool,
    /// What of its settings came from the environment (`${VAR}`), never to be shown: the log
    /// redacts it, and [`shown`](Redaction::shown) gives a `url`, `command`, argument or `cwd`
    /// as it may be printed. Empty for a configuration made in code.
    pub redaction: Redaction,
}

/// Which of MCP's eras the gateway speaks to an upstream in (key `era`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// The newest it speaks (`"newest"`): `server/discover` first (2026-07-28), `initialize`
    /// (2025-11-25) when it does not know it.
    #[default]
    Newest,
    /// 2025-11-25 (`"2025-11-25"`): `initialize` and a session, even if it speaks 2026-07-28;
    /// for a server whose 2026-07-28 side lacks what its clients need.
    Sessions,
    /// 2026-07-28 (`"2026-07-28"`): `server/discover` and stateless requests, and no other; a
    /// server that does not answer discovery is not connected.
    Stateless,
}

impl Era {
    /// The era a config file's `era` value names; `None` for any other text.
    pub fn parse(text: &str) -> Option<Era> {
        match text {
            "newest" => Some(Era::Newest),
            "2025-11-25" => Some(Era::Sessions),
            "2026-07-28" => Some(Era::Stateless),
            _ => None,
        }
    }
}

/// One tool's own settings: `[upstreams.NAME.tools.TOOL]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolConfig {
    /// The tool's name as the upstream lists it (no prefix).
    pub name: String,
    /// Whether the tool has a breaker of its own (the registry's `upstream.tool`): true when its
    /// section sets any breaker key, or `own_breaker = true`.
    pub own_breaker: bool,
    /// Its own classification (the upstream's, with the tool's overrides over it), when its
    /// section sets `tool_error` or `error_codes`; `None`: the upstream's.
    pub classifier: Option<McpClassifier>,
    /// Its own `per_call_timeout_ms`; `None`: the upstream's.
    pub per_call_timeout: Option<Duration>,
    /// Its own `max_call_ms`; `None`: the upstream's.
    pub max_call: Option<Duration>,
}

/// How the gateway reaches an upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A Streamable HTTP server.
    Http {
        /// Its MCP endpoint, an `http://` or `https://` URL (after `${VAR}` expansion). Shown
        /// through the upstream's [`redaction`](UpstreamConfig::redaction) when it holds a
        /// variable's value.
        url: String,
        /// Headers sent with every request (name, value), in file order.
        headers: Vec<(String, Secret)>,
    },
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program (looked up on `PATH` when it holds no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it (name, value), over a base environment (`PATH`,
        /// `HOME`, ...: `upstream::INHERITED`), never the gateway's whole one.
        env: Vec<(String, Secret)>,
        /// Its working directory; `None`: the gateway's.
        cwd: Option<PathBuf>,
    },
}

impl Transport {
    /// `"http"` or `"stdio"`, as `/status` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Http { .. } => "http",
            Transport::Stdio { .. } => "stdio",
        }
    }
}

impl UpstreamConfig {
    /// Whether the config shows and lets clients call the upstream's tool `tool` (its own
    /// name): in `allow` (when set) and not in `deny`.
    pub fn exposes(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|t| t == tool))
            && !self.deny.iter().any(|t| t == tool)
    }

    /// The tool's own section, if it has one.
    pub fn tool(&self, tool: &str) -> Option<&ToolConfig> {
        self.tools.iter().find(|t| t.name == tool)
    }

    /// The registry's name for the breaker that guards `tool`: `upstream.tool` when the tool
    /// has a breaker of its own, else the upstream's name.
    pub fn breaker_name(&self, tool: &str) -> String {
        match self.tool(tool) {
            Some(t) if t.own_breaker => format!("{}.{tool}", self.name),
            _ => self.name.clone(),
        }
    }

    /// The timeout of one call of `tool` and the most its progress may stretch it to (its own
    /// section's, else the upstream's): `(per_call_timeout, max_call)`.
    pub fn timeouts_for(&self, tool: &str) -> (Duration, Duration) {
        let own = self.tool(tool);
        let timeout = own
            .and_then(|t| t.per_call_timeout)
            .unwrap_or(self.per_call_timeout);
        let max = own.and_then(|t| t.max_call).unwrap_or(self.max_call);
        (timeout, max.max(timeout))
    }

    /// The classification of `tool`'s calls: its own, else the upstream's.
    pub fn classifier_for(&self, tool: &str) -> &McpClassifier {
        self.tool(tool)
            .and_then(|t| t.classifier.as_ref())
            .unwrap_or(&self.classifier)
    }
}
