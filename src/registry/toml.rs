//! A registry's configuration from TOML, and its live reload from a file (feature `toml`).

use std::path::Path;

use toml::de::{DeTable, DeValue};

mod budget;
mod error;
mod pools;
mod section;
mod throttling;

pub use self::error::ConfigFileError;

use self::pools::pool;
use self::section::section;
use super::config::{RegistryConfig, Reload};
use super::map::Registry;
use crate::config::{Config, DEFAULT_FAILURE_THRESHOLD};

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
    ///
    /// # A pool of equivalent upstreams (`Registry::pool`): its members are dependencies,
    /// # in priority groups tried in order.
    /// [pools.search]
    /// groups = [["search-eu", "search-us"], ["search-backup"]]
    /// max_ejected = 0.5          # optional: panic past half of a group open (default: never)
    /// fail_closed = false        # optional: true never panics
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
                pool: None,
                field,
                line,
                problem: e.message().to_owned(),
                io: None,
            }
        })?;
        let mut default = None;
        let mut default_budget = None;
        let mut dependencies = None;
        let mut pools = None;
        for (key, value) in document.get_ref() {
            match key.get_ref().as_ref() {
                "default" => {
                    default = Some(section(None, value.get_ref(), (Config::default(), false))?);
                    default_budget = budget::retry_budget(None, value.get_ref())?.flatten();
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
                "pools" => {
                    let DeValue::Table(table) = value.get_ref() else {
                        return Err(ConfigFileError::at(
                            None,
                            Some("pools"),
                            "`pools` must be a table of tables, one per pool",
                        ));
                    };
                    pools = Some(table);
                }
                other => {
                    return Err(ConfigFileError::at(
                        None,
                        None,
                        format!(
                            "unknown key or table `{other}` at the top level; expected the \
                             tables `default`, `dependencies` and `pools`"
                        ),
                    ));
                }
            }
        }
        // An empty file (or one of comments only) is refused rather than read as "every
        // default": a file emptied by a redirect, or caught before its first line was
        // written, must not reset every breaker.
        if default.is_none() && dependencies.is_none() && pools.is_none() {
            return Err(ConfigFileError::at(
                None,
                None,
                "the file sets nothing: expected a [default], [dependencies.NAME] or [pools.NAME] table \
                 (an empty [default] table asks for the crate's defaults)",
            ));
        }
        let default = default.unwrap_or((Config::default(), false));
        let mut config = RegistryConfig::new(default.0);
        config.set_budget_rule(None, default_budget);
        for (name, value) in dependencies.into_iter().flatten() {
            let name: &str = name.get_ref();
            let (own, _) = section(Some(name), value.get_ref(), default)?;
            config = config.dependency(name, own);
            if let Some(rule) = budget::retry_budget(Some(name), value.get_ref())? {
                config.set_budget_rule(Some(name), rule);
            }
        }
        for (name, value) in pools.into_iter().flatten() {
            config = pool(config, name.get_ref(), value.get_ref())?;
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
    use super::section::FIELDS;
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
            ("max_hinted_open_ms = -1", "max_hinted_open_ms"),
            (
                "max_hinted_open_ms = 99999999999999999999",
                "max_hinted_open_ms",
            ),
            ("hint_jitter = 1.5", "hint_jitter"),
            ("hint_jitter = -0.1", "hint_jitter"),
            ("open_on_long_hint = 1", "open_on_long_hint"),
            ("retry_budget = 1", "retry_budget"),
            ("max_in_flight = 0", "max_in_flight"),
            ("max_in_flight = -2", "max_in_flight"),
            ("max_in_flight = 4294967295", "max_in_flight"),
            ("adaptive_concurrency = 8", "adaptive_concurrency"),
            (
                "adaptive_concurrency = { algorithm = \"aimd\", min = 0, max = 8 }",
                "adaptive_concurrency.min",
            ),
            (
                "adaptive_concurrency = { algorithm = \"gradient\", min = 9, max = 8 }",
                "adaptive_concurrency.max",
            ),
            (
                "adaptive_concurrency = { algorithm = \"aimd\", min = 2, max = 8, initial = 9 }",
                "adaptive_concurrency.initial",
            ),
            (
                "adaptive_concurrency = { algorithm = \"aimd\", min = 1, max = 8, tolerance = 2 }",
                "adaptive_concurrency.tolerance",
            ),
            (
                "adaptive_concurrency = { algorithm = \"gradient\", min = 1, max = 8, smoothing = 0 }",
                "adaptive_concurrency.smoothing",
            ),
            ("adaptive_throttling = true", "adaptive_throttling"),
        ];
        // An `adaptive_concurrency` table's errors name its keys as `adaptive_concurrency.KEY`,
        // and an unknown one lists the algorithm's keys.
        let nested = |name: &str| {
            name.strip_prefix("adaptive_concurrency.")
                .unwrap_or(name)
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                && (name.starts_with("adaptive_concurrency") || !name.contains('.'))
        };
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
                    assert!(
                        keys.contains(&name) || (key.starts_with("adaptive") && nested(name)),
                        "{text}: `{name}` is no key: {shown}"
                    );
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
