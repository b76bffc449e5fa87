//! `Blocked`: the value a rejected call gets instead of a permit.

use core::fmt;
use core::time::Duration;

use crate::state::{BlockedReason, State};

/// A call the breaker did not admit. Nothing was sent to the dependency.
///
/// A value with accessors, `Display` and `std::error::Error`, so it can be boxed into any error
/// type (the shape of governor's `NotUntil` and tower's `Overloaded`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{BlockedReason, CircuitBreaker, FailureKind, Outcome, State};
///
/// let (clock, _mock) = toolbreaker::quanta::Clock::mock();
/// let breaker = CircuitBreaker::builder()
///     .failure_threshold(1)
///     .cooldown(Duration::from_secs(2))
///     .clock(clock)
///     .build()?;
/// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
///
/// let blocked = breaker.try_acquire().unwrap_err();
/// assert_eq!(blocked.state(), State::Open);
/// assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
/// assert_eq!(blocked.retry_after(), Duration::from_secs(2));
/// assert_eq!(blocked.to_string(), "circuit open: dependency calls blocked for another 2.000 s");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Blocked {
    state: State,
    reason: BlockedReason,
    retry_after: Duration,
}

impl Blocked {
    pub(crate) const fn new(state: State, reason: BlockedReason, retry_after: Duration) -> Self {
        Blocked {
            state,
            reason,
            retry_after,
        }
    }

    /// How long until a call may be admitted again, in whole milliseconds and never zero: the
    /// remaining cooldown while open, the time left on the probe's lease while a probe is in
    /// flight. An isolated breaker has no known end, so it gives its cooldown: the interval at
    /// which to ask again.
    pub const fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// The state the breaker was in: [`State::Open`], or [`State::HalfOpen`] with a probe in flight.
    pub const fn state(&self) -> State {
        self.state
    }

    /// Why the call was blocked.
    pub const fn reason(&self) -> BlockedReason {
        self.reason
    }
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.reason {
            BlockedReason::DependencyOpen => "circuit open: dependency calls blocked",
            BlockedReason::ProbeInFlight => {
                "circuit half-open: a probe is in flight, other calls blocked"
            }
            BlockedReason::Isolated => {
                return write!(
                    f,
                    "circuit isolated by hand: dependency calls blocked until it is closed by hand; \
                     ask again in {:.3} s",
                    self.retry_after.as_secs_f64()
                );
            }
        };
        write!(
            f,
            "{what} for another {:.3} s",
            self.retry_after.as_secs_f64()
        )
    }
}

impl std::error::Error for Blocked {}
