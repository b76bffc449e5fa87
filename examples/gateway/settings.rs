//! The gateway's breaker settings: built in, or read from a TOML file (`--config FILE`) and
//! reloaded from it on SIGHUP.
//!
//! A file is refused, at start and on reload, when it is not valid, and when it has a section for
//! a dependency that is none of the gateway's tools: most often a misspelt name
//! (`[dependencies.serch]`), which would otherwise be kept for a dependency nothing asks for
//! while the real one silently ran on the default.
//!
//! The `chat` tool's pool, `llm`, is part of the configuration too (`[pools.llm]`): a file without
//! that section gets the built-in one ([`LLM_GROUPS`]), and a file whose pool names a member that
//! is none of the providers, or that has any other pool, is refused as an unknown section is.
//!
//! Shared by the example (`main.rs`) and the integration test (`tests/examples/gateway.rs`), which
//! calls [`reload`] (what the SIGHUP handler calls) without sending any signal.

use std::path::Path;
use std::time::Duration;

use toolbreaker::registry::closest_name;
use toolbreaker::{CircuitBreaker, Config, Pool, Registry, RegistryConfig, Window};

use crate::providers::{POOL, PROVIDERS};
use crate::tools::Tool;

/// Consecutive counted failures that trip a breaker.
pub const FAILURE_THRESHOLD: u32 = 5;
/// How long an opened breaker blocks before it lets one probe through.
pub const COOLDOWN: Duration = Duration::from_millis(500);
/// The probe's lease: how long a probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The dependency whose outage fails only a share of its calls, and whose breaker has a
/// failure-rate rule besides the consecutive one.
pub const RATED: Tool = Tool::Quotes;
/// [`RATED`]'s failure-rate rule: trip when this share of the judged calls in its window failed…
pub const FAILURE_RATE: f64 = 0.3;
/// …of the last this many judged calls…
pub const WINDOW_CALLS: u32 = 20;
/// …once the window holds at least this many.
pub const MINIMUM_CALLS: u32 = 10;

/// The dependency whose calls are capped: at most [`MAX_IN_FLIGHT`] in flight at once, so when it
/// hangs, the calls past the cap are answered `saturated` at once instead of each waiting out its
/// per-call timeout.
pub const CAPPED: Tool = Tool::Weather;
/// [`CAPPED`]'s cap on calls in flight.
pub const MAX_IN_FLIGHT: u32 = 8;

/// The dependency whose breaker sheds load by client-side adaptive throttling while its 503s grow,
/// before its consecutive rule trips.
pub const THROTTLED: Tool = Tool::Search;
/// [`THROTTLED`]'s throttle: requests may reach `K` times the accepted ones over the window before
/// calls are shed (the SRE book's `K`)…
pub const THROTTLE_K: f64 = 1.5;
/// …over this window: short, so that it follows the demo's degradation (a few hundred ms per
/// step), where a service's would be minutes.
pub const THROTTLE_WINDOW: Duration = Duration::from_millis(100);

/// The built-in groups of the pool [`POOL`]: two preferred providers, then the backup.
pub const LLM_GROUPS: [&[&str]; 2] = [&["llm-a", "llm-b"], &["llm-c"]];

/// The settings the gateway runs with when no `--config` is given: one configuration for every
/// dependency but three, whose own add to the same consecutive rule, cooldown and probe timeout:
/// [`RATED`] a failure-rate rule, [`CAPPED`] a cap on calls in flight, [`THROTTLED`] adaptive
/// throttling; and the pool [`POOL`] of [`LLM_GROUPS`]. `breakers.toml`, next to this file,
/// holds the same.
pub fn built_in() -> RegistryConfig {
    let config = Config::new(FAILURE_THRESHOLD, COOLDOWN, PROBE_TIMEOUT)
        .expect("the built-in breaker settings are valid");
    let common = || {
        CircuitBreaker::builder()
            .failure_threshold(FAILURE_THRESHOLD)
            .cooldown(COOLDOWN)
            .probe_timeout(PROBE_TIMEOUT)
    };
    let rated = common()
        .failure_rate(FAILURE_RATE)
        .window(Window::Calls(WINDOW_CALLS))
        .minimum_calls(MINIMUM_CALLS)
        .build_config()
        .expect("the built-in rate rule is valid");
    let capped = common()
        .max_in_flight(MAX_IN_FLIGHT)
        .build_config()
        .expect("the built-in cap is valid");
    let throttled = common()
        .adaptive_throttling(THROTTLE_K, THROTTLE_WINDOW)
        .build_config()
        .expect("the built-in throttle is valid");
    with_pool(
        RegistryConfig::new(config)
            .dependency(RATED.name(), rated)
            .dependency(CAPPED.name(), capped)
            .dependency(THROTTLED.name(), throttled),
    )
}

/// `config`, with the built-in pool [`POOL`] if it has none.
pub fn with_pool(config: RegistryConfig) -> RegistryConfig {
    if config.pools().any(|name| name == POOL) {
        return config;
    }
    let pool = LLM_GROUPS.iter().fold(Pool::builder(POOL), |pool, group| {
        pool.group(group.iter().copied())
    });
    config
        .pool(pool)
        .expect("the built-in pool's groups are valid")
}

/// The dependencies the gateway has breakers for: its tools and the providers, by name.
pub fn dependencies() -> impl Iterator<Item = &'static str> {
    Tool::ALL
        .iter()
        .map(|tool| tool.name())
        .chain(PROVIDERS.iter().copied())
}

/// Refuse a configuration with a pool other than [`POOL`], or whose [`POOL`] has a member that
/// is none of the providers (which no server would answer for).
///
/// # Errors
///
/// One line naming each such pool or member, and what the gateway has.
pub fn check_pools(config: &RegistryConfig) -> Result<(), String> {
    let mut clauses = Vec::new();
    for name in config.pools().filter(|name| *name != POOL) {
        clauses.push(format!(
            "unknown pool section [pools.{name:?}]; the gateway's pool is {POOL:?}"
        ));
    }
    // The pool's members, read from a registry of this configuration alone.
    let registry = Registry::builder().config(config.clone()).build();
    if let Some(pool) = registry.pool(POOL) {
        for member in pool.members().map(|m| m.name().to_owned()) {
            if !PROVIDERS.contains(&member.as_str()) {
                clauses.push(format!(
                    "[pools.{POOL:?}] `groups`: {member:?} is none of the providers ({})",
                    PROVIDERS.join(", ")
                ));
            }
        }
    }
    if clauses.is_empty() {
        Ok(())
    } else {
        Err(clauses.join("; "))
    }
}

/// Refuse a configuration with a section for a dependency that is none of the gateway's tools,
/// naming each such section and the tool it most likely means.
///
/// # Errors
///
/// One line: `unknown dependency section [dependencies."serch"]; did you mean "search"?` (or,
/// when no tool's name is near, the tools' names), one such clause per unknown section.
pub fn check_sections(config: &RegistryConfig) -> Result<(), String> {
    let unknown = config.unknown_dependencies(dependencies());
    if unknown.is_empty() {
        return Ok(());
    }
    let clauses: Vec<String> = unknown
        .iter()
        .map(|name| {
            let hint = match closest_name(name, dependencies()) {
                Some(known) => format!("did you mean {known:?}?"),
                None => {
                    let names: Vec<String> =
                        dependencies().map(|name| format!("{name:?}")).collect();
                    format!("the gateway's dependencies are {}", names.join(", "))
                }
            };
            format!("unknown dependency section [dependencies.{name:?}]; {hint}")
        })
        .collect();
    Err(clauses.join("; "))
}

/// The configuration the gateway starts with: the file's, or the built-in one.
///
/// # Errors
///
/// One line saying why the file was refused: it could not be read, it is not a valid
/// configuration (the error names the dependency and the field at fault), or it has a section
/// for a dependency that is none of the gateway's tools ([`check_sections`]).
pub fn initial(path: Option<&Path>) -> Result<RegistryConfig, String> {
    let Some(path) = path else {
        return Ok(built_in());
    };
    let config = RegistryConfig::from_file(path).map_err(|error| error.to_string())?;
    check_sections(&config)?;
    check_pools(&config)?;
    Ok(with_pool(config))
}

/// Put the file at `path` in force on `registry`, and say what happened: one line per change
/// (`reloaded PATH: search: failure_threshold 5 -> 3`), or one `reloaded PATH: no change`.
///
/// # Errors
///
/// One line saying why the file was refused, as at start ([`initial`]); the configuration in
/// force is kept, and no breaker was touched.
pub fn reload(registry: &Registry, path: &Path) -> Result<Vec<String>, String> {
    let path_shown = path.display();
    let refused = |why: String| {
        format!("not reloaded {path_shown}: {why}; the configuration in force is kept")
    };
    let config = RegistryConfig::from_file(path).map_err(|error| refused(error.to_string()))?;
    check_sections(&config).map_err(refused)?;
    check_pools(&config).map_err(refused)?;
    let reload = registry.reload(with_pool(config));
    if reload.changes().is_empty() && reload.pools_changed().is_empty() {
        return Ok(vec![format!("reloaded {path_shown}: no change")]);
    }
    let changes = reload
        .changes()
        .iter()
        .map(|change| format!("reloaded {path_shown}: {change}"));
    let pools = reload
        .pools_changed()
        .iter()
        .map(|pool| format!("reloaded {path_shown}: pool {pool}: groups changed"));
    Ok(changes.chain(pools).collect())
}

/// One breaker configuration in words, as the gateway's header line prints it.
pub fn describe(config: Config) -> String {
    let mut rules = Vec::new();
    if let Some(threshold) = config.failure_threshold() {
        rules.push(format!("threshold {threshold}"));
    }
    let window = match config.window() {
        Some(Window::Calls(n)) => format!("last {n} calls"),
        Some(Window::Time(t)) => format!("last {} ms", t.as_millis()),
        None => String::new(),
    };
    let minimum = config.minimum_calls().unwrap_or(0);
    if let Some(rate) = config.failure_rate() {
        rules.push(format!(
            "failure rate {:.0} % of the {window} (at least {minimum})",
            rate * 100.0,
        ));
    }
    if let Some((threshold, rate)) = config.slow_calls() {
        rules.push(format!(
            "slow calls ({} ms or more) {:.0} % of the {window} (at least {minimum})",
            threshold.as_millis(),
            rate * 100.0,
        ));
    }
    let mut admission = String::new();
    if let Some(cap) = config.max_in_flight() {
        admission.push_str(&format!(", at most {cap} calls in flight"));
    }
    if let Some(limit) = config.adaptive_concurrency() {
        admission.push_str(&format!(", adaptive concurrency {limit:?}"));
    }
    if let Some((k, window)) = config.adaptive_throttling() {
        admission.push_str(&format!(
            ", adaptive throttling k {k} over {} ms",
            window.as_millis()
        ));
    }
    format!(
        "{}, cooldown {} ms, probe timeout {} ms{admission}",
        rules.join(" or "),
        config.cooldown().as_millis(),
        config.probe_timeout().as_millis()
    )
}

/// One breaker configuration as a JSON object, with the TOML file's key names; a rule that is
/// off is `null` (`failure_threshold` for a rate rule alone; the rate rules' keys without one),
/// and so is the window's key it does not use (`window_ms` for a count window), and so is each
/// admission control that is off (`max_in_flight`, `adaptive_concurrency` written as its Rust
/// value, `adaptive_throttling` as `{"k", "window_ms"}`).
pub fn json(config: Config) -> serde_json::Value {
    let millis = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    let (window_calls, window_ms) = match config.window() {
        Some(Window::Calls(n)) => (Some(n), None),
        Some(Window::Time(t)) => (None, Some(millis(t))),
        None => (None, None),
    };
    let slow_calls = config.slow_calls();
    serde_json::json!({
        "failure_threshold": config.failure_threshold(),
        "cooldown_ms": millis(config.cooldown()),
        "probe_timeout_ms": millis(config.probe_timeout()),
        "failure_rate": config.failure_rate(),
        "window_calls": window_calls,
        "window_ms": window_ms,
        "minimum_calls": config.minimum_calls(),
        "slow_call_threshold_ms": slow_calls.map(|(threshold, _)| millis(threshold)),
        "slow_call_rate": slow_calls.map(|(_, rate)| rate),
        "max_in_flight": config.max_in_flight(),
        "adaptive_concurrency": config.adaptive_concurrency().map(|limit| format!("{limit:?}")),
        "adaptive_throttling": config
            .adaptive_throttling()
            .map(|(k, window)| serde_json::json!({"k": k, "window_ms": millis(window)})),
    })
}

/// Reload the configuration file on every SIGHUP until `finished` turns true, printing what
/// changed to stderr (stdout stays the report's). `start`: the start of the demo, for the lines'
/// times.
///
/// The handler is installed by the caller ([`hangups`]) before the demo starts, so a SIGHUP that
/// arrives early is not the default one (which ends the process).
#[cfg(unix)]
pub async fn reload_on_hangup(
    registry: std::sync::Arc<Registry>,
    path: std::path::PathBuf,
    mut hangups: tokio::signal::unix::Signal,
    start: tokio::time::Instant,
    mut finished: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            received = hangups.recv() => {
                if received.is_none() {
                    return;
                }
            }
            _ = finished.wait_for(|finished| *finished) => return,
        }
        let at = start.elapsed().as_secs_f64();
        let lines = reload(&registry, &path).unwrap_or_else(|line| vec![line]);
        for line in lines {
            eprintln!("[{at:>6.2} s] {line}");
        }
    }
}

/// Install the SIGHUP handler.
///
/// # Errors
///
/// tokio's, if the handler cannot be installed.
#[cfg(unix)]
pub fn hangups() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}
