//! One section of a configuration file (`[default]` or `[dependencies.NAME]`): its keys and
//! their values read over a base configuration, validated by `Config`, with every error naming
//! the file's keys.

use core::time::Duration;

use toml::de::{DeInteger, DeValue};

use crate::config::{Config, Limit, MAX_DURATION_MS, MAX_PROBES, Window};
use crate::registry::toml::error::ConfigFileError;
use crate::registry::toml::throttling;

pub(super) const FIELDS: &str = "`failure_threshold`, `cooldown_ms`, `probe_timeout_ms`, `failure_rate`, \
                      `slow_call_threshold_ms`, `slow_call_rate`, `window_calls`, `window_ms`, \
                      `minimum_calls`, `cooldown_multiplier`, `max_cooldown_ms`, \
                      `cooldown_jitter`, `probes`, `max_hinted_open_ms`, `hint_jitter`, \
                      `open_on_long_hint`, `max_in_flight`, `adaptive_concurrency`, \
                      `adaptive_throttling`, `retry_budget`";

/// The keys of an `adaptive_concurrency` table, by algorithm.
const AIMD_FIELDS: &str = "`algorithm`, `min`, `max`, `initial`, `backoff_ratio`, \
                           `latency_threshold_ms`";
const GRADIENT_FIELDS: &str = "`algorithm`, `min`, `max`, `initial`, `tolerance`, `smoothing`, \
                               `queue_size`, `long_window`";

/// One section: its keys over `base`, validated; with whether `failure_threshold` was set here or
/// in `base` (so a rate rule set in a dependency's section keeps the consecutive rule only if
/// some section asked for it, as the builder does).
pub(super) fn section(
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
    let mut concurrency = base.concurrency().settings();
    let mut throttle = base.throttling();
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
            // Zero turns hints off, so the range starts at 0.
            "max_hinted_open_ms" => {
                let ms = whole_number(value, MAX_DURATION_MS, "ms").map_err(|problem| {
                    let problem = problem.replace("from 1 to", "from 0 to");
                    ConfigFileError::at(dependency, Some(key), problem)
                })?;
                shape.hint_cap = Some(Duration::from_millis(ms));
            }
            "hint_jitter" => shape.hint_jitter = Some(ratio(value, dependency, key)?),
            "open_on_long_hint" => {
                let DeValue::Boolean(on) = value else {
                    return Err(ConfigFileError::at(
                        dependency,
                        Some(key),
                        format!("must be true or false, not a {}", value.type_str()),
                    ));
                };
                shape.open_on_long_hint = Some(*on);
            }
            "probes" => probes = number(u64::from(MAX_PROBES), "probes")? as u32,
            // Not the breaker's: read by `budget::retry_budget`.
            "retry_budget" => {}
            // `false`: no cap here, whatever `[default]` sets.
            "max_in_flight" if matches!(value, DeValue::Boolean(false)) => {
                concurrency.max_in_flight = None;
            }
            "max_in_flight" => {
                let most = u64::from(u32::MAX - 1);
                concurrency.max_in_flight = Some(number(most, "calls")? as u32);
            }
            "adaptive_concurrency" if matches!(value, DeValue::Boolean(false)) => {
                concurrency.adaptive = None;
            }
            "adaptive_concurrency" => concurrency.adaptive = Some(adaptive(dependency, value)?),
            throttling::KEY => throttle = throttling::throttling(dependency, value)?,
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
    let config = Config::with_rules(threshold, cooldown, probe_timeout, &rates, &shape, probes)
        .and_then(|config| config.with_concurrency(&concurrency))
        .map(|config| config.with_throttling(throttle));
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
        "max_hinted_open" => "max_hinted_open_ms",
        "window" => window_key.unwrap_or("window_calls"),
        "adaptive_concurrency.latency_threshold" => "adaptive_concurrency.latency_threshold_ms",
        other => other,
    }
}

/// An `adaptive_concurrency` inline table: `algorithm` (`"aimd"` or `"gradient"`), `min` and
/// `max` (required), and the algorithm's other fields (its defaults when left out), each
/// named like the [`Limit`] variant's field (`latency_threshold_ms` in whole ms). Values out of
/// range are `Config`'s to refuse.
fn adaptive(dependency: Option<&str>, value: &DeValue<'_>) -> Result<Limit, ConfigFileError> {
    const KEY: &str = "adaptive_concurrency";
    let error = |key: &str, problem: String| {
        let key = if key.is_empty() {
            KEY.to_owned()
        } else {
            format!("{KEY}.{key}")
        };
        ConfigFileError::at(dependency, Some(&key), problem)
    };
    let DeValue::Table(table) = value else {
        return Err(error(
            "",
            format!(
                "must be a table such as {{ algorithm = \"aimd\", min = 1, max = 64 }}, not a {}",
                value.type_str()
            ),
        ));
    };
    let get = |key: &str| table.get(key).map(|v| v.get_ref());
    let calls = |key: &str| -> Result<Option<u32>, ConfigFileError> {
        get(key)
            .map(|v| whole_number(v, u64::from(u32::MAX), "calls").map(|n| n as u32))
            .transpose()
            .map_err(|problem| error(key, problem))
    };
    let (Some(min), Some(max)) = (calls("min")?, calls("max")?) else {
        return Err(error("", "needs `min` and `max`, in calls".to_owned()));
    };
    let number = |key: &str| {
        get(key)
            .map(|v| ratio(v, dependency, &format!("{KEY}.{key}")))
            .transpose()
    };
    let (mut limit, fields) = match get("algorithm") {
        Some(DeValue::String(name)) if name == "aimd" => (Limit::aimd(min, max), AIMD_FIELDS),
        Some(DeValue::String(name)) if name == "gradient" => {
            (Limit::gradient(min, max), GRADIENT_FIELDS)
        }
        _ => {
            return Err(error(
                "algorithm",
                "must be \"aimd\" or \"gradient\"".to_owned(),
            ));
        }
    };
    if let Some(unknown) = table
        .keys()
        .map(|k| k.get_ref())
        .find(|k| !fields.contains(&format!("`{k}`")))
    {
        return Err(error(unknown, format!("unknown key; expected {fields}")));
    }
    match &mut limit {
        Limit::Aimd {
            initial,
            backoff_ratio,
            latency_threshold,
            ..
        } => {
            *initial = calls("initial")?.unwrap_or(*initial);
            *backoff_ratio = number("backoff_ratio")?.unwrap_or(*backoff_ratio);
            if let Some(v) = get("latency_threshold_ms") {
                let ms = whole_number(v, MAX_DURATION_MS, "ms")
                    .map_err(|problem| error("latency_threshold_ms", problem))?;
                *latency_threshold = Duration::from_millis(ms);
            }
        }
        Limit::Gradient {
            initial,
            tolerance,
            smoothing,
            queue_size,
            long_window,
            ..
        } => {
            *initial = calls("initial")?.unwrap_or(*initial);
            *tolerance = number("tolerance")?.unwrap_or(*tolerance);
            *smoothing = number("smoothing")?.unwrap_or(*smoothing);
            *queue_size = calls("queue_size")?.unwrap_or(*queue_size);
            *long_window = calls("long_window")?.unwrap_or(*long_window);
        }
    }
    Ok(limit)
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
pub(super) fn ratio(
    value: &DeValue<'_>,
    dependency: Option<&str>,
    key: &str,
) -> Result<f64, ConfigFileError> {
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
pub(super) fn whole_number(value: &DeValue<'_>, max: u64, unit: &str) -> Result<u64, String> {
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
