//! A section's `adaptive_throttling = { k = 2.0, window_ms = 10000 }` (or `false`, to turn off
//! what `[default]` set), validated by `Throttling`, every error naming the file's key.

use core::time::Duration;

use toml::de::DeValue;

use crate::config::{MAX_DURATION_MS, Throttling};
use crate::registry::toml::error::ConfigFileError;
use crate::registry::toml::section::{ratio, whole_number};

/// The key.
pub(super) const KEY: &str = "adaptive_throttling";
/// Its keys, as an error lists them.
const KEYS: &str = "`k`, `window_ms`";

/// The section's `adaptive_throttling` value: `None` for `false`.
pub(super) fn throttling(
    dependency: Option<&str>,
    value: &DeValue<'_>,
) -> Result<Option<Throttling>, ConfigFileError> {
    let table = match value {
        DeValue::Boolean(false) => return Ok(None),
        DeValue::Table(table) => table,
        _ => {
            return Err(ConfigFileError::at(
                dependency,
                Some(KEY),
                format!(
                    "must be a table such as {{ k = 2.0, window_ms = 10000 }}, or false, not {}",
                    match value {
                        DeValue::Boolean(true) => "true".to_owned(),
                        other => format!("a {}", other.type_str()),
                    }
                ),
            ));
        }
    };
    let (mut k, mut window_ms) = (None, None);
    for (key, value) in table {
        let value = value.get_ref();
        match key.get_ref().as_ref() {
            "k" => k = Some(ratio(value, dependency, "adaptive_throttling.k")?),
            "window_ms" => {
                window_ms = Some(whole_number(value, MAX_DURATION_MS, "ms").map_err(
                    |problem| {
                        ConfigFileError::at(
                            dependency,
                            Some("adaptive_throttling.window_ms"),
                            problem,
                        )
                    },
                )?);
            }
            other => {
                return Err(ConfigFileError::at(
                    dependency,
                    Some(&format!("{KEY}.{other}")),
                    format!("unknown key; expected {KEYS}"),
                ));
            }
        }
    }
    let missing = |key: &str| {
        ConfigFileError::at(
            dependency,
            Some(&format!("{KEY}.{key}")),
            format!("must be given: adaptive throttling needs {KEYS}"),
        )
    };
    let k = k.ok_or_else(|| missing("k"))?;
    let window_ms = window_ms.ok_or_else(|| missing("window_ms"))?;
    Throttling::new(k, Duration::from_millis(window_ms))
        .map(Some)
        .map_err(|e| {
            // The `ConfigError`'s words with the file's keys.
            let key = |field| match field {
                "adaptive_throttling.window" => "adaptive_throttling.window_ms",
                other => other,
            };
            ConfigFileError::at(dependency, Some(key(e.field())), e.explain("it", &key))
        })
}
