//! What a pool (`crate::pool`) asks of a member breaker: a permit when the member admits one,
//! else what it would answer, found without counting or logging a rejection (a member passed
//! over while another serves the call blocked nothing), and how long it has been open, for the
//! panic rule.

use super::machine::CircuitBreaker;
use super::permit::Permit;
use crate::state::decide::{self, Admission};
use crate::state::word::{Kind, Word};
use crate::time::millis_floor;
use crate::types::{Blocked, BlockedReason, State};

/// A member that does not admit a call now: what it would answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Its retry-after, in ms (never zero).
    pub(crate) retry_after_ms: u64,
    /// Open, by its own counts or by hand: it counts toward a group's ejected share.
    pub(crate) ejected: bool,
    /// How long ago it tripped, in ms on its clock, when it is open by its own counts (not
    /// isolated by hand, not half-open with a probe in flight): a member a panic may admit.
    pub(crate) open_for_ms: Option<u64>,
    /// Isolated by hand (`force_open`): its retry-after is no end (only a change by hand ends it).
    pub(crate) isolated: bool,
    /// Refused for load, not health: `Saturated` (its cap is reached) or `Throttled` (shed by
    /// adaptive throttling); `None` for every other refusal.
    pub(crate) busy: Option<BlockedReason>,
}

/// The refusal of a member whose cap on calls in flight is reached: busy, not ejected, so the
/// pool asks another member, and the member's health is untouched.
#[cold]
fn saturated(blocked: Blocked) -> Refusal {
    Refusal {
        retry_after_ms: millis_floor(blocked.retry_after()).max(1),
        ejected: false,
        open_for_ms: None,
        isolated: false,
        busy: Some(BlockedReason::Saturated),
    }
}

impl CircuitBreaker {
    /// A permit, as [`try_acquire`](Self::try_acquire) gives it, or the member's refusal,
    /// neither counted as blocked nor logged. A closed breaker answers on the one load, inline;
    /// a member that looks as if it admits (its cooldown over, the probe slot free) is asked
    /// for real, and a caller that loses that race to another is counted as blocked, as
    /// `try_acquire` counts it.
    #[inline]
    pub(crate) fn try_acquire_pooled(&self) -> Result<Permit<'_>, Refusal> {
        let word = self.word();
        match self.closed_permit(word) {
            Some(permit) => permit.capped_if_counted(false).map_err(saturated),
            None => self.pooled_not_closed(word),
        }
    }

    /// `try_acquire_pooled` past the closed word: out of line.
    #[inline(never)]
    fn pooled_not_closed(&self, word: Word) -> Result<Permit<'_>, Refusal> {
        match self.refusal(word) {
            None => self
                .acquire_past_open_if_counted(word, None, false)
                .map_err(|blocked| match blocked.reason() {
                    BlockedReason::Saturated => saturated(blocked),
                    _ => Refusal {
                        retry_after_ms: millis_floor(blocked.retry_after()).max(1),
                        ejected: blocked.state() == State::Open,
                        open_for_ms: None,
                        isolated: blocked.reason() == BlockedReason::Isolated,
                        busy: (blocked.reason() == BlockedReason::Throttled)
                            .then_some(BlockedReason::Throttled),
                    },
                }),
            Some(refusal) => Err(refusal),
        }
    }

    /// What the breaker would refuse now, asked without taking a permit or the probe slot,
    /// without writing and without counting; `None` when it would admit (closed, or half-open
    /// with the slot free). The answer may be stale by the time the caller acts on it.
    pub(crate) fn refusal_now(&self) -> Option<Refusal> {
        self.refusal(self.word())
    }

    fn refusal(&self, word: Word) -> Option<Refusal> {
        let limits = self.limits();
        let word = self.released(word, &limits);
        let mut now = None;
        let (admission, _) = decide::acquire(word, &self.limits_at(word, &limits), || {
            *now.get_or_insert_with(|| self.now_ms())
        });
        let Admission::Reject {
            state,
            reason,
            retry_after_ms,
        } = admission
        else {
            // A probe a health check's prober takes (it is woken): no caller's, so the member
            // refuses without being asked for real, and no rejection is counted.
            if let Admission::Admit { probe: true, .. } = admission
                && let Some(prober) = self.prober()
                && prober.is_alive()
            {
                prober.wake();
                return Some(Refusal {
                    retry_after_ms: limits.probe_timeout_ms.max(1),
                    ejected: false,
                    open_for_ms: None,
                    isolated: false,
                    busy: None,
                });
            }
            return None;
        };
        let tripped = reason == BlockedReason::DependencyOpen
            && matches!(word.kind(), Kind::Open | Kind::Probing);
        Some(Refusal {
            retry_after_ms,
            isolated: reason == BlockedReason::Isolated,
            ejected: state == State::Open,
            open_for_ms: tripped.then(|| {
                let now = now.unwrap_or_else(|| self.now_ms());
                now.saturating_sub(word.payload())
            }),
            busy: None,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use core::time::Duration;

    use super::*;
    use crate::classify::{FailureKind, Outcome};

    /// A pool's question reads and never writes or counts: at every state the word and the
    /// blocked count stay as they were, and the answer says what `try_acquire` would.
    #[test]
    fn a_refusal_is_read_without_writing_or_counting() {
        let (clock, mock) = quanta::Clock::mock();
        let breaker = CircuitBreaker::builder()
            .failure_threshold(1)
            .cooldown(Duration::from_secs(10))
            .probe_timeout(Duration::from_secs(5))
            .metrics(true)
            .clock(clock)
            .build()
            .unwrap();
        let unchanged = |answer: Option<Refusal>| {
            let word = breaker.word_bits();
            let again = breaker.refusal_now();
            assert_eq!(again, answer);
            assert_eq!(breaker.word_bits(), word);
            assert_eq!(breaker.metrics().unwrap().blocked, 0);
            answer
        };
        assert_eq!(unchanged(breaker.refusal_now()), None, "closed admits");

        let trip = breaker.try_acquire_pooled().unwrap();
        trip.record(Outcome::Failure(FailureKind::Unavailable));
        mock.increment(Duration::from_secs(3));
        let open = unchanged(breaker.refusal_now()).unwrap();
        assert_eq!(
            open,
            Refusal {
                retry_after_ms: 7_000,
                ejected: true,
                open_for_ms: Some(3_000),
                isolated: false,
                busy: None,
            }
        );
        assert_eq!(breaker.try_acquire_pooled().unwrap_err(), open);

        mock.increment(Duration::from_secs(7));
        assert_eq!(
            unchanged(breaker.refusal_now()),
            None,
            "half-open, the slot free"
        );
        let probe = breaker.try_acquire_pooled().unwrap();
        assert!(probe.is_probe());
        let busy = unchanged(breaker.refusal_now()).unwrap();
        assert_eq!(
            (busy.ejected, busy.open_for_ms, busy.retry_after_ms),
            (false, None, 5_000)
        );
        drop(probe);

        breaker.force_open();
        let isolated = unchanged(breaker.refusal_now()).unwrap();
        assert_eq!((isolated.ejected, isolated.open_for_ms), (true, None));
        assert_eq!(
            breaker.metrics().unwrap().blocked,
            0,
            "no refusal was counted"
        );
    }
}
