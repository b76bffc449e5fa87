//! A registry's configuration from TOML, and its live reload from a file (feature `toml`).

use core::fmt;
use core::time::Duration;
use std::path::Path;

use toml::de::{DeInteger, DeTable, DeValue};

use super::{Registry, RegistryConfig, Reload};
use crate::config::{Config, DEFAULT_FAILURE_THRESHOLD, MAX_DURATION_MS, MAX_PROBES, Window};

const FIELDS: &str = "`failure_threshold`, `cooldown_ms`, `probe_timeout_ms`, `failure_rate`, \
                      `slow_call_threshold_ms`, `slow_call_rate`, `window_calls`, `window_ms`, \
                      `minimum_calls`, `cooldown_multiplier`, `max_cooldown_ms`, \
                      `cooldown_jitter`, `probes`";

/// A configuration file that could not be read, parsed or validated. Nothing was changed.
///
/// Names the dependency (`None` for `[default]` or the file as a whole) and the field when the
/// fault is in one; a syntax error gives the line.
///
/// Its `Display` is the whole story on one line, the parser's or the file system's words
/// included, so it is not repeated by [`source`](std::error::Error::source) (which goes on with
/// the cause of an I/O error, if it has one); a file that could not be read keeps its
/// [`io_error`](Self::io_error).
#[derive(Debug)]
pub struct ConfigFileError {
    dependency: Option<String>,
    field: Option<String>,
    line: Option<usize>,
    problem: String,
    io: Option<std::io::Error>,
}

impl ConfigFileError {
    fn at(dependency: Option<&str>, field: Option<&str>, problem: impl Into<String>) -> Self {
        ConfigFileError {
            dependency: dependency.map(str::to_owned),
            field: field.map(str::to_owned),
            line: None,
            problem: problem.into(),
            io: None,
        }
    }

    /// The dependency whose section is at fault; `None` for `[default]` or the whole file.
    pub fn dependency(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The field at fault, by its key in the file (`failure_threshold`, `cooldown_ms`,
    /// `slow_call_rate`, ...: never the builder's name for the setting), or the unknown key,
    /// when the fault is in one. The `Display` names settings by their keys too.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The 1-based line of a syntax error.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The error reading the file, when that is what failed (`reload_file`, `from_file`): for
    /// its [`kind`](std::io::Error::kind), say to tell a missing file from an unreadable one.
    /// Its text is already in this error's `Display`.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.io.as_ref()
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
    /// The cause of the I/O error that stopped the file being read, if it has one. The parser's
    /// error, the refused setting and the I/O error itself are in this error's `Display`, so
    /// they are not returned here: each text appears once along the chain.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref()?.source()
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
    /// refused, not ignored), a value of the wrong type, a number out of range (negative, or
    /// too large, whatever its size: the error gives the largest accepted), or a value
    /// [`Config::new`] refuses (zero), naming the dependency and field; and for a file that sets
    /// nothing (empty, or comments only), so that an emptied file never resets every breaker.
    /// A file cut short elsewhere may still be valid TOML, which no parser can tell: to replace
    /// a file that a reload may read at any moment, write the new one beside it and rename it
    /// into place.
    ///
    /// A section for a dependency is accepted whatever its name, since nothing has asked for
    /// any dependency yet; check the names against the ones the program uses with
    /// [`unknown_dependencies`](Self::unknown_dependencies), so that a misspelt section is
    /// refused rather than kept for a dependency nothing asks for.
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
    /// assert_eq!(search.failure_threshold(), Some(2));
    /// assert_eq!(search.cooldown(), Duration::from_secs(5), "inherited from [default]");
    ///
    /// let err = RegistryConfig::from_toml("[dependencies.search]\ncooldown_ms = 0\n").unwrap_err();
    /// assert_eq!((err.dependency(), err.field()), (Some("search"), Some("cooldown_ms")));
    /// # Ok::<(), toolbreaker::registry::ConfigFileError>(())
    /// ```
    pub fn from_toml(text: &str) -> Result<RegistryConfig, ConfigFileError> {
        // The parser's own document, not `toml::Table`: its integers are the digits as written,
        // so a number of any size is judged here (too large, at most ...) rather than refused by
        // the conversion to `i64`.
        let document = DeTable::parse(text).map_err(|e| {
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
                io: None,
            }
        })?;
        let mut default = None;
        let mut dependencies = None;
        for (key, value) in document.get_ref() {
            match key.get_ref().as_ref() {
                "default" => {
                    default = Some(section(None, value.get_ref(), (Config::default(), false))?);
                }
                "dependencies" => {
                    let DeValue::Table(deps) = value.get_ref() else {
                        return Err(ConfigFileError::at(
                            None,
                            None,
                            "`dependencies` must be a table of tables, one per dependency",
                        ));
                    };
                    dependencies = Some(deps);
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
        if default.is_none() && dependencies.is_none() {
            return Err(ConfigFileError::at(
                None,
                None,
                "the file sets nothing: expected a [default] or a [dependencies.NAME] table \
                 (an empty [default] table asks for the crate's defaults)",
            ));
        }
        let default = default.unwrap_or((Config::default(), false));
        let mut config = RegistryConfig::new(default.0);
        for (name, value) in dependencies.into_iter().flatten() {
            let name: &str = name.get_ref();
            let (own, _) = section(Some(name), value.get_ref(), default)?;
            config = config.dependency(name, own);
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

/// One section: its keys over `base`, validated; with whether `failure_threshold` was set here or
/// in `base` (so a rate rule set in a dependency's section keeps the consecutive rule only if
/// some section asked for it, as the builder does).
fn section(
    dependency: Option<&str>,
    value: &DeValue<'_>,
    (base, base_threshold_set): (Config, bool),
) -> Result<(Config, bool), ConfigFileError> {
    let DeValue::Table(table) = value else {
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
    let mut threshold = base.failure_threshold().filter(|_| base_threshold_set);
    let mut cooldown = base.cooldown();
    let mut probe_timeout = base.probe_timeout();
    let mut rates = base.rate_settings();
    let mut slow_threshold = rates.slow_calls.map(|(threshold, _)| threshold);
    let mut slow_rate = rates.slow_calls.map(|(_, rate)| rate);
    let mut window_key = None;
    let mut probes = base.probes();
    let mut shape = base.shape_settings();
    let mut multiplier = shape.backoff.map(|(m, _)| m);
    let mut max_cooldown = shape.backoff.map(|(_, max)| max);
    for (key, value) in table {
        let key: &str = key.get_ref();
        let value = value.get_ref();
        let number = |max: u64, unit: &str| {
            whole_number(value, max, unit)
                .map_err(|problem| ConfigFileError::at(dependency, Some(key), problem))
        };
        match key {
            "failure_threshold" => {
                threshold = Some(number(u64::from(u32::MAX), "failures")? as u32);
            }
            "failure_rate" => rates.failure_rate = Some(ratio(value, dependency, key)?),
            "slow_call_rate" => slow_rate = Some(ratio(value, dependency, key)?),
            "slow_call_threshold_ms" => {
                slow_threshold = Some(Duration::from_millis(number(MAX_DURATION_MS, "ms")?));
            }
            "window_calls" | "window_ms" => {
                let this = if key == "window_calls" {
                    "window_calls"
                } else {
                    "window_ms"
                };
                if let Some(other) = window_key.replace(this) {
                    return Err(ConfigFileError::at(
                        dependency,
                        Some(key),
                        format!("a section sets one window: `{other}` or `{key}`, not both"),
                    ));
                }
                rates.window = Some(if key == "window_calls" {
                    Window::Calls(number(u64::from(u32::MAX), "calls")? as u32)
                } else {
                    Window::Time(Duration::from_millis(number(MAX_DURATION_MS, "ms")?))
                });
            }
            "cooldown_multiplier" => multiplier = Some(ratio(value, dependency, key)?),
            "max_cooldown_ms" => {
                max_cooldown = Some(Duration::from_millis(number(MAX_DURATION_MS, "ms")?));
            }
            "cooldown_jitter" => shape.jitter = Some(ratio(value, dependency, key)?),
            "probes" => probes = number(u64::from(MAX_PROBES), "probes")? as u32,
            "minimum_calls" => {
                rates.minimum_calls = Some(number(u64::from(u32::MAX), "calls")? as u32);
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
    rates.slow_calls = both(
        dependency,
        "the slow-call rule",
        ("slow_call_threshold_ms", slow_threshold),
        ("slow_call_rate", slow_rate),
    )?;
    shape.backoff = both(
        dependency,
        "the cooldown's backoff",
        ("cooldown_multiplier", multiplier),
        ("max_cooldown_ms", max_cooldown),
    )?;
    let threshold_set = threshold.is_some();
    let config = Config::with_rules(threshold, cooldown, probe_timeout, &rates, &shape, probes);
    config.map(|config| (config, threshold_set)).map_err(|e| {
        // The `ConfigError`'s words with the file's keys for every setting they name; not
        // kept as a source, whose text would name the builder's.
        let key = |field| toml_key(field, window_key);
        ConfigFileError::at(dependency, Some(key(e.field())), e.explain("it", &key))
    })
}

/// The file's key for a setting a [`ConfigError`](crate::ConfigError) names (the builder's
/// name): `cooldown` is `cooldown_ms`, a window is the section's `window_calls` or `window_ms`
/// (`window_calls` if it set neither), the slow-call rule is `slow_call_rate`.
fn toml_key(field: &'static str, window_key: Option<&'static str>) -> &'static str {
    match field {
        "cooldown" => "cooldown_ms",
        "probe_timeout" => "probe_timeout_ms",
        "slow_call_threshold" => "slow_call_threshold_ms",
        "slow_calls" => "slow_call_rate",
        "max_cooldown" => "max_cooldown_ms",
        "window" => window_key.unwrap_or("window_calls"),
        other => other,
    }
}

/// The two keys of one setting (`rule`), given together or not at all; else an error naming the
/// key given and the one missing.
fn both<A, B>(
    dependency: Option<&str>,
    rule: &str,
    (a_key, a): (&'static str, Option<A>),
    (b_key, b): (&'static str, Option<B>),
) -> Result<Option<(A, B)>, ConfigFileError> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(Some((a, b))),
        (None, None) => Ok(None),
        (a, _) => {
            let (set, missing) = if a.is_some() {
                (a_key, b_key)
            } else {
                (b_key, a_key)
            };
            Err(ConfigFileError::at(
                dependency,
                Some(set),
                format!("{rule} needs `{missing}` as well"),
            ))
        }
    }
}

/// `value` as a number (a ratio, a multiplier, a fraction), or what is wrong with it (one out of
/// range is `Config`'s to refuse).
fn ratio(value: &DeValue<'_>, dependency: Option<&str>, key: &str) -> Result<f64, ConfigFileError> {
    let number = match value {
        DeValue::Float(float) => float.as_str().replace('_', "").parse::<f64>().ok(),
        // Any integer, however large, is a number: one out of range is refused for its value.
        DeValue::Integer(integer) => integer_value(integer).ok().map(|n| n as f64).or_else(|| {
            (integer.radix() == 10)
                .then(|| integer.as_str().replace('_', "").parse::<f64>().ok())
                .flatten()
        }),
        _ => None,
    };
    number.ok_or_else(|| {
        ConfigFileError::at(
            dependency,
            Some(key),
            format!("must be a number (such as 0.5), not a {}", value.type_str()),
        )
    })
}

/// `value` as a whole number up to `max`, or what is wrong with it. Zero passes, for
/// [`Config::new`] to refuse in its own words. The integer is judged from its digits, so one of
/// any size is too large (or, negative, too small), never a parse failure.
fn whole_number(value: &DeValue<'_>, max: u64, unit: &str) -> Result<u64, String> {
    let range = format!("must be a whole number of {unit} from 1 to {max}");
    let DeValue::Integer(integer) = value else {
        return Err(format!("{range}, not a {}", value.type_str()));
    };
    match integer_value(integer) {
        Ok(n) if n < 0 => Err(format!("{range}, not {integer}")),
        Ok(n) if n <= i128::from(max) => Ok(n as u64),
        Err(Sign::Negative) => Err(format!("{range}, not {integer}")),
        Ok(_) | Err(Sign::Positive) => {
            let about = if unit == "ms" {
                " (about 35 years)"
            } else {
                ""
            };
            Err(format!(
                "too large: at most {max} {unit}{about}, not {integer}"
            ))
        }
    }
}

/// The sign of an integer too large for an `i128`.
enum Sign {
    Negative,
    Positive,
}

fn integer_value(integer: &DeInteger<'_>) -> Result<i128, Sign> {
    i128::from_str_radix(integer.as_str(), integer.radix()).map_err(|_| {
        if integer.as_str().starts_with('-') {
            Sign::Negative
        } else {
            Sign::Positive
        }
    })
}

// The crate default is what an empty `[default]` means; keep the docs' figure honest.
const _: () = assert!(DEFAULT_FAILURE_THRESHOLD == 5);

impl Registry {
    /// Parse `text` as TOML ([`RegistryConfig::from_toml`]) and put it in force
    /// ([`reload`](Self::reload)), returning what changed and the sections no breaker uses.
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
    /// let reload = registry.reload_toml("[dependencies.search]\nfailure_threshold = 2\n")?;
    /// assert_eq!(reload.changes()[0].to_string(), "search: failure_threshold 5 -> 2");
    ///
    /// let err = registry.reload_toml("[dependencies.search]\nfailure_threshold = -1\n").unwrap_err();
    /// assert_eq!(err.field(), Some("failure_threshold"));
    /// assert_eq!(search.config().failure_threshold(), Some(2), "the configuration in force stays");
    ///
    /// // A section for a dependency nothing has asked for: most often a misspelt name.
    /// let reload = registry.reload_toml("[dependencies.serch]\nfailure_threshold = 2\n")?;
    /// assert_eq!(reload.unmatched(), ["serch"]);
    /// assert_eq!(reload.changes()[0].to_string(), "search: failure_threshold 2 -> 5");
    /// # Ok::<(), toolbreaker::registry::ConfigFileError>(())
    /// ```
    pub fn reload_toml(&self, text: &str) -> Result<Reload, ConfigFileError> {
        let config = RegistryConfig::from_toml(text)?;
        Ok(self.reload(config))
    }

    /// Read the TOML file at `path` and put it in force, as [`reload_toml`](Self::reload_toml).
    ///
    /// # Errors
    ///
    /// As [`reload_toml`](Self::reload_toml), or the file could not be read.
    pub fn reload_file(&self, path: impl AsRef<Path>) -> Result<Reload, ConfigFileError> {
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
        io: Some(e),
        ..ConfigFileError::at(None, None, "")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every backticked name in `text`.
    fn names(text: &str) -> Vec<&str> {
        text.split('`').skip(1).step_by(2).collect()
    }

    /// Every error from the TOML path names the file's key, never the builder's name for the
    /// setting (`slow_calls`, `cooldown`, `window`): each key of the file is refused at least once
    /// here, by the parser's checks or by `Config`'s, and every name any of the errors mentions
    /// is one of the keys.
    #[test]
    fn every_error_from_a_file_names_its_keys_not_the_builders() {
        let keys: Vec<&str> = names(FIELDS);
        let cases: &[(&str, &str)] = &[
            ("failure_threshold = 0", "failure_threshold"),
            ("failure_threshold = -1", "failure_threshold"),
            ("cooldown_ms = 0", "cooldown_ms"),
            ("cooldown_ms = 99999999999999999999", "cooldown_ms"),
            ("probe_timeout_ms = 0", "probe_timeout_ms"),
            ("failure_rate = 0", "failure_rate"),
            ("failure_rate = 1.5", "failure_rate"),
            ("failure_rate = \"half\"", "failure_rate"),
            (
                "slow_call_threshold_ms = 0\nslow_call_rate = 0.5",
                "slow_call_threshold_ms",
            ),
            ("slow_call_threshold_ms = 1000", "slow_call_threshold_ms"),
            (
                "slow_call_threshold_ms = 1000\nslow_call_rate = 2",
                "slow_call_rate",
            ),
            ("slow_call_rate = 0.5", "slow_call_rate"),
            ("window_calls = 0\nfailure_rate = 0.5", "window_calls"),
            ("window_calls = 20", "window_calls"),
            ("window_ms = 0\nfailure_rate = 0.5", "window_ms"),
            ("window_ms = 1000", "window_ms"),
            ("minimum_calls = 0\nfailure_rate = 0.5", "minimum_calls"),
            ("minimum_calls = 5", "minimum_calls"),
            (
                "failure_rate = 0.5\nwindow_calls = 20\nminimum_calls = 21",
                "minimum_calls",
            ),
            ("failure_rate = 0.5\nminimum_calls = 101", "minimum_calls"),
            (
                "cooldown_multiplier = 0.5\nmax_cooldown_ms = 60000",
                "cooldown_multiplier",
            ),
            ("cooldown_multiplier = 2", "cooldown_multiplier"),
            (
                "cooldown_ms = 1000\ncooldown_multiplier = 2\nmax_cooldown_ms = 999",
                "max_cooldown_ms",
            ),
            (
                "max_cooldown_ms = 0\ncooldown_multiplier = 2",
                "max_cooldown_ms",
            ),
            ("max_cooldown_ms = 60000", "max_cooldown_ms"),
            ("cooldown_jitter = 1", "cooldown_jitter"),
            ("cooldown_jitter = -0.1", "cooldown_jitter"),
            ("probes = 0", "probes"),
            ("probes = 1048576", "probes"),
        ];
        for key in &keys {
            assert!(
                cases.iter().any(|(_, refused)| refused == key),
                "no case refuses `{key}`"
            );
        }
        for section in ["[default]", "[dependencies.search]"] {
            for (settings, key) in cases {
                let text = format!("{section}\n{settings}\n");
                let err = RegistryConfig::from_toml(&text).expect_err(&text);
                assert_eq!(err.field(), Some(*key), "{text}: {err}");
                let shown = err.to_string();
                for name in names(&shown) {
                    assert!(keys.contains(&name), "{text}: `{name}` is no key: {shown}");
                }
            }
        }
    }

    /// The parser's keys and the ones an unknown key's error lists are the same.
    #[test]
    fn an_unknown_key_lists_every_key() {
        let err = RegistryConfig::from_toml("[default]\nslow_calls = 0.5\n").unwrap_err();
        assert_eq!(err.field(), Some("slow_calls"));
        for key in names(FIELDS) {
            let text = format!("[default]\n{key} = 1\n");
            let accepted_or_refused_for_its_value = RegistryConfig::from_toml(&text)
                .err()
                .is_none_or(|e| !e.to_string().contains("unknown key"));
            assert!(accepted_or_refused_for_its_value, "{text}");
        }
    }
}
