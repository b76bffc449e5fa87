//! The requests `/mcp` answers before rmcp's transport does: a [`Shortcut`] given to the app
//! ([`HttpApp::with_shortcut`](super::HttpApp::with_shortcut)) is offered each POST whose
//! body is a message JSON-RPC can read and whose headers are a plain 2026-07-28 request's
//! (what rmcp would serve as it is, every check of its own passed): the `Host` admitted, no
//! `Origin` (a browser's request goes to rmcp, which checks it), no session, the revision
//! 2026-07-28 in `MCP-Protocol-Version`, an `Accept` of JSON and event streams with no
//! parameters, one `Mcp-Method` and at most one `Mcp-Name`, no `Mcp-Param-*`. The shortcut
//! takes the request (its future is the answer) or leaves it to rmcp; anything it is not sure
//! of it leaves.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures::future::BoxFuture;

use super::hosts::AdmittedHosts;

/// Offered a POST to `/mcp` (its headers and its whole body, read within the size limit):
/// `Some` with the answer's future to take it, `None` to leave it to rmcp's transport.
pub type Shortcut =
    Arc<dyn Fn(&HeaderMap, &Bytes) -> Option<BoxFuture<'static, Response>> + Send + Sync>;

/// The app's shortcut, once given.
#[derive(Clone, Default)]
pub(crate) struct Shortcuts(Arc<OnceLock<Shortcut>>);

impl Shortcuts {
    pub(crate) fn set(&self, shortcut: Shortcut) {
        // Given once, before serving; a second is ignored.
        let _ = self.0.set(shortcut);
    }

    /// The answer of the shortcut, if there is one and it takes the request.
    pub(crate) fn take(
        &self,
        hosts: &AdmittedHosts,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Option<BoxFuture<'static, Response>> {
        let shortcut = self.0.get()?;
        if !plain_modern(hosts, headers) {
            return None;
        }
        shortcut(headers, body)
    }
}

/// Whether `headers` are a plain 2026-07-28 request's that rmcp would serve as it is.
fn plain_modern(hosts: &AdmittedHosts, headers: &HeaderMap) -> bool {
    let one = |name: &str| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(value), None) => value.to_str().ok(),
            _ => None,
        }
    };
    let accepts = |accept: &str| {
        let (mut json, mut events) = (false, false);
        for kind in accept.split(',').map(str::trim) {
            json |= kind.eq_ignore_ascii_case("application/json");
            events |= kind.eq_ignore_ascii_case("text/event-stream");
        }
        !accept.contains(';') && json && events
    };
    // The revision first: a 2025-11-25 session's request, the most common other one, is left
    // before the `Host` is parsed.
    one("mcp-protocol-version") == Some("2026-07-28")
        && !headers.contains_key("mcp-session-id")
        && !headers.contains_key(header::ORIGIN)
        && one(header::HOST.as_str()).is_some_and(|host| hosts.admits(host))
        && one(header::ACCEPT.as_str()).is_some_and(accepts)
        && one("mcp-method").is_some()
        && headers.get_all("mcp-name").iter().count() <= 1
        && !headers
            .keys()
            .any(|name| name.as_str().starts_with("mcp-param-"))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn plain() -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("host", "127.0.0.1:8080"),
            ("mcp-protocol-version", "2026-07-28"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_a_plain_modern_request_is_offered() {
        let hosts = AdmittedHosts::new(&["127.0.0.1".to_owned()]);
        assert!(plain_modern(&hosts, &plain()));
        let changed = |name: &'static str, value: Option<&'static str>| {
            let mut headers = plain();
            match value {
                Some(value) => {
                    headers.append(name, HeaderValue::from_static(value));
                }
                None => {
                    headers.remove(name);
                }
            }
            plain_modern(&hosts, &headers)
        };
        assert!(!changed("origin", Some("http://localhost")));
        assert!(!changed("mcp-session-id", Some("s")));
        assert!(!changed("mcp-name", Some("other")));
        assert!(!changed("mcp-method", None));
        assert!(!changed("mcp-param-region", Some("eu")));
        assert!(!changed("host", None));
        let mut other = plain();
        other.insert("host", HeaderValue::from_static("evil.example"));
        assert!(!plain_modern(&hosts, &other));
        for (name, value) in [
            ("mcp-protocol-version", "2025-11-25"),
            ("accept", "application/json"),
            ("accept", "application/json, text/event-stream;q=0"),
        ] {
            let mut headers = plain();
            headers.insert(name, HeaderValue::from_static(value));
            assert!(!plain_modern(&hosts, &headers), "{name}: {value}");
        }
    }
}
