//! The `Host` check of MCP's DNS-rebinding rule for the routes rmcp does not serve (`/status`,
//! `/metrics`): a page whose name was rebound to this machine's address sends its own name as
//! `Host`, which is not admitted. rmcp checks `/mcp` itself, `Origin` included, with the same
//! admitted hosts.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::log_limit::{LOG_INTERVAL, LogLimit};
use crate::redact::shown;

/// An admitted host: its name (lowercase, IPv6 without brackets) and, if given, its one port.
#[derive(Debug, PartialEq)]
struct Admitted {
    host: String,
    port: Option<u16>,
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn parse(entry: &str) -> Option<Admitted> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    Some(match Authority::try_from(entry) {
        Ok(authority) => Admitted {
            host: normalize(authority.host()),
            port: authority.port_u16(),
        },
        Err(_) => Admitted {
            host: normalize(entry),
            port: None,
        },
    })
}

/// The admitted hosts, parsed once.
#[derive(Clone)]
pub(crate) struct AdmittedHosts(Arc<[Admitted]>);

impl AdmittedHosts {
    /// `entries` as [`HttpOptions::effective_hosts`](super::HttpOptions::effective_hosts) gives
    /// them.
    pub(crate) fn new(entries: &[String]) -> AdmittedHosts {
        AdmittedHosts(entries.iter().filter_map(|entry| parse(entry)).collect())
    }

    /// Whether the authority `host` (`name` or `name:port`) is admitted.
    pub(crate) fn admits(&self, host: &str) -> bool {
        let Ok(authority) = Authority::try_from(host) else {
            return false;
        };
        let name = normalize(authority.host());
        let port = authority.port_u16();
        self.0.iter().any(|admitted| {
            admitted.host == name && admitted.port.is_none_or(|only| port == Some(only))
        })
    }
}

/// Passes a request on if its `Host` (or, with none, its URI's authority) is admitted; answers
/// `403 Forbidden` otherwise, as rmcp does on `/mcp`.
pub(crate) async fn require_admitted_host(
    State(hosts): State<AdmittedHosts>,
    request: Request,
    next: Next,
) -> Response {
    let host = match request.headers().get(header::HOST) {
        Some(value) => value.to_str().ok(),
        None => request.uri().authority().map(Authority::as_str),
    };
    if host.is_some_and(|host| hosts.admits(host)) {
        return next.run(request).await;
    }
    // Once per interval at most (a client that keeps trying is one line per 10 s).
    static REFUSED: LogLimit = LogLimit::new(LOG_INTERVAL);
    if let Some(suppressed) = REFUSED.admit("host not admitted") {
        tracing::warn!(
            host = %shown(host.unwrap_or("<none or not text>")),
            path = %shown(request.uri().path()),
            suppressed,
            "refused a request whose Host is not admitted (possible DNS rebinding; \
             `suppressed`: how many since the last one logged)"
        );
    }
    (
        StatusCode::FORBIDDEN,
        "Forbidden: Host header is not allowed",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(entries: &[&str]) -> AdmittedHosts {
        let entries: Vec<String> = entries.iter().map(|&entry| entry.to_owned()).collect();
        AdmittedHosts::new(&entries)
    }

    #[test]
    fn a_host_without_a_port_admits_every_port_and_one_with_a_port_only_it() {
        let hosts = hosts(&["localhost", "[::1]", "gw.example:8443"]);
        assert!(hosts.admits("localhost"));
        assert!(hosts.admits("LocalHost:3000"));
        assert!(hosts.admits("[::1]:80"));
        assert!(hosts.admits("gw.example:8443"));
        assert!(!hosts.admits("gw.example"));
        assert!(!hosts.admits("gw.example:8444"));
        assert!(!hosts.admits("evil.example"));
        assert!(!hosts.admits("localhost.evil.example"));
        assert!(!hosts.admits("not a host"));
    }
}
