//! A live connection to an upstream: Streamable HTTP, or a child process on stdio whose stderr
//! goes to the log and which is ended when the link is dropped.

use std::collections::HashMap;
use std::process::Stdio;

use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, Peer, RoleClient, RunningService, Service as _,
    ServiceError, serve_client_with_lifecycle,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{DynamicTransportError, StreamableHttpClientTransport};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::direct::Direct;
use super::handler::UpstreamHandler;
use super::progress::Ordered;
use crate::config::{Era, Transport};

/// One connection to an upstream, initialized.
#[derive(Debug)]
pub struct Link {
    service: RunningService<RoleClient, UpstreamHandler>,
    /// Cancelled when the connection is gone: the child exited, or the transport closed.
    gone: CancellationToken,
    /// Dropping it ends the child process (stdio).
    _end_child: Option<tokio::sync::oneshot::Sender<()>>,
    /// Set when a request failed because this connection was lost: that request's failure is
    /// counted, so the loss itself is not counted again.
    lost: std::sync::atomic::AtomicBool,
    /// Cleared when a request on this connection got no answer at all (the server is gone:
    /// refused, reset), set again by the next answer: what `/status` calls `connected`.
    reachable: std::sync::atomic::AtomicBool,
    /// The direct road of a tool call, for a 2026-07-28 upstream over HTTP.
    direct: Option<Direct>,
}

impl Link {
    /// The peer requests are sent through.
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The protocol revision the connection speaks: 2026-07-28 (stateless, found by
    /// `server/discover`) or the one its `initialize` agreed.
    pub fn era(&self) -> ProtocolVersion {
        self.peer()
            .peer_info()
            .map_or(super::PROTOCOL, |info| info.protocol_version.clone())
    }

    /// Whether the connection speaks 2026-07-28 or later: no session, no `ping`, and
    /// `input_required` results instead of requests to the client.
    pub fn is_modern(&self) -> bool {
        !self.era().has_initialize()
    }

    /// The direct road of a tool call (a 2026-07-28 upstream over HTTP), if it has one.
    pub fn direct(&self) -> Option<&Direct> {
        self.direct.as_ref()
    }

    /// Whether the connection can still carry requests.
    pub fn is_alive(&self) -> bool {
        !self.gone.is_cancelled() && !self.service.is_transport_closed()
    }

    /// A request failed because this connection was lost (its failure is counted).
    pub fn note_lost(&self) {
        // Relaxed: a flag read on its own (whether to count the loss once more); no other
        // memory is published with it. Its race with the watcher's read is covered by the
        // requests-in-flight check beside that read.
        self.lost.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the upstream answered this connection's last request (any answer, an error
    /// too), or none has been sent since it opened.
    pub fn is_reachable(&self) -> bool {
        self.is_alive() && self.reachable.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The upstream answered a request on this connection (`true`), or did not answer at all
    /// (`false`: refused, reset, closed). Relaxed: a flag read on its own, for `/status`.
    /// Written only when it changes: a healthy upstream's calls only read it, so they do not
    /// contend for its cache line.
    pub fn note_reachable(&self, reachable: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.reachable.load(Relaxed) != reachable {
            self.reachable.store(reachable, Relaxed);
        }
    }

    /// Whether a request's failure has counted this connection's loss already.
    pub fn loss_counted(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Resolves when the connection is gone (a stdio child that exited).
    pub async fn gone(&self) {
        self.gone.cancelled().await;
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.service.cancellation_token().cancel();
    }
}

/// How a connection is opened: in the newest era the upstream speaks (`server/discover`
/// first, `initialize` when the upstream answers that it does not know it or does not answer
/// it within 10 s: rmcp's `ClientLifecycleMode::Auto`), with `initialize` alone, or with
/// `server/discover` alone.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opening {
    Newest,
    Initialize,
    Discover,
}

/// Why a connection was not opened.
struct Refused {
    /// The upstream answered `server/discover` with the versions it speaks, every one of them
    /// with `initialize`: an rmcp server, say, that speaks only 2025-11-25 and before. It is
    /// opened again with `initialize`.
    legacy_only: bool,
    /// What went wrong, for the log (credentials taken out), and what it says.
    error: Unreached,
}

/// Why the gateway has no connection to an upstream: what went wrong in words (credentials
/// taken out) and its [`Cause`]. Displayed as its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreached {
    /// What went wrong, for the log and `/status` (the URL's credentials taken out).
    pub text: String,
    /// What kind of failure it is.
    pub cause: Cause,
}

/// What kept the gateway from connecting to an upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The upstream refused the gateway access: HTTP 401 (no or a wrong credential) or 403
    /// (not allowed). A configuration or permission failure: never counted by the breaker.
    Access(u16),
    /// A stdio upstream's process could not be started (no such program, a missing `cwd`).
    Start,
    /// Anything else: no answer, a child that exited, an `initialize` that failed.
    Connect,
}

impl Unreached {
    pub(crate) fn new(text: String, cause: Cause) -> Self {
        Unreached { text, cause }
    }

    /// As the error of a request that could not be sent: a transport error whose source is
    /// this (found again by [`unreached`]); the classification reads it as a `connect`
    /// failure, [`refused_access`] as the refusal it is.
    pub fn into_service_error(self) -> ServiceError {
        ServiceError::TransportSend(DynamicTransportError::from_parts(
            "toolbreaker-gateway",
            std::any::TypeId::of::<Unreached>(),
            Box::new(self),
        ))
    }
}

impl std::fmt::Display for Unreached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Unreached {}

/// Why a request failed when it is that no connection could be opened.
pub fn unreached(error: &ServiceError) -> Option<&Unreached> {
    let ServiceError::TransportSend(sent) = error else {
        return None;
    };
    sent.error.downcast_ref::<Unreached>()
}

/// The HTTP client of one upstream connection: its connections kept alive and reused (as many
/// as the calls in flight need; idle ones closed after 90 s), `TCP_NODELAY` (a request or an
/// answer of a few hundred bytes goes at once), HTTP/2 where the upstream offers it (TLS's
/// ALPN), HTTP/1.1 otherwise.
fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(std::time::Duration::from_secs(90))
        .build()
}

/// The HTTP status (401 or 403) with which the upstream refused the gateway access, when that
/// is why `error` failed: at connect ([`Cause::Access`]) or at any request, with a challenge
/// (`WWW-Authenticate`, rmcp's auth-required and insufficient-scope errors) or without.
pub fn refused_access(error: &ServiceError) -> Option<u16> {
    if let Some(unreached) = unreached(error) {
        return match unreached.cause {
            Cause::Access(status) => Some(status),
            _ => None,
        };
    }
    let ServiceError::TransportSend(sent) = error else {
        return None;
    };
    access_status(sent.error.as_ref())
}

/// The 401 or 403 somewhere in `error`'s chain of sources.
fn access_status(error: &(dyn std::error::Error + 'static)) -> Option<u16> {
    use rmcp::transport::streamable_http_client::{
        AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
    };
    let refused = |status: u16| matches!(status, 401 | 403).then_some(status);
    let mut source = Some(error);
    while let Some(current) = source {
        if current.is::<AuthRequiredError>() {
            return Some(401);
        }
        if current.is::<InsufficientScopeError>() {
            return Some(403);
        }
        if let Some(status) = current.downcast_ref::<HttpStatusError>() {
            return refused(status.status);
        }
        if let Some(error) = current.downcast_ref::<reqwest::Error>() {
            return error.status().and_then(|s| refused(s.as_u16()));
        }
        match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::AuthRequired(_)) => return Some(401),
            Some(StreamableHttpError::InsufficientScope(_)) => return Some(403),
            // rmcp's words for any other status of a POST: `HTTP 403 Forbidden: …`.
            Some(StreamableHttpError::UnexpectedServerResponse(text)) => {
                return text
                    .strip_prefix("HTTP ")
                    .and_then(|t| t.get(..3))
                    .and_then(|code| code.parse().ok())
                    .and_then(refused);
            }
            _ => {}
        }
        source = current.source();
    }
    None
}

/// The 401 or 403 that failed a connection's opening, discovery's or `initialize`'s.
fn access_at_open(error: &ClientInitializeError) -> Option<u16> {
    match error {
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => {
            access_at_open(fallback).or_else(|| access_at_open(discover))
        }
        ClientInitializeError::TransportError { error, .. } => access_status(error),
        _ => None,
    }
}

async fn open<T, E, A>(
    handler: UpstreamHandler,
    transport: T,
    opening: Opening,
) -> Result<RunningService<RoleClient, UpstreamHandler>, ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let transport = Ordered::new(transport.into_transport(), handler.routes());
    let lifecycle = match opening {
        Opening::Newest => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(super::PROTOCOL),
        },
        Opening::Initialize => ClientLifecycleMode::Initialize,
        Opening::Discover => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    };
    serve_client_with_lifecycle(handler, transport, lifecycle).await
}

/// Whether `error` says the upstream speaks only versions with `initialize`.
fn legacy_only(error: &ClientInitializeError) -> bool {
    matches!(
        error,
        ClientInitializeError::NoCompatibleProtocolVersion { server_supported, .. }
            if !server_supported.is_empty() && server_supported.iter().all(ProtocolVersion::has_initialize)
    )
}

/// Connects to `upstream` (its name is for the log) over `transport`, in `era`: for
/// [`Era::Newest`], discovery first, `initialize` when the upstream does not know
/// `server/discover`, does not answer it in time, or answers it with versions that all have
/// `initialize` (then on a new connection: a stdio upstream's child is started again).
///
/// # Errors
///
/// The child could not be started, the upstream refused access (HTTP 401 or 403), or the
/// connection, discovery or `initialize` failed: [`Unreached`], its words and cause.
pub async fn connect(
    upstream: &str,
    transport: &Transport,
    handler: UpstreamHandler,
    era: Era,
) -> Result<Link, Unreached> {
    let opening = match era {
        Era::Sessions => Opening::Initialize,
        Era::Stateless => Opening::Discover,
        _ => Opening::Newest,
    };
    match connect_with(upstream, transport, handler.clone(), opening).await {
        Ok(link) => Ok(link),
        Err(refused) if refused.legacy_only && opening == Opening::Newest => {
            tracing::info!(upstream = %upstream, "the upstream speaks only revisions with `initialize`: connecting with it");
            connect_with(upstream, transport, handler, Opening::Initialize)
                .await
                .map_err(|refused| refused.error)
        }
        Err(refused) => Err(refused.error),
    }
}

/// Connects to `upstream` over `transport`, opened as `opening` says.
async fn connect_with(
    upstream: &str,
    transport: &Transport,
    handler: UpstreamHandler,
    opening: Opening,
) -> Result<Link, Refused> {
    let refused = |error: String| Refused {
        legacy_only: false,
        error: Unreached::new(error, Cause::Connect),
    };
    match transport {
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = http::HeaderName::try_from(name.as_str())
                    .map_err(|e| refused(format!("header {name}: {e}")))?;
                let value = http::HeaderValue::try_from(value.expose()).map_err(|_| {
                    refused(format!(
                        "header {name}: the value is not a valid header value"
                    ))
                })?;
                custom.insert(name, value);
            }
            // As many requests in flight as the clients send: rmcp's default of 16 queued every
            // call past the 16th behind the slowest (the upstream's `max_in_flight` is the cap).
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_concurrent_requests(usize::MAX);
            config.custom_headers = custom.clone();
            let http = http_client().map_err(|e| refused(format!("the HTTP client: {e}")))?;
            let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
            let info = handler.get_info();
            let service = open(handler, transport, opening)
                .await
                .map_err(|e| Refused {
                    legacy_only: legacy_only(&e),
                    error: Unreached::new(
                        redact(url, e.to_string()),
                        access_at_open(&e).map_or(Cause::Connect, Cause::Access),
                    ),
                })?;
            let era = service
                .peer()
                .peer_info()
                .map(|i| i.protocol_version.clone());
            let direct = era.and_then(|era| {
                let capabilities = &info.capabilities;
                Direct::new(http, url, &custom, &era, &info.client_info, capabilities)
            });
            Ok(Link {
                service,
                gone: CancellationToken::new(),
                _end_child: None,
                lost: Default::default(),
                reachable: std::sync::atomic::AtomicBool::new(true),
                direct,
            })
        }
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut child = tokio::process::Command::new(command);
            child
                .args(args)
                // A base environment, not the gateway's own: its token, and the secrets meant
                // for other upstreams' headers, never reach a child. Then the upstream's `env`.
                .env_clear()
                .envs(base_environment())
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.expose())))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            if let Some(cwd) = cwd {
                // Checked here too (the file was checked at load): a missing directory would
                // otherwise read as the command's own `No such file or directory`.
                let path = cwd.to_string_lossy();
                crate::config::check_cwd(&path, &path).map_err(|problem| Refused {
                    legacy_only: false,
                    error: Unreached::new(
                        format!("cannot start `{command}`: {problem}"),
                        Cause::Start,
                    ),
                })?;
                child.current_dir(cwd);
            }
            let mut child = child.spawn().map_err(|e| Refused {
                legacy_only: false,
                error: Unreached::new(format!("cannot start `{command}`: {e}"), Cause::Start),
            })?;
            let (Some(stdout), Some(stdin), stderr) =
                (child.stdout.take(), child.stdin.take(), child.stderr.take())
            else {
                return Err(refused(format!("`{command}`: no stdio pipes")));
            };
            if let Some(stderr) = stderr {
                let name = upstream.to_owned();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::info!(target: "toolbreaker_gateway::upstream_stderr", upstream = %name, "{line}");
                    }
                });
            }
            let gone = CancellationToken::new();
            let (end_tx, end_rx) = tokio::sync::oneshot::channel::<()>();
            {
                let gone = gone.clone();
                let name = upstream.to_owned();
                tokio::spawn(async move {
                    tokio::select! {
                        status = child.wait() => match status {
                            Ok(status) => tracing::warn!(upstream = %name, "upstream process {}", exited(status)),
                            Err(error) => tracing::warn!(upstream = %name, %error, "upstream process: its exit cannot be read"),
                        },
                        _ = end_rx => {
                            let _ = child.kill().await;
                        }
                    }
                    gone.cancel();
                });
            }
            let service = match open(handler, (stdout, stdin), opening).await {
                Ok(service) => service,
                Err(e) => {
                    return Err(Refused {
                        legacy_only: legacy_only(&e),
                        error: Unreached::new(format!("`{command}`: {e}"), Cause::Connect),
                    });
                }
            };
            Ok(Link {
                service,
                gone,
                _end_child: Some(end_tx),
                lost: Default::default(),
                reachable: std::sync::atomic::AtomicBool::new(true),
                direct: None,
            })
        }
    }
}

/// How a child ended, in words: `exited with status 1`, `was killed by signal 9`.
fn exited(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("was killed by signal {signal}");
    }
    format!("ended: {status}")
}

/// The variables a stdio upstream inherits from the gateway: what a program needs to find its
/// tools, home, user, locale, terminal and temporary folder (the set MCP clients such as
/// Claude Desktop pass their servers). Anything else is given in the upstream's `env`,
/// `NAME = "${NAME}"` to pass one on.
pub const INHERITED: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ",
];

fn base_environment() -> impl Iterator<Item = (&'static str, std::ffi::OsString)> {
    INHERITED
        .into_iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (name, value)))
}

/// `message` (an error's text, which may quote the URL) with the URL's credentials (its user,
/// password and query string) replaced by `<redacted>`: they never reach the log.
pub fn redact(url: &str, message: String) -> String {
    url_credentials(url)
        .iter()
        .fold(message, |message, secret| {
            message.replace(secret.as_str(), "<redacted>")
        })
}

/// The credentials a URL carries: its user, password and query string (those not empty).
pub fn url_credentials(url: &str) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Vec::new();
    };
    [Some(parsed.username()), parsed.password(), parsed.query()]
        .into_iter()
        .flatten()
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::redact;

    /// A stdio upstream whose `cwd` is missing when it starts (a configuration made in code,
    /// or a folder removed since the file was read) is refused naming the folder, not with the
    /// command's `No such file or directory`.
    #[tokio::test]
    async fn a_missing_cwd_is_named_at_start() {
        let transport = crate::config::Transport::Stdio {
            command: "true".into(),
            args: vec![],
            env: vec![],
            cwd: Some("/no/such/folder".into()),
        };
        let handler =
            super::UpstreamHandler::new("a".into(), Default::default(), Default::default());
        let refused = super::connect("a", &transport, handler, crate::config::Era::Sessions).await;
        let Err(refused) = refused else {
            panic!("an upstream with a missing cwd started");
        };
        assert_eq!(
            refused.text,
            "cannot start `true`: the working directory `/no/such/folder` does not exist"
        );
        assert_eq!(
            refused.cause,
            super::Cause::Start,
            "a start failure, never counted"
        );
    }

    #[test]
    fn credentials_in_a_url_are_redacted_from_errors() {
        let url = "https://user:pass@search.example.com/mcp?key=s3cret";
        let said = format!("error sending request for url ({url}): connection refused");
        let shown = redact(url, said);
        assert!(
            !shown.contains("s3cret") && !shown.contains("pass") && !shown.contains("user"),
            "{shown}"
        );
        assert!(shown.contains("search.example.com/mcp"), "{shown}");
        assert_eq!(redact("http://127.0.0.1:9/mcp", "plain".into()), "plain");
    }
}
