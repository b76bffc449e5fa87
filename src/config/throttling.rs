//! Client-side adaptive throttling's settings ([`Throttling`]): the multiplier `k` and the
//! window, validated, each refusal naming its field.

use core::time::Duration;

use super::error::{ConfigError, Problem};
use super::fields::duration_field;

/// Validated adaptive throttling: `k` (finite, at least 1, kept exactly as its bits so the
/// configuration stays `Eq`) and the window in whole ms.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Throttling {
    /// `k`'s `f64` bits.
    pub(crate) k_bits: u64,
    /// The window, in ms: 1 to `MAX_DURATION_MS`.
    pub(crate) window_ms: u64,
}

impl Throttling {
    /// `k` and `window` validated: `k` finite and at least 1 (`adaptive_throttling.k`:
    /// [`Problem::OutOfRange`]), `window` from 1 ms to `MAX_DURATION`
    /// (`adaptive_throttling.window`: [`Problem::Zero`], [`Problem::TooLong`]).
    pub(crate) fn new(k: f64, window: Duration) -> Result<Throttling, ConfigError> {
        // Below 1 the client would shed calls the dependency accepts: with every call
        // accepted, requests − k·accepts is (1 − k)·requests, above 0.
        if !(k.is_finite() && k >= 1.0) {
            return Err(ConfigError::new(
                "adaptive_throttling.k",
                Problem::OutOfRange,
            ));
        }
        let window_ms = duration_field("adaptive_throttling.window", window)?;
        Ok(Throttling {
            // `+ 0.0` would make no difference: `k` is at least 1, never −0.
            k_bits: k.to_bits(),
            window_ms,
        })
    }

    /// The multiplier `k`.
    pub(crate) fn k(self) -> f64 {
        f64::from_bits(self.k_bits)
    }

    /// The window.
    pub(crate) fn window(self) -> Duration {
        Duration::from_millis(self.window_ms)
    }
}

/// `k` as the number it is, not its bits.
impl core::fmt::Debug for Throttling {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Throttling")
            .field("k", &self.k())
            .field("window_ms", &self.window_ms)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MAX_DURATION;

    #[test]
    fn k_and_the_window_are_refused_by_name_and_kept_exactly() {
        let s = Duration::from_secs(1);
        for k in [
            0.999_999,
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let err = Throttling::new(k, s).unwrap_err();
            assert_eq!(
                (err.field(), err.problem()),
                ("adaptive_throttling.k", Problem::OutOfRange),
                "{k}"
            );
        }
        for (window, problem) in [
            (Duration::ZERO, Problem::Zero),
            (MAX_DURATION + Duration::from_millis(1), Problem::TooLong),
        ] {
            let err = Throttling::new(2.0, window).unwrap_err();
            assert_eq!(
                (err.field(), err.problem()),
                ("adaptive_throttling.window", problem)
            );
        }
        let kept = Throttling::new(1.000_000_1, MAX_DURATION).unwrap();
        assert_eq!((kept.k(), kept.window()), (1.000_000_1, MAX_DURATION));
        let rounded = Throttling::new(f64::MAX, Duration::from_micros(1_500)).unwrap();
        assert_eq!((rounded.k(), rounded.window_ms), (f64::MAX, 2));
        let shown = format!(
            "{:?}",
            Throttling::new(2.5, Duration::from_secs(10)).unwrap()
        );
        assert_eq!(shown, "Throttling { k: 2.5, window_ms: 10000 }");
    }
}
