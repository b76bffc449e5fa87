//! The program: [`main`] parses the command line and runs the gateway until SIGINT or SIGTERM
//! (or, with `--stdio`, until its client closes stdin), reloading the file on SIGHUP; signals
//! are handled from the start, before any upstream is started.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use tokio::net::TcpListener;
use toolbreaker::Registry;
use toolbreaker::fleet::Fleet;
use tracing_subscriber::EnvFilter;

use crate::cli::{Args, LogFormat};
use crate::config::{GatewayConfig, Secret};
use crate::relay::Gateway;
use crate::serve::{
    BearerToken, BreakerControl, HttpApp, HttpOptions, TlsServer, UpstreamReadiness, serve,
    serve_stdio, serve_tls, shutdown_signal,
};

/// How long one tool call may take, all its attempts together.
pub const CALL_TIME_LIMIT: Duration = Duration::from_secs(300);

/// How long fleet mode waits for its Redis at start before it goes on without (it keeps
/// trying in the background; admission never waits for it).
const FLEET_CONNECT_WAIT: Duration = Duration::from_secs(5);

/// The binary `toolbreaker-gateway`: exit code 0 after a clean shutdown (SIGINT or SIGTERM,
/// during the start too), 1 when it cannot start (a bad config file, a bad TLS file, a name
/// collision, a port in use), 2 for a usage error.
pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(error) = args.validate() {
        error.exit();
    }
    init_logging(&args);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            return fail(
                args.log_format,
                format_args!("cannot start the runtime: {error}"),
            );
        }
    };
    let format = args.log_format;
    if args.check {
        return match runtime.block_on(check(&args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => fail(format, format_args!("{error}")),
        };
    }
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(format, format_args!("{error}")),
    }
}

/// Says on stderr why the gateway stops. With `--log-format json` it is an error-level event,
/// so that every line is a JSON object; with text logs, or a `--log` filter that drops errors,
/// it is one plain line.
fn fail(format: LogFormat, error: std::fmt::Arguments<'_>) -> ExitCode {
    if format == LogFormat::Json && tracing::enabled!(tracing::Level::ERROR) {
        tracing::error!("toolbreaker-gateway: {error}");
    } else {
        let _ = writeln!(std::io::stderr(), "toolbreaker-gateway: {error}");
    }
    ExitCode::FAILURE
}

/// Logs go to stderr (stdout is MCP's with `--stdio`), as text or one JSON object a line.
fn init_logging(args: &Args) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = log_filter(&args.log);
    let fmt = tracing_subscriber::fmt::layer().with_writer(crate::redact::redactor());
    let registry = tracing_subscriber::registry().with(filter).with(
        // Asked at each event of those sites (`sometimes`), not once per site.
        tracing_subscriber::filter::DynFilterFn::new(|event, _| rmcp_warnings_limited(event))
            .with_callsite_filter(|site| {
                if is_rmcp_warning(site) {
                    tracing::subscriber::Interest::sometimes()
                } else {
                    tracing::subscriber::Interest::always()
                }
            }),
    );
    let _ = match args.log_format {
        LogFormat::Json => registry.with(fmt.json()).try_init(),
        LogFormat::Text => registry.with(fmt.with_ansi(false)).try_init(),
    };
}

/// The filter of `--log` (`info` when it does not parse). Unless it names `rmcp` itself, the
/// MCP library's own events are kept to warnings and errors (never more than the filter lets
/// through): its `info` lines repeat an upstream's whole `instructions` at connect and every
/// notification it sends, and its transport worker logs each failed connection once more
/// (with Rust type names), where the gateway logs one line of its own.
pub fn log_filter(directives: &str) -> EnvFilter {
    use tracing_subscriber::filter::LevelFilter;
    let filter = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new("info"));
    if directives.contains("rmcp") {
        return filter;
    }
    let rmcp = filter
        .max_level_hint()
        .map_or(LevelFilter::WARN, |most| most.min(LevelFilter::WARN));
    [
        format!("rmcp={rmcp}"),
        "rmcp::transport::worker=off".to_owned(),
    ]
    .iter()
    .filter_map(|directive| directive.parse().ok())
    .fold(filter, EnvFilter::add_directive)
}

/// Whether `site` is an rmcp event at WARN or above.
fn is_rmcp_warning(site: &tracing::Metadata<'_>) -> bool {
    site.is_event() && *site.level() <= tracing::Level::WARN && site.target().starts_with("rmcp")
}

/// rmcp's warnings (a request it refused, an error the gateway answered), which a client can
/// cause on every request: each of its warning sites logs at most once per
/// [`LOG_INTERVAL`](crate::serve::LOG_INTERVAL); the gateway's own are limited where they are
/// made, with the count left out.
fn rmcp_warnings_limited(event: &tracing::Metadata<'_>) -> bool {
    static RMCP: crate::serve::LogLimit = crate::serve::LogLimit::new(crate::serve::LOG_INTERVAL);
    if !is_rmcp_warning(event) {
        return true;
    }
    // A callsite's name is `'static` and names its file and line: one cause per site.
    RMCP.admit(event.name()).is_some()
}

/// Runs the gateway of `args` until it is told to stop.
///
/// Its signal handlers come first, before anything else is started: a SIGINT or SIGTERM that
/// comes while the gateway starts (while it waits, up to each upstream's per-call timeout, for
/// the upstreams' `initialize`) stops the start, ends the stdio children already started and
/// returns `Ok`; a SIGHUP that comes then is kept, and the file is reloaded once the config in
/// force is known. The port is bound before any upstream is started: a busy one is an error
/// with no child started.
///
/// # Errors
///
/// What keeps it from starting or serving, in words: a config file that cannot be read or is
/// invalid, a TLS file that cannot be used, an address that cannot be bound, a tool name two
/// upstreams show.
pub async fn run(args: Args) -> Result<(), String> {
    let mut stop = Box::pin(shutdown_signal().map_err(|e| e.to_string())?);
    let hangups = hangups();
    let started = tokio::select! {
        biased;
        () = &mut stop => None,
        started = start(&args) => Some(started?),
    };
    // Stopped during the start: its future, dropped, ended the children it had started.
    let Some(Started { gateway, http }) = started else {
        tracing::info!("stopped during start: the upstreams started are ended, nothing served");
        return Ok(());
    };
    tokio::spawn(reload_on_hangup(gateway.clone(), args.clone(), hangups));
    let served = match http {
        None => serve_stdio(gateway.session(), stop).await,
        Some(Http { listener, app, tls }) => {
            let bound = listener.local_addr().map_err(|e| e.to_string())?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            // The one line on stdout: where clients connect (scripts read the port from it).
            println!("listening on {scheme}://{bound}/mcp");
            tracing::info!(%bound, tls = tls.is_some(), "listening");
            match tls {
                Some(tls) => serve_tls(listener, &tls, app, stop).await,
                None => serve(listener, app, stop).await,
            }
        }
    };
    gateway.shutdown();
    served.map_err(|e| e.to_string())
}

/// A gateway started: its upstreams connected (or left to their background tasks) and, unless
/// it serves stdio, its listener bound and its routes made.
struct Started {
    gateway: Gateway,
    http: Option<Http>,
}

struct Http {
    listener: TcpListener,
    app: HttpApp,
    tls: Option<TlsServer>,
}

/// Reads the config, binds the port, makes the routes, then starts the upstreams: whatever can
/// be refused is refused before a child is started.
async fn start(args: &Args) -> Result<Started, String> {
    let (path, format) = args.config_source();
    let config = GatewayConfig::load(&path, format).map_err(|e| e.to_string())?;
    let token = args.auth_token().map_err(|e| e.to_string())?;
    crate::redact::redactor().add(&config, token.as_ref());
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(TlsServer::from_pem_files(cert, key).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    // The port before any upstream: a busy one is said at once, with no child started.
    let listener = if args.stdio {
        None
    } else {
        Some(args.listen.bind().await?)
    };
    let mut registry = Registry::builder()
        .config(config.registry.clone())
        .metrics(true);
    if let Some(url) = &args.redis {
        let fleet = Fleet::builder(url.clone())
            .build()
            .map_err(|e| format!("--redis: {e}"))?;
        registry = registry.fleet(fleet);
    }
    let registry = registry.build();
    let gateway = Gateway::new("toolbreaker-gateway", registry, CALL_TIME_LIMIT);
    gateway.set_input_wait(args.input_wait());
    let http = match listener {
        Some(listener) => {
            let app = http_app(args, &gateway, &listener, token.as_ref())?;
            Some(Http { listener, app, tls })
        }
        None => None,
    };
    if let Some(fleet) = gateway.registry().fleet()
        && let Err(error) = fleet.connected(FLEET_CONNECT_WAIT).await
    {
        tracing::warn!(%error, "fleet mode: Redis is not reachable yet; breakers run locally until it is");
    }
    tracing::info!(
        upstreams = config.upstreams.len(),
        "starting: connecting to the upstreams"
    );
    gateway.start(config).await.map_err(|e| e.to_string())?;
    Ok(Started { gateway, http })
}

/// The HTTP routes of `gateway` on `listener`, with the command line's options.
fn http_app(
    args: &Args,
    gateway: &Gateway,
    listener: &TcpListener,
    token: Option<&Secret>,
) -> Result<HttpApp, String> {
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let mut options = HttpOptions::new(bound);
    options.auth_token = token.and_then(|t| BearerToken::new(t.expose()));
    options.allowed_hosts.clone_from(&args.allowed_hosts);
    // A host name given to --listen is a `Host` clients use (an IP is admitted already).
    if args.listen.ip().is_none() {
        options.allowed_hosts.push(args.listen.host().to_owned());
    }
    options.allowed_origins.clone_from(&args.allowed_origins);
    options.max_request_bytes = usize::try_from(args.max_request_bytes).unwrap_or(usize::MAX);
    options.drain = args.drain_timeout();
    options.max_sessions = usize::try_from(args.max_sessions).unwrap_or(usize::MAX);
    options.max_sessions_per_client =
        usize::try_from(args.max_sessions_per_client).unwrap_or(usize::MAX);
    options.session_idle = Duration::from_millis(args.session_idle_ms);
    options.breakers = Some(BreakerControl::of_gateway(gateway.clone()));
    let (sessions, status, scrape) = (gateway.clone(), gateway.clone(), gateway.clone());
    let ready = gateway.clone();
    let shortcut = gateway.shortcut();
    let app = HttpApp::new(
        &options,
        move || Ok(sessions.session()),
        Arc::new(move || status.status()),
        Some(Arc::new(move || scrape.registry().export_metrics())),
    )
    .map_err(|e| e.to_string())?;
    Ok(app
        .with_readiness(Arc::new(move || readiness(&ready)))
        .with_shortcut(shortcut))
}

/// `/readyz`'s view of the upstreams in force.
fn readiness(gateway: &Gateway) -> Vec<UpstreamReadiness> {
    gateway
        .upstreams()
        .iter()
        .map(|upstream| UpstreamReadiness {
            name: upstream.name().to_owned(),
            required: upstream.config().required,
            connected: upstream.status()["connected"].as_bool() == Some(true),
        })
        .collect()
}

/// `--check`: loads and validates the file, prints it resolved (secrets `<redacted>`) on
/// stdout, then connects to each upstream to warn of names in `allow`, `deny` and tool sections
/// that match none of its tools; ends every upstream it started.
///
/// # Errors
///
/// The file's error, or a tool name two upstreams show.
pub async fn check(args: &Args) -> Result<(), String> {
    let (path, format) = args.config_source();
    let config = GatewayConfig::load(&path, format).map_err(|e| e.to_string())?;
    let token = args.auth_token().map_err(|e| e.to_string())?;
    let redactor = crate::redact::redactor();
    redactor.add(&config, token.as_ref());
    let resolved = serde_json::to_string_pretty(&config.resolved()).map_err(|e| e.to_string())?;
    println!("{}", redactor.apply(&resolved));
    let registry = Registry::builder().config(config.registry.clone()).build();
    let gateway = Gateway::new("toolbreaker-gateway", registry, CALL_TIME_LIMIT);
    let started = gateway.start(config).await;
    // An upstream that listed its tools has warned of the names matching none of them (as the
    // running gateway does); one that was not reached is said here.
    for upstream in gateway.upstreams() {
        if upstream.known_tools().is_none() {
            tracing::warn!(
                upstream = %upstream.name(),
                "not reached: its `allow`, `deny` and tool sections are not checked against its tools"
            );
        }
    }
    gateway.shutdown();
    started.map_err(|e| e.to_string())?;
    tracing::info!(file = %path.display(), "the configuration is valid");
    Ok(())
}

/// The SIGHUPs to come, caught from now on (so that one during the start is kept, not the
/// default action that ends the process); `None` where it cannot be caught.
#[cfg(unix)]
fn hangups() -> Option<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(hangups) => Some(hangups),
        Err(error) => {
            tracing::warn!(%error, "SIGHUP cannot be caught: no reload");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangups() -> Option<()> {
    None
}

/// Reloads the config file on each SIGHUP, one that came during the start first; a bad file
/// is logged and the config in force kept.
#[cfg(unix)]
async fn reload_on_hangup(
    gateway: Gateway,
    args: Args,
    hangups: Option<tokio::signal::unix::Signal>,
) {
    let Some(mut hangups) = hangups else {
        return;
    };
    let came = {
        let mut now = std::task::Context::from_waker(std::task::Waker::noop());
        matches!(
            hangups.poll_recv(&mut now),
            std::task::Poll::Ready(Some(()))
        )
    };
    if came {
        tracing::info!(
            "SIGHUP came during the start: reloading now that the config in force is known"
        );
        reload(&gateway, &args).await;
    }
    while hangups.recv().await.is_some() {
        reload(&gateway, &args).await;
    }
}

#[cfg(not(unix))]
async fn reload_on_hangup(gateway: Gateway, args: Args, hangups: Option<()>) {
    let _ = (gateway, args, hangups);
}

/// Reads the config file again and puts it in force; a bad file is logged and the config in
/// force kept.
#[cfg(unix)]
async fn reload(gateway: &Gateway, args: &Args) {
    let (path, format) = args.config_source();
    let config = match GatewayConfig::load(&path, format) {
        Ok(config) => {
            crate::redact::redactor().add(&config, None);
            config
        }
        Err(error) => {
            tracing::error!(%error, "reload refused: the config in force is kept");
            return;
        }
    };
    match gateway.reload(config).await {
        Ok(reloaded) => tracing::info!(
            added = ?reloaded.added,
            removed = ?reloaded.removed,
            changed = ?reloaded.changed,
            breakers = ?reloaded.breakers,
            "reloaded"
        ),
        Err(error) => {
            tracing::error!(%error, "reload refused: the config in force is kept")
        }
    }
}
