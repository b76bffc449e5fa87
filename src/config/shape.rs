//! The cooldown's shape: how it backs off on each reopen and how it is spread ([`Shape`]), and
//! the settings it is validated from.

use core::time::Duration;

use super::error::{ConfigError, Problem};
use super::fields::{MILLION, duration_field};

/// How the cooldown grows and spreads: validated, in millionths and whole milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Each reopen without a close multiplies the cooldown by this, in millionths; 1,000,000:
    /// no backoff.
    pub(crate) multiplier_ppm: u64,
    /// The longest a backed-off cooldown grows, in ms (the cooldown itself without backoff).
    pub(crate) max_cooldown_ms: u64,
    /// Each cooldown is spread by ± this fraction of itself, in millionths (below 1,000,000).
    pub(crate) jitter_ppm: u64,
}

impl Shape {
    /// A cooldown that neither backs off nor spreads.
    pub(crate) const FIXED: Shape = Shape {
        multiplier_ppm: 1_000_000,
        max_cooldown_ms: 0,
        jitter_ppm: 0,
    };

    /// Whether the cooldown in force can differ from the configured one.
    pub(crate) const fn is_shaped(&self) -> bool {
        self.multiplier_ppm != 1_000_000 || self.jitter_ppm != 0
    }
}

/// What a cooldown's shape holds before validation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ShapeSettings {
    pub(crate) backoff: Option<(f64, Duration)>,
    pub(crate) jitter: Option<f64>,
}

impl ShapeSettings {
    /// # Errors
    ///
    /// A multiplier below 1 or not finite (`cooldown_multiplier`), a maximum shorter than the
    /// cooldown or longer than [`MAX_DURATION`](super::MAX_DURATION) (`max_cooldown`), a jitter
    /// outside [0, 1) (`cooldown_jitter`).
    pub(super) fn validate(&self, cooldown_ms: u64) -> Result<Shape, ConfigError> {
        let mut shape = Shape::FIXED;
        if let Some((multiplier, max)) = self.backoff {
            if !(multiplier.is_finite() && multiplier >= 1.0) {
                return Err(ConfigError::new("cooldown_multiplier", Problem::OutOfRange));
            }
            let max_ms = duration_field("max_cooldown", max)?;
            if max_ms < cooldown_ms {
                return Err(ConfigError::new("max_cooldown", Problem::TooShort));
            }
            // At most 2^53 millionths are kept exactly; a larger multiplier reaches the
            // maximum at the first reopen anyway.
            let multiplier_ppm = (multiplier * MILLION).round().min(9.0e15) as u64;
            // A multiplier of 1 (to the millionth) is no backoff: the shape stays fixed.
            if multiplier_ppm != Shape::FIXED.multiplier_ppm {
                shape.multiplier_ppm = multiplier_ppm;
                shape.max_cooldown_ms = max_ms;
            }
        }
        if let Some(jitter) = self.jitter {
            if !(0.0..1.0).contains(&jitter) {
                return Err(ConfigError::new("cooldown_jitter", Problem::OutOfRange));
            }
            shape.jitter_ppm = ((jitter * MILLION).round() as u64).min(999_999);
        }
        Ok(shape)
    }
}
