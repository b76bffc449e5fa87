//! What the HTTP side is told by the command line: where it listens, the token, the hosts and
//! origins it admits, the request size limit and the drain limit.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use axum::http::Uri;
use axum::http::uri::Authority;

use super::admin::BreakerControl;
use super::auth::BearerToken;

/// How the gateway is served over HTTP (the `--listen`, `--auth-token-env`, `--allowed-host`,
/// `--allowed-origin`, `--max-request-bytes` and drain settings).
///
/// The `Debug` form prints no token (see [`BearerToken`]).
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::serve::HttpOptions;
///
/// let options = HttpOptions::new("10.0.0.5:8080".parse().unwrap());
/// assert!(options.auth_token.is_none());
/// assert_eq!(options.max_request_bytes, HttpOptions::DEFAULT_MAX_REQUEST_BYTES);
/// // Loopback names and the listen address are admitted as `Host`, on any port.
/// let hosts = options.effective_hosts();
/// assert!(hosts.iter().any(|host| host == "localhost"));
/// assert!(hosts.iter().any(|host| host == "10.0.0.5"));
/// ```
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The address the listener is bound to. Its IP (unless unspecified, `0.0.0.0` or `::`) is
    /// an admitted `Host`, on any port.
    pub listen: SocketAddr,
    /// When set, `/mcp`, `/status` and `/metrics` require `Authorization: Bearer TOKEN`;
    /// `/healthz` never does.
    pub auth_token: Option<BearerToken>,
    /// `Host` values admitted besides the loopback names and the listen address: a host name or
    /// IP (any port; an IPv6 address in brackets), or `host:port` (that port only).
    pub allowed_hosts: Vec<String>,
    /// Browser origins admitted besides the loopback ones: `scheme://host` with `:PORT` or
    /// `:*` (any port), or `null`. A request without `Origin` (not from a browser) always passes.
    pub allowed_origins: Vec<String>,
    /// The largest request body accepted on `/mcp`, in bytes; a larger one is answered
    /// `413 Payload Too Large`.
    pub max_request_bytes: usize,
    /// How long [`serve`](super::serve) waits, after its shutdown signal, for the requests in
    /// flight to finish before it ends the MCP sessions (and so cancels what is left).
    pub drain: Duration,
    /// The most MCP sessions open at once (a 2025-11-25 session, a 2026-07-28
    /// `subscriptions/listen` stream); one more is answered `503` with `Retry-After`.
    pub max_sessions: usize,
    /// The most of them one client (one IP address) holds at once; one more is answered `429`
    /// with `Retry-After`. Behind a proxy every client has the proxy's address: set it to
    /// [`max_sessions`](Self::max_sessions) there.
    pub max_sessions_per_client: usize,
    /// A 2025-11-25 session without a message either way for this long ends (as a `DELETE`
    /// ends it), freeing its place.
    pub session_idle: Duration,
    /// When set, `POST /admin/breakers/{breaker}/{action}` changes these breakers by hand, and
    /// `/status` shows those isolated so (see [`BreakerControl`]).
    pub breakers: Option<BreakerControl>,
}

impl HttpOptions {
    /// The default of [`max_request_bytes`](Self::max_request_bytes): 4 MiB.
    pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
    /// The default of [`drain`](Self::drain): 10 s.
    pub const DEFAULT_DRAIN: Duration = Duration::from_secs(10);
    /// The default of [`max_sessions`](Self::max_sessions): 1,000 (about 80 KB each idle, with
    /// the binary's allocator: benches/README.md).
    pub const DEFAULT_MAX_SESSIONS: usize = 1_000;
    /// The default of [`max_sessions_per_client`](Self::max_sessions_per_client): 100.
    pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 100;
    /// The default of [`session_idle`](Self::session_idle): 5 minutes.
    pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

    /// Options for a listener at `listen`: no token, no extra hosts or origins, the default
    /// size and drain limits.
    pub fn new(listen: SocketAddr) -> HttpOptions {
        HttpOptions {
            listen,
            auth_token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_request_bytes: Self::DEFAULT_MAX_REQUEST_BYTES,
            drain: Self::DEFAULT_DRAIN,
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            max_sessions_per_client: Self::DEFAULT_MAX_SESSIONS_PER_CLIENT,
            session_idle: Self::DEFAULT_SESSION_IDLE,
            breakers: None,
        }
    }

    /// Checks the options: each [`allowed_hosts`](Self::allowed_hosts) entry a host or
    /// `host:port`, each [`allowed_origins`](Self::allowed_origins) entry `null` or
    /// `http(s)://host` with an optional `:PORT` or `:*`, and a
    /// [`max_request_bytes`](Self::max_request_bytes) of at least 1.
    ///
    /// # Errors
    ///
    /// The first bad option, naming its flag and value.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker_gateway::serve::HttpOptions;
    ///
    /// let mut options = HttpOptions::new("127.0.0.1:8080".parse().unwrap());
    /// options.allowed_origins = vec!["https://app.example:*".into()];
    /// assert!(options.check().is_ok());
    /// options.allowed_origins.push("app.example".into());
    /// let error = options.check().unwrap_err();
    /// assert_eq!(error.flag(), "--allowed-origin");
    /// assert!(error.to_string().contains("`app.example`"), "{error}");
    /// ```
    pub fn check(&self) -> Result<(), OptionsError> {
        let bad = |flag, value: &str, expected| {
            Err(OptionsError {
                flag,
                value: value.to_owned(),
                expected,
            })
        };
        for host in &self.allowed_hosts {
            // The whole entry read as a host and a numeric port, nothing dropped.
            let whole = Authority::try_from(host.as_str()).is_ok_and(|authority| {
                let read = match authority.port_u16() {
                    Some(port) => format!("{}:{port}", authority.host()),
                    None => authority.host().to_owned(),
                };
                read.eq_ignore_ascii_case(host)
            });
            if !whole {
                return bad("--allowed-host", host, "a host name or IP, or host:port");
            }
        }
        for origin in &self.allowed_origins {
            if !is_origin(origin) {
                return bad(
                    "--allowed-origin",
                    origin,
                    "`null` or an origin: http(s)://host, with :PORT or :* (any port)",
                );
            }
        }
        if self.max_request_bytes == 0 {
            return bad("--max-request-bytes", "0", "at least 1 byte");
        }
        if self.max_sessions == 0 {
            return bad("--max-sessions", "0", "at least 1 session");
        }
        if self.max_sessions_per_client == 0 {
            return bad("--max-sessions-per-client", "0", "at least 1 session");
        }
        if self.session_idle.is_zero() {
            return bad("--session-idle-ms", "0", "at least 1 ms");
        }
        Ok(())
    }

    /// Every admitted `Host`: `localhost`, `127.0.0.1`, `[::1]`, the listen IP unless it is
    /// unspecified, then [`allowed_hosts`](Self::allowed_hosts). Entries without a port admit
    /// any port.
    pub fn effective_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let ip = self.listen.ip();
        if !ip.is_unspecified() && !ip.is_loopback() {
            hosts.push(match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            });
        }
        hosts.extend(self.allowed_hosts.iter().cloned());
        hosts
    }

    /// Every admitted browser `Origin`: `http` and `https` on `localhost`, `127.0.0.1` and
    /// `[::1]`, any port, then [`allowed_origins`](Self::allowed_origins).
    pub fn effective_origins(&self) -> Vec<String> {
        let mut origins = Vec::new();
        for scheme in ["http", "https"] {
            for host in ["localhost", "127.0.0.1", "[::1]"] {
                origins.push(format!("{scheme}://{host}:*"));
            }
        }
        origins.extend(self.allowed_origins.iter().cloned());
        origins
    }
}

/// Whether `origin` is `null` or `http(s)://host[:PORT|:*]` with nothing after it.
fn is_origin(origin: &str) -> bool {
    if origin == "null" {
        return true;
    }
    let base = origin.strip_suffix(":*").unwrap_or(origin);
    let any_port = base.len() != origin.len();
    let Ok(uri) = Uri::try_from(base) else {
        return false;
    };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return false;
    };
    let web = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    // The whole entry read as a scheme and an authority, nothing dropped (no path).
    let whole = format!("{scheme}://{authority}").eq_ignore_ascii_case(base);
    let one_port = !(any_port && authority.port().is_some());
    web && whole && one_port && !authority.as_str().contains('@')
}

/// A bad [`HttpOptions`] value: the flag, the value, what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionsError {
    flag: &'static str,
    value: String,
    expected: &'static str,
}

impl OptionsError {
    /// The flag whose value is bad: `--allowed-host`, `--allowed-origin` or
    /// `--max-request-bytes`.
    pub fn flag(&self) -> &'static str {
        self.flag
    }
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let OptionsError {
            flag,
            value,
            expected,
        } = self;
        write!(f, "{flag} `{value}`: expected {expected}")
    }
}

impl std::error::Error for OptionsError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> HttpOptions {
        HttpOptions::new("127.0.0.1:8080".parse().unwrap())
    }

    #[test]
    fn hosts_and_origins_are_checked_by_their_shape() {
        for host in [
            "gw.example",
            "gw.example:8443",
            "10.0.0.5",
            "[fe80::1]",
            "[::1]:80",
        ] {
            let mut options = options();
            options.allowed_hosts = vec![host.to_owned()];
            assert_eq!(options.check(), Ok(()), "{host}");
        }
        for host in [
            "",
            "gw.example/path",
            "user@gw.example",
            "two words",
            "gw.example:x",
        ] {
            let mut options = options();
            options.allowed_hosts = vec![host.to_owned()];
            let error = options.check().expect_err(host);
            assert_eq!(error.flag(), "--allowed-host", "{host}");
        }
        let good = [
            "null",
            "https://app.example",
            "http://app.example:8080",
            "http://[::1]:*",
        ];
        for origin in good {
            let mut options = options();
            options.allowed_origins = vec![origin.to_owned()];
            assert_eq!(options.check(), Ok(()), "{origin}");
        }
        let bad = [
            "app.example",
            "ftp://app.example",
            "https://app.example/",
            "https://app.example/path",
            "https://app.example:443:*",
            "https://user@app.example",
            "",
        ];
        for origin in bad {
            let mut options = options();
            options.allowed_origins = vec![origin.to_owned()];
            let error = options.check().expect_err(origin);
            assert_eq!(error.flag(), "--allowed-origin", "{origin}");
        }
    }

    #[test]
    fn a_zero_size_limit_is_refused() {
        let mut options = options();
        options.max_request_bytes = 0;
        let error = options.check().unwrap_err();
        assert_eq!(
            error.to_string(),
            "--max-request-bytes `0`: expected at least 1 byte"
        );
    }

    #[test]
    fn the_listen_address_is_admitted_unless_unspecified_or_loopback() {
        let hosts = |listen: &str| HttpOptions::new(listen.parse().unwrap()).effective_hosts();
        assert_eq!(hosts("127.0.0.1:1"), ["localhost", "127.0.0.1", "[::1]"]);
        assert_eq!(hosts("0.0.0.0:1"), ["localhost", "127.0.0.1", "[::1]"]);
        assert_eq!(hosts("[::]:1"), ["localhost", "127.0.0.1", "[::1]"]);
        assert_eq!(hosts("[fe80::1]:1").last().unwrap(), "[fe80::1]");
        assert_eq!(hosts("10.0.0.5:1").last().unwrap(), "10.0.0.5");
    }
}
