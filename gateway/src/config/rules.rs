//! The checks both file forms share: names, prefixes, URLs, headers, and the words of an
//! outcome. Each returns the problem, for the caller to name the section and key.

use axum::http::{HeaderName, HeaderValue};
use toolbreaker::{FailureKind, Outcome};

use super::UpstreamConfig;

/// An upstream's name: non-empty, with no `.`, whitespace or control character.
pub(super) fn upstream_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name
            .chars()
            .any(|c| c == '.' || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "the upstream name {name:?} must be non-empty, with no `.`, whitespace or control \
             character (it names the upstream's breaker and prefixes its tools)"
        ));
    }
    Ok(())
}

/// A tool's name (in `allow`, `deny`, or a `tools` section): non-empty, no whitespace or
/// control character.
pub(super) fn tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the tool name {name:?} must be non-empty, with no whitespace or control character"
        ));
    }
    Ok(())
}

/// A prefix: any text without whitespace or control characters (`""` passes names as they are).
pub(super) fn prefix(prefix: &str) -> Result<(), String> {
    if prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the prefix {prefix:?} must hold no whitespace or control character"
        ));
    }
    Ok(())
}

/// A Streamable HTTP endpoint: an absolute `http://` or `https://` URL with a host. The URL
/// itself is never in the problem (it may hold an expanded secret).
pub(super) fn url(text: &str) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| format!("not a valid URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "must be an http:// or https:// URL (Streamable HTTP), not {}:",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".to_owned());
    }
    Ok(())
}

/// A stdio upstream's working directory (`cwd`): it must be a directory that exists, checked
/// at load (and again before each start). `shown` is the path as it may be printed.
pub(crate) fn cwd(path: &str, shown: &str) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "the working directory `{shown}` is not a directory"
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("the working directory `{shown}` does not exist"))
        }
        Err(e) => Err(format!(
            "the working directory `{shown}` cannot be read: {e}"
        )),
    }
}

/// The URL `text` as libraries print it (normalised, percent-encoded), when it parses.
pub(super) fn printed_url(text: &str) -> Option<String> {
    url::Url::parse(text).ok().map(String::from)
}

/// A header's name and value (the value is never in the problem).
pub(super) fn header(name: &str, value: &str) -> Result<(), String> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid HTTP header name"))?;
    HeaderValue::from_str(value).map_err(|_| {
        "the value is not a valid HTTP header value (a line break or control character)".to_owned()
    })?;
    Ok(())
}

/// The words an outcome is written in, in the file.
pub(super) const OUTCOMES: [&str; 7] = [
    "ignored",
    "success",
    "timeout",
    "connect",
    "rate_limited",
    "unavailable",
    "other",
];

/// An outcome from its word: `ignored`, `success`, or a failure kind (`timeout`, `connect`,
/// `rate_limited`, `unavailable`, `other`).
pub(super) fn outcome(word: &str) -> Result<Outcome, String> {
    Ok(match word {
        "ignored" => Outcome::Ignored,
        "success" => Outcome::Success,
        "timeout" => Outcome::Failure(FailureKind::Timeout),
        "connect" => Outcome::Failure(FailureKind::Connect),
        "rate_limited" => Outcome::Failure(FailureKind::RateLimited { retry_after: None }),
        "unavailable" => Outcome::Failure(FailureKind::Unavailable),
        "other" => Outcome::Failure(FailureKind::Other),
        other => {
            return Err(format!(
                "{} must be one of {}",
                unknown_word(other, OUTCOMES),
                backticked(OUTCOMES)
            ));
        }
    })
}

/// Two upstreams with the same non-empty prefix: the index of the later one and the problem
/// naming both.
pub(super) fn duplicate_prefix(upstreams: &[UpstreamConfig]) -> Option<(usize, String)> {
    for (i, later) in upstreams.iter().enumerate() {
        if later.prefix.is_empty() {
            continue;
        }
        if let Some(earlier) = upstreams[..i].iter().find(|u| u.prefix == later.prefix) {
            return Some((
                i,
                format!(
                    "upstreams `{}` and `{}` both have the prefix {:?}; a non-empty prefix \
                     belongs to one upstream",
                    earlier.name, later.name, later.prefix
                ),
            ));
        }
    }
    None
}

/// A TOML type's name with its article: `an integer`, `a string`.
pub(super) fn a(type_name: &str) -> String {
    let article = if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {type_name}")
}

/// `` `word` `` with a did-you-mean among `known` when one is near (by edit distance, or a
/// known word that starts with it and `_`: `cooldown` for `cooldown_ms`).
pub(super) fn unknown_word<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.into_iter().collect();
    let extends = || {
        known.iter().copied().find(|k| {
            word.len() >= 4
                && k.strip_prefix(word)
                    .is_some_and(|rest| rest.starts_with('_'))
        })
    };
    match toolbreaker::registry::closest_name(word, known.iter().copied()).or_else(extends) {
        Some(near) => format!("`{word}` (did you mean `{near}`?)"),
        None => format!("`{word}`"),
    }
}

/// `` `a`, `b`, `c` ``.
pub(super) fn backticked<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    words
        .into_iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What in `upstream`'s `allow`, `deny` and `[upstreams.NAME.tools.TOOL]` sections names no
/// tool of `listed` (the upstream's own tool names, as it lists them): one sentence each,
/// naming the key and the nearest listed name. A typo there hides every tool (`allow`), hides
/// nothing (`deny`), or sets what no call uses (a tool section); the gateway learns the names
/// only once connected, so this is a warning, never a refusal.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::config::{GatewayConfig, names_matching_no_tool};
///
/// let config = GatewayConfig::from_toml_str(
///     "[upstreams.a]\nurl = \"http://127.0.0.1:9/mcp\"\nallow = [\"ech\"]\n",
/// )?;
/// assert_eq!(
///     names_matching_no_tool(&config.upstreams[0], &["echo", "add"]),
///     ["`allow` names `ech`, which upstream `a` does not list (did you mean `echo`?)"]
/// );
/// # Ok::<(), toolbreaker_gateway::config::GatewayConfigError>(())
/// ```
pub fn names_matching_no_tool(upstream: &UpstreamConfig, listed: &[&str]) -> Vec<String> {
    let allow = upstream
        .allow
        .iter()
        .flatten()
        .map(|n| ("`allow`", n.as_str()));
    let deny = upstream.deny.iter().map(|n| ("`deny`", n.as_str()));
    let sections = upstream
        .tools
        .iter()
        .map(|t| ("a tool section", t.name.as_str()));
    allow
        .chain(deny)
        .chain(sections)
        .filter(|(_, name)| !listed.contains(name))
        .map(|(key, name)| {
            let key = if key == "a tool section" {
                format!(
                    "[upstreams.{}.tools.{}]",
                    super::error::path_part(&upstream.name),
                    super::error::path_part(name)
                )
            } else {
                key.to_owned()
            };
            let near = toolbreaker::registry::closest_name(name, listed.iter().copied())
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
            format!(
                "{key} names `{name}`, which upstream `{}` does not list{near}",
                upstream.name
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::{GatewayConfig, names_matching_no_tool};

    #[test]
    fn allow_deny_and_tool_sections_naming_no_listed_tool_are_told() {
        let config = GatewayConfig::from_toml_str(
            "[upstreams.a]\nurl = \"http://127.0.0.1:9/mcp\"\nallow = [\"echo\", \"ech\", \"add\"]\n\
             deny = [\"zzz\"]\n[upstreams.a.tools.add]\ncooldown_ms = 5\n[upstreams.a.tools.ech]\n\
             own_breaker = true\n",
        )
        .unwrap();
        let a = &config.upstreams[0];
        assert_eq!(
            names_matching_no_tool(a, &["echo", "add"]),
            [
                "`allow` names `ech`, which upstream `a` does not list (did you mean `echo`?)",
                "`deny` names `zzz`, which upstream `a` does not list",
                "[upstreams.a.tools.ech] names `ech`, which upstream `a` does not list (did you mean `echo`?)",
            ]
        );
        assert!(names_matching_no_tool(a, &["echo", "ech", "add", "zzz"]).is_empty());
    }
}
