//! The breaker keys of `[default]`, `[upstreams.NAME]` and `[upstreams.NAME.tools.TOOL]`, put
//! into the crate's TOML form and read by `RegistryConfig::from_toml`, so the gateway's file
//! takes exactly the crate's keys, values and checks; its errors are then told in the gateway's
//! sections.

use toml::de::DeValue;
use toolbreaker::RegistryConfig;
use toolbreaker::registry::ConfigFileError;

use super::error::{GatewayConfigError, path_part};

/// The crate's breaker keys (its `[dependencies.NAME]` keys).
pub(super) const BREAKER_KEYS: [&str; 19] = [
    "failure_threshold",
    "cooldown_ms",
    "probe_timeout_ms",
    "failure_rate",
    "slow_call_threshold_ms",
    "slow_call_rate",
    "window_calls",
    "window_ms",
    "minimum_calls",
    "cooldown_multiplier",
    "max_cooldown_ms",
    "cooldown_jitter",
    "probes",
    "max_hinted_open_ms",
    "hint_jitter",
    "open_on_long_hint",
    "max_in_flight",
    "adaptive_concurrency",
    "adaptive_throttling",
];

/// One breaker key as written: its value in TOML, and its line in the gateway's file.
#[derive(Clone, Debug)]
pub(super) struct Setting {
    pub(super) key: String,
    value: String,
    pub(super) line: usize,
}

impl Setting {
    /// `key = value` on `line`, the value written back as TOML (a table inline, a string
    /// quoted), so the crate checks and reads exactly what the gateway's file says.
    pub(super) fn new(key: &str, value: &DeValue<'_>, line: usize) -> Self {
        Setting {
            key: key.to_owned(),
            value: toml_text(value),
            line,
        }
    }
}

/// `value` as TOML text: a table as an inline table, an array inline, a string as a basic
/// string (JSON's escapes are TOML's).
fn toml_text(value: &DeValue<'_>) -> String {
    match value {
        DeValue::Integer(integer) => integer.to_string(),
        DeValue::Float(float) => float.to_string(),
        DeValue::Boolean(on) => on.to_string(),
        DeValue::Datetime(datetime) => datetime.to_string(),
        DeValue::String(text) => quoted(text),
        DeValue::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| toml_text(v.get_ref())).collect();
            format!("[{}]", items.join(", "))
        }
        DeValue::Table(table) => {
            let entries: Vec<String> = table
                .iter()
                .map(|(k, v)| format!("{} = {}", quoted(k.get_ref()), toml_text(v.get_ref())))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        }
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// An upstream's breaker keys and its tools' (those with a breaker of their own).
#[derive(Debug)]
pub(super) struct UpstreamBreakers {
    pub(super) name: String,
    /// The line of its section's header.
    pub(super) line: usize,
    pub(super) settings: Vec<Setting>,
    pub(super) tools: Vec<ToolBreakers>,
}

/// A tool's own breaker keys.
#[derive(Debug)]
pub(super) struct ToolBreakers {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) settings: Vec<Setting>,
}

/// The registry's configuration: `[default]` as the crate's `[default]`, each upstream as the
/// dependency of its name, each tool with a breaker of its own as `upstream.tool`, its keys over
/// the upstream's. Checked section by section in file order, so the first fault in the file is
/// the one reported.
pub(super) fn registry(
    default: &[Setting],
    upstreams: &[UpstreamBreakers],
) -> Result<RegistryConfig, GatewayConfigError> {
    let mut text = String::from("[default]\n");
    write_keys(&mut text, default.iter());
    let check =
        |text: &str| RegistryConfig::from_toml(text).map_err(|e| explain(&e, default, upstreams));
    check(&text)?;
    let mut whole = text.clone();
    for upstream in upstreams {
        let mut one = text.clone();
        for section in [&mut one, &mut whole] {
            write_upstream(section, upstream);
        }
        check(&one)?;
    }
    check(&whole)
}

fn write_upstream(text: &mut String, upstream: &UpstreamBreakers) {
    if !upstream.settings.is_empty() {
        write_header(text, &upstream.name);
        write_keys(text, upstream.settings.iter());
    }
    for tool in &upstream.tools {
        write_header(text, &format!("{}.{}", upstream.name, tool.name));
        // The upstream's keys, then the tool's over them; a tool that sets its window drops the
        // upstream's (a section sets one window).
        let tool_window = tool.settings.iter().any(|s| s.key.starts_with("window_"));
        let inherited = upstream.settings.iter().filter(|s| {
            let replaced = tool.settings.iter().any(|t| t.key == s.key);
            !(replaced || tool_window && s.key.starts_with("window_"))
        });
        write_keys(text, inherited.chain(tool.settings.iter()));
    }
}

fn write_header(text: &mut String, dependency: &str) {
    text.push_str(&format!("[dependencies.{}]\n", quoted(dependency)));
}

fn write_keys<'a>(text: &mut String, settings: impl Iterator<Item = &'a Setting>) {
    for setting in settings {
        text.push_str(&format!("{} = {}\n", setting.key, setting.value));
    }
}

/// The crate's error in the gateway's terms: the section of the dependency at fault, the key,
/// the line where the key was set (in that section, its upstream's, or `[default]`; else the
/// section's header), and the crate's own words.
fn explain(
    error: &ConfigFileError,
    default: &[Setting],
    upstreams: &[UpstreamBreakers],
) -> GatewayConfigError {
    let key = error.field();
    let find = |settings: &[Setting]| {
        // A table's key (`adaptive_throttling.k`) is on the line of its table's key.
        let of = |s: &Setting, k: &str| {
            s.key == k
                || k.strip_prefix(s.key.as_str())
                    .is_some_and(|r| r.starts_with('.'))
        };
        key.and_then(|k| settings.iter().find(|s| of(s, k)))
            .map(|s| s.line)
    };
    let (section, line) = match error.dependency() {
        None => ("default".to_owned(), find(default)),
        Some(dependency) => {
            let (upstream_name, tool_name) = match dependency.split_once('.') {
                Some((u, t)) => (u, Some(t)),
                None => (dependency, None),
            };
            let upstream = upstreams.iter().find(|u| u.name == upstream_name);
            let tool = upstream
                .zip(tool_name)
                .and_then(|(u, t)| u.tools.iter().find(|tool| tool.name == t));
            let section = match tool_name {
                Some(t) => format!(
                    "upstreams.{}.tools.{}",
                    path_part(upstream_name),
                    path_part(t)
                ),
                None => format!("upstreams.{}", path_part(upstream_name)),
            };
            let line = tool
                .and_then(|t| find(&t.settings))
                .or_else(|| upstream.and_then(|u| find(&u.settings)))
                .or_else(|| find(default))
                .or(tool.map(|t| t.line))
                .or(upstream.map(|u| u.line));
            (section, line)
        }
    };
    GatewayConfigError::toml(Some(section), key, line, crate_problem(error))
}

/// The crate error's problem: its `Display` without the part that names the crate's file
/// layout (`invalid breaker configuration file, [dependencies."x"] `key`: `).
fn crate_problem(error: &ConfigFileError) -> String {
    let mut prefix = String::from("invalid breaker configuration file");
    if let Some(line) = error.line() {
        prefix.push_str(&format!(", line {line}"));
    }
    match (error.dependency(), error.pool()) {
        (Some(d), _) => prefix.push_str(&format!(", [dependencies.{d:?}]")),
        (None, Some(p)) => prefix.push_str(&format!(", [pools.{p:?}]")),
        (None, None) if error.field().is_some() => prefix.push_str(", [default]"),
        (None, None) => {}
    }
    if let Some(field) = error.field() {
        prefix.push_str(&format!(" `{field}`"));
    }
    prefix.push_str(": ");
    let shown = error.to_string();
    match shown.strip_prefix(&prefix) {
        Some(problem) => problem.to_owned(),
        None => shown,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::BREAKER_KEYS;
    use crate::config::GatewayConfig;

    fn refused(text: &str) -> String {
        GatewayConfig::from_toml_str(text)
            .expect_err(text)
            .to_string()
    }

    const A: &str = "[upstreams.search]\nurl = \"http://127.0.0.1:9/mcp\"\n";

    /// Every breaker error names the gateway's section and key, with the line the key is on,
    /// and never the crate's `[dependencies...]` layout.
    #[test]
    fn errors_name_the_gateways_section_and_key() {
        assert_eq!(
            refused(&format!("{A}cooldown_ms = 0\n")),
            "line 3: [upstreams.search] cooldown_ms: it must be at least 1 ms"
        );
        assert_eq!(
            refused(&format!("{A}failure_threshold = -1\n")),
            "line 3: [upstreams.search] failure_threshold: must be a whole number of failures \
             from 1 to 4294967295, not -1"
        );
        assert_eq!(
            refused(&format!("[default]\nprobes = 0\n{A}")),
            "line 2: [default] probes: it must be at least 1"
        );
        assert_eq!(
            refused(&format!(
                "{A}[upstreams.search.tools.query]\nfailure_rate = 1.5\n"
            )),
            "line 4: [upstreams.search.tools.query] failure_rate: it must be a ratio above 0 and at most 1"
        );
        assert_eq!(
            refused(&format!("{A}slow_call_rate = 0.5\n")),
            "line 3: [upstreams.search] slow_call_rate: the slow-call rule needs \
             `slow_call_threshold_ms` as well"
        );
        // A fault that shows only in the tool's section, from a key its upstream set: the tool's
        // section, the line of the key.
        let err = refused(&format!(
            "{A}failure_rate = 0.5\nminimum_calls = 30\n[upstreams.search.tools.query]\nwindow_calls = 20\n"
        ));
        assert!(
            err.starts_with("line 4: [upstreams.search.tools.query] minimum_calls: "),
            "{err}"
        );
        for key in BREAKER_KEYS {
            for value in ["-1", "\"x\"", "0"] {
                let Err(err) = GatewayConfig::from_toml_str(&format!("{A}{key} = {value}\n"))
                else {
                    continue;
                };
                let shown = err.to_string();
                assert!(
                    !shown.contains("dependencies") && !shown.contains("invalid breaker"),
                    "{shown}"
                );
                assert_eq!(
                    (err.section(), err.key()),
                    (Some("upstreams.search"), Some(key)),
                    "{shown}"
                );
            }
        }
    }

    /// Keys whose value is a table reach the crate whole, and their errors name the key.
    #[test]
    fn admission_keys_reach_the_crate_whole() {
        let config = GatewayConfig::from_toml_str(&format!(
            "{A}max_in_flight = 4\nadaptive_throttling = {{ k = 3.0, window_ms = 5000 }}\n\
             adaptive_concurrency = {{ algorithm = \"gradient\", min = 2, max = 16 }}\n"
        ))
        .unwrap();
        let search = config.registry.config_for("search");
        assert_eq!(search.max_in_flight(), Some(4));
        assert_eq!(
            search.adaptive_throttling(),
            Some((3.0, Duration::from_secs(5)))
        );
        let limit = search.adaptive_concurrency().expect("set");
        assert_eq!(
            (limit.algorithm(), limit.min(), limit.max()),
            ("gradient", 2, 16)
        );
        let err = refused(&format!(
            "{A}adaptive_throttling = {{ k = 0.5, window_ms = 5000 }}\n"
        ));
        assert!(
            err.starts_with("line 3: [upstreams.search] adaptive_throttling.k: "),
            "{err}"
        );
    }

    /// The first fault in the file is the one reported, whichever name sorts first.
    #[test]
    fn the_first_fault_in_file_order_is_reported() {
        let err = refused(
            "[upstreams.zeta]\ncommand = \"z\"\nprobes = 0\n[upstreams.alpha]\ncommand = \"a\"\nprobes = 0\n",
        );
        assert!(err.starts_with("line 3: [upstreams.zeta] probes:"), "{err}");
    }

    #[test]
    fn tools_inherit_the_upstreams_keys_and_may_change_its_window() {
        let config = GatewayConfig::from_toml_str(&format!(
            "[default]\ncooldown_ms = 7000\n{A}failure_threshold = 3\nfailure_rate = 0.5\n\
             window_calls = 40\n[upstreams.search.tools.query]\nwindow_ms = 60000\nprobes = 2\n\
             [upstreams.b]\ncommand = \"b\"\n"
        ))
        .unwrap();
        let registry = &config.registry;
        let query = registry.config_for("search.query");
        assert_eq!(query.failure_threshold(), Some(3));
        assert_eq!(query.failure_rate(), Some(0.5));
        assert_eq!(
            query.window(),
            Some(toolbreaker::Window::Time(Duration::from_secs(60)))
        );
        assert_eq!(
            (query.probes(), query.cooldown()),
            (2, Duration::from_secs(7))
        );
        let search = registry.config_for("search");
        assert_eq!(
            (search.probes(), search.window()),
            (1, Some(toolbreaker::Window::Calls(40)))
        );
        assert_eq!(registry.config_for("b").cooldown(), Duration::from_secs(7));
        assert_eq!(registry.config_for("b").failure_threshold(), Some(5));
    }
}
