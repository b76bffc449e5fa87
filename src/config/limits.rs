//! A validated configuration in the word's units ([`Limits`]), as a breaker's live settings
//! hold it.

use super::rates::Rates;
use super::shape::Shape;

/// The threshold of a breaker whose consecutive rule is off: above every count the word holds.
pub(crate) const CONSECUTIVE_OFF: u64 = u64::MAX;

/// A validated configuration in the word's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Consecutive counted failures that trip the breaker, at least 1; [`CONSECUTIVE_OFF`] when
    /// the consecutive rule is off.
    pub(crate) failure_threshold: u64,
    /// Cooldown in ms, at least 1.
    pub(crate) cooldown_ms: u64,
    /// Probe lease in ms, at least 1.
    pub(crate) probe_timeout_ms: u64,
    /// The rate rules, if any.
    pub(crate) rates: Option<Rates>,
    /// How the cooldown backs off and spreads.
    pub(crate) shape: Shape,
    /// Probes half-open admits, 1 to [`MAX_PROBES`](super::MAX_PROBES).
    pub(crate) probes: u32,
}
