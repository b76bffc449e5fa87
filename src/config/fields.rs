//! One field's check: a ratio, a duration, a name; each refusal names the field.

use core::time::Duration;

use super::defaults::MAX_DURATION_MS;
use super::error::{ConfigError, Problem};
use crate::time::millis_ceil;

pub(super) const MILLION: f64 = 1_000_000.0;

/// A ratio in (0, 1], in millionths (at least 1), else [`Problem::OutOfRange`] naming `field`.
pub(super) fn ratio_field(field: &'static str, ratio: f64) -> Result<u32, ConfigError> {
    if !(ratio > 0.0 && ratio <= 1.0) {
        return Err(ConfigError::new(field, Problem::OutOfRange));
    }
    // In range, so the product is in (0, 1e6]: the cast cannot overflow.
    Ok(((ratio * MILLION).round() as u32).max(1))
}

/// A name field (a fleet's `prefix` and `instance`, an MCP `server`): non-empty text with no
/// whitespace or control character, else [`Problem::Empty`] naming `field`.
#[cfg(any(feature = "redis", feature = "mcp"))]
pub(crate) fn name_field(field: &'static str, text: &str) -> Result<(), ConfigError> {
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::new(field, Problem::Empty));
    }
    Ok(())
}

/// A duration field in whole milliseconds, rounded up, else [`Problem::Zero`] or
/// [`Problem::TooLong`] naming `field`.
pub(crate) fn duration_field(field: &'static str, value: Duration) -> Result<u64, ConfigError> {
    if value.is_zero() {
        return Err(ConfigError::new(field, Problem::Zero));
    }
    Some(millis_ceil(value))
        .filter(|&ms| ms <= MAX_DURATION_MS)
        .ok_or(ConfigError::new(field, Problem::TooLong))
}
