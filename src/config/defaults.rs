//! The defaults a configuration starts from, and the largest durations and probe count it
//! accepts.

use core::time::Duration;

/// Consecutive counted failures that trip a breaker unless configured otherwise.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 5;
/// How long a breaker stays open before a probe, unless configured otherwise.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);
/// The probe's lease unless configured otherwise.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a dependency's hint (`Retry-After` and the rate-limit headers) keeps a breaker open
/// unless configured otherwise: 10 minutes (before the hint's jitter).
pub const DEFAULT_MAX_HINTED_OPEN: Duration = Duration::from_secs(600);
/// How far a hinted open period is spread past its hint unless configured otherwise: up to 10 %
/// more, never less.
pub const DEFAULT_HINT_JITTER: f64 = 0.1;
/// The longest cooldown or probe timeout a breaker accepts: 2^40 ms, about 35 years.
///
/// The state word's clock runs about 104 years past a breaker's construction before it
/// saturates; with durations up to this one, every deadline of a breaker that opens within its
/// first 35 years of life falls inside that range, so no cooldown is longer than the clock.
pub const MAX_DURATION: Duration = Duration::from_millis(MAX_DURATION_MS);
pub(crate) const MAX_DURATION_MS: u64 = 1 << 40;

/// The most probes a half-open breaker admits: 2^20 − 1.
pub const MAX_PROBES: u32 = (1 << 20) - 1;
