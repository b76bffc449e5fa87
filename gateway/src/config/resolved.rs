//! The configuration as `--check` prints it: resolved (defaults filled in, `${VAR}` expanded,
//! breaker settings merged) and with every secret `<redacted>`.

use serde_json::{Value, json};
use toolbreaker::Config;

use super::{Era, GatewayConfig, Transport, UpstreamConfig};

impl GatewayConfig {
    /// The configuration as JSON, every secret `<redacted>`: header and `env` values whole; in
    /// a `url`, `command`, argument or `cwd`, each value a `${VAR}` gave, and a URL's user,
    /// password and query string.
    ///
    /// ```text
    /// {"default_breaker": BREAKER,
    ///  "upstreams": [{"name", "prefix", "transport": "http" | "stdio",
    ///                 "url", "headers": {NAME: "<redacted>"}          (http)
    ///                 "command", "args", "env": {NAME: "<redacted>"}, "cwd"   (stdio)
    ///                 "allow": [..] | null, "deny": [..], "per_call_timeout_ms",
    ///                 "max_call_ms", "required", "era", "breaker": BREAKER,
    ///                 "tools": [{"name", "own_breaker", "breaker": BREAKER | null,
    ///                            "per_call_timeout_ms", "max_call_ms"}]}]}
    /// BREAKER: {"failure_threshold": n | null, "cooldown_ms", "probe_timeout_ms",
    ///           "failure_rate": x | null, "minimum_calls": n | null, "settings": "..."}
    /// ```
    ///
    /// `settings` is every breaker setting in the crate's own words.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker_gateway::config::GatewayConfig;
    ///
    /// let config = GatewayConfig::from_toml_str_with(
    ///     "[upstreams.a]\nurl = \"http://127.0.0.1:9/k/${KEY}/mcp\"\n\
    ///      headers = { Authorization = \"Bearer t0ken-abc\" }\ncooldown_ms = 2000\n",
    ///     |name| (name == "KEY").then(|| "k3y-0123456789".to_owned()),
    /// )?;
    /// let shown = config.resolved();
    /// let a = &shown["upstreams"][0];
    /// assert_eq!(a["url"], "http://127.0.0.1:9/k/<redacted>/mcp");
    /// assert_eq!(a["headers"]["Authorization"], "<redacted>");
    /// assert_eq!(a["breaker"]["cooldown_ms"], 2000);
    /// assert_eq!((a["per_call_timeout_ms"].as_u64(), a["max_call_ms"].as_u64()), (Some(10_000), Some(300_000)));
    /// assert_eq!(a["required"], false);
    /// assert!(!shown.to_string().contains("k3y") && !shown.to_string().contains("t0ken"));
    /// # Ok::<(), toolbreaker_gateway::config::GatewayConfigError>(())
    /// ```
    pub fn resolved(&self) -> Value {
        let upstreams: Vec<Value> = self
            .upstreams
            .iter()
            .map(|u| self.upstream_json(u))
            .collect();
        json!({
            "default_breaker": breaker(&self.registry.default_config()),
            "upstreams": upstreams,
        })
    }

    fn upstream_json(&self, u: &UpstreamConfig) -> Value {
        let redacted = |pairs: &[(String, super::Secret)]| -> Value {
            pairs
                .iter()
                .map(|(name, _)| (name.clone(), Value::from("<redacted>")))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let mut shown = json!({
            "name": u.name,
            "prefix": u.prefix,
            "transport": u.transport.kind(),
        });
        match &u.transport {
            Transport::Http { url, headers } => {
                // The user, password and query string as written in the file too.
                let url = crate::upstream::url_credentials(url)
                    .iter()
                    .fold(u.redaction.shown(url).to_owned(), |shown, secret| {
                        shown.replace(secret.as_str(), "<redacted>")
                    });
                shown["url"] = url.into();
                shown["headers"] = redacted(headers);
            }
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                shown["command"] = u.redaction.shown(command).into();
                let args: Vec<&str> = args.iter().map(|a| u.redaction.shown(a)).collect();
                shown["args"] = args.into();
                shown["env"] = redacted(env);
                shown["cwd"] = cwd
                    .as_ref()
                    .map(|c| u.redaction.shown(&c.to_string_lossy()).to_owned())
                    .into();
            }
        }
        shown["allow"] = u.allow.clone().into();
        shown["deny"] = u.deny.clone().into();
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        shown["per_call_timeout_ms"] = ms(u.per_call_timeout).into();
        shown["max_call_ms"] = ms(u.max_call).into();
        shown["required"] = u.required.into();
        shown["era"] = match u.era {
            Era::Newest => "newest",
            Era::Sessions => "2025-11-25",
            Era::Stateless => "2026-07-28",
        }
        .into();
        shown["breaker"] = breaker(&self.registry.config_for(&u.name));
        let tools: Vec<Value> = u
            .tools
            .iter()
            .map(|t| {
                let own = t
                    .own_breaker
                    .then(|| breaker(&self.registry.config_for(&u.breaker_name(&t.name))));
                // The timeouts in force for the tool: its own, else its upstream's.
                let (timeout, max) = u.timeouts_for(&t.name);
                json!({"name": t.name, "own_breaker": t.own_breaker, "breaker": own,
                       "per_call_timeout_ms": ms(timeout), "max_call_ms": ms(max)})
            })
            .collect();
        shown["tools"] = tools.into();
        shown
    }
}

/// One breaker's settings.
fn breaker(config: &Config) -> Value {
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    json!({
        "failure_threshold": config.failure_threshold(),
        "cooldown_ms": ms(config.cooldown()),
        "probe_timeout_ms": ms(config.probe_timeout()),
        "failure_rate": config.failure_rate(),
        "minimum_calls": config.minimum_calls(),
        "settings": format!("{config:?}"),
    })
}
