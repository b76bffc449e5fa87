//! The `retry_budget` key of a section: `{ ratio = 0.2, min_per_second = 10, window_ms = 10000 }`
//! (each key optional, with those defaults), or `false` for none; checked by `RetryBudget`'s
//! rules, with every error naming `retry_budget.KEY`.

use core::time::Duration;

use toml::de::{DeTable, DeValue};

use crate::breaker::BudgetRule;
use crate::config::MAX_DURATION_MS;
use crate::registry::toml::error::ConfigFileError;

const KEYS: &str = "`ratio`, `min_per_second`, `window_ms`";

/// The `retry_budget` of a section (`dependency`'s, or `[default]`'s): `None` when the section
/// does not set it, `Some(None)` for `false` (no budget), else the rule.
pub(super) fn retry_budget(
    dependency: Option<&str>,
    section: &DeValue<'_>,
) -> Result<Option<Option<BudgetRule>>, ConfigFileError> {
    let DeValue::Table(section) = section else {
        return Ok(None);
    };
    let Some(value) = section.get("retry_budget") else {
        return Ok(None);
    };
    let error = |key: &str, problem: String| {
        let field = if key.is_empty() {
            "retry_budget".to_owned()
        } else {
            format!("retry_budget.{key}")
        };
        ConfigFileError::at(dependency, Some(&field), problem)
    };
    let table: &DeTable<'_> = match value.get_ref() {
        DeValue::Boolean(false) => return Ok(Some(None)),
        DeValue::Table(table) => table,
        other => {
            return Err(error(
                "",
                format!(
                    "must be a table such as {{ ratio = 0.2, min_per_second = 10, window_ms = \
                     10000 }}, or false for none; not a {}",
                    other.type_str()
                ),
            ));
        }
    };
    let (mut ratio, mut min_per_second, mut window_ms) = (0.2, 10, 10_000);
    for (key, value) in table {
        let key: &str = key.get_ref();
        let value = value.get_ref();
        match key {
            "ratio" => {
                ratio = number(value).ok_or_else(|| {
                    error(key, format!("must be a number, not a {}", value.type_str()))
                })?;
            }
            "min_per_second" => {
                min_per_second = whole(value, u64::from(u32::MAX)).map_err(|problem| {
                    error(
                        key,
                        format!(
                            "must be a whole number of retries from 0 to {}{problem}",
                            u32::MAX
                        ),
                    )
                })? as u32;
            }
            "window_ms" => {
                window_ms = whole(value, MAX_DURATION_MS).map_err(|problem| {
                    error(
                        key,
                        format!(
                            "must be a whole number of ms from 1 to {MAX_DURATION_MS}{problem}"
                        ),
                    )
                })?;
            }
            other => return Err(error(other, format!("unknown key; expected {KEYS}"))),
        }
    }
    BudgetRule::new(ratio, min_per_second, Duration::from_millis(window_ms))
        .map(|rule| Some(Some(rule)))
        .map_err(|e| {
            let key = match e.field() {
                "retry_budget.window" => "window_ms",
                _ => "ratio",
            };
            error(key, e.explain("it", &|name| name))
        })
}

/// `value` as a number, an integer or a float.
fn number(value: &DeValue<'_>) -> Option<f64> {
    match value {
        DeValue::Float(float) => float.as_str().replace('_', "").parse().ok(),
        DeValue::Integer(integer) => i128::from_str_radix(integer.as_str(), integer.radix())
            .ok()
            .map(|n| n as f64),
        _ => None,
    }
}

/// `value` as a whole number up to `max` (zero passes, for the rule to judge), or what follows
/// the range in the error.
fn whole(value: &DeValue<'_>, max: u64) -> Result<u64, String> {
    let DeValue::Integer(integer) = value else {
        return Err(format!(", not a {}", value.type_str()));
    };
    match i128::from_str_radix(integer.as_str(), integer.radix()) {
        Ok(n) if (0..=i128::from(max)).contains(&n) => Ok(n as u64),
        _ => Err(format!(", not {integer}")),
    }
}
