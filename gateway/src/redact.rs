//! Credentials kept out of the log: every line the gateway logs (its own, and rmcp's, reqwest's
//! and the stdio children's stderr) is written through [`Redactor`], which replaces each
//! credential of the config in force with `<redacted>`: header values, stdio `env` values, a
//! URL's user, password and query string, the bearer token, and every value a `${VAR}` gave
//! (a `url`, `command`, argument or `cwd` that holds one is replaced by its shown form, the
//! value `<redacted>` whatever its length; elsewhere values of
//! [`SHORTEST_ENV_VALUE`](crate::config::SHORTEST_ENV_VALUE) characters or more).
//!
//! And what clients send kept short in it: a log line shows client-supplied text (a tool name,
//! a URI, a method, a header value) through [`shown`], at most [`SHOWN_CHARS`] characters of it,
//! escaped. Lines that still come out longer than [`MAX_LINE_BYTES`] (rmcp logs each
//! notification a client sends whole, at INFO) are cut by [`capped_line`] before they are
//! written.

use std::borrow::Cow;
use std::fmt;
use std::io::Write;
use std::sync::{OnceLock, PoisonError, RwLock};

use tracing_subscriber::fmt::MakeWriter;

use crate::config::{GatewayConfig, Secret, Transport};

/// The process's redactor (the log is the process's).
pub fn redactor() -> &'static Redactor {
    static REDACTOR: OnceLock<Redactor> = OnceLock::new();
    REDACTOR.get_or_init(Redactor::default)
}

/// The credentials to keep out of the log; see the [module](self).
#[derive(Debug, Default)]
pub struct Redactor {
    /// What to replace and with what, longest first.
    secrets: RwLock<Vec<(String, String)>>,
}

/// Shorter values are not redacted (a header `X-Debug: 1`): they would blank out ordinary
/// words, and say nothing of a credential.
const SHORTEST: usize = 4;

impl Redactor {
    /// The credentials of `config` and `token` are redacted from now on, besides those given
    /// before (at start, then for each reloaded file: an old upstream may still log while it
    /// ends).
    pub fn add(&self, config: &GatewayConfig, token: Option<&Secret>) {
        let mut secrets = self
            .secrets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut replace = |from: &str, to: &str| {
            if !secrets.iter().any(|(s, _)| s == from) {
                secrets.push((from.to_owned(), to.to_owned()));
            }
        };
        for upstream in &config.upstreams {
            for (from, to) in upstream.redaction.replacements() {
                replace(from, to);
            }
        }
        let mut add = |value: &str| {
            // The whole value, and each word of it (`Bearer TOKEN`: the token alone too).
            for part in std::iter::once(value).chain(value.split_whitespace()) {
                if part.len() >= SHORTEST && !secrets.iter().any(|(s, _)| s == part) {
                    secrets.push((part.to_owned(), "<redacted>".to_owned()));
                }
            }
        };
        for upstream in &config.upstreams {
            match &upstream.transport {
                Transport::Http { url, headers } => {
                    for part in crate::upstream::url_credentials(url) {
                        add(&part);
                    }
                    headers.iter().for_each(|(_, value)| add(value.expose()));
                }
                Transport::Stdio { env, .. } => {
                    env.iter().for_each(|(_, value)| add(value.expose()))
                }
            }
        }
        if let Some(token) = token {
            add(token.expose());
        }
        // Longest first: a secret that holds another is replaced whole.
        secrets.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        *self.secrets.write().unwrap_or_else(PoisonError::into_inner) = secrets;
    }

    /// `text` with every credential replaced by `<redacted>` (a field that holds a variable's
    /// value by its shown form).
    pub fn apply(&self, text: &str) -> String {
        let secrets = self.secrets.read().unwrap_or_else(PoisonError::into_inner);
        secrets.iter().fold(text.to_owned(), |text, (from, to)| {
            if text.contains(from.as_str()) {
                text.replace(from.as_str(), to)
            } else {
                text
            }
        })
    }
}

/// One log line on its way to stderr: kept until it is complete (the writer is dropped after
/// each event), then redacted and written at once.
#[derive(Debug)]
pub struct Line {
    redactor: &'static Redactor,
    text: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let line = self.redactor.apply(&String::from_utf8_lossy(&self.text));
        let _ = std::io::stderr().write_all(capped_line(&line).as_bytes());
    }
}

/// How many characters of a client's text [`shown`] writes.
pub const SHOWN_CHARS: usize = 128;

/// `text`, a client's, as a log line (or an error message that is logged) may show it: its
/// first [`SHOWN_CHARS`] characters, escaped as Rust escapes a string's characters in `Debug`
/// (control characters, quotes and backslashes: no line of the log can be forged with it),
/// then `…(N more bytes)` if it is longer.
///
/// ```
/// use toolbreaker_gateway::redact::shown;
///
/// assert_eq!(shown("echo").to_string(), "echo");
/// assert_eq!(shown("a\nb\"").to_string(), r#"a\nb\""#);
/// let long = "x".repeat(200);
/// assert_eq!(shown(&long).to_string(), format!("{}…(72 more bytes)", "x".repeat(128)));
/// ```
pub fn shown(text: &str) -> Shown<'_> {
    Shown(text)
}

/// What [`shown`] returns: `Display` writes it capped and escaped, `Debug` the same in quotes.
#[derive(Clone, Copy)]
pub struct Shown<'a>(&'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = self
            .0
            .char_indices()
            .nth(SHOWN_CHARS)
            .map_or(self.0.len(), |(at, _)| at);
        let (head, rest) = self.0.split_at(end);
        fmt::Display::fmt(&head.escape_debug(), f)?;
        if !rest.is_empty() {
            write!(f, "…({} more bytes)", rest.len())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// The longest log line [`capped_line`] leaves whole.
pub const MAX_LINE_BYTES: usize = 8 * 1024;

/// How much of one string of a JSON log line [`capped_line`] keeps.
const MAX_JSON_STRING_BYTES: usize = 1024;

/// `line` (one log line, with its newline) if it is at most [`MAX_LINE_BYTES`] long; otherwise
/// cut short, with `…(N more bytes)` where it was cut: a JSON line (`--log-format json`) stays
/// one JSON object, each of its strings cut to 1 KiB; a text line keeps its first
/// [`MAX_LINE_BYTES`] bytes. The last guard: lines of rmcp's that hold whole client messages.
///
/// ```
/// use toolbreaker_gateway::redact::{MAX_LINE_BYTES, capped_line};
///
/// assert_eq!(capped_line("short\n"), "short\n");
/// let long = format!("INFO notification={}\n", "x".repeat(20_000));
/// let capped = capped_line(&long);
/// assert!(capped.len() < MAX_LINE_BYTES + 64 && capped.ends_with(" more bytes)\n"));
/// ```
pub fn capped_line(line: &str) -> Cow<'_, str> {
    if line.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(line);
    }
    let body = line.strip_suffix('\n').unwrap_or(line);
    if body.starts_with('{')
        && let Ok(mut value) = serde_json::from_str::<serde_json::Value>(body)
    {
        cap_strings(&mut value);
        return Cow::Owned(format!("{value}\n"));
    }
    let end = floor_char_boundary(body, MAX_LINE_BYTES);
    Cow::Owned(format!(
        "{}…({} more bytes)\n",
        &body[..end],
        body.len() - end
    ))
}

/// Cuts each string of `value` to [`MAX_JSON_STRING_BYTES`].
fn cap_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.len() > MAX_JSON_STRING_BYTES => {
            let end = floor_char_boundary(text, MAX_JSON_STRING_BYTES);
            let more = text.len() - end;
            text.truncate(end);
            text.push_str(&format!("…({more} more bytes)"));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(cap_strings),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(cap_strings),
        _ => {}
    }
}

/// The largest char boundary of `text` at or before `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

impl<'a> MakeWriter<'a> for &'static Redactor {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            redactor: self,
            text: Vec::new(),
        }
    }
}

/// `text` without the Rust type names a library's error may quote in brackets (rmcp's
/// `Transport [rmcp::transport::…<reqwest::…>] error`): an operator reads what went wrong, not
/// the gateway's types. A bracketed part is dropped when it holds a path (`::`) and is no IPv6
/// address (`[::1]` stays); others stay.
pub fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        // The matching `]`, brackets nested inside counted (`[A<B[C]>]`).
        let mut depth = 0usize;
        let close = rest[open..].char_indices().find_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open + i);
                    }
                }
                _ => {}
            }
            None
        });
        let Some(close) = close else { break };
        let inner = &rest[open + 1..close];
        if inner.contains("::") && inner.parse::<std::net::Ipv6Addr>().is_err() {
            out.push_str(rest[..open].trim_end());
            rest = &rest[close + 1..];
        } else {
            out.push_str(&rest[..=close]);
            rest = &rest[close + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_text_is_capped_at_a_char_boundary_and_escaped() {
        assert_eq!(shown("").to_string(), "");
        let exact = "é".repeat(SHOWN_CHARS);
        assert_eq!(shown(&exact).to_string(), exact);
        let over = format!("{exact}ab");
        assert_eq!(shown(&over).to_string(), format!("{exact}…(2 more bytes)"));
        let long = "é".repeat(5000);
        let text = shown(&long).to_string();
        assert!(text.ends_with("…(9744 more bytes)"), "{text}");
        assert_eq!(
            shown("a\r\nINFO forged \"line\"\u{7}").to_string(),
            r#"a\r\nINFO forged \"line\"\u{7}"#
        );
        assert_eq!(format!("{:?}", shown("x\ty")), r#""x\ty""#);
    }

    #[test]
    fn long_lines_are_cut_and_json_lines_stay_json() {
        let text = format!("2026 WARN id=9 {}\n", "é".repeat(10_000));
        let capped = capped_line(&text);
        assert!(capped.len() <= MAX_LINE_BYTES + 32, "{}", capped.len());
        assert!(capped.starts_with("2026 WARN id=9 é") && capped.ends_with(" more bytes)\n"));

        let json = serde_json::json!({
            "level": "WARN",
            "fields": {"message": "response error", "error": "x".repeat(50_000), "id": 9},
        });
        let line = format!("{json}\n");
        let capped = capped_line(&line);
        assert!(capped.len() < 2 * MAX_JSON_STRING_BYTES, "{}", capped.len());
        let value: serde_json::Value = serde_json::from_str(&capped).unwrap();
        assert_eq!(value["fields"]["message"], "response error");
        assert_eq!(value["fields"]["id"], 9);
        let error = value["fields"]["error"].as_str().unwrap();
        assert!(error.ends_with("…(48976 more bytes)"), "{error}");

        let short = "INFO listening\n";
        assert!(matches!(capped_line(short), Cow::Borrowed(s) if s == short));
    }

    #[test]
    fn every_credential_of_the_config_is_redacted_and_nothing_else() {
        let text = r#"
[upstreams.a]
url = "http://user:pw1234@127.0.0.1:9/mcp?api_key=QSTOKEN123"
headers = { Authorization = "Bearer HDRSECRET99", X-Debug = "1" }
[upstreams.b]
command = "server"
env = { API_KEY = "envsecret42" }
"#;
        let config = GatewayConfig::from_toml_str(text).unwrap();
        let redactor = Redactor::default();
        redactor.add(&config, Some(&Secret::new("gateway-token")));
        let line = "url http://user:pw1234@127.0.0.1:9/mcp?api_key=QSTOKEN123 Bearer HDRSECRET99 \
                    HDRSECRET99 envsecret42 gateway-token X-Debug: 1 user";
        let shown = redactor.apply(line);
        for secret in [
            "QSTOKEN123",
            "pw1234",
            "HDRSECRET99",
            "envsecret42",
            "gateway-token",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("127.0.0.1:9/mcp") && shown.ends_with("X-Debug: 1 <redacted>"),
            "{shown}"
        );
    }

    /// Every value a `${VAR}` gave, in any field: a field that holds one is shown with
    /// `<redacted>` in its place, a long value is replaced anywhere, a short one only in its
    /// field.
    #[test]
    fn every_value_from_the_environment_is_redacted() {
        let text = r#"
[upstreams.a]
url = "http://127.0.0.1:${PORT}/k/${KEY}/mcp"
[upstreams.b]
command = "/opt/${KEY}/server"
args = ["--key=${KEY}", "--level=${LEVEL}"]
cwd = "${ROOT}"
"#;
        let env = |name: &str| match name {
            "KEY" => Some("k3y-in-the-path".to_owned()),
            "PORT" => Some("9".to_owned()),
            "LEVEL" => Some("warn".to_owned()),
            "ROOT" => Some("/".to_owned()),
            _ => None,
        };
        let config = GatewayConfig::from_toml_str_with(text, env).unwrap();
        let redactor = Redactor::default();
        redactor.add(&config, None);
        // A key a URL parser percent-encodes is replaced as the parser prints it too.
        let encoded = GatewayConfig::from_toml_str_with(
            "[upstreams.a]\nurl = \"http://h/k/${KEY}/mcp\"\n",
            |_| Some("a key{with}braces".to_owned()),
        )
        .unwrap();
        let by_parser = Redactor::default();
        by_parser.add(&encoded, None);
        assert_eq!(
            by_parser
                .apply("error sending request for url (http://h/k/a%20key%7Bwith%7Dbraces/mcp)"),
            "error sending request for url (http://h/k/<redacted>/mcp)"
        );
        let line = "connect http://127.0.0.1:9/k/k3y-in-the-path/mcp: refused; cannot start \
                    `/opt/k3y-in-the-path/server`; argv [\"--key=k3y-in-the-path\", \"--level=warn\"] \
                    key=k3y-in-the-path warn";
        assert_eq!(
            redactor.apply(line),
            "connect http://127.0.0.1:<redacted>/k/<redacted>/mcp: refused; cannot start \
             `/opt/<redacted>/server`; argv [\"--key=<redacted>\", \"--level=<redacted>\"] \
             key=<redacted> warn"
        );
    }

    #[test]
    fn type_names_in_brackets_are_dropped_and_other_brackets_kept() {
        let rmcp = "Send message error Transport [toolbreaker_gateway::upstream::progress::Ordered<rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>>] error: Client error: error sending request for url (http://127.0.0.1:9/mcp)";
        assert_eq!(
            super::without_type_names(rmcp),
            "Send message error Transport error: Client error: error sending request for url (http://127.0.0.1:9/mcp)"
        );
        assert_eq!(
            super::without_type_names("a [b] c [d::e[f]] g"),
            "a [b] c g"
        );
        assert_eq!(
            super::without_type_names("unclosed [x::y"),
            "unclosed [x::y"
        );
        assert_eq!(
            super::without_type_names("http://[::1]:8080/mcp refused"),
            "http://[::1]:8080/mcp refused"
        );
    }
}
