//! The cooldown's shape: how it backs off on each reopen, how it is spread, and how a
//! dependency's hint lengthens it ([`Shape`]); and the settings it is validated from.

use core::time::Duration;

use super::defaults::{DEFAULT_HINT_JITTER, DEFAULT_MAX_HINTED_OPEN};
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
    /// The longest a dependency's hint keeps the breaker open, in ms (before its jitter); 0:
    /// hints never lengthen an open period.
    pub(crate) hint_cap_ms: u64,
    /// A hinted open period is lengthened by up to this fraction of its hint, in millionths (at
    /// most 1,000,000): positive only, so no caller wakes before the dependency asked.
    pub(crate) hint_jitter_ppm: u64,
    /// A rate-limited failure whose hint is longer than the cooldown trips at once.
    pub(crate) open_on_long_hint: bool,
    /// Not a setting: the breaker has heard a hint, so the cooldown in force may be a hint's
    /// (set by the live settings when they load, never by a configuration).
    pub(crate) heard: bool,
}

impl Shape {
    /// A cooldown that neither backs off nor spreads.
    pub(crate) const FIXED: Shape = Shape {
        multiplier_ppm: 1_000_000,
        max_cooldown_ms: 0,
        jitter_ppm: 0,
        hint_cap_ms: DEFAULT_MAX_HINTED_OPEN.as_millis() as u64,
        hint_jitter_ppm: (DEFAULT_HINT_JITTER * MILLION) as u64,
        open_on_long_hint: false,
        heard: false,
    };

    /// Whether the cooldown in force can differ from the configured one, or its hints are not
    /// read the default way: the breaker then reads its shape from the cooldown's cell.
    pub(crate) const fn is_shaped(&self) -> bool {
        self.multiplier_ppm != Self::FIXED.multiplier_ppm
            || self.jitter_ppm != 0
            || self.hint_cap_ms != Self::FIXED.hint_cap_ms
            || self.hint_jitter_ppm != Self::FIXED.hint_jitter_ppm
            || self.open_on_long_hint
            || self.heard
    }
}

/// What a cooldown's shape holds before validation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ShapeSettings {
    pub(crate) backoff: Option<(f64, Duration)>,
    pub(crate) jitter: Option<f64>,
    pub(crate) hint_cap: Option<Duration>,
    pub(crate) hint_jitter: Option<f64>,
    pub(crate) open_on_long_hint: Option<bool>,
}

impl ShapeSettings {
    /// # Errors
    ///
    /// A multiplier below 1 or not finite (`cooldown_multiplier`), a maximum shorter than the
    /// cooldown or longer than [`MAX_DURATION`](super::MAX_DURATION) (`max_cooldown`), a jitter
    /// outside [0, 1) (`cooldown_jitter`), a hint's cap longer than
    /// [`MAX_DURATION`](super::MAX_DURATION) (`max_hinted_open`), a hint's jitter outside [0, 1]
    /// (`hint_jitter`).
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
        if let Some(cap) = self.hint_cap {
            // Zero is allowed: hints never lengthen an open period.
            shape.hint_cap_ms = match duration_field("max_hinted_open", cap) {
                Err(error) if error.problem() == Problem::Zero => 0,
                other => other?,
            };
        }
        if let Some(jitter) = self.hint_jitter {
            if !(0.0..=1.0).contains(&jitter) {
                return Err(ConfigError::new("hint_jitter", Problem::OutOfRange));
            }
            shape.hint_jitter_ppm = (jitter * MILLION).round() as u64;
        }
        if let Some(open) = self.open_on_long_hint {
            shape.open_on_long_hint = open;
        }
        Ok(shape)
    }
}
