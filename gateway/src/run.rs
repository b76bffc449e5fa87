//! The program: [`main`] parses the command line and runs the gateway until SIGINT or SIGTERM
//! (or, with `--stdio`, until its client closes stdin), reloading the file on SIGHUP.

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
use crate::config::GatewayConfig;
use crate::relay::Gateway;
use crate::serve::{BearerToken, HttpApp, HttpOptions, serve, serve_stdio, shutdown_signal};

/// How long one tool call may take, all its attempts together.
pub const CALL_TIME_LIMIT: Duration = Duration::from_secs(300);

/// How long fleet mode waits for its Redis at start before it goes on without (it keeps
/// trying in the background; admission never waits for it).
const FLEET_CONNECT_WAIT: Duration = Duration::from_secs(5);

/// The binary `toolbreaker-gateway`: exit code 0 after a clean shutdown, 1 when it cannot
/// start (a bad config file, a name collision, a port in use), 2 for a usage error.
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
/// # Errors
///
/// What keeps it from starting or serving, in words: a config file that cannot be read or is
/// invalid, a tool name two upstreams show, an address that cannot be bound.
pub async fn run(args: Args) -> Result<(), String> {
    let (path, format) = args.config_source();
    let config = GatewayConfig::load(&path, format).map_err(|e| e.to_string())?;
    let token = args.auth_token().map_err(|e| e.to_string())?;
    crate::redact::redactor().add(&config, token.as_ref());
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
    if let Some(fleet) = registry.fleet()
        && let Err(error) = fleet.connected(FLEET_CONNECT_WAIT).await
    {
        tracing::warn!(%error, "fleet mode: Redis is not reachable yet; breakers run locally until it is");
    }
    let gateway = Gateway::new("toolbreaker-gateway", registry, CALL_TIME_LIMIT);
    gateway.set_input_wait(args.input_wait());
    gateway.start(config).await.map_err(|e| e.to_string())?;
    tokio::spawn(reload_on_hangup(gateway.clone(), args.clone()));

    let served = if args.stdio {
        let stop = shutdown_signal().map_err(|e| e.to_string())?;
        serve_stdio(gateway.session(), stop).await
    } else {
        let mut options = HttpOptions::new(args.listen);
        options.auth_token = token.as_ref().and_then(|t| BearerToken::new(t.expose()));
        options.allowed_hosts.clone_from(&args.allowed_hosts);
        options.allowed_origins.clone_from(&args.allowed_origins);
        options.max_request_bytes = usize::try_from(args.max_request_bytes).unwrap_or(usize::MAX);
        options.drain = args.drain_timeout();
        let listener = TcpListener::bind(args.listen)
            .await
            .map_err(|e| format!("--listen {}: {e}", args.listen))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        options.listen = bound;
        let (sessions, status, scrape) = (gateway.clone(), gateway.clone(), gateway.clone());
        let app = HttpApp::new(
            &options,
            move || Ok(sessions.session()),
            Arc::new(move || status.status()),
            Some(Arc::new(move || scrape.registry().export_metrics())),
        )
        .map_err(|e| e.to_string())?;
        // The one line on stdout: where clients connect (scripts read the port from it).
        println!("listening on http://{bound}/mcp");
        tracing::info!(%bound, "listening");
        let stop = shutdown_signal().map_err(|e| e.to_string())?;
        serve(listener, app, stop).await
    };
    gateway.shutdown();
    served.map_err(|e| e.to_string())
}

/// Reloads the config file on each SIGHUP; a bad file is logged and the config in force kept.
async fn reload_on_hangup(gateway: Gateway, args: Args) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangups) = signal(SignalKind::hangup()) else {
            tracing::warn!("SIGHUP cannot be caught: no reload");
            return;
        };
        while hangups.recv().await.is_some() {
            let (path, format) = args.config_source();
            let config = match GatewayConfig::load(&path, format) {
                Ok(config) => {
                    crate::redact::redactor().add(&config, None);
                    config
                }
                Err(error) => {
                    tracing::error!(%error, "reload refused: the config in force is kept");
                    continue;
                }
            };
            match gateway.reload(config).await {
                Ok(reloaded) => tracing::info!(
                    added = ?reloaded.added,
                    removed = ?reloaded.removed,
                    changed = ?reloaded.changed,
                    "reloaded"
                ),
                Err(error) => {
                    tracing::error!(%error, "reload refused: the config in force is kept")
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (gateway, args);
}
