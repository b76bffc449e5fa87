//! The `mcpServers` JSON of Claude Desktop (`claude_desktop_config.json`), Claude Code
//! (`.mcp.json`) and Cursor (`mcp.json`), read as those apps write it.

use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use toolbreaker::RegistryConfig;
use toolbreaker::mcp::McpClassifier;

use super::env::{Env, expand_traced};
use super::error::{GatewayConfigError, path_part};
use super::rules::{self, backticked, unknown_word};
use super::types::{DEFAULT_PER_CALL_TIMEOUT, MAX_CALL};
use super::{GatewayConfig, Redaction, Secret, ToolConfig, Transport, UpstreamConfig};

/// The keys of one server that the gateway reads, or knows and refuses.
const KEYS: [&str; 13] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "disabled",
    "per_call_timeout_ms",
    "max_call_ms",
    "tools",
    "envFile",
    "auth",
];

/// The keys of one tool in a server's `tools` object.
const TOOL_KEYS: [&str; 2] = ["per_call_timeout_ms", "max_call_ms"];

/// Keys those apps write for their own use (approval lists, a client-side timeout, a
/// description), known and not read: the gateway decides neither approvals nor timeouts from
/// them.
const CLIENT_KEYS: [&str; 5] = [
    "alwaysAllow",
    "autoApprove",
    "timeout",
    "description",
    "disabledTools",
];

/// The values of `type`: `stdio`, and Streamable HTTP's names in those apps.
const TYPES: [&str; 5] = ["stdio", "http", "streamable-http", "streamableHttp", "sse"];

/// The file's top level: `mcpServers` in file order; the other keys (the app's own settings,
/// in Claude Desktop's file) are not read.
struct Top {
    servers: Option<Vec<(String, Value)>>,
    others: Vec<String>,
}

/// `mcpServers`: its entries in file order, duplicates kept (to be refused).
struct Servers(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Top {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Top;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object holding an `mcpServers` object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
                let mut top = Top {
                    servers: None,
                    others: Vec::new(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    if key == "mcpServers" {
                        top.servers = Some(map.next_value::<Servers>()?.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                        top.others.push(key);
                    }
                }
                Ok(top)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Servers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Servers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`mcpServers` to be an object of servers by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Servers, A::Error> {
                let mut servers = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    servers.push(entry);
                }
                Ok(Servers(servers))
            }
        }
        d.deserialize_map(V)
    }
}

/// Read a whole `mcpServers` file.
pub(super) fn parse(text: &str, env: Env<'_>) -> Result<GatewayConfig, GatewayConfigError> {
    let top: Top = serde_json::from_str(text).map_err(|e| {
        let shown = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let problem = shown.strip_suffix(&suffix).unwrap_or(&shown).to_owned();
        GatewayConfigError::json(None, None, (e.line() > 0).then_some(e.line()), problem)
    })?;
    let Some(servers) = top.servers else {
        let near = top.others.iter().find_map(|k| {
            toolbreaker::registry::closest_name(k, ["mcpServers"])
                .map(|_| format!(" (`{k}` is misspelt?)"))
        });
        let problem = format!(
            "no `mcpServers` object{}: expected {{\"mcpServers\": {{\"NAME\": {{...}}}}}}",
            near.unwrap_or_default()
        );
        return Err(GatewayConfigError::json(None, None, None, problem));
    };
    let mut upstreams: Vec<UpstreamConfig> = Vec::new();
    for (name, value) in &servers {
        let section = format!("mcpServers.{}", path_part(name));
        let line = locate(text, name, None);
        let err = |key: Option<&str>, problem: String| {
            let line = key.and_then(|k| locate(text, name, Some(k))).or(line);
            GatewayConfigError::json(Some(section.clone()), key, line, problem)
        };
        if servers.iter().filter(|(n, _)| n == name).count() > 1 {
            return Err(err(
                None,
                format!("the server {name:?} is defined more than once"),
            ));
        }
        rules::upstream_name(name).map_err(|p| err(None, p))?;
        let Value::Object(entry) = value else {
            return Err(err(None, format!("must be an object, not {}", kind(value))));
        };
        if let Some(upstream) = server(name, entry, env).map_err(|(k, p)| err(k, p))? {
            upstreams.push(upstream);
        }
    }
    if upstreams.is_empty() {
        let problem = "names no server (or only disabled ones): expected at least one entry";
        return Err(GatewayConfigError::json(
            Some("mcpServers".to_owned()),
            None,
            None,
            problem,
        ));
    }
    Ok(GatewayConfig {
        upstreams,
        registry: RegistryConfig::default(),
    })
}

type Fault<'k> = (Option<&'k str>, String);

/// One server; `None` when it is `"disabled": true`.
fn server<'k>(
    name: &str,
    entry: &'k Map<String, Value>,
    env: Env<'_>,
) -> Result<Option<UpstreamConfig>, Fault<'k>> {
    for key in entry.keys() {
        let key = key.as_str();
        match key {
            "envFile" => {
                return Err((
                    Some(key),
                    "is not supported: give the variables in `env`".into(),
                ));
            }
            "auth" => {
                return Err((Some(key), "OAuth is not supported: give a token in `headers` (\"Authorization\": \"Bearer ${VAR}\")".into()));
            }
            k if KEYS.contains(&k) || CLIENT_KEYS.contains(&k) => {}
            other => {
                let problem = format!(
                    "unknown key {}; expected {}",
                    unknown_word(other, KEYS),
                    backticked(KEYS[..11].iter().copied())
                );
                return Err((Some(key), problem));
            }
        }
    }
    let field = |key: &'k str| entry.get_key_value(key).map(|(k, v)| (k.as_str(), v));
    if let Some((key, value)) = field("disabled") {
        match value {
            Value::Bool(true) => return Ok(None),
            Value::Bool(false) => {}
            other => {
                return Err((
                    Some(key),
                    format!("must be true or false, not {}", kind(other)),
                ));
            }
        }
    }
    let redaction = std::cell::RefCell::new(Redaction::default());
    let expand = |text: &str| -> Result<String, String> {
        let expanded = expand_traced(text, env)?;
        redaction.borrow_mut().record(&expanded);
        Ok(expanded.text)
    };
    let text = |key: &'k str| -> Result<Option<String>, Fault<'k>> {
        match field(key) {
            None => Ok(None),
            Some((k, Value::String(s))) => expand(s).map(Some).map_err(|p| (Some(k), p)),
            Some((k, other)) => Err((Some(k), format!("must be a string, not {}", kind(other)))),
        }
    };
    let kind_given = match field("type") {
        None => None,
        Some((k, Value::String(t))) => match t.as_str() {
            "stdio" => Some("stdio"),
            "http" | "streamable-http" | "streamableHttp" => Some("http"),
            "sse" => return Err((Some(k), "the legacy SSE transport is not supported: give the server's Streamable HTTP endpoint, with `\"type\": \"http\"`".into())),
            other => return Err((Some(k), format!("{} must be one of {}", unknown_word(other, TYPES), backticked(TYPES)))),
        },
        Some((k, other)) => return Err((Some(k), format!("must be a string, not {}", kind(other)))),
    };
    let transport = match (text("url")?, text("command")?, kind_given) {
        (Some(_), Some(_), _) => {
            return Err((
                Some("command"),
                "a server has a `url` (Streamable HTTP) or a `command` (stdio), not both".into(),
            ));
        }
        (Some(url), None, None | Some("http")) => {
            rules::url(&url).map_err(|p| (Some("url"), p))?;
            if let Some(printed) = rules::printed_url(&url) {
                redaction.borrow_mut().alias(&printed, &url);
            }
            for key in ["args", "env", "cwd"] {
                if let Some((k, _)) = field(key) {
                    return Err((
                        Some(k),
                        "is for a stdio server (`command`), not one with a `url`".into(),
                    ));
                }
            }
            Transport::Http {
                url,
                headers: pairs(field("headers"), &expand, true)?,
            }
        }
        (None, Some(command), None | Some("stdio")) if !command.is_empty() => {
            if let Some((k, _)) = field("headers") {
                return Err((
                    Some(k),
                    "is for an HTTP server (`url`), not one with a `command`".into(),
                ));
            }
            let args = match field("args") {
                None => Vec::new(),
                Some((k, Value::Array(items))) => items
                    .iter()
                    .map(|a| match a {
                        Value::String(s) => expand(s).map_err(|p| (Some(k), p)),
                        other => Err((
                            Some(k),
                            format!("must be a list of strings, not one holding {}", kind(other)),
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some((k, other)) => {
                    return Err((
                        Some(k),
                        format!("must be a list of strings, not {}", kind(other)),
                    ));
                }
            };
            let env_pairs = pairs(field("env"), &expand, false)?;
            let cwd = text("cwd")?;
            if let Some(cwd) = &cwd {
                let redaction = redaction.borrow();
                rules::cwd(cwd, redaction.shown(cwd)).map_err(|p| (Some("cwd"), p))?;
            }
            Transport::Stdio {
                command,
                args,
                env: env_pairs,
                cwd: cwd.map(PathBuf::from),
            }
        }
        (None, Some(_), None | Some("stdio")) => {
            return Err((Some("command"), "must name a program, not be empty".into()));
        }
        (Some(_), None, Some(_)) => {
            return Err((
                Some("type"),
                "says `stdio`, but the server has a `url` and no `command`".into(),
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err((
                Some("type"),
                "says HTTP, but the server has a `command` and no `url`".into(),
            ));
        }
        (None, None, _) => {
            return Err((
                None,
                "needs a `command` (a stdio child process) or a `url` (a Streamable HTTP server)"
                    .into(),
            ));
        }
    };
    let millis_of = |key: &'k str| -> Result<Option<std::time::Duration>, Fault<'k>> {
        field(key)
            .map(|(k, v)| millis(k, v).map_err(|p| (Some(k), p)))
            .transpose()
    };
    let per_call_timeout = millis_of("per_call_timeout_ms")?;
    let max_call = millis_of("max_call_ms")?;
    let mut upstream = UpstreamConfig {
        name: name.to_owned(),
        prefix: format!("{name}."),
        transport,
        allow: None,
        deny: Vec::new(),
        per_call_timeout: per_call_timeout.unwrap_or(DEFAULT_PER_CALL_TIMEOUT),
        max_call: max_call.unwrap_or(MAX_CALL),
        classifier: McpClassifier::new(),
        tools: Vec::new(),
        era: Default::default(),
        required: false,
        redaction: redaction.into_inner(),
    };
    if upstream.max_call < upstream.per_call_timeout {
        let key = if max_call.is_some() {
            "max_call_ms"
        } else {
            "per_call_timeout_ms"
        };
        let (key, _) = field(key).unwrap_or((key, &Value::Null));
        let problem = super::toml_upstream::shorter(upstream.max_call, upstream.per_call_timeout);
        return Err((Some(key), problem));
    }
    if let Some((k, value)) = field("tools") {
        upstream.tools = tools(&upstream, value).map_err(|p| (Some(k), p))?;
    }
    Ok(Some(upstream))
}

/// A server's `tools`: `{"NAME": {"per_call_timeout_ms": 60000, "max_call_ms": 120000}}`.
fn tools(upstream: &UpstreamConfig, value: &Value) -> Result<Vec<ToolConfig>, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "must be an object of tool names to their settings, not {}",
            kind(value)
        ));
    };
    let mut tools = Vec::new();
    for (name, settings) in map {
        let shown = crate::redact::shown(name);
        rules::tool_name(name).map_err(|p| format!("`{shown}`: {p}"))?;
        let Value::Object(settings) = settings else {
            return Err(format!(
                "`{shown}` must be an object, not {}",
                kind(settings)
            ));
        };
        let mut tool = ToolConfig {
            name: name.clone(),
            own_breaker: false,
            classifier: None,
            per_call_timeout: None,
            max_call: None,
        };
        for (key, v) in settings {
            let at = |p: String| format!("{shown}.{}: {p}", crate::redact::shown(key));
            match key.as_str() {
                "per_call_timeout_ms" => tool.per_call_timeout = Some(millis(key, v).map_err(at)?),
                "max_call_ms" => tool.max_call = Some(millis(key, v).map_err(at)?),
                other => {
                    return Err(at(format!(
                        "unknown key {}; expected {}",
                        unknown_word(other, TOOL_KEYS),
                        backticked(TOOL_KEYS)
                    )));
                }
            }
        }
        let timeout = tool.per_call_timeout.unwrap_or(upstream.per_call_timeout);
        let max = tool.max_call.unwrap_or(upstream.max_call);
        if max < timeout {
            return Err(format!(
                "{shown}: {}",
                super::toml_upstream::shorter(max, timeout)
            ));
        }
        if tool.per_call_timeout.is_none() && tool.max_call.is_none() {
            return Err(format!(
                "`{shown}` sets nothing: give it {}",
                backticked(TOOL_KEYS)
            ));
        }
        tools.push(tool);
    }
    Ok(tools)
}

/// `per_call_timeout_ms` or `max_call_ms`: a whole number of milliseconds from 1 to the
/// crate's largest duration (`max_call_ms`: to [`MAX_CALL`]).
fn millis(key: &str, value: &Value) -> Result<std::time::Duration, String> {
    let top = if key == "max_call_ms" {
        MAX_CALL.as_millis()
    } else {
        toolbreaker::config::MAX_DURATION.as_millis()
    };
    let range = format!("must be a whole number of ms from 1 to {top}");
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(ms) if ms >= 1 && u128::from(ms) <= top => {
                Ok(std::time::Duration::from_millis(ms))
            }
            _ => Err(format!("{range}, not {n}")),
        },
        other => Err(format!("{range}, not {}", kind(other))),
    }
}

/// `headers` or `env`: an object of names to strings, each expanded into a [`Secret`].
fn pairs<'k>(
    field: Option<(&'k str, &'k Value)>,
    expand: &dyn Fn(&str) -> Result<String, String>,
    headers: bool,
) -> Result<Vec<(String, Secret)>, Fault<'k>> {
    let Some((key, value)) = field else {
        return Ok(Vec::new());
    };
    let Value::Object(map) = value else {
        return Err((
            Some(key),
            format!("must be an object of names to strings, not {}", kind(value)),
        ));
    };
    let mut out = Vec::new();
    for (name, v) in map {
        let Value::String(s) = v else {
            return Err((
                Some(key),
                format!("{name:?} must be a string, not {}", kind(v)),
            ));
        };
        let value = expand(s).map_err(|p| (Some(key), format!("{name}: {p}")))?;
        if headers {
            rules::header(name, &value).map_err(|p| (Some(key), p))?;
        } else if name.is_empty() || name.contains(['=', '\0']) {
            return Err((
                Some(key),
                format!("{name:?} is not an environment variable name"),
            ));
        }
        out.push((name.clone(), Secret::new(value)));
    }
    Ok(out)
}

/// A JSON value's kind, for errors (never its content).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The line of server `name`'s entry (or of its `key`), found in the text: the first `"name":`
/// after `"mcpServers"`, then the first `"key":` after that. Best effort (a name written with
/// escapes is not found).
fn locate(text: &str, name: &str, key: Option<&str>) -> Option<usize> {
    let after = |from: usize, word: &str| -> Option<usize> {
        let quoted = serde_json::to_string(word).ok()?;
        let mut at = from;
        while let Some(i) = text[at..].find(&quoted) {
            let end = at + i + quoted.len();
            if text[end..].trim_start().starts_with(':') {
                return Some(end);
            }
            at = end;
        }
        None
    };
    let servers = after(0, "mcpServers")?;
    let mut at = after(servers, name)?;
    if let Some(key) = key {
        at = after(at, key)?;
    }
    Some(text[..at].bytes().filter(|&b| b == b'\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use crate::config::{GatewayConfig, Transport};

    fn env(name: &str) -> Option<String> {
        (name == "API_KEY").then(|| "k3y".to_owned())
    }

    fn parse(text: &str) -> Result<GatewayConfig, String> {
        GatewayConfig::from_mcp_servers_json_str_with(text, env).map_err(|e| e.to_string())
    }

    /// Claude Desktop's file: the app's own settings beside `mcpServers`, stdio servers.
    #[test]
    fn reads_claude_desktops_file() {
        let config = parse(
            r#"{
  "globalShortcut": "Alt+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    },
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example" }
    }
  }
}"#,
        )
        .unwrap();
        let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["filesystem", "github"]);
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &config.upstreams[1].transport
        else {
            panic!("stdio");
        };
        assert_eq!((command.as_str(), args.len(), cwd), ("npx", 2, &None));
        assert_eq!(env[0].0, "GITHUB_PERSONAL_ACCESS_TOKEN");
        assert_eq!(env[0].1.expose(), "ghp_example");
        assert!(!format!("{config:?}").contains("ghp_example"));
        assert_eq!(config.upstreams[0].prefix, "filesystem.");
        assert_eq!(config.registry, toolbreaker::RegistryConfig::default());
    }

    /// Cursor's and Claude Code's files: `url` servers with headers, `type`, `${env:VAR}` and
    /// `${VAR:-default}`, in file order (not sorted), a disabled entry skipped.
    #[test]
    fn reads_cursors_and_claude_codes_files() {
        let config = parse(
            r#"{"mcpServers": {
  "zeta": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer ${env:API_KEY}" } },
  "api-server": { "type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp" },
  "local": { "type": "stdio", "command": "python", "args": ["server.py"], "cwd": "/srv" },
  "off": { "command": "never", "disabled": true }
}}"#,
        )
        .unwrap();
        let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["zeta", "api-server", "local"]);
        let Transport::Http { url, headers } = &config.upstreams[0].transport else {
            panic!("http");
        };
        assert_eq!(
            (url.as_str(), headers[0].1.expose()),
            ("https://mcp.example.com/mcp", "Bearer k3y")
        );
        assert!(
            matches!(&config.upstreams[1].transport, Transport::Http { url, .. } if url == "https://api.example.com/mcp")
        );
        assert!(
            matches!(&config.upstreams[2].transport, Transport::Stdio { cwd: Some(cwd), .. } if cwd.as_os_str() == "/srv")
        );
    }

    #[test]
    fn refuses_unknown_and_unsupported_keys_naming_them() {
        assert_eq!(
            parse("{\"mcpServers\": {\n  \"files\": {\n    \"comand\": \"npx\"\n  }\n}}")
                .unwrap_err(),
            "line 3: mcpServers.files.comand: unknown key `comand` (did you mean `command`?); \
             expected `command`, `args`, `env`, `cwd`, `url`, `headers`, `type`, `disabled`, \
             `per_call_timeout_ms`, `max_call_ms`, `tools`"
        );
        assert_eq!(
            parse(r#"{"mcpServers": {"a": {"command": "x", "envFile": ".env"}}}"#).unwrap_err(),
            "line 1: mcpServers.a.envFile: is not supported: give the variables in `env`"
        );
        assert_eq!(
            parse(r#"{"mcpServers": {"a": {"url": "https://h/sse", "type": "sse"}}}"#).unwrap_err(),
            "line 1: mcpServers.a.type: the legacy SSE transport is not supported: give the \
             server's Streamable HTTP endpoint, with `\"type\": \"http\"`"
        );
        assert_eq!(
            parse(r#"{"mcpServers": {"a": {"url": "https://h/mcp", "auth": {"CLIENT_ID": "x"}}}}"#)
                .unwrap_err(),
            "line 1: mcpServers.a.auth: OAuth is not supported: give a token in `headers` \
             (\"Authorization\": \"Bearer ${VAR}\")"
        );
        assert_eq!(
            parse(r#"{"mcpServers": {"a": {"command": "x", "type": "stdoi"}}}"#).unwrap_err(),
            "line 1: mcpServers.a.type: `stdoi` (did you mean `stdio`?) must be one of `stdio`, \
             `http`, `streamable-http`, `streamableHttp`, `sse`"
        );
    }

    /// Every value a variable gave is recorded for redaction, in each field.
    #[test]
    fn values_from_the_environment_are_recorded_for_redaction() {
        let env = |name: &str| (name == "API_KEY").then(|| "k3y-from-the-env".to_owned());
        let config = GatewayConfig::from_mcp_servers_json_str_with(
            r#"{"mcpServers": {
  "web": {"url": "http://127.0.0.1:9/k/${API_KEY}/mcp"},
  "cli": {"command": "/opt/${API_KEY}/server", "args": ["--key=${API_KEY}"]}
}}"#,
            env,
        )
        .unwrap();
        let web = &config.upstream("web").unwrap().redaction;
        assert_eq!(
            web.shown("http://127.0.0.1:9/k/k3y-from-the-env/mcp"),
            "http://127.0.0.1:9/k/<redacted>/mcp"
        );
        let cli = &config.upstream("cli").unwrap().redaction;
        assert_eq!(
            cli.apply("cannot start `/opt/k3y-from-the-env/server` --key=k3y-from-the-env"),
            "cannot start `/opt/<redacted>/server` --key=<redacted>"
        );
    }

    #[test]
    fn an_entry_sets_its_timeouts_and_its_tools_and_a_bad_one_is_named() {
        let config = parse(
            r#"{"mcpServers": {"everything": {
  "command": "npx",
  "per_call_timeout_ms": 5000,
  "tools": {"trigger-long-running-operation": {"per_call_timeout_ms": 60000, "max_call_ms": 120000}}
}}}"#,
        )
        .unwrap();
        let everything = &config.upstreams[0];
        let seconds = std::time::Duration::from_secs;
        assert_eq!(
            everything.timeouts_for("trigger-long-running-operation"),
            (seconds(60), seconds(120))
        );
        assert_eq!(everything.timeouts_for("echo"), (seconds(5), seconds(300)));
        let refusals = [
            (
                r#"{"mcpServers": {"a": {"command": "x", "per_call_timeout_ms": "10s"}}}"#,
                "line 1: mcpServers.a.per_call_timeout_ms: must be a whole number of ms from 1 to \
                 1099511627776, not a string",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "max_call_ms": 0}}}"#,
                "line 1: mcpServers.a.max_call_ms: must be a whole number of ms from 1 to 300000, \
                 not 0",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "tools": {"t": {"per_call_timout_ms": 1}}}}}"#,
                "line 1: mcpServers.a.tools: t.per_call_timout_ms: unknown key \
                 `per_call_timout_ms` (did you mean `per_call_timeout_ms`?); expected \
                 `per_call_timeout_ms`, `max_call_ms`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "tools": {"t": {"per_call_timeout_ms": 400000}}}}}"#,
                "line 1: mcpServers.a.tools: t: `max_call_ms` (300000) is shorter than \
                 `per_call_timeout_ms` (400000): a call's timeout is put back by its progress up \
                 to `max_call_ms`, never below its own length",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "tools": []}}}"#,
                "line 1: mcpServers.a.tools: must be an object of tool names to their settings, \
                 not a list",
            ),
        ];
        for (text, expected) in refusals {
            assert_eq!(parse(text).unwrap_err(), expected, "{text}");
        }
    }

    #[test]
    fn refuses_bad_entries() {
        let cases = [
            (
                r#"{"mcpServers": {"a": {"url": "https://h/mcp", "command": "x"}}}"#,
                "line 1: mcpServers.a.command: a server has a `url` (Streamable HTTP) or a `command` (stdio), not both",
            ),
            (
                r#"{"mcpServers": {"a": {"args": ["x"]}}}"#,
                "line 1: mcpServers.a: needs a `command` (a stdio child process) or a `url` (a Streamable HTTP server)",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ws://h/mcp"}}}"#,
                "line 1: mcpServers.a.url: must be an http:// or https:// URL (Streamable HTTP), not ws:",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "stdio", "url": "https://h/mcp"}}}"#,
                "line 1: mcpServers.a.type: says `stdio`, but the server has a `url` and no `command`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "headers": {}}}}"#,
                "line 1: mcpServers.a.headers: is for an HTTP server (`url`), not one with a `command`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${SECRET}"}}}}"#,
                "line 1: mcpServers.a.env: K: environment variable SECRET is not set",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": "-v"}}}"#,
                "line 1: mcpServers.a.args: must be a list of strings, not a string",
            ),
            (
                r#"{"mcpServers": {"Zuplo MCP": {"url": "https://h/mcp"}}}"#,
                "line 1: mcpServers.\"Zuplo MCP\": the upstream name \"Zuplo MCP\" must be non-empty, with no `.`, whitespace or control character (it names the upstream's breaker and prefixes its tools)",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#,
                "line 1: mcpServers.a: the server \"a\" is defined more than once",
            ),
            (
                r#"{"mcpServers": {"a": ["x"]}}"#,
                "line 1: mcpServers.a: must be an object, not a list",
            ),
            (
                r#"{"mcpServers": {}}"#,
                "mcpServers: names no server (or only disabled ones): expected at least one entry",
            ),
            (
                r#"{"mcpServer": {}}"#,
                "no `mcpServers` object (`mcpServer` is misspelt?): expected {\"mcpServers\": {\"NAME\": {...}}}",
            ),
            (
                "{\"mcpServers\": {\n\"a\": {\"command\": \"x\",}}}",
                "line 2: trailing comma",
            ),
            (
                r#"{"mcpServers": []}"#,
                "line 1: invalid type: sequence, expected `mcpServers` to be an object of servers by name",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap_err(), want, "{text}");
        }
    }
}
