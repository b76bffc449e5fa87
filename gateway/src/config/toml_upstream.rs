//! One `[upstreams.NAME]` section of the TOML file, with its `tools.TOOL` sections.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;
use toml::de::{DeString, DeValue};
use toolbreaker::mcp::McpClassifier;

use super::breakers::{BREAKER_KEYS, Setting, ToolBreakers, UpstreamBreakers};
use super::error::{GatewayConfigError, path_part};
use super::rules::{self, backticked, unknown_word};
use super::toml_file::{Doc, entries, string, strings, table};
use super::types::{DEFAULT_PER_CALL_TIMEOUT, MAX_CALL};
use super::{Era, Redaction, Secret, ToolConfig, Transport, UpstreamConfig};

/// An `[upstreams.NAME]` section's own keys (besides the breaker keys).
const UPSTREAM_KEYS: [&str; 16] = [
    "url",
    "headers",
    "command",
    "args",
    "env",
    "cwd",
    "prefix",
    "allow",
    "deny",
    "per_call_timeout_ms",
    "max_call_ms",
    "tool_error",
    "error_codes",
    "tools",
    "era",
    "required",
];

/// A `[upstreams.NAME.tools.TOOL]` section's own keys (besides the breaker keys).
const TOOL_KEYS: [&str; 5] = [
    "own_breaker",
    "tool_error",
    "error_codes",
    "per_call_timeout_ms",
    "max_call_ms",
];

/// One `[upstreams.NAME]` section.
pub(super) fn upstream(
    doc: &Doc<'_>,
    name: &Spanned<DeString<'_>>,
    value: &Spanned<DeValue<'_>>,
) -> Result<(UpstreamConfig, UpstreamBreakers), GatewayConfigError> {
    let upstream_name: &str = name.get_ref();
    let section = format!("upstreams.{}", path_part(upstream_name));
    let here = name.span();
    rules::upstream_name(upstream_name)
        .map_err(|p| doc.err(Some(&section), None, here.clone(), p))?;
    let body = table(doc, Some("upstreams"), upstream_name, here.clone(), value)?;
    let err = |key: &str, span: Range<usize>, problem: String| {
        doc.err(Some(&section), Some(key), span, problem)
    };
    let mut url = None;
    let mut command = None;
    let mut headers = None;
    let mut args = None;
    let mut env = None;
    let mut cwd = None;
    let mut prefix = format!("{upstream_name}.");
    let mut era = Era::default();
    let mut required = false;
    let mut allow: Option<Vec<String>> = None;
    let mut deny = Vec::new();
    let mut deny_span = here.clone();
    let mut per_call_timeout = (DEFAULT_PER_CALL_TIMEOUT, None);
    let mut max_call = (MAX_CALL, None);
    let mut classifier = McpClassifier::new();
    let mut tools_table = None;
    let mut settings = Vec::new();
    let mut redaction = Redaction::default();
    for (k, v) in entries(body) {
        let key: &str = k.get_ref();
        let span = k.span();
        let value = v.get_ref();
        let at = |p: String| err(key, span.clone(), p);
        match key {
            "url" => {
                let text = string(value).map_err(at)?;
                let text = doc.expand_into(&mut redaction, text, &section, key, span.clone())?;
                url = Some((text, span))
            }
            "command" => {
                let text = string(value).map_err(at)?;
                let text = doc.expand_into(&mut redaction, text, &section, key, span.clone())?;
                if text.is_empty() {
                    return Err(at("must name a program, not be empty".to_owned()));
                }
                command = Some((text, span));
            }
            "headers" | "env" => {
                let pairs = secrets(doc, &mut redaction, &section, key, span.clone(), value)?;
                if key == "headers" {
                    headers = Some((pairs, span));
                } else {
                    env = Some((pairs, span));
                }
            }
            "args" => {
                let mut list = Vec::new();
                for arg in strings(value).map_err(at)? {
                    list.push(doc.expand_into(&mut redaction, arg, &section, key, span.clone())?);
                }
                args = Some((list, span));
            }
            "cwd" => {
                let text = string(value).map_err(at)?;
                let text = doc.expand_into(&mut redaction, text, &section, key, span.clone())?;
                rules::cwd(&text, redaction.shown(&text)).map_err(at)?;
                cwd = Some((PathBuf::from(text), span));
            }
            "prefix" => {
                let text = string(value).map_err(at)?;
                rules::prefix(text).map_err(at)?;
                prefix = text.to_owned();
            }
            "allow" | "deny" => {
                let list = strings(value).map_err(at)?;
                for tool in &list {
                    rules::tool_name(tool).map_err(at)?;
                }
                let list = list.into_iter().map(str::to_owned).collect();
                if key == "allow" {
                    allow = Some(list);
                } else {
                    deny = list;
                    deny_span = span;
                }
            }
            "per_call_timeout_ms" => per_call_timeout = (millis(value).map_err(at)?, Some(span)),
            "max_call_ms" => max_call = (max_call_ms(value).map_err(at)?, Some(span)),
            "required" => {
                required = value.as_bool().ok_or_else(|| {
                    at(format!(
                        "must be true or false, not {}",
                        rules::a(value.type_str())
                    ))
                })?;
            }
            "era" => {
                let text = string(value).map_err(at)?;
                era = Era::parse(text).ok_or_else(|| {
                    at(format!(
                        "`{}` is not an era: \"newest\" (the default), \"2026-07-28\" or \"2025-11-25\"",
                        crate::redact::shown(text)
                    ))
                })?;
            }
            "tool_error" => {
                classifier =
                    classifier.tool_error(rules::outcome(string(value).map_err(at)?).map_err(at)?);
            }
            "error_codes" => classifier = codes(doc, &section, span.clone(), value, classifier)?,
            "tools" => tools_table = Some((table(doc, Some(&section), key, span, v)?, k)),
            key if BREAKER_KEYS.contains(&key) => {
                settings.push(Setting::new(key, value, doc.line(span)))
            }
            other => {
                let known = UPSTREAM_KEYS.iter().chain(BREAKER_KEYS.iter()).copied();
                return Err(at(format!(
                    "unknown key {}; expected {} or a breaker key ({})",
                    unknown_word(other, known),
                    backticked(UPSTREAM_KEYS),
                    backticked(BREAKER_KEYS)
                )));
            }
        }
    }
    let transport = match (url, command) {
        (Some((url, span)), None) => {
            rules::url(&url).map_err(|p| err("url", span.clone(), p))?;
            if let Some(printed) = rules::printed_url(&url) {
                redaction.alias(&printed, &url);
            }
            for (key, given) in [
                ("args", args.map(|a| a.1)),
                ("env", env.map(|e| e.1)),
                ("cwd", cwd.map(|c| c.1)),
            ] {
                if let Some(span) = given {
                    return Err(err(
                        key,
                        span,
                        "is for a stdio upstream (`command`), not one with a `url`".to_owned(),
                    ));
                }
            }
            let headers = headers.map(|h| h.0).unwrap_or_default();
            Transport::Http { url, headers }
        }
        (None, Some((command, _))) => {
            if let Some((_, span)) = headers {
                return Err(err(
                    "headers",
                    span,
                    "is for an HTTP upstream (`url`), not one with a `command`".to_owned(),
                ));
            }
            Transport::Stdio {
                command,
                args: args.map(|a| a.0).unwrap_or_default(),
                env: env.map(|e| e.0).unwrap_or_default(),
                cwd: cwd.map(|c| c.0),
            }
        }
        (Some(_), Some((_, span))) => {
            return Err(err(
                "command",
                span,
                "an upstream has a `url` (Streamable HTTP) or a `command` (stdio), not both"
                    .to_owned(),
            ));
        }
        (None, None) => {
            return Err(doc.err(
                Some(&section),
                None,
                here,
                "needs a `url` (a Streamable HTTP server) or a `command` (a stdio child process)",
            ));
        }
    };
    if let Some(both) = allow
        .as_ref()
        .and_then(|a| a.iter().find(|t| deny.contains(t)))
    {
        return Err(doc.err(
            Some(&section),
            Some("deny"),
            deny_span,
            format!("the tool `{both}` is in both `allow` and `deny`"),
        ));
    }
    if let (Some(span), _) | (None, Some(span)) = (max_call.1.clone(), per_call_timeout.1.clone())
        && max_call.0 < per_call_timeout.0
    {
        let key = if max_call.1.is_some() {
            "max_call_ms"
        } else {
            "per_call_timeout_ms"
        };
        return Err(err(key, span, shorter(max_call.0, per_call_timeout.0)));
    }
    let mut upstream = UpstreamConfig {
        name: upstream_name.to_owned(),
        prefix,
        transport,
        allow,
        deny,
        per_call_timeout: per_call_timeout.0,
        max_call: max_call.0,
        classifier,
        tools: Vec::new(),
        era,
        required,
        redaction,
    };
    let mut tool_breakers = Vec::new();
    for (tool_key, tool_value) in tools_table.map(|(t, _)| entries(t)).unwrap_or_default() {
        let (tool, own) = tool(doc, &upstream, tool_key, tool_value)?;
        if tool.own_breaker {
            tool_breakers.push(own);
        }
        upstream.tools.push(tool);
    }
    let own = UpstreamBreakers {
        name: upstream_name.to_owned(),
        line: doc.line(here),
        settings,
        tools: tool_breakers,
    };
    Ok((upstream, own))
}

/// One `[upstreams.NAME.tools.TOOL]` section.
fn tool(
    doc: &Doc<'_>,
    upstream: &UpstreamConfig,
    name: &Spanned<DeString<'_>>,
    value: &Spanned<DeValue<'_>>,
) -> Result<(ToolConfig, ToolBreakers), GatewayConfigError> {
    let tool_name: &str = name.get_ref();
    let section = format!(
        "upstreams.{}.tools.{}",
        path_part(&upstream.name),
        path_part(tool_name)
    );
    let here = name.span();
    rules::tool_name(tool_name).map_err(|p| doc.err(Some(&section), None, here.clone(), p))?;
    if !upstream.exposes(tool_name) {
        let problem = format!(
            "the tool `{tool_name}` is hidden by the upstream's `allow` or `deny`: its section would never be used"
        );
        return Err(doc.err(Some(&section), None, here, problem));
    }
    let body = table(
        doc,
        Some(&format!("upstreams.{}.tools", path_part(&upstream.name))),
        tool_name,
        here.clone(),
        value,
    )?;
    let mut own_breaker = None;
    let mut classifier: Option<McpClassifier> = None;
    let mut per_call_timeout = None;
    let mut max_call = None;
    let mut settings = Vec::new();
    for (k, v) in entries(body) {
        let key: &str = k.get_ref();
        let span = k.span();
        let value = v.get_ref();
        let at = |p: String| doc.err(Some(&section), Some(key), span.clone(), p);
        let base = || {
            classifier
                .clone()
                .unwrap_or_else(|| upstream.classifier.clone())
        };
        match key {
            "own_breaker" => {
                let on = value.as_bool().ok_or_else(|| {
                    at(format!(
                        "must be true or false, not {}",
                        rules::a(value.type_str())
                    ))
                })?;
                own_breaker = Some((on, span));
            }
            "tool_error" => {
                let outcome = rules::outcome(string(value).map_err(at)?).map_err(at)?;
                classifier = Some(base().tool_error(outcome));
            }
            "error_codes" => classifier = Some(codes(doc, &section, span, value, base())?),
            "per_call_timeout_ms" => per_call_timeout = Some((millis(value).map_err(at)?, span)),
            "max_call_ms" => max_call = Some((max_call_ms(value).map_err(at)?, span)),
            key if BREAKER_KEYS.contains(&key) => {
                settings.push(Setting::new(key, value, doc.line(span)))
            }
            other => {
                let known = TOOL_KEYS.iter().chain(BREAKER_KEYS.iter()).copied();
                return Err(at(format!(
                    "unknown key {}; expected {} or a breaker key ({})",
                    unknown_word(other, known),
                    backticked(TOOL_KEYS),
                    backticked(BREAKER_KEYS)
                )));
            }
        }
    }
    let own_breaker = match own_breaker {
        Some((false, _)) if !settings.is_empty() => {
            let key = settings[0].key.clone();
            let problem = "sets a breaker key, so the tool has a breaker of its own: `own_breaker = false` contradicts it";
            return Err(GatewayConfigError::toml(
                Some(section),
                Some(&key),
                Some(settings[0].line),
                problem,
            ));
        }
        Some((on, _)) => on,
        None => !settings.is_empty(),
    };
    let timeout = per_call_timeout
        .as_ref()
        .map_or(upstream.per_call_timeout, |t| t.0);
    let max = max_call.as_ref().map_or(upstream.max_call, |m| m.0);
    if max < timeout {
        let (key, span) = match (&max_call, &per_call_timeout) {
            (Some((_, span)), _) => ("max_call_ms", span.clone()),
            (None, Some((_, span))) => ("per_call_timeout_ms", span.clone()),
            (None, None) => ("per_call_timeout_ms", here.clone()),
        };
        let problem = shorter(max, timeout);
        return Err(doc.err(Some(&section), Some(key), span, problem));
    }
    if !own_breaker && classifier.is_none() && per_call_timeout.is_none() && max_call.is_none() {
        let problem = "sets nothing: give it breaker keys (or `own_breaker = true`) for a breaker of its own, `tool_error` / `error_codes`, or `per_call_timeout_ms` / `max_call_ms`";
        return Err(doc.err(Some(&section), None, here, problem));
    }
    let breakers = ToolBreakers {
        name: tool_name.to_owned(),
        line: doc.line(here),
        settings,
    };
    Ok((
        ToolConfig {
            name: tool_name.to_owned(),
            own_breaker,
            classifier,
            per_call_timeout: per_call_timeout.map(|t| t.0),
            max_call: max_call.map(|m| m.0),
        },
        breakers,
    ))
}

/// A table of names to string values, each expanded into a [`Secret`] (`headers`, `env`).
fn secrets(
    doc: &Doc<'_>,
    redaction: &mut Redaction,
    section: &str,
    key: &str,
    span: Range<usize>,
    value: &DeValue<'_>,
) -> Result<Vec<(String, Secret)>, GatewayConfigError> {
    let Some(table) = value.as_table() else {
        let problem = format!(
            "must be a table of names to strings, not {}",
            rules::a(value.type_str())
        );
        return Err(doc.err(Some(section), Some(key), span, problem));
    };
    let mut pairs = Vec::new();
    for (name, v) in entries(table) {
        let name: &str = name.get_ref();
        let field = format!("{key}.{name}");
        let at = |p: String| doc.err(Some(section), Some(&field), span.clone(), p);
        let text = doc.expand_into(
            redaction,
            string(v.get_ref()).map_err(at)?,
            section,
            &field,
            span.clone(),
        )?;
        if key == "headers" {
            rules::header(name, &text).map_err(at)?;
        } else if name.is_empty() || name.contains(['=', '\0']) {
            return Err(at(format!("{name:?} is not an environment variable name")));
        }
        pairs.push((name.to_owned(), Secret::new(text)));
    }
    Ok(pairs)
}

/// `error_codes = { -32002 = "unavailable" }`: each code's outcome, over `classifier`.
fn codes(
    doc: &Doc<'_>,
    section: &str,
    span: Range<usize>,
    value: &DeValue<'_>,
    mut classifier: McpClassifier,
) -> Result<McpClassifier, GatewayConfigError> {
    let Some(table) = value.as_table() else {
        let problem = format!(
            "must be a table of JSON-RPC error codes to outcomes, not {}",
            rules::a(value.type_str())
        );
        return Err(doc.err(Some(section), Some("error_codes"), span, problem));
    };
    for (code, v) in entries(table) {
        let field = format!("error_codes.{}", code.get_ref());
        let at = |p: String| doc.err(Some(section), Some(&field), code.span(), p);
        let number = code.get_ref().parse::<i32>().map_err(|_| {
            at("is not a JSON-RPC error code (a whole number such as -32603)".to_owned())
        })?;
        let outcome = rules::outcome(string(v.get_ref()).map_err(at)?).map_err(at)?;
        classifier = classifier.code(number, outcome);
    }
    Ok(classifier)
}

/// `max_call_ms`: a whole number of milliseconds from 1 to [`MAX_CALL`].
pub(super) fn max_call_ms(value: &DeValue<'_>) -> Result<Duration, String> {
    let ms = millis(value)?;
    if ms > MAX_CALL {
        return Err(format!(
            "must be at most {} (the gateway's limit on one call), not {}",
            MAX_CALL.as_millis(),
            ms.as_millis()
        ));
    }
    Ok(ms)
}

/// Why a `max_call_ms` below the timeout it bounds is refused.
pub(super) fn shorter(max: Duration, timeout: Duration) -> String {
    format!(
        "`max_call_ms` ({}) is shorter than `per_call_timeout_ms` ({}): a call's timeout is put back by its progress up to `max_call_ms`, never below its own length",
        max.as_millis(),
        timeout.as_millis()
    )
}

/// A whole number of milliseconds from 1 to the crate's largest duration.
pub(super) fn millis(value: &DeValue<'_>) -> Result<Duration, String> {
    let max = toolbreaker::config::MAX_DURATION.as_millis();
    let range = format!("must be a whole number of ms from 1 to {max}");
    let Some(integer) = value.as_integer() else {
        return Err(format!("{range}, not {}", rules::a(value.type_str())));
    };
    match i128::from_str_radix(integer.as_str(), integer.radix()) {
        Ok(ms) if ms >= 1 && ms as u128 <= max => Ok(Duration::from_millis(ms as u64)),
        _ => Err(format!("{range}, not {integer}")),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::GatewayConfig;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "t0k".to_owned())
    }

    fn refused(text: &str) -> String {
        GatewayConfig::from_toml_str_with(text, env)
            .expect_err(text)
            .to_string()
    }

    const HTTP: &str = "url = \"http://127.0.0.1:9/mcp\"\n";

    #[test]
    fn an_era_is_one_of_the_three_and_a_wrong_one_is_named() {
        use crate::config::Era;
        for (value, era) in [
            ("newest", Era::Newest),
            ("2026-07-28", Era::Stateless),
            ("2025-11-25", Era::Sessions),
        ] {
            let text = format!("[upstreams.a]\n{HTTP}era = \"{value}\"\n");
            let config = GatewayConfig::from_toml_str_with(&text, env).unwrap();
            assert_eq!(config.upstreams[0].era, era, "{value}");
        }
        let config = GatewayConfig::from_toml_str_with(&format!("[upstreams.a]\n{HTTP}"), env);
        assert_eq!(config.unwrap().upstreams[0].era, Era::Newest);
        let err = refused(&format!("[upstreams.a]\n{HTTP}era = \"2024-11-05\"\n"));
        assert!(
            err.starts_with("line 3: [upstreams.a] era: `2024-11-05` is not an era"),
            "{err}"
        );
        let err = refused(&format!("[upstreams.a]\n{HTTP}era = 2026\n"));
        assert!(err.contains("[upstreams.a] era"), "{err}");
    }

    #[test]
    fn required_is_true_or_false_and_false_unless_set() {
        let config = GatewayConfig::from_toml_str(&format!(
            "[upstreams.a]\n{HTTP}required = true\n[upstreams.b]\n{HTTP}"
        ))
        .unwrap();
        let required: Vec<bool> = config.upstreams.iter().map(|u| u.required).collect();
        assert_eq!(required, [true, false]);
        let err = refused(&format!("[upstreams.a]\n{HTTP}required = \"yes\"\n"));
        assert!(
            err.starts_with("line 3: [upstreams.a] required: must be true or false, not a string"),
            "{err}"
        );
    }

    #[test]
    fn a_name_holds_no_dot_or_whitespace() {
        for (header, shown) in [
            ("[upstreams.\"a.b\"]", "[upstreams.\"a.b\"]"),
            ("[upstreams.\"a b\"]", "[upstreams.\"a b\"]"),
            ("[upstreams.\"\"]", "[upstreams.\"\"]"),
        ] {
            let err = refused(&format!("{header}\n{HTTP}"));
            assert!(
                err.starts_with(&format!("line 1: {shown}: the upstream name")),
                "{err}"
            );
            assert!(err.ends_with("must be non-empty, with no `.`, whitespace or control character (it names the upstream's breaker and prefixes its tools)"), "{err}");
        }
        // Unquoted dots make a nested table: `a` has a key `b`.
        let err = refused(&format!("[upstreams.a.b]\n{HTTP}"));
        assert!(
            err.starts_with("line 1: [upstreams.a] b: unknown key `b`"),
            "{err}"
        );
    }

    #[test]
    fn exactly_one_of_url_and_command() {
        assert_eq!(
            refused("[upstreams.a]\nurl = \"http://h/mcp\"\ncommand = \"x\"\n"),
            "line 3: [upstreams.a] command: an upstream has a `url` (Streamable HTTP) or a \
             `command` (stdio), not both"
        );
        assert_eq!(
            refused("[upstreams.a]\nprefix = \"x.\"\n"),
            "line 1: [upstreams.a]: needs a `url` (a Streamable HTTP server) or a `command` (a \
             stdio child process)"
        );
        assert_eq!(
            refused(&format!("[upstreams.a]\n{HTTP}args = [\"-v\"]\n")),
            "line 3: [upstreams.a] args: is for a stdio upstream (`command`), not one with a `url`"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"x\"\nheaders = { X = \"1\" }\n"),
            "line 3: [upstreams.a] headers: is for an HTTP upstream (`url`), not one with a `command`"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"\"\n"),
            "line 2: [upstreams.a] command: must name a program, not be empty"
        );
    }

    #[test]
    fn a_url_is_http_or_https() {
        assert_eq!(
            refused("[upstreams.a]\nurl = \"ftp://h/mcp\"\n"),
            "line 2: [upstreams.a] url: must be an http:// or https:// URL (Streamable HTTP), not ftp:"
        );
        assert_eq!(
            refused("[upstreams.a]\nurl = \"localhost:8080/mcp\"\n"),
            "line 2: [upstreams.a] url: must be an http:// or https:// URL (Streamable HTTP), not localhost:"
        );
        assert_eq!(
            refused("[upstreams.a]\nurl = \"/mcp\"\n"),
            "line 2: [upstreams.a] url: not a valid URL: relative URL without a base"
        );
    }

    #[test]
    fn variables_are_expanded_and_an_unset_one_is_named() {
        let config = GatewayConfig::from_toml_str_with(
            "[upstreams.a]\nurl = \"${BASE:-http://127.0.0.1:7}/mcp\"\n\
             headers = { Authorization = \"Bearer ${TOKEN}\" }\n\
             [upstreams.b]\ncommand = \"${env:TOKEN}\"\nargs = [\"--key=${TOKEN}\"]\nenv = { K = \"${TOKEN}\" }\ncwd = \"${NOPE:-/}\"\n",
            env,
        )
        .unwrap();
        let shown = format!("{:?}", config.upstreams);
        assert!(
            shown.contains("http://127.0.0.1:7/mcp") && shown.contains("\"--key=t0k\""),
            "{shown}"
        );
        assert!(shown.contains("(\"Authorization\", <redacted>)"), "{shown}");
        assert_eq!(
            refused(
                "[upstreams.search]\nurl = \"http://h/mcp\"\nheaders = { Authorization = \"Bearer ${SEARCH_TOKEN}\" }\n"
            ),
            "line 3: [upstreams.search] headers.Authorization: environment variable SEARCH_TOKEN is not set"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"x\"\nenv = { K = \"${NOPE}\" }\n"),
            "line 3: [upstreams.a] env.K: environment variable NOPE is not set"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"x\"\nargs = [\"${NOPE}\"]\n"),
            "line 3: [upstreams.a] args: environment variable NOPE is not set"
        );
        assert_eq!(
            refused("[upstreams.a]\nurl = \"http://h/mcp\"\nheaders = { \"Bad Name\" = \"1\" }\n"),
            "line 3: [upstreams.a] headers.Bad Name: \"Bad Name\" is not a valid HTTP header name"
        );
    }

    /// A `cwd` that is missing or not a folder is refused at load, naming it (shown with
    /// `<redacted>` for a variable's value).
    #[test]
    fn a_missing_cwd_is_named() {
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"true\"\ncwd = \"/no/such/folder\"\n"),
            "line 3: [upstreams.a] cwd: the working directory `/no/such/folder` does not exist"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"true\"\ncwd = \"/no/${TOKEN}/folder\"\n"),
            "line 3: [upstreams.a] cwd: the working directory `/no/<redacted>/folder` does not exist"
        );
        let file = std::env::current_exe().unwrap();
        let err = refused(&format!(
            "[upstreams.a]\ncommand = \"true\"\ncwd = {:?}\n",
            file.to_str().unwrap()
        ));
        assert!(err.ends_with("is not a directory"), "{err}");
        let json = GatewayConfig::from_mcp_servers_json_str_with(
            r#"{"mcpServers": {"a": {"command": "true", "cwd": "/no/such/folder"}}}"#,
            env,
        )
        .unwrap_err();
        assert_eq!(
            json.to_string(),
            "line 1: mcpServers.a.cwd: the working directory `/no/such/folder` does not exist"
        );
    }

    #[test]
    fn two_upstreams_with_one_prefix_are_named_both() {
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}prefix = \"x.\"\n[upstreams.b]\ncommand = \"c\"\nprefix = \"x.\"\n"
            )),
            "line 4: [upstreams.b] prefix: upstreams `a` and `b` both have the prefix \"x.\"; a \
             non-empty prefix belongs to one upstream"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}[upstreams.b]\n{HTTP}prefix = \"a.\"\n"
            )),
            "line 3: [upstreams.b] prefix: upstreams `a` and `b` both have the prefix \"a.\"; a \
             non-empty prefix belongs to one upstream"
        );
        let config = GatewayConfig::from_toml_str(&format!(
            "[upstreams.a]\n{HTTP}prefix = \"\"\n[upstreams.b]\n{HTTP}prefix = \"\"\n"
        ))
        .unwrap();
        assert_eq!(config.upstreams.len(), 2, "empty prefixes may be shared");
        assert!(
            refused(&format!("[upstreams.a]\n{HTTP}prefix = \"a b\"\n"))
                .contains("must hold no whitespace")
        );
    }

    #[test]
    fn allow_deny_and_tool_sections_agree() {
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}allow = [\"x\", \"y\"]\ndeny = [\"y\"]\n"
            )),
            "line 4: [upstreams.a] deny: the tool `y` is in both `allow` and `deny`"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}deny = [\"t\"]\n[upstreams.a.tools.t]\ncooldown_ms = 5\n"
            )),
            "line 4: [upstreams.a.tools.t]: the tool `t` is hidden by the upstream's `allow` or \
             `deny`: its section would never be used"
        );
        assert_eq!(
            refused(&format!("[upstreams.a]\n{HTTP}[upstreams.a.tools.t]\n")),
            "line 3: [upstreams.a.tools.t]: sets nothing: give it breaker keys (or `own_breaker = \
             true`) for a breaker of its own, `tool_error` / `error_codes`, or \
             `per_call_timeout_ms` / `max_call_ms`"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}[upstreams.a.tools.t]\nown_breaker = false\nprobes = 2\n"
            )),
            "line 5: [upstreams.a.tools.t] probes: sets a breaker key, so the tool has a breaker \
             of its own: `own_breaker = false` contradicts it"
        );
        assert_eq!(
            refused(&format!("[upstreams.a]\n{HTTP}allow = [\"\"]\n")),
            "line 3: [upstreams.a] allow: the tool name \"\" must be non-empty, with no whitespace or control character"
        );
        assert_eq!(
            refused(&format!("[upstreams.a]\n{HTTP}deny = \"x\"\n")),
            "line 3: [upstreams.a] deny: must be a list of strings, not a string"
        );
        let config = GatewayConfig::from_toml_str(&format!(
            "[upstreams.a]\n{HTTP}[upstreams.a.tools.t]\nown_breaker = true\n"
        ))
        .unwrap();
        assert!(config.upstreams[0].tools[0].own_breaker);
        let own: Vec<&str> = config.registry.dependencies().map(|(n, _)| n).collect();
        assert_eq!(
            own,
            ["a.t"],
            "a breaker of its own on the upstream's settings"
        );
    }

    #[test]
    fn a_tool_has_timeouts_of_its_own_and_a_bad_one_is_named() {
        let config = GatewayConfig::from_toml_str(&format!(
            "[upstreams.a]\n{HTTP}per_call_timeout_ms = 2000\nmax_call_ms = 90000\n\
             [upstreams.a.tools.long]\nper_call_timeout_ms = 60000\n\
             [upstreams.a.tools.longer]\nmax_call_ms = 120000\n"
        ))
        .unwrap();
        let a = &config.upstreams[0];
        assert_eq!(
            a.timeouts_for("long"),
            (Duration::from_secs(60), Duration::from_secs(90))
        );
        assert_eq!(
            a.timeouts_for("longer"),
            (Duration::from_secs(2), Duration::from_secs(120))
        );
        assert_eq!(
            a.timeouts_for("echo"),
            (Duration::from_secs(2), Duration::from_secs(90))
        );
        assert!(
            !a.tools[0].own_breaker,
            "a timeout alone gives no breaker of its own"
        );
        assert_eq!(config.registry.dependencies().count(), 0);
        let defaults = GatewayConfig::from_toml_str(&format!("[upstreams.a]\n{HTTP}")).unwrap();
        assert_eq!(
            defaults.upstreams[0].timeouts_for("t"),
            (Duration::from_secs(10), Duration::from_secs(300))
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}[upstreams.a.tools.t]\nper_call_timeout_ms = -1\n"
            )),
            "line 4: [upstreams.a.tools.t] per_call_timeout_ms: must be a whole number of ms from \
             1 to 1099511627776, not -1"
        );
        assert_eq!(
            refused(&format!("[upstreams.a]\n{HTTP}max_call_ms = 300001\n")),
            "line 3: [upstreams.a] max_call_ms: must be at most 300000 (the gateway's limit on \
             one call), not 300001"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}[upstreams.a.tools.t]\nper_call_timeout_ms = 400000\n"
            )),
            "line 4: [upstreams.a.tools.t] per_call_timeout_ms: `max_call_ms` (300000) is \
             shorter than `per_call_timeout_ms` (400000): a call's timeout is put back by its \
             progress up to `max_call_ms`, never below its own length"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}per_call_timeout_ms = 5000\nmax_call_ms = 4000\n"
            )),
            "line 4: [upstreams.a] max_call_ms: `max_call_ms` (4000) is shorter than \
             `per_call_timeout_ms` (5000): a call's timeout is put back by its progress up to \
             `max_call_ms`, never below its own length"
        );
    }

    #[test]
    fn timeouts_and_codes_are_checked() {
        assert_eq!(
            refused(&format!("[upstreams.a]\n{HTTP}per_call_timeout_ms = 0\n")),
            "line 3: [upstreams.a] per_call_timeout_ms: must be a whole number of ms from 1 to \
             1099511627776, not 0"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}per_call_timeout_ms = \"5s\"\n"
            )),
            "line 3: [upstreams.a] per_call_timeout_ms: must be a whole number of ms from 1 to \
             1099511627776, not a string"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}error_codes = {{ internal = \"other\" }}\n"
            )),
            "line 3: [upstreams.a] error_codes.internal: is not a JSON-RPC error code (a whole \
             number such as -32603)"
        );
        assert_eq!(
            refused(&format!(
                "[upstreams.a]\n{HTTP}error_codes = {{ -32603 = 1 }}\n"
            )),
            "line 3: [upstreams.a] error_codes.-32603: must be a string, not an integer"
        );
    }
}
