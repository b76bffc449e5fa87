//! The values a breaker reports: its [`State`], a [`Blocked`] rejection and why
//! ([`BlockedReason`]), and each [`Transition`] with its [`TransitionReason`].
//!
//! Plain values with no behaviour of their own: the breaker makes them, the observers, the agent
//! layer and the tower middleware read them.

use core::fmt;
use core::time::Duration;

use crate::config::Limits;

/// The effective state of a breaker.
///
/// Derived from the stored word and the clock; reading it never changes anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum State {
    /// Calls are admitted; counted failures accumulate toward the threshold.
    Closed,
    /// Calls are rejected until the cooldown has elapsed.
    Open,
    /// The cooldown has elapsed: exactly one probe is admitted (or is in flight).
    HalfOpen,
}

impl State {
    /// The state's name as used in logs and JSON: `closed`, `open`, `half_open`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(toolbreaker::State::HalfOpen.as_str(), "half_open");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller that is not admitted is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum BlockedReason {
    /// The breaker is open and its cooldown has not elapsed.
    DependencyOpen,
    /// The breaker is half-open and another caller holds the probe slot.
    ProbeInFlight,
    /// The breaker was forced open by hand ([`CircuitBreaker::force_open`](crate::CircuitBreaker::force_open))
    /// and stays open until it is closed or reset by hand.
    Isolated,
    /// No member of a [`Pool`](crate::pool::Pool) of equivalent upstreams admits the call:
    /// every one is open, isolated or has its probe in flight, and no panic admits one. The
    /// retry-after is the earliest of its members'.
    PoolExhausted,
    /// The breaker admits calls, but as many as its cap on calls in flight allows are in flight
    /// already ([`Builder::max_in_flight`](crate::breaker::Builder::max_in_flight),
    /// [`Builder::adaptive_concurrency`](crate::breaker::Builder::adaptive_concurrency)): the
    /// dependency is busy, not down. Never counted as a failure, never moves the breaker; the
    /// retry-after is 1 ms (a slot frees when any call in flight ends).
    Saturated,
    /// Adaptive throttling shed the call while the breaker is closed: the dependency is failing
    /// a growing share of its calls, and this one was not sent, to let it recover
    /// ([`Builder::adaptive_throttling`](crate::breaker::Builder::adaptive_throttling)). The
    /// retry-after is a tenth of the throttle's window.
    Throttled,
}

impl BlockedReason {
    /// The reason as used in logs and JSON: `dependency_open`, `probe_in_flight`, `isolated`,
    /// `pool_exhausted`, `saturated` or `throttled`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(toolbreaker::BlockedReason::ProbeInFlight.as_str(), "probe_in_flight");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            BlockedReason::DependencyOpen => "dependency_open",
            BlockedReason::ProbeInFlight => "probe_in_flight",
            BlockedReason::Isolated => "isolated",
            BlockedReason::PoolExhausted => "pool_exhausted",
            BlockedReason::Saturated => "saturated",
            BlockedReason::Throttled => "throttled",
        }
    }
}

/// Why a breaker changed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum TransitionReason {
    /// Closed → open: the consecutive counted failures reached the threshold (or a lowered
    /// threshold was already reached when the configuration changed).
    FailureThreshold,
    /// Closed → open: counted failures reached the failure-rate rule's share of the judged calls
    /// in the window, which held at least its minimum.
    FailureRate,
    /// Closed → open: slow calls reached the slow-call rule's share of the judged calls in the
    /// window, which held at least its minimum.
    SlowCallRate,
    /// Closed → open at once: a rate-limited failure's hint was longer than the cooldown
    /// ([`Builder::open_on_long_hint`](crate::breaker::Builder::open_on_long_hint), off by default).
    RetryAfter,
    /// Open → half-open: the cooldown elapsed and a caller took the probe slot.
    CooldownElapsed,
    /// Half-open → closed: the probe succeeded.
    ProbeSucceeded,
    /// Half-open → open: the probe's outcome was a counted failure.
    ProbeFailed,
    /// Half-open → open: the probe did not report within its lease (found by the next caller).
    ProbeTimedOut,
    /// Any change made by hand: `force_open`, `force_closed`, `reset`.
    Manual,
    /// A change adopted from the fleet (feature `redis`): another gateway instance tripped the
    /// dependency, its probe's verdict closed or reopened it, it was changed by hand there, or this
    /// instance was given the fleet's probe. Heard only on the instances that adopt it; the
    /// instance that made the change hears its own reason.
    Fleet,
}

impl TransitionReason {
    /// The reason as used in logs, metrics and JSON: `failure_threshold`, `failure_rate`,
    /// `slow_call_rate`, `retry_after`, `cooldown_elapsed`,
    /// `probe_succeeded`, `probe_failed`, `probe_timed_out`, `manual` or `fleet`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(toolbreaker::TransitionReason::ProbeTimedOut.as_str(), "probe_timed_out");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            TransitionReason::FailureThreshold => "failure_threshold",
            TransitionReason::FailureRate => "failure_rate",
            TransitionReason::SlowCallRate => "slow_call_rate",
            TransitionReason::RetryAfter => "retry_after",
            TransitionReason::CooldownElapsed => "cooldown_elapsed",
            TransitionReason::ProbeSucceeded => "probe_succeeded",
            TransitionReason::ProbeFailed => "probe_failed",
            TransitionReason::ProbeTimedOut => "probe_timed_out",
            TransitionReason::Manual => "manual",
            TransitionReason::Fleet => "fleet",
        }
    }
}

impl fmt::Display for TransitionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bits of a transition's generation (the word's generation field, which `breaker::word` checks
/// against this).
pub(crate) const TRANSITION_GENERATION_BITS: u32 = 20;
const ORDER_BITS: u32 = TRANSITION_GENERATION_BITS + 1;
const ORDER_MASK: u32 = (1 << ORDER_BITS) - 1;
const ORDER_HALF: u32 = 1 << (ORDER_BITS - 1);

/// A change of a breaker's state: what changed, why, and the figures at the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Transition {
    from: State,
    to: State,
    generation: u32,
    reason: TransitionReason,
    failures: u64,
    cooldown_ms: u64,
}

impl Transition {
    pub(crate) const fn new(
        from: State,
        to: State,
        generation: u32,
        reason: TransitionReason,
        failures: u64,
        limits: &Limits,
    ) -> Self {
        Transition {
            from,
            to,
            generation,
            reason,
            failures,
            cooldown_ms: limits.cooldown_ms,
        }
    }

    /// The same transition with `cooldown_ms` in force (a backed-off or spread cooldown).
    pub(crate) const fn with_cooldown_ms(mut self, cooldown_ms: u64) -> Self {
        self.cooldown_ms = cooldown_ms;
        self
    }

    /// The state before the transition.
    pub const fn from(&self) -> State {
        self.from
    }

    /// The state after the transition.
    pub const fn to(&self) -> State {
        self.to
    }

    /// The generation the breaker entered with this transition (20 bits: it wraps to 0 after 1,048,575).
    pub const fn generation(&self) -> u32 {
        self.generation
    }

    /// Whether this transition came after `earlier` on the same breaker.
    ///
    /// A breaker's transitions have a total order: by generation, and within a generation a
    /// `cooldown_elapsed` (which keeps its generation) after the transition that began it. Both
    /// wrap, so the order is judged as serial numbers are (RFC 1982): `self` is after `earlier` if
    /// it is less than half the cycle (2^20 transitions) ahead of it. Listeners hear transitions in
    /// this order; a consumer that gathers transitions from elsewhere (a log, another process) can
    /// use it to keep only the newest.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let heard = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&heard);
    /// let breaker = CircuitBreaker::builder()
    ///     .failure_threshold(1)
    ///     .clock(clock)
    ///     .on_transition(move |e| log.lock().unwrap().push(*e.transition()))
    ///     .build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout)); // trip
    /// mock.increment(breaker.config().cooldown());
    /// breaker.try_acquire().unwrap().record(Outcome::Success); // probe claimed, then closed
    ///
    /// let heard = heard.lock().unwrap();
    /// assert_eq!(heard.len(), 3);
    /// assert!(heard[1].is_after(&heard[0]) && heard[2].is_after(&heard[1]));
    /// assert_eq!(heard[0].generation(), heard[1].generation(), "the claim keeps its generation");
    /// assert!(!heard[0].is_after(&heard[2]));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub const fn is_after(&self, earlier: &Transition) -> bool {
        let ahead = self.order().wrapping_sub(earlier.order()) & ORDER_MASK;
        ahead != 0 && ahead < ORDER_HALF
    }

    /// The transition's place in its breaker's order: the generation, then whether it is the
    /// `cooldown_elapsed` of that generation; `ORDER_BITS` bits, wrapping.
    const fn order(&self) -> u32 {
        let within = matches!(self.reason, TransitionReason::CooldownElapsed) as u32;
        ((self.generation << 1) | within) & ORDER_MASK
    }

    /// Why the breaker changed state.
    pub const fn reason(&self) -> TransitionReason {
        self.reason
    }

    /// The counted failures behind the change: for a trip by the consecutive rule, the count that
    /// reached the threshold; for a trip by the failure-rate rule, the counted failures in the
    /// window, and by the slow-call rule, the slow calls in it; 1 for a failed or timed-out
    /// probe; for a change made by hand from closed, the consecutive count at the time;
    /// otherwise 0.
    pub const fn failures(&self) -> u64 {
        self.failures
    }

    /// The cooldown in force when the change was made, in whole milliseconds: after a change to
    /// open, how long until the next probe (unless the configuration changes meanwhile).
    pub const fn cooldown(&self) -> Duration {
        Duration::from_millis(self.cooldown_ms)
    }
}

/// A call the breaker did not admit. Nothing was sent to the dependency.
///
/// A value with accessors, `Display` and `std::error::Error`, so it can be boxed into any error
/// type (the shape of governor's `NotUntil` and tower's `Overloaded`). It is small and `Copy`
/// (16 bytes: the retry-after in milliseconds, the state and the reason), so a rejection writes
/// two words and owns nothing to drop: the cost an outage puts on every call.
///
/// It does not carry the dependency's name: whoever asked the breaker holds it
/// ([`CircuitBreaker::name`](crate::CircuitBreaker::name)), and every layer that reports one
/// takes it from there: the model's [`ToolResult::blocked`](crate::ToolResult::blocked), the
/// guard pipeline, the MCP client and gateway, and the `call blocked` tracing event.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{Blocked, BlockedReason, CircuitBreaker, FailureKind, Outcome, State};
///
/// let (clock, _mock) = toolbreaker::quanta::Clock::mock();
/// let breaker = CircuitBreaker::builder()
///     .name("search")
///     .failure_threshold(1)
///     .cooldown(Duration::from_secs(2))
///     .clock(clock)
///     .build()?;
/// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
///
/// let blocked: Blocked = breaker.try_acquire().unwrap_err();
/// assert_eq!(blocked.state(), State::Open);
/// assert_eq!(blocked.reason(), BlockedReason::DependencyOpen);
/// assert_eq!(blocked.retry_after(), Duration::from_secs(2));
/// assert_eq!(
///     blocked.to_string(),
///     "circuit open: dependency calls blocked for another 2.000 s"
/// );
/// // The name is the breaker's.
/// assert_eq!(format!("{}: {blocked}", breaker.name()), "search: circuit open: dependency calls blocked for another 2.000 s");
/// assert!(std::mem::size_of::<Blocked>() <= 16);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Blocked {
    retry_after_ms: u64,
    state: State,
    reason: BlockedReason,
}

impl Blocked {
    #[inline]
    pub(crate) const fn new(state: State, reason: BlockedReason, retry_after_ms: u64) -> Self {
        Blocked {
            retry_after_ms,
            state,
            reason,
        }
    }

    /// How long until a call may be admitted again, in whole milliseconds and never zero: the
    /// remaining cooldown while open, the time left on the probe's lease while a probe is in
    /// flight. An isolated breaker has no known end, so it gives its cooldown: the interval at
    /// which to ask again. A call shed by adaptive throttling gives a tenth of the throttle's
    /// window, when its probability is next computed afresh.
    pub const fn retry_after(&self) -> Duration {
        Duration::from_millis(self.retry_after_ms)
    }

    /// The state the breaker was in: [`State::Open`], or [`State::HalfOpen`] with a probe in
    /// flight; a pool's rejection ([`BlockedReason::PoolExhausted`]) is [`State::Open`]; a
    /// saturated one ([`BlockedReason::Saturated`]) the state that admitted the call before the
    /// cap refused it ([`State::Closed`], or [`State::HalfOpen`] for a probe).
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
        let secs = self.retry_after().as_secs_f64();
        let what = match self.reason {
            BlockedReason::DependencyOpen => "circuit open: dependency calls blocked",
            BlockedReason::ProbeInFlight => {
                "circuit half-open: a probe is in flight, other calls blocked"
            }
            BlockedReason::Isolated => {
                return write!(
                    f,
                    "circuit isolated by hand: dependency calls blocked until it is closed by hand; \
                     ask again in {secs:.3} s"
                );
            }
            BlockedReason::PoolExhausted => "every upstream of the pool unavailable: calls blocked",
            BlockedReason::Saturated => {
                return write!(
                    f,
                    "dependency busy: its cap on calls in flight is reached; ask again in {secs:.3} s"
                );
            }
            BlockedReason::Throttled => {
                return write!(
                    f,
                    "circuit closed, dependency degrading: call shed by adaptive throttling; ask \
                     again in {secs:.3} s"
                );
            }
        };
        write!(f, "{what} for another {secs:.3} s")
    }
}

impl std::error::Error for Blocked {}
