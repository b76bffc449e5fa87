//! The requests `/mcp` answers before rmcp's transport does: a [`Shortcut`] given to the app
//! ([`HttpApp::with_shortcut`](super::HttpApp::with_shortcut)) is offered each POST whose
//! body is a message JSON-RPC can read and whose headers are a plain request's (what rmcp
//! would serve as it is, every check of its own passed): the `Host` admitted, no `Origin` (a
//! browser's request goes to rmcp, which checks it), an `Accept` of JSON and event streams
//! with no parameters, and either
//! - the revision 2026-07-28 in `MCP-Protocol-Version`, no session, one `Mcp-Method` and at
//!   most one `Mcp-Name`, no `Mcp-Param-*`; or
//! - the revision 2025-11-25 and one `Mcp-Session-Id`, of a session rmcp holds whose client
//!   the shortcut may serve ([`LegacySession`], given with the request).
//!
//! The shortcut takes the request (its future is the answer) or leaves it to rmcp; anything it
//! is not sure of it leaves.

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures::future::BoxFuture;

use super::hosts::AdmittedHosts;
use super::legacy::{LegacySession, LegacySessions};

/// Offered a POST to `/mcp` (its headers, its whole body, read within the size limit, and its
/// 2025-11-25 session, if it is a session's): `Some` with the answer's future to take it,
/// `None` to leave it to rmcp's transport.
pub type Shortcut = Arc<
    dyn Fn(&HeaderMap, &Bytes, Option<&Arc<LegacySession>>) -> Option<BoxFuture<'static, Response>>
        + Send
        + Sync,
>;

/// The app's shortcut, once given, and the sessions it may serve.
#[derive(Clone)]
pub(crate) struct Shortcuts {
    shortcut: Arc<OnceLock<Shortcut>>,
    legacy: Arc<LegacySessions>,
}

impl Shortcuts {
    pub(crate) fn new(legacy: Arc<LegacySessions>) -> Shortcuts {
        Shortcuts {
            shortcut: Arc::default(),
            legacy,
        }
    }

    pub(crate) fn set(&self, shortcut: Shortcut) {
        // Given once, before serving; a second is ignored.
        let _ = self.shortcut.set(shortcut);
    }

    /// The answer of the shortcut, if there is one and it takes the request.
    pub(crate) fn take(
        &self,
        hosts: &AdmittedHosts,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Option<BoxFuture<'static, Response>> {
        let shortcut = self.shortcut.get()?;
        match plain(hosts, headers)? {
            Plain::Modern => shortcut(headers, body, None),
            Plain::Session(id) => {
                let session = self.legacy.offered(id)?;
                shortcut(headers, body, Some(&session))
            }
        }
    }
}

/// A plain request: a 2026-07-28 one, or one of 2025-11-25 session (its id).
#[derive(Debug, PartialEq, Eq)]
enum Plain<'a> {
    Modern,
    Session(&'a str),
}

/// Whether `headers` are a plain request's that rmcp would serve as it is, and which.
fn plain<'h>(hosts: &AdmittedHosts, headers: &'h HeaderMap) -> Option<Plain<'h>> {
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
    // The revision first: a request of an older one leaves before the `Host` is parsed.
    let plain = match one("mcp-protocol-version")? {
        "2026-07-28"
            if !headers.contains_key("mcp-session-id")
                && one("mcp-method").is_some()
                && headers.get_all("mcp-name").iter().count() <= 1
                && !headers
                    .keys()
                    .any(|name| name.as_str().starts_with("mcp-param-")) =>
        {
            Plain::Modern
        }
        "2025-11-25" => Plain::Session(one("mcp-session-id")?),
        _ => return None,
    };
    (!headers.contains_key(header::ORIGIN)
        && one(header::HOST.as_str()).is_some_and(|host| hosts.admits(host))
        && one(header::ACCEPT.as_str()).is_some_and(accepts))
    .then_some(plain)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn modern() -> HeaderMap {
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
    fn only_a_plain_request_is_offered() {
        let hosts = AdmittedHosts::new(&["127.0.0.1".to_owned()]);
        assert_eq!(plain(&hosts, &modern()), Some(Plain::Modern));
        let changed = |name: &'static str, value: Option<&'static str>| {
            let mut headers = modern();
            match value {
                Some(value) => {
                    headers.append(name, HeaderValue::from_static(value));
                }
                None => {
                    headers.remove(name);
                }
            }
            plain(&hosts, &headers).is_some()
        };
        assert!(!changed("origin", Some("http://localhost")));
        assert!(!changed("mcp-session-id", Some("s")));
        assert!(!changed("mcp-name", Some("other")));
        assert!(!changed("mcp-method", None));
        assert!(!changed("mcp-param-region", Some("eu")));
        assert!(!changed("host", None));
        let mut other = modern();
        other.insert("host", HeaderValue::from_static("evil.example"));
        assert!(plain(&hosts, &other).is_none());
        for (name, value) in [
            ("mcp-protocol-version", "2025-06-18"),
            ("accept", "application/json"),
            ("accept", "application/json, text/event-stream;q=0"),
        ] {
            let mut headers = modern();
            headers.insert(name, HeaderValue::from_static(value));
            assert!(plain(&hosts, &headers).is_none(), "{name}: {value}");
        }
    }

    #[test]
    fn a_plain_session_request_names_its_session() {
        let hosts = AdmittedHosts::new(&["127.0.0.1".to_owned()]);
        let mut headers = modern();
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        assert_eq!(plain(&hosts, &headers), None, "no session");
        headers.insert("mcp-session-id", HeaderValue::from_static("s-1"));
        assert_eq!(plain(&hosts, &headers), Some(Plain::Session("s-1")));
        let mut two = headers.clone();
        two.append("mcp-session-id", HeaderValue::from_static("s-2"));
        assert_eq!(plain(&hosts, &two), None);
        let mut browser = headers.clone();
        browser.insert("origin", HeaderValue::from_static("http://localhost"));
        assert_eq!(plain(&hosts, &browser), None);
        headers.insert("accept", HeaderValue::from_static("application/json"));
        assert_eq!(plain(&hosts, &headers), None);
    }
}
