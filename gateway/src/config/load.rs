//! Reading a [`GatewayConfig`]: from TOML text, from `mcpServers` JSON text, or from a file in
//! either [`Format`], at start and on each reload.

use std::path::Path;

use super::env::{Env, process_env};
use super::error::GatewayConfigError;
use super::{GatewayConfig, json, toml_file};

/// The form of a configuration file: the gateway's TOML (`--config`) or an `mcpServers` JSON
/// file (`--mcp-config`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The gateway's TOML file (`gateway.toml`): upstreams, breakers, tools.
    Toml,
    /// Claude Desktop's, Claude Code's or Cursor's `{"mcpServers": {...}}` JSON; breakers on the
    /// crate's defaults.
    McpServersJson,
}

impl GatewayConfig {
    /// Read the gateway's TOML file, `${VAR}` expanded from the process environment.
    ///
    /// ```toml
    /// [default]                     # breaker keys for every upstream (the crate's keys)
    /// cooldown_ms = 5000
    ///
    /// [upstreams.search]            # Streamable HTTP
    /// url = "https://search.example.com/mcp"
    /// headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }
    /// deny = ["delete_index"]       # the upstream's own tool names
    /// failure_threshold = 3         # breaker keys for this upstream
    /// tool_error = "unavailable"    # what an `isError` answer counts as (default "ignored")
    /// error_codes = { -32002 = "unavailable" }   # JSON-RPC codes' outcomes
    ///
    /// [upstreams.search.tools.query]    # a breaker of its own: `search.query`
    /// cooldown_ms = 1000
    ///
    /// [upstreams.files]             # stdio
    /// command = "npx"
    /// args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
    /// env = { LOG_LEVEL = "warn" }
    /// prefix = ""                   # names passed as they are (default "files.")
    /// per_call_timeout_ms = 30000
    /// ```
    ///
    /// The commented `gateway.toml` beside this package describes every key.
    ///
    /// # Errors
    ///
    /// A [`GatewayConfigError`] naming the section and key, with the line, for a syntax error,
    /// an unknown table or key (with the nearest known one), a value of the wrong type or out of
    /// range (breaker keys as the crate checks them), a bad name, both or neither of `url` and
    /// `command`, a URL that is not `http(s)://`, two upstreams with one non-empty prefix, a
    /// `${VAR}` not set, a tool section for a hidden tool, or a file with no upstream.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker_gateway::config::{GatewayConfig, Transport};
    ///
    /// let config = GatewayConfig::from_toml_str(
    ///     "[upstreams.files]\ncommand = \"files-server\"\nfailure_threshold = 2\n",
    /// )?;
    /// let files = &config.upstreams[0];
    /// assert_eq!((files.name.as_str(), files.prefix.as_str()), ("files", "files."));
    /// assert!(matches!(&files.transport, Transport::Stdio { command, .. } if command == "files-server"));
    /// assert_eq!(config.registry.config_for("files").failure_threshold(), Some(2));
    ///
    /// let err = GatewayConfig::from_toml_str("[upstreams.files]\ncommand = \"x\"\ncooldown = 5\n")
    ///     .unwrap_err();
    /// assert_eq!((err.section(), err.key(), err.line()), (Some("upstreams.files"), Some("cooldown"), Some(3)));
    /// # Ok::<(), toolbreaker_gateway::config::GatewayConfigError>(())
    /// ```
    pub fn from_toml_str(text: &str) -> Result<GatewayConfig, GatewayConfigError> {
        toml_file::parse(text, &process_env, None)
    }

    /// As [`from_toml_str`](Self::from_toml_str), with `${VAR}` looked up by `env` (a test's
    /// table, say) instead of the process environment.
    ///
    /// # Errors
    ///
    /// As [`from_toml_str`](Self::from_toml_str).
    pub fn from_toml_str_with(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<GatewayConfig, GatewayConfigError> {
        toml_file::parse(text, &env, None)
    }

    /// Read an `mcpServers` JSON file as Claude Desktop, Claude Code and Cursor write it:
    /// `{"mcpServers": {"NAME": {"command", "args"?, "env"?, "cwd"?} | {"url", "headers"?}}}`,
    /// each entry an upstream with the prefix `NAME.` and the crate's default breaker.
    ///
    /// Also read: `"type"` (`"stdio"`, `"http"`, `"streamable-http"`, `"streamableHttp"`) and
    /// `"disabled": true` (the entry is skipped). `${VAR}`, `${env:VAR}` and `${VAR:-default}`
    /// are expanded in `command`, `args`, `env`, `cwd`, `url` and `headers`. Other top-level
    /// keys are the app's own settings and are not read.
    ///
    /// # Errors
    ///
    /// A [`GatewayConfigError`] for invalid JSON (with its line), no `mcpServers` object, a
    /// server name used twice or not a valid upstream name, an unknown key in an entry (with
    /// the nearest known one), one the gateway knows but cannot honour (`envFile`, `auth`,
    /// `"type": "sse"`), both or neither of `url` and `command`, a bad URL or header, an unset
    /// `${VAR}`, or no server at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker_gateway::config::GatewayConfig;
    ///
    /// let config = GatewayConfig::from_mcp_servers_json_str(
    ///     r#"{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}"#,
    /// )?;
    /// assert_eq!(config.upstreams[0].name, "memory");
    /// assert_eq!(config.upstreams[0].transport.kind(), "stdio");
    /// # Ok::<(), toolbreaker_gateway::config::GatewayConfigError>(())
    /// ```
    pub fn from_mcp_servers_json_str(text: &str) -> Result<GatewayConfig, GatewayConfigError> {
        json::parse(text, &process_env)
    }

    /// As [`from_mcp_servers_json_str`](Self::from_mcp_servers_json_str), with `${VAR}` looked
    /// up by `env`.
    ///
    /// # Errors
    ///
    /// As [`from_mcp_servers_json_str`](Self::from_mcp_servers_json_str).
    pub fn from_mcp_servers_json_str_with(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<GatewayConfig, GatewayConfigError> {
        json::parse(text, &env)
    }

    /// Read the file at `path` in `format`, `${VAR}` from the process environment: at start,
    /// and again on each reload (compare the upstreams by name with the ones in force:
    /// [`UpstreamConfig`](super::UpstreamConfig) is `PartialEq`).
    ///
    /// # Errors
    ///
    /// As the `from_*` function of `format`, the error naming the file; or the file could not be
    /// read ([`GatewayConfigError::io_error`]).
    pub fn load(
        path: impl AsRef<Path>,
        format: Format,
    ) -> Result<GatewayConfig, GatewayConfigError> {
        GatewayConfig::load_with(path, format, &process_env)
    }

    /// As [`load`](Self::load), with `${VAR}` looked up by `env`.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn load_with(
        path: impl AsRef<Path>,
        format: Format,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<GatewayConfig, GatewayConfigError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|e| GatewayConfigError::unreadable(path, e))?;
        let env: Env<'_> = env;
        let parsed = match format {
            Format::Toml => toml_file::parse(&text, env, path.parent()),
            Format::McpServersJson => json::parse(&text, env),
        };
        parsed.map_err(|e| e.in_file(path))
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&super::UpstreamConfig> {
        self.upstreams.iter().find(|u| u.name == name)
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::path::PathBuf;

    use super::Format;
    use crate::config::{GatewayConfig, Transport};

    /// A file of this test's own under the system's temporary directory.
    fn file(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("toolbreaker-gateway-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("one".to_owned()),
            "TOKEN2" => Some("two".to_owned()),
            _ => None,
        }
    }

    const FILE: &str = "[upstreams.a]\nurl = \"http://127.0.0.1:1/mcp\"\nheaders = { X = \"${TOKEN}\" }\n\
                        [upstreams.b]\ncommand = \"b\"\n";

    #[test]
    fn loads_either_form_from_a_file_and_names_it_in_errors() {
        let toml = file("gateway.toml", FILE);
        let config = GatewayConfig::load_with(&toml, Format::Toml, &env).unwrap();
        assert_eq!(config.upstreams.len(), 2);
        let json = file(
            "mcp.json",
            r#"{"mcpServers": {"m": {"url": "http://127.0.0.1:2/mcp"}}}"#,
        );
        let config = GatewayConfig::load_with(&json, Format::McpServersJson, &env).unwrap();
        assert_eq!(
            config.upstream("m").map(|u| u.transport.kind()),
            Some("http")
        );

        let bad = file(
            "bad.toml",
            "[upstreams.a]\nurl = \"http://h/mcp\"\nheaders = { X = \"${NOPE}\" }\n",
        );
        let err = GatewayConfig::load_with(&bad, Format::Toml, &env).unwrap_err();
        assert_eq!(err.path(), Some(bad.as_path()));
        assert_eq!(
            err.to_string(),
            format!(
                "{}:3: [upstreams.a] headers.X: environment variable NOPE is not set",
                bad.display()
            )
        );
        let missing = toml.with_file_name("missing.toml");
        let err = GatewayConfig::load_with(&missing, Format::Toml, &env).unwrap_err();
        assert_eq!(err.io_error().map(|e| e.kind()), Some(ErrorKind::NotFound));
        assert!(
            err.to_string()
                .starts_with(&format!("{}: cannot read the file: ", missing.display())),
            "{err}"
        );
        let err = GatewayConfig::load_with(&json, Format::Toml, &env).unwrap_err();
        assert_eq!(err.line(), Some(1), "JSON is not TOML: {err}");
        std::fs::remove_dir_all(toml.parent().unwrap()).unwrap();
    }

    /// `mcp_servers` imports an `mcpServers` file beside the TOML file; `[upstreams.NAME]`
    /// sets breaker and timeout keys on its servers; anything else there, or a section naming
    /// no server, is refused naming it.
    #[test]
    fn an_mcp_servers_file_is_imported_with_breaker_keys_over_its_servers() {
        use std::time::Duration;
        // A folder of its own: the other test removes the shared one when it ends.
        let dir =
            std::env::temp_dir().join(format!("toolbreaker-gateway-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let _json = file(
            "servers.json",
            r#"{"mcpServers": {
  "search": {"url": "http://127.0.0.1:1/mcp"},
  "files": {"command": "files-server", "args": ["--key=${TOKEN}"]}
}}"#,
        );
        let toml =
            |name: &str, body: &str| file(name, &format!("mcp_servers = \"servers.json\"\n{body}"));
        let good = toml(
            "import.toml",
            "[default]\ncooldown_ms = 5000\n[upstreams.search]\ncooldown_ms = 1000\n\
             per_call_timeout_ms = 60000\n[upstreams.own]\ncommand = \"own\"\n",
        );
        let config = GatewayConfig::load_with(&good, Format::Toml, &env).unwrap();
        let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["search", "files", "own"]);
        let search = config.upstream("search").unwrap();
        assert_eq!(search.per_call_timeout, Duration::from_secs(60));
        assert_eq!(search.prefix, "search.");
        assert_eq!(
            config.registry.config_for("search").cooldown(),
            Duration::from_secs(1)
        );
        assert_eq!(
            config.registry.config_for("files").cooldown(),
            Duration::from_secs(5),
            "[default] over the imported servers too"
        );
        assert_eq!(
            config
                .upstream("files")
                .unwrap()
                .redaction
                .shown("--key=one"),
            "--key=<redacted>"
        );
        // A reload reads both files again: a server added to the JSON file is there.
        file(
            "servers.json",
            r#"{"mcpServers": {"search": {"url": "http://127.0.0.1:1/mcp"}, "more": {"command": "m"}}}"#,
        );
        let reloaded = GatewayConfig::load_with(&good, Format::Toml, &env).unwrap();
        let names: Vec<&str> = reloaded.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["search", "more", "own"]);
        assert_eq!(
            reloaded.registry.config_for("search").cooldown(),
            Duration::from_secs(1)
        );

        let refused = |name: &str, body: &str| {
            let path = toml(name, body);
            let err = GatewayConfig::load_with(&path, Format::Toml, &env).unwrap_err();
            (path, err.to_string())
        };
        let (path, err) = refused("typo.toml", "[upstreams.serch]\ncooldown_ms = 1000\n");
        assert_eq!(
            err,
            format!(
                "{}:2: [upstreams.serch]: names no server of `servers.json`: `serch` (did you \
                 mean `search`?) is not among its servers, and the section has no `url` or \
                 `command` of its own",
                path.display()
            )
        );
        let (_, err) = refused("url.toml", "[upstreams.search]\nurl = \"http://h/mcp\"\n");
        assert!(
            err.ends_with(
                ":3: [upstreams.search] url: `url` cannot be set here: `search` comes from \
                 `servers.json`, and a section over it sets only `per_call_timeout_ms`, \
                 `max_call_ms` and breaker keys (`failure_threshold`, `cooldown_ms`, `probe_timeout_ms`, \
                 `failure_rate`, `slow_call_threshold_ms`, `slow_call_rate`, `window_calls`, \
                 `window_ms`, `minimum_calls`, `cooldown_multiplier`, `max_cooldown_ms`, \
                 `cooldown_jitter`, `probes`, `max_hinted_open_ms`, `hint_jitter`, \
                 `open_on_long_hint`, `max_in_flight`, `adaptive_concurrency`, \
                 `adaptive_throttling`)"
            ),
            "{err}"
        );
        let (_, err) = refused(
            "max.toml",
            "[upstreams.more]\nper_call_timeout_ms = 20000\nmax_call_ms = 10000\n",
        );
        assert!(
            err.contains("[upstreams.more]") && err.contains("max_call_ms"),
            "a max_call_ms below the timeout it bounds is refused over an imported server: {err}"
        );
        let (_, err) = refused("zero.toml", "[upstreams.more]\ncooldown_ms = 0\n");
        assert!(
            err.ends_with(":3: [upstreams.more] cooldown_ms: it must be at least 1 ms"),
            "{err}"
        );
        let missing = file(
            "missing.toml",
            "mcp_servers = \"nope.json\"\n[upstreams.a]\ncommand = \"x\"\n",
        );
        let err = GatewayConfig::load_with(&missing, Format::Toml, &env).unwrap_err();
        assert!(
            err.to_string()
                .contains(":1: mcp_servers: cannot read the mcpServers file `nope.json`: "),
            "{err}"
        );
        let bad = file("bad.json", r#"{"mcpServers": {"x": {"comand": "y"}}}"#);
        let path = file("bad.toml", "mcp_servers = \"bad.json\"\n");
        let err = GatewayConfig::load_with(&path, Format::Toml, &env).unwrap_err();
        assert_eq!(
            err.path(),
            Some(bad.as_path()),
            "the JSON file is named: {err}"
        );
        assert!(
            err.to_string().contains("mcpServers.x.comand: unknown key"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A reload compares upstreams by name: a changed secret or transport is a changed upstream;
    /// a changed breaker key leaves the upstreams equal and changes only the registry.
    #[test]
    fn a_reload_tells_changed_upstreams_from_unchanged() {
        let old = GatewayConfig::from_toml_str_with(FILE, env).unwrap();
        let same = GatewayConfig::from_toml_str_with(FILE, env).unwrap();
        assert_eq!(old, same);
        let token =
            GatewayConfig::from_toml_str_with(&FILE.replace("${TOKEN}", "${TOKEN2}"), env).unwrap();
        assert_ne!(
            old.upstream("a"),
            token.upstream("a"),
            "the header's value changed"
        );
        assert_eq!(old.upstream("b"), token.upstream("b"));
        let breaker =
            GatewayConfig::from_toml_str_with(&format!("{FILE}cooldown_ms = 5\n"), env).unwrap();
        assert_eq!(old.upstreams, breaker.upstreams);
        assert_ne!(old.registry, breaker.registry);
        let moved =
            GatewayConfig::from_toml_str_with(&FILE.replace("127.0.0.1:1", "127.0.0.1:3"), env)
                .unwrap();
        assert!(
            matches!(&moved.upstream("a").unwrap().transport, Transport::Http { url, .. } if url.contains(":3/"))
        );
        assert_ne!(old.upstream("a"), moved.upstream("a"));
    }
}
