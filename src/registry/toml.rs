//! A registry's configuration from TOML, and its live reload from a file (feature `toml`).

use core::fmt;
use core::time::Duration;
use std::path::Path;

use super::{ConfigChange, Registry, RegistryConfig};
use crate::config::{Config, DEFAULT_FAILURE_THRESHOLD, MAX_DURATION};

const FIELDS: &str = "`failure_threshold`, `cooldown_ms`, `probe_timeout_ms`";
/// The longest duration accepted, in ms (2^40).
const MAX_DURATION_MS: u64 = MAX_DURATION.as_millis() as u64;

/// A configuration file that could not be read, parsed or validated. Nothing was changed.
///
/// Names the dependency (`None` for `[default]` or the file as a whole) and the field when the
/// fault is in one; a syntax error gives the line.
#[derive(Debug)]
pub struct ConfigFileError {
    dependency: Option<String>,
    field: Option<String>,
    line: Option<usize>,
    problem: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ConfigFileError {
    fn at(dependency: Option<&str>, field: Option<&str>, problem: impl Into<String>) -> Self {
        ConfigFileError {
            dependency: dependency.map(str::to_owned),
            field: field.map(str::to_owned),
            line: None,
            problem: problem.into(),
            source: None,
        }
    }

    /// The dependency whose section is at fault; `None` for `[default]` or the whole file.
    pub fn dependency(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The field at fault (`failure_threshold`, `cooldown_ms`, `probe_timeout_ms`, or the
    /// unknown key), when the fault is in one.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The 1-based line of a syntax error.
    pub fn line(&self) -> Option<usize> {
        self.line
    }
}

impl fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid breaker configuration file")?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        match &self.dependency {
            Some(d) => write!(f, ", [dependencies.{d:?}]")?,
            None if self.field.is_some() => f.write_str(", [default]")?,
            None => {}
        }
        if let Some(field) = &self.field {
            write!(f, " `{field}`")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for ConfigFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl RegistryConfig {
    /// Read a configuration from TOML.
    ///
    /// ```toml
    /// # Every dependency without a section of its own. Keys left out: the crate's defaults
    /// # (threshold 5, cooldown 30 s, probe timeout 30 s).
    /// [default]
    /// failure_threshold = 5      # consecutive counted failures that trip the breaker
    /// cooldown_ms = 30000        # ms open before a probe
    /// probe_timeout_ms = 30000   # ms a probe may take before it counts as failed
    ///
    /// # One section per dependency; keys left out come from [default].
    /// [dependencies.search]
    /// failure_threshold = 3
    /// cooldown_ms = 2000
    ///
    /// [dependencies."api.example.com"]  # quote names with dots
    /// cooldown_ms = 10000
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ConfigFileError`] for a syntax error (with its line, and the dependency and key
    /// of that line when it can tell), an unknown table or key (a misspelt `cooldown` is
    /// refused, not ignored), a value of the wrong type, or a value [`Config::new`] refuses
    /// (zero, or longer than [`MAX_DURATION`](crate::config::MAX_DURATION)), naming the dependency
    /// and field; and for a file that sets nothing (empty, or comments only), so that an
    /// emptied file never resets every breaker. A file cut short elsewhere may still be
    /// valid TOML, which no parser can tell: to replace a file that a reload may read at any
    /// moment, write the new one beside it and rename it into place.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::RegistryConfig;
    ///
    /// let config = RegistryConfig::from_toml(
    ///     "[default]\ncooldown_ms = 5000\n[dependencies.search]\nfailure_threshold = 2\n",
    /// )?;
    /// let search = config.config_for("search");
    /// assert_eq!(search.failure_threshold(), 2);
    /// assert_eq!(search.cooldown(), Duration::from_secs(5), "inherited from [default]");
    ///
    /// let err = RegistryConfig::from_toml("[dependencies.search]\ncooldown_ms = 0\n").unwrap_err();
    /// assert_eq!((err.dependency(), err.field()), (Some("search"), Some("cooldown_ms")));
    /// # Ok::<(), toolbreaker::registry::ConfigFileError>(())
    /// ```
    pub fn from_toml(text: &str) -> Result<RegistryConfig, ConfigFileError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let (line, dependency, field) = match e.span() {
                Some(span) => {
                    let (line, dependency, field) = locate(text, span.start);
                    (Some(line), dependency, field)
                }
                None => (None, None, None),
            };
            ConfigFileError {
                dependency,
                field,
                line,
                problem: e.message().to_owned(),
                source: Some(Box::new(e.clone())),
            }
        })?;
        let mut default = Config::default();
        let mut dependencies = Vec::new();
        for (key, value) in &table {
            match key.as_str() {
                "default" => default = section(None, value, Config::default())?,
                "dependencies" => {
                    let toml::Value::Table(deps) = value else {
                        return Err(ConfigFileError::at(
                            None,
                            None,
                            "`dependencies` must be a table of tables, one per dependency",
                        ));
                    };
                    dependencies.extend(deps.iter());
                }
                other => {
                    return Err(ConfigFileError::at(
                        None,
                        None,
                        format!(
                            "unknown key or table `{other}` at the top level; expected the \
                             tables `default` and `dependencies`"
                        ),
                    ));
                }
            }
        }
        // An empty file (or one of comments only) is refused rather than read as "every
        // default": a file emptied by a redirect, or caught before its first line was
        // written, must not reset every breaker.
        if !table.contains_key("default") && !table.contains_key("dependencies") {
            return Err(ConfigFileError::at(
                None,
                None,
                "the file sets nothing: expected a [default] or a [dependencies.NAME] table \
                 (an empty [default] table asks for the crate's defaults)",
            ));
        }
        let mut config = RegistryConfig::new(default);
        for (name, value) in dependencies {
            let own = section(Some(name), value, default)?;
            config = config.dependency(name.as_str(), own);
        }
        Ok(config)
    }
}

/// Where byte `offset` of `text` lies, for an error the parser reports by position only: the
/// 1-based line, the dependency whose section holds it (by the nearest table header at or
/// above it), and the key the line sets (for `key = value` lines). Read from the text itself,
/// so best effort for unusual layouts (inline tables, multi-line values).
fn locate(text: &str, offset: usize) -> (usize, Option<String>, Option<String>) {
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
    let unquote = |s: &str| s.trim().trim_matches('"').trim_matches('\'').to_owned();
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line - 1).map_or("", |l| l.trim());
    let field = match here.split_once('=') {
        Some((key, _)) if !here.starts_with('[') => Some(unquote(key)),
        _ => None,
    };
    let dependency = lines[..line.min(lines.len())]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .and_then(|header| {
            let name = header.trim_start_matches('[');
            let name = name.split(']').next().unwrap_or("").trim();
            name.strip_prefix("dependencies.").map(unquote)
        });
    (line, dependency, field)
}

/// One section: its keys over `base`, validated.
fn section(
    dependency: Option<&str>,
    value: &toml::Value,
    base: Config,
) -> Result<Config, ConfigFileError> {
    let toml::Value::Table(table) = value else {
        // The error's `Display` names a dependency's section; `[default]` is named here.
        let section = if dependency.is_some() {
            ""
        } else {
            "`default` "
        };
        return Err(ConfigFileError::at(
            dependency,
            None,
            format!(
                "{section}must be a table of settings, found {}",
                value.type_str()
            ),
        ));
    };
    let mut threshold = base.failure_threshold();
    let mut cooldown = base.cooldown();
    let mut probe_timeout = base.probe_timeout();
    for (key, value) in table {
        let number = |max: u64, unit: &str| -> Result<u64, ConfigFileError> {
            let problem = || {
                let found = match value.as_integer() {
                    Some(n) => n.to_string(),
                    None => format!("a {}", value.type_str()),
                };
                ConfigFileError::at(
                    dependency,
                    Some(key),
                    format!("must be a whole number of {unit} from 1 to {max}, not {found}"),
                )
            };
            let n = value.as_integer().ok_or_else(problem)?;
            u64::try_from(n)
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(problem)
        };
        match key.as_str() {
            "failure_threshold" => {
                threshold = number(u64::from(u32::MAX), "failures")? as u32;
            }
            "cooldown_ms" => cooldown = Duration::from_millis(number(MAX_DURATION_MS, "ms")?),
            "probe_timeout_ms" => {
                probe_timeout = Duration::from_millis(number(MAX_DURATION_MS, "ms")?);
            }
            other => {
                // `[dependencies.api.example.com]` is a table `api` holding `example`: say so.
                let hint = if value.is_table() && dependency.is_some() {
                    "; a dependency name with dots must be quoted, as in \
                     [dependencies.\"api.example.com\"]"
                } else {
                    ""
                };
                return Err(ConfigFileError::at(
                    dependency,
                    Some(other),
                    format!("unknown key; expected {FIELDS}{hint}"),
                ));
            }
        }
    }
    Config::new(threshold, cooldown, probe_timeout).map_err(|e| {
        let field = match e.field() {
            "cooldown" => "cooldown_ms",
            "probe_timeout" => "probe_timeout_ms",
            other => other,
        };
        let problem = e.to_string();
        let problem = problem
            .strip_prefix("invalid breaker configuration: ")
            .unwrap_or(&problem)
            .replace(&format!("`{}`", e.field()), "it");
        ConfigFileError {
            source: Some(Box::new(e)),
            ..ConfigFileError::at(dependency, Some(field), problem)
        }
    })
}

// The crate default is what an empty `[default]` means; keep the docs' figure honest.
const _: () = assert!(DEFAULT_FAILURE_THRESHOLD == 5);

impl Registry {
    /// Parse `text` as TOML ([`RegistryConfig::from_toml`]) and put it in force
    /// ([`reload`](Self::reload)), returning what changed.
    ///
    /// # Errors
    ///
    /// A [`ConfigFileError`] naming the dependency and field; the configuration in force
    /// stays in force and no breaker is touched.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::Registry;
    ///
    /// let registry = Registry::default();
    /// let search = registry.get("search");
    /// let changes = registry.reload_toml("[dependencies.search]\nfailure_threshold = 2\n")?;
    /// assert_eq!(changes[0].to_string(), "search: failure_threshold 5 -> 2");
    ///
    /// let err = registry.reload_toml("[dependencies.search]\nfailure_threshold = -1\n").unwrap_err();
    /// assert_eq!(err.field(), Some("failure_threshold"));
    /// assert_eq!(search.config().failure_threshold(), 2, "the configuration in force stays");
    /// # Ok::<(), toolbreaker::registry::ConfigFileError>(())
    /// ```
    pub fn reload_toml(&self, text: &str) -> Result<Vec<ConfigChange>, ConfigFileError> {
        let config = RegistryConfig::from_toml(text)?;
        Ok(self.reload(config))
    }

    /// Read the TOML file at `path` and put it in force, as [`reload_toml`](Self::reload_toml).
    ///
    /// # Errors
    ///
    /// As [`reload_toml`](Self::reload_toml), or the file could not be read.
    pub fn reload_file(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<Vec<ConfigChange>, ConfigFileError> {
        self.reload_toml(&read(path.as_ref())?)
    }
}

impl RegistryConfig {
    /// Read the TOML file at `path`, as [`from_toml`](Self::from_toml).
    ///
    /// # Errors
    ///
    /// As [`from_toml`](Self::from_toml), or the file could not be read.
    pub fn from_file(path: impl AsRef<Path>) -> Result<RegistryConfig, ConfigFileError> {
        RegistryConfig::from_toml(&read(path.as_ref())?)
    }
}

fn read(path: &Path) -> Result<String, ConfigFileError> {
    std::fs::read_to_string(path).map_err(|e| ConfigFileError {
        problem: format!("cannot read {}: {e}", path.display()),
        source: Some(Box::new(e)),
        ..ConfigFileError::at(None, None, "")
    })
}
