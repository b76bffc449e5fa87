//! Warnings that a client can cause on every request, logged at most once per interval for the
//! same cause, with the count of those left out since.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often a warning for the same cause is logged at most.
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Which of the warnings of one cause are logged: the first, then the first after each
/// [`interval`](LogLimit::new) since the last one logged, which tells how many were left out
/// in between. Causes are `&'static str`s named at the log sites, so the table stays as small
/// as the number of sites whatever clients send.
///
/// ```ignore
/// static REFUSED: LogLimit = LogLimit::new(LOG_INTERVAL);
/// if let Some(suppressed) = REFUSED.admit("no token") {
///     tracing::warn!(suppressed, "refused a request without the bearer token");
/// }
/// ```
#[derive(Debug)]
pub(crate) struct LogLimit {
    interval: Duration,
    causes: Mutex<Vec<Cause>>,
}

#[derive(Debug)]
struct Cause {
    name: &'static str,
    logged: Instant,
    suppressed: u64,
}

impl LogLimit {
    /// A limit of one warning per cause per `interval`.
    pub(crate) const fn new(interval: Duration) -> LogLimit {
        LogLimit {
            interval,
            causes: Mutex::new(Vec::new()),
        }
    }

    /// Whether to log a warning for `cause` now: `Some(n)` where `n` warnings of that cause
    /// were left out since the last one logged, `None` to leave this one out.
    pub(crate) fn admit(&self, cause: &'static str) -> Option<u64> {
        self.admit_at(cause, Instant::now())
    }

    /// [`admit`](Self::admit) at `now` (which must not go back from one call to the next).
    pub(crate) fn admit_at(&self, cause: &'static str, now: Instant) -> Option<u64> {
        let mut causes = self.causes.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(known) = causes.iter_mut().find(|known| known.name == cause) else {
            causes.push(Cause {
                name: cause,
                logged: now,
                suppressed: 0,
            });
            return Some(0);
        };
        if now.saturating_duration_since(known.logged) < self.interval {
            known.suppressed += 1;
            return None;
        }
        known.logged = now;
        Some(std::mem::take(&mut known.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_per_cause_per_interval_then_the_count_left_out() {
        let limit = LogLimit::new(Duration::from_secs(10));
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        assert_eq!(limit.admit_at("a", at(0)), Some(0));
        assert_eq!(limit.admit_at("a", at(0)), None);
        assert_eq!(limit.admit_at("a", at(5)), None);
        // Another cause has a count of its own.
        assert_eq!(limit.admit_at("b", at(5)), Some(0));
        assert_eq!(limit.admit_at("a", at(9)), None);
        assert_eq!(limit.admit_at("a", at(10)), Some(3));
        assert_eq!(limit.admit_at("a", at(11)), None);
        assert_eq!(limit.admit_at("b", at(11)), None);
        // Long after: logged, with what was left out meanwhile (none for `a` since 11 s).
        assert_eq!(limit.admit_at("a", at(100)), Some(1));
        assert_eq!(limit.admit_at("a", at(101)), None);
        assert_eq!(limit.admit_at("b", at(101)), Some(1));
        assert_eq!(limit.causes.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_clock_that_goes_back_suppresses_and_counts() {
        let limit = LogLimit::new(Duration::from_secs(10));
        let start = Instant::now() + Duration::from_secs(60);
        assert_eq!(limit.admit_at("a", start), Some(0));
        assert_eq!(limit.admit_at("a", start - Duration::from_secs(30)), None);
        assert_eq!(
            limit.admit_at("a", start + Duration::from_secs(10)),
            Some(1)
        );
    }
}
