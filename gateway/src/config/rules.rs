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
