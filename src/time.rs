//! The one time seam: the clocks the crate reads, a breaker's time origin, and `Duration` ⇄
//! milliseconds (the only copy of each conversion).
//!
//! Three clocks, each for one job:
//! - a breaker reads [`quanta::Clock`] ([`Origin`]): cheap, monotonic, and mockable
//!   (`quanta::Clock::mock()`), so tests advance time by hand and nothing sleeps;
//! - the agent pipeline (feature `tokio`) reads tokio's clock ([`tokio_now`]), so a run's deadline
//!   and a retry's wait follow a paused test runtime;
//! - an HTTP `Retry-After` date (feature `http`) is judged against the wall clock ([`wall_now`]),
//!   the only clock an HTTP date can be compared with.

use core::time::Duration;

/// How far before its construction a breaker's time origin lies, in ms (2^40 ms, about 35 years):
/// the room a clock has to step backwards before its readings clamp.
pub(crate) const CLOCK_HEADROOM_MS: u64 = 1 << 40;

/// A breaker's clock and its origin: readings are milliseconds since the origin, which lies
/// [`CLOCK_HEADROOM_MS`] before the clock's reading at construction.
#[derive(Debug)]
pub(crate) struct Origin {
    clock: quanta::Clock,
    /// The clock's raw reading at construction (its own unit: TSC ticks or nanoseconds).
    epoch: u64,
}

const NANOS_PER_MS: u64 = 1_000_000;

impl Origin {
    pub(crate) fn new(clock: quanta::Clock) -> Self {
        let epoch = clock.raw();
        Origin { clock, epoch }
    }

    /// The clock's reading in ms since the origin, at most `max`. So the clock may step back
    /// [`CLOCK_HEADROOM_MS`] (about 35 years) and every deadline still reads true; readings clamp
    /// at 0 before that and at `max` after it.
    ///
    /// Read raw and scaled once to nanoseconds (`quanta`'s `delta_as_nanos`), with one division
    /// to milliseconds: cheaper than an `Instant` and a `Duration`, which a rejection would pay.
    #[inline]
    pub(crate) fn now_ms(&self, max: u64) -> u64 {
        let now = self.clock.raw();
        let ms = if now >= self.epoch {
            let ahead = self.clock.delta_as_nanos(self.epoch, now);
            CLOCK_HEADROOM_MS.saturating_add(ahead / NANOS_PER_MS)
        } else {
            // Behind the construction time: round away from it, so time stays floor-rounded.
            let behind = self.clock.delta_as_nanos(now, self.epoch);
            CLOCK_HEADROOM_MS.saturating_sub(behind.div_ceil(NANOS_PER_MS))
        };
        ms.min(max)
    }
}

impl Origin {
    /// The clock's raw reading, to time a call with (see [`Origin::since`]).
    #[inline]
    pub(crate) fn raw(&self) -> u64 {
        self.clock.raw()
    }

    /// The time since the raw reading `start`; zero if the clock stepped back.
    #[inline]
    pub(crate) fn since(&self, start: u64) -> Duration {
        let now = self.clock.raw();
        if now <= start {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.clock.delta_as_nanos(start, now))
    }
}

/// Whole milliseconds in `d`, rounded down, saturating at `u64::MAX`: for elapsed times and
/// figures reported (JSON, events).
pub(crate) fn millis_floor(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whole milliseconds in `d`, rounded up, saturating at `u64::MAX`: for settings and deadlines,
/// so a cooldown never ends early.
pub(crate) fn millis_ceil(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Now on tokio's clock (feature `tokio`).
#[cfg(feature = "tokio")]
pub(crate) fn tokio_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// Now on the wall clock (feature `http`), for `Retry-After` dates.
#[cfg(feature = "http")]
pub(crate) fn wall_now() -> std::time::SystemTime {
    std::time::SystemTime::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_convert_to_whole_milliseconds_rounding_each_way() {
        let d = Duration::from_micros(2_001);
        assert_eq!((millis_floor(d), millis_ceil(d)), (2, 3));
        let whole = Duration::from_millis(7);
        assert_eq!((millis_floor(whole), millis_ceil(whole)), (7, 7));
        assert_eq!(millis_ceil(Duration::from_nanos(1)), 1);
        assert_eq!(millis_floor(Duration::MAX), u64::MAX);
        assert_eq!(millis_ceil(Duration::MAX), u64::MAX);
    }

    #[test]
    fn readings_count_from_the_origin_and_clamp_at_both_ends() {
        let (clock, mock) = quanta::Clock::mock();
        mock.increment(Duration::from_secs(10));
        let origin = Origin::new(clock);
        assert_eq!(origin.now_ms(u64::MAX), CLOCK_HEADROOM_MS);
        mock.increment(Duration::from_micros(1_500));
        assert_eq!(origin.now_ms(u64::MAX), CLOCK_HEADROOM_MS + 1, "floor");
        assert_eq!(origin.now_ms(5), 5, "clamped at the maximum");
        mock.decrement(Duration::from_micros(2_000));
        assert_eq!(
            origin.now_ms(u64::MAX),
            CLOCK_HEADROOM_MS - 1,
            "behind: still floor"
        );
    }
}
