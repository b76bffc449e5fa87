//! What a pool (`crate::pool`) asks of a member breaker: a permit when the member admits one,
//! else what it would answer, found without counting or logging a rejection (a member passed
//! over while another serves the call blocked nothing), and how long it has been open, for the
//! panic rule.

use super::machine::CircuitBreaker;
use super::permit::Permit;
use crate::state::decide::{self, Admission};
use crate::state::word::{Kind, Word};
use crate::time::millis_floor;
use crate::types::{BlockedReason, State};

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
            Some(permit) => Ok(permit),
            None => self.pooled_not_closed(word),
        }
    }

    /// `try_acquire_pooled` past the closed word: out of line.
    #[inline(never)]
    fn pooled_not_closed(&self, word: Word) -> Result<Permit<'_>, Refusal> {
        match self.refusal(word) {
            None => self
                .acquire_past_open(word, None)
                .map_err(|blocked| Refusal {
                    retry_after_ms: millis_floor(blocked.retry_after()).max(1),
                    ejected: blocked.state() == State::Open,
                    open_for_ms: None,
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
            return None;
        };
        let tripped = reason == BlockedReason::DependencyOpen
            && matches!(word.kind(), Kind::Open | Kind::Probing);
        Some(Refusal {
            retry_after_ms,
            ejected: state == State::Open,
            open_for_ms: tripped.then(|| {
                let now = now.unwrap_or_else(|| self.now_ms());
                now.saturating_sub(word.payload())
            }),
        })
    }
}
