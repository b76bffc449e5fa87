//! Credentials kept out of what the crate prints: every URL's password in a text is replaced.

/// `text` with the password of every URL in it replaced by `***`: `redis://:secret@host:6379/`
/// reads `redis://:***@host:6379/`, `redis://user:secret@host/` reads `redis://user:***@host/`,
/// and a user-info with no `:` (which some clients read as a password) reads `***`. A URL is
/// `scheme://` followed by its authority, which ends at `/`, `?`, `#`, whitespace or a quote;
/// a text with no user-info is returned unchanged. The crate passes every URL and every error
/// it prints or tells (events, [`FleetError`](super::FleetError), `tracing`) through it.
///
/// # Examples
///
/// ```
/// use toolbreaker::fleet::redact;
///
/// assert_eq!(redact("redis://:hunter2@10.0.0.5:6379/0"), "redis://:***@10.0.0.5:6379/0");
/// assert_eq!(
///     redact("cannot reach redis://app:hunter2@cache/ (timed out)"),
///     "cannot reach redis://app:***@cache/ (timed out)"
/// );
/// assert_eq!(redact("redis://cache:6379/"), "redis://cache:6379/");
/// ```
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(sign) => {
                let user_info = &authority[..sign];
                match user_info.find(':') {
                    Some(colon) => {
                        out.push_str(&user_info[..=colon]);
                        out.push_str("***");
                    }
                    None => out.push_str("***"),
                }
                out.push_str(&authority[sign..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn every_password_in_a_text_is_redacted_and_nothing_else() {
        let cases = [
            (
                "redis://:secret@127.0.0.1:6379/",
                "redis://:***@127.0.0.1:6379/",
            ),
            ("redis://user:secret@host/2", "redis://user:***@host/2"),
            ("redis://secret@host", "redis://***@host"),
            ("rediss://u:p:q@h?x=1", "rediss://u:***@h?x=1"),
            ("redis://u:p%40ss@h:1", "redis://u:***@h:1"),
            ("redis://u:p@ss@h:1", "redis://u:***@h:1"),
            ("redis://host:6379/", "redis://host:6379/"),
            (
                "redis+unix:///tmp/redis.sock",
                "redis+unix:///tmp/redis.sock",
            ),
            (
                "a redis://:x@a and \"redis://b:y@b\" and redis://c",
                "a redis://:***@a and \"redis://b:***@b\" and redis://c",
            ),
            ("no url here: user:pass@host", "no url here: user:pass@host"),
            ("", ""),
            ("://", "://"),
            ("redis://:@h", "redis://:***@h"),
            ("ünï://:sëcret@hôst/", "ünï://:***@hôst/"),
        ];
        for (text, expected) in cases {
            assert_eq!(redact(text), expected, "{text:?}");
        }
    }
}
