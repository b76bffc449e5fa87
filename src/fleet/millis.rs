//! The fleet's two clocks as two types, so that one is never taken for the other: a breaker's
//! local milliseconds and Redis's server milliseconds.

/// Milliseconds on a breaker's clock, since its origin (the time of its packed word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LocalMs(pub(crate) u64);

/// Milliseconds of Redis's server time (`TIME`), since the Unix epoch: every time in a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ServerMs(pub(crate) u64);

impl ServerMs {
    /// No time: a record's field that was never set (a lease never taken).
    pub(crate) const UNSET: ServerMs = ServerMs(0);

    /// The milliseconds from this time to `later`; 0 if `later` is not after it.
    pub(crate) fn until(self, later: ServerMs) -> u64 {
        later.0.saturating_sub(self.0)
    }
}

impl LocalMs {
    /// Now on `breaker`'s clock.
    pub(crate) fn now(breaker: &crate::breaker::CircuitBreaker) -> LocalMs {
        LocalMs(breaker.now_ms())
    }

    /// `ms` milliseconds after this time, saturating.
    pub(crate) fn after(self, ms: u64) -> LocalMs {
        LocalMs(self.0.saturating_add(ms))
    }

    /// Server time `at` in the breaker's time, given that the server read `server_now` when the
    /// breaker read `local_now`; saturating at both ends.
    pub(crate) fn of(at: ServerMs, server_now: ServerMs, local_now: LocalMs) -> LocalMs {
        if at <= server_now {
            LocalMs(local_now.0.saturating_sub(server_now.0 - at.0))
        } else {
            LocalMs(local_now.0.saturating_add(at.0 - server_now.0))
        }
    }
}
