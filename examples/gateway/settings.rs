//! The gateway's breaker settings: built in, or read from a TOML file (`--config FILE`) and
//! reloaded from it on SIGHUP.
//!
//! Shared by the example (`main.rs`) and the integration test (`tests/gateway.rs`), which calls
//! [`reload`] (what the SIGHUP handler calls) without sending any signal.

use std::path::Path;
use std::time::Duration;

use toolbreaker::{Config, Registry, RegistryConfig, registry::ConfigFileError};

/// Consecutive counted failures that trip a breaker.
pub const FAILURE_THRESHOLD: u32 = 5;
/// How long an opened breaker blocks before it lets one probe through.
pub const COOLDOWN: Duration = Duration::from_millis(500);
/// The probe's lease: how long a probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The settings the gateway runs with when no `--config` is given: one configuration for every
/// dependency. `breakers.toml`, next to this file, holds the same.
pub fn built_in() -> RegistryConfig {
    let config = Config::new(FAILURE_THRESHOLD, COOLDOWN, PROBE_TIMEOUT)
        .expect("the built-in breaker settings are valid");
    RegistryConfig::new(config)
}

/// The configuration the gateway starts with: the file's, or the built-in one.
///
/// # Errors
///
/// The file could not be read, or is not a valid configuration; the error names the dependency
/// and the field at fault.
pub fn initial(path: Option<&Path>) -> Result<RegistryConfig, ConfigFileError> {
    match path {
        Some(path) => RegistryConfig::from_file(path),
        None => Ok(built_in()),
    }
}

/// Put the file at `path` in force on `registry`, and say what happened: one line per change
/// (`reloaded PATH: search: failure_threshold 5 -> 3`), or one `reloaded PATH: no change`.
///
/// # Errors
///
/// One line saying why the file was rejected; the configuration in force is kept, and no
/// breaker was touched.
pub fn reload(registry: &Registry, path: &Path) -> Result<Vec<String>, String> {
    let path_shown = path.display();
    match registry.reload_file(path) {
        Ok(reload) if reload.changes().is_empty() => {
            Ok(vec![format!("reloaded {path_shown}: no change")])
        }
        Ok(reload) => Ok(reload
            .changes()
            .iter()
            .map(|change| format!("reloaded {path_shown}: {change}"))
            .collect()),
        Err(error) => Err(format!(
            "not reloaded {path_shown}: {error}; the configuration in force is kept"
        )),
    }
}

/// One breaker configuration in words, as the gateway's header line prints it.
pub fn describe(config: Config) -> String {
    format!(
        "threshold {}, cooldown {} ms, probe timeout {} ms",
        config.failure_threshold(),
        config.cooldown().as_millis(),
        config.probe_timeout().as_millis()
    )
}

/// One breaker configuration as a JSON object, with the TOML file's key names.
pub fn json(config: Config) -> serde_json::Value {
    serde_json::json!({
        "failure_threshold": config.failure_threshold(),
        "cooldown_ms": u64::try_from(config.cooldown().as_millis()).unwrap_or(u64::MAX),
        "probe_timeout_ms": u64::try_from(config.probe_timeout().as_millis()).unwrap_or(u64::MAX),
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
