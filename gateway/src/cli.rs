//! The command line: [`Args`], clap's derive, and the checks clap cannot make itself
//! ([`Args::validate`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{ArgGroup, CommandFactory, Parser, ValueEnum};
use tracing_subscriber::EnvFilter;

use crate::config::{Format, Secret};
use crate::serve::ListenAddr;

/// The gateway's command line.
///
/// `Args::parse()` exits with clap's usage error (code 2) for a malformed command line; then
/// [`validate`](Self::validate) makes the checks that need more than one flag or the
/// environment (the same exit code, through `clap::Error::exit`).
///
/// # Examples
///
/// ```
/// use clap::Parser;
/// use toolbreaker_gateway::cli::Args;
///
/// let args = Args::try_parse_from(["toolbreaker-gateway", "--config", "gateway.toml"])?;
/// assert_eq!(args.listen.to_string(), "127.0.0.1:8080");
/// assert_eq!(args.max_request_bytes, 4 * 1024 * 1024);
/// assert!(args.validate().is_ok(), "loopback needs no token");
///
/// let public = Args::try_parse_from(["toolbreaker-gateway", "--config", "g.toml", "--listen", "0.0.0.0:8080"])?;
/// let err = public.validate().unwrap_err();
/// assert_eq!(err.exit_code(), 2);
/// assert!(err.to_string().contains("--auth-token-env"));
///
/// let named = Args::try_parse_from(["toolbreaker-gateway", "--config", "g.toml", "--listen", "localhost:8080"])?;
/// assert!(named.validate().is_ok(), "a host name is resolved: loopback");
/// # Ok::<(), clap::Error>(())
/// ```
#[derive(Parser, Clone, Debug, PartialEq, Eq)]
#[command(
    name = "toolbreaker-gateway",
    version,
    about = "An MCP gateway with a circuit breaker per upstream server",
    long_about = "An MCP gateway: one Streamable HTTP (or stdio) MCP server in front of upstream \
MCP servers, each behind its own circuit breaker. While an upstream is open, its calls are \
answered at once with what the model needs to know (which upstream, why, when to retry), and \
the other upstreams' tools stay listed and callable.\n\n\
Upstreams come from a TOML file (--config; see the commented gateway.toml beside the package) \
or from the mcpServers JSON of Claude Desktop, Claude Code or Cursor (--mcp-config). \
SIGHUP reloads the file: upstreams are added, removed or changed while clients stay connected, \
and breakers keep their state.\n\n\
Endpoints: /mcp (Streamable HTTP: MCP 2026-07-28 stateless and 2025-11-25 with sessions), \
/metrics (Prometheus), /healthz (liveness), /readyz (readiness: the upstreams marked `required` \
connected, or one at least when none is), /status, /admin/breakers/BREAKER/ACTION (POST: isolate, \
close or reset a breaker by hand).",
    after_help = "Examples:\n  \
toolbreaker-gateway --config gateway.toml\n  \
toolbreaker-gateway --mcp-config ~/.cursor/mcp.json --stdio\n  \
GATEWAY_TOKEN=... toolbreaker-gateway --config gateway.toml --listen 0.0.0.0:8080 \
--auth-token-env GATEWAY_TOKEN --tls-cert cert.pem --tls-key key.pem \
--allowed-host gateway.internal:8080"
)]
#[command(group(ArgGroup::new("source").required(true).args(["config", "mcp_config"])))]
pub struct Args {
    /// The gateway's TOML file: upstreams, their tools, breaker settings.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// An mcpServers JSON file (Claude Desktop's claude_desktop_config.json, Claude Code's
    /// .mcp.json, Cursor's mcp.json), read as it is; breakers on the defaults.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,

    /// Check the configuration and exit: parse and validate the file, print the resolved
    /// configuration as JSON on stdout (every secret `<redacted>`), then connect to each
    /// upstream and warn on stderr of `allow`, `deny` and tool sections naming no tool it lists.
    /// Exit code 0 when the file is valid (an upstream that cannot be reached is a warning),
    /// 1 with the error otherwise.
    #[arg(long)]
    pub check: bool,

    /// The address to serve HTTP on: IP:PORT (IPv6 in brackets) or HOST:PORT, such as
    /// localhost:8080 (a name is resolved at start). An address that is not loopback requires
    /// --auth-token-env, and --tls-cert with --tls-key unless --insecure-http is given.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: ListenAddr,

    /// Serve HTTPS: the PEM file of the server's certificate chain (its certificate first,
    /// then intermediates). Requires --tls-key.
    #[arg(
        long,
        value_name = "PATH",
        requires = "tls_key",
        conflicts_with = "stdio"
    )]
    pub tls_cert: Option<PathBuf>,

    /// The PEM file of the private key of --tls-cert's certificate (PKCS#8, PKCS#1 or SEC1).
    /// Requires --tls-cert.
    #[arg(
        long,
        value_name = "PATH",
        requires = "tls_cert",
        conflicts_with = "stdio"
    )]
    pub tls_key: Option<PathBuf>,

    /// Serve plain HTTP on an address that is not loopback (TLS ended in front of the gateway,
    /// or a network you trust): the bearer token then travels in clear text.
    #[arg(long, conflicts_with_all = ["tls_cert", "stdio"])]
    pub insecure_http: bool,

    /// Serve one MCP client on stdin and stdout instead of HTTP (so that Claude Desktop can
    /// start the gateway as its one MCP server). Logs go to stderr.
    #[arg(long, conflicts_with = "listen")]
    pub stdio: bool,

    /// Fleet mode: share breaker transitions with every gateway replica through this Redis
    /// (redis://, rediss://, redis+unix:// or unix:// URL).
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,

    /// What to log, in tracing's env-filter syntax (such as `info` or
    /// `info,toolbreaker=debug`).
    #[arg(long, value_name = "FILTER", default_value = "info")]
    pub log: String,

    /// How each log line is written.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// The environment variable holding the bearer token every HTTP request must carry
    /// (`Authorization: Bearer TOKEN`, compared in constant time). It must be set and
    /// non-empty. Required with a --listen address that is not loopback.
    #[arg(long, value_name = "VAR")]
    pub auth_token_env: Option<String>,

    /// The largest request body accepted, in bytes; a larger one is refused with 413.
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_request_bytes: u64,

    /// On shutdown, how long calls in flight may finish before they are cut, in ms.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub drain_timeout_ms: u64,

    /// How long a 2026-07-28 client's tool call waits upstream for the client's retry when a
    /// 2025-11-25 upstream asked it for input (sampling, elicitation, roots), in ms; past it
    /// the call is cancelled upstream and counts nothing.
    #[arg(long, value_name = "MS", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub input_wait_ms: u64,

    /// The most MCP sessions open at once (2025-11-25 sessions and 2026-07-28
    /// subscriptions/listen streams); one more is refused with 503 and Retry-After.
    #[arg(long, value_name = "N", default_value_t = 1_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,

    /// The most MCP sessions one client address holds at once; one more is refused with 429
    /// and Retry-After. Behind a proxy, set it to --max-sessions.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions_per_client: u64,

    /// A 2025-11-25 session with no message either way for this long ends, freeing its
    /// place, in ms.
    #[arg(long, value_name = "MS", default_value_t = 300_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_ms: u64,

    /// A Host header value accepted besides the loopback ones (the MCP specification's
    /// DNS-rebinding check), such as `gateway.internal:8080`. Repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// An Origin accepted from browsers besides the loopback ones, such as
    /// `https://app.example.com`. Repeatable.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
}

/// How log lines are written (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable text.
    Text,
    /// One JSON object per line.
    Json,
}

impl Args {
    /// The checks clap cannot make: `--listen` must resolve; an address that is not loopback
    /// needs `--auth-token-env`, and `--tls-cert` with `--tls-key` unless `--insecure-http`
    /// is given; the variable `--auth-token-env` names must be set and non-empty;
    /// `--log` must parse as an env-filter; `--redis` must be a Redis URL. Environment
    /// variables are read from the process.
    ///
    /// # Errors
    ///
    /// A usage error (exit code 2 by `clap::Error::exit`, which prints it with the usage line)
    /// naming the flag.
    pub fn validate(&self) -> Result<(), clap::Error> {
        self.validate_with(&|name| std::env::var(name).ok())
    }

    /// As [`validate`](Self::validate), reading environment variables with `env`.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate).
    pub fn validate_with(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), clap::Error> {
        let token = self.auth_token_with(env)?;
        if !self.stdio {
            let resolved = self.listen.resolve().map_err(|e| {
                usage(
                    ErrorKind::ValueValidation,
                    format!(
                        "--listen {}: cannot resolve `{}`: {e}",
                        self.listen,
                        self.listen.host()
                    ),
                )
            })?;
            let loopback = resolved.iter().all(|addr| addr.ip().is_loopback());
            // Everything missing is named at once, not one flag per try.
            let mut missing = Vec::new();
            if !loopback && token.is_none() {
                missing.push("--auth-token-env VAR, a bearer token every request must carry");
            }
            if !loopback && self.tls_cert.is_none() && !self.insecure_http {
                missing.push(
                    "TLS, --tls-cert PATH and --tls-key PATH (so that the bearer token is not \
                     sent in clear text), or --insecure-http to serve plain HTTP all the same",
                );
            }
            if !missing.is_empty() {
                return Err(usage(
                    ErrorKind::MissingRequiredArgument,
                    format!(
                        "--listen {} is not a loopback address: it requires {}",
                        self.listen,
                        missing.join("; and ")
                    ),
                ));
            }
        }
        if let Err(e) = EnvFilter::try_new(&self.log) {
            return Err(usage(
                ErrorKind::ValueValidation,
                format!("--log {:?} is not a valid filter: {e}", self.log),
            ));
        }
        if let Some(redis) = &self.redis {
            let scheme = url::Url::parse(redis).map(|u| u.scheme().to_owned());
            if !matches!(
                scheme.as_deref(),
                Ok("redis" | "rediss" | "redis+unix" | "unix")
            ) {
                return Err(usage(
                    ErrorKind::ValueValidation,
                    "--redis must be a redis://, rediss://, redis+unix:// or unix:// URL".into(),
                ));
            }
        }
        Ok(())
    }

    /// The bearer token clients must send: the value of the variable `--auth-token-env` names,
    /// read from the process environment; `None` without the flag.
    ///
    /// # Errors
    ///
    /// A usage error naming `--auth-token-env` and the variable when it is unset or empty.
    pub fn auth_token(&self) -> Result<Option<Secret>, clap::Error> {
        self.auth_token_with(&|name| std::env::var(name).ok())
    }

    /// As [`auth_token`](Self::auth_token), reading the variable with `env`.
    ///
    /// # Errors
    ///
    /// As [`auth_token`](Self::auth_token).
    pub fn auth_token_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Secret>, clap::Error> {
        let Some(var) = &self.auth_token_env else {
            return Ok(None);
        };
        match env(var) {
            Some(token) if !token.is_empty() => Ok(Some(Secret::new(token))),
            Some(_) => Err(usage(
                ErrorKind::ValueValidation,
                format!("--auth-token-env {var}: the environment variable {var} is empty"),
            )),
            None => Err(usage(
                ErrorKind::ValueValidation,
                format!("--auth-token-env {var}: the environment variable {var} is not set"),
            )),
        }
    }

    /// The configuration file and its form: `--config` (TOML) or `--mcp-config` (JSON).
    ///
    /// # Panics
    ///
    /// When neither is set, which clap refuses for `Args` it parsed.
    pub fn config_source(&self) -> (PathBuf, Format) {
        match (&self.config, &self.mcp_config) {
            (Some(path), _) => (path.clone(), Format::Toml),
            (None, Some(path)) => (path.clone(), Format::McpServersJson),
            // clap's group requires exactly one of the two.
            (None, None) => unreachable!("clap requires --config or --mcp-config"),
        }
    }

    /// `--drain-timeout-ms` as a duration.
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }

    /// `--input-wait-ms` as a duration.
    pub fn input_wait(&self) -> Duration {
        Duration::from_millis(self.input_wait_ms)
    }
}

/// A usage error in clap's words and format (exit code 2).
fn usage(kind: ErrorKind, message: String) -> clap::Error {
    Args::command().error(kind, message)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Args, LogFormat};
    use crate::config::Format;

    fn args(extra: &[&str]) -> Result<Args, clap::Error> {
        let mut argv = vec!["toolbreaker-gateway"];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv)
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "GW_TOKEN" => Some("s3cr3t".to_owned()),
            "GW_EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn defaults() {
        let a = args(&["--config", "gateway.toml"]).unwrap();
        assert_eq!(a.listen.to_string(), "127.0.0.1:8080");
        assert_eq!((a.log.as_str(), a.log_format), ("info", LogFormat::Text));
        assert_eq!((a.max_request_bytes, a.drain_timeout_ms), (4 << 20, 10_000));
        assert!(!a.stdio && a.redis.is_none() && a.auth_token_env.is_none());
        assert!(a.allowed_hosts.is_empty() && a.allowed_origins.is_empty());
        assert_eq!(a.config_source(), ("gateway.toml".into(), Format::Toml));
        assert_eq!(a.validate_with(&env).map_err(|e| e.to_string()), Ok(()));
        assert_eq!(a.auth_token_with(&env).unwrap(), None);
    }

    #[test]
    fn exactly_one_config_source() {
        let err = args(&[]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string()
                .contains("--config <FILE>|--mcp-config <FILE>"),
            "{err}"
        );
        let err = args(&["--config", "a.toml", "--mcp-config", "b.json"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("cannot be used with"), "{err}");
        let a = args(&["--mcp-config", "mcp.json"]).unwrap();
        assert_eq!(
            a.config_source(),
            ("mcp.json".into(), Format::McpServersJson)
        );
    }

    #[test]
    fn a_public_listen_address_requires_a_token() {
        let public = args(&["--config", "g.toml", "--listen", "0.0.0.0:8080"]).unwrap();
        let err = public.validate_with(&env).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let shown = err.to_string();
        assert!(
            shown.contains(
                "--listen 0.0.0.0:8080 is not a loopback address: it requires --auth-token-env VAR"
            ),
            "{shown}"
        );
        // TLS is named in the same message: a user learns everything missing at once.
        assert!(
            shown.contains("--tls-cert PATH and --tls-key PATH")
                && shown.contains("--insecure-http"),
            "{shown}"
        );
        let unset = args(&[
            "--config",
            "g",
            "--listen",
            "10.0.0.1:80",
            "--auth-token-env",
            "GW_NONE",
        ])
        .unwrap();
        let err = unset.validate_with(&env).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string()
                .contains("--auth-token-env GW_NONE: the environment variable GW_NONE is not set"),
            "{err}"
        );
        let empty = args(&[
            "--config",
            "g",
            "--listen",
            "10.0.0.1:80",
            "--auth-token-env",
            "GW_EMPTY",
        ])
        .unwrap();
        assert!(
            empty
                .validate_with(&env)
                .unwrap_err()
                .to_string()
                .contains("GW_EMPTY is empty")
        );
        let set = args(&[
            "--config",
            "g",
            "--listen",
            "[::]:80",
            "--auth-token-env",
            "GW_TOKEN",
            "--insecure-http",
        ])
        .unwrap();
        assert!(set.validate_with(&env).is_ok());
        assert_eq!(
            set.auth_token_with(&env).unwrap().unwrap().expose(),
            "s3cr3t"
        );
        // Loopback in both families needs none; a token named on loopback must still be set.
        for listen in ["127.0.0.1:9000", "[::1]:9000"] {
            assert!(
                args(&["--config", "g", "--listen", listen])
                    .unwrap()
                    .validate_with(&env)
                    .is_ok()
            );
        }
        let loopback_unset = args(&["--config", "g", "--auth-token-env", "GW_NONE"]).unwrap();
        assert!(loopback_unset.validate_with(&env).is_err());
        let named = args(&["--config", "g", "--listen", "localhost:80"]).unwrap();
        assert_eq!(named.listen.host(), "localhost");
        assert_eq!(named.validate_with(&env).map_err(|e| e.to_string()), Ok(()));
        let err = args(&["--config", "g", "--listen", "localhost"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("expected HOST:PORT"), "{err}");
        let unresolved = args(&["--config", "g", "--listen", "no-such-host.invalid:80"]).unwrap();
        let err = unresolved.validate_with(&env).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.to_string().contains(
                "--listen no-such-host.invalid:80: cannot resolve `no-such-host.invalid`"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_public_listen_address_requires_tls_unless_insecure_http() {
        let public = [
            "--config",
            "g",
            "--listen",
            "0.0.0.0:8443",
            "--auth-token-env",
            "GW_TOKEN",
        ];
        let err = args(&public).unwrap().validate_with(&env).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let shown = err.to_string();
        for words in [
            "--listen 0.0.0.0:8443",
            "--tls-cert",
            "--tls-key",
            "--insecure-http",
        ] {
            assert!(shown.contains(words), "{words}: {shown}");
        }
        let with = |extra: &[&str]| {
            let mut all = public.to_vec();
            all.extend_from_slice(extra);
            args(&all)
        };
        let tls = with(&["--tls-cert", "c.pem", "--tls-key", "k.pem"]).unwrap();
        assert_eq!(tls.validate_with(&env).map_err(|e| e.to_string()), Ok(()));
        let insecure = with(&["--insecure-http"]).unwrap();
        assert!(insecure.validate_with(&env).is_ok());
        // One without the other, or TLS and --insecure-http together, is a usage error.
        for extra in [
            &["--tls-cert", "c.pem"][..],
            &["--tls-key", "k.pem"],
            &[
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "--insecure-http",
            ],
            &["--stdio", "--tls-cert", "c.pem", "--tls-key", "k.pem"],
        ] {
            let err = with(extra).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{extra:?}");
        }
        // Loopback needs neither.
        let local = args(&["--config", "g", "--tls-cert", "c.pem", "--tls-key", "k.pem"]).unwrap();
        assert!(local.validate_with(&env).is_ok());
    }

    #[test]
    fn other_flags_are_checked() {
        let a = args(&[
            "--config",
            "g",
            "--stdio",
            "--log-format",
            "json",
            "--allowed-host",
            "a:1",
            "--allowed-host",
            "b",
            "--allowed-origin",
            "https://x",
            "--drain-timeout-ms",
            "0",
            "--max-request-bytes",
            "1024",
        ])
        .unwrap();
        assert!(a.stdio && a.log_format == LogFormat::Json);
        assert_eq!((a.allowed_hosts.len(), a.allowed_origins.len()), (2, 1));
        assert_eq!(
            (a.drain_timeout().as_millis(), a.max_request_bytes),
            (0, 1024)
        );
        assert_eq!(
            args(&["--config", "g", "--stdio", "--listen", "127.0.0.1:1"])
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(
            args(&["--config", "g", "--max-request-bytes", "0"])
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(
            args(&["--config", "g", "--log-format", "xml"])
                .unwrap_err()
                .exit_code(),
            2
        );
        let bad_log = args(&["--config", "g", "--log", "info,[=="]).unwrap();
        let err = bad_log.validate_with(&env).unwrap_err();
        assert!(
            err.to_string()
                .contains("--log \"info,[==\" is not a valid filter"),
            "{err}"
        );
        let redis = args(&["--config", "g", "--redis", "http://h:6379"]).unwrap();
        assert!(
            redis
                .validate_with(&env)
                .unwrap_err()
                .to_string()
                .contains("--redis must be a redis://")
        );
        let redis = args(&["--config", "g", "--redis", "redis://127.0.0.1:6379/0"]).unwrap();
        assert!(redis.validate_with(&env).is_ok());
    }

    #[test]
    fn help_names_every_flag() {
        Args::command().debug_assert();
        let help = Args::command().render_long_help().to_string();
        for flag in [
            "--config",
            "--mcp-config",
            "--listen",
            "--stdio",
            "--redis",
            "--log ",
            "--log-format",
            "--auth-token-env",
            "--max-request-bytes",
            "--drain-timeout-ms",
            "--allowed-host",
            "--allowed-origin",
            "--tls-cert",
            "--tls-key",
            "--insecure-http",
            "/readyz",
            "--max-sessions",
            "--max-sessions-per-client",
            "--session-idle-ms",
            "[default: 300000]",
            "--check",
            "--help",
            "--version",
            "[default: 127.0.0.1:8080]",
            "[default: 4194304]",
            "SIGHUP",
        ] {
            assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
        }
    }
}
