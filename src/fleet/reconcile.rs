//! The fleet worker's decision on a record, pure: given the fleet's record (a script's reply or a
//! message), what the worker knows of the dependency, and whether Redis is reachable, what to do
//! with the local breaker. No I/O, no clock, no atomics: the worker reads the breaker's time and
//! performs the plan (`worker::Worker::apply`).

use super::millis::{LocalMs, ServerMs};
use super::script::{Record, Shared};

/// Where a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A script's reply: the record as it stood when the script ran.
    Reply,
    /// A message on the channel.
    Message,
}

/// Whether a record is applied, by its epoch against the last reply's (`reply_epoch`): a reply
/// is always applied and becomes the mark; a message older than the mark was published before a
/// reply already applied (it waited in the channel) and is dropped. Only replies move the mark,
/// so a forged message cannot raise it, and a server whose epoch went back (restored from an
/// older snapshot) resets it with its next reply. `Some(mark)`: apply, and keep `mark`.
pub(crate) fn order(source: Source, epoch: u64, reply_epoch: u64) -> Option<u64> {
    match source {
        Source::Message if epoch < reply_epoch => None,
        Source::Message => Some(reply_epoch),
        Source::Reply => Some(epoch),
    }
}

/// What the worker knows of one dependency when a record arrives (after it took the tap's news).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Known {
    /// A record has been read since the worker (re)connected.
    pub(crate) synced: bool,
    /// The fleet generation of the last record applied.
    pub(crate) generation: Option<u64>,
    /// A change by hand waits to be sent: it decides the state once sent.
    pub(crate) manual_pending: bool,
    /// The breaker is open because of its own trip (it votes).
    pub(crate) local_trip: bool,
    /// The fleet generation of this instance's probe lease, if it holds one.
    pub(crate) mine: Option<u64>,
}

/// What a record tells the worker.
#[derive(Clone, Copy, Debug)]
pub(crate) struct News<'a> {
    pub(crate) record: &'a Record,
    /// Apply the state even if its generation is the one known (a reconnection, a wipe).
    pub(crate) force: bool,
    /// This worker's name in leases.
    pub(crate) holder: &'a str,
    /// Whether Redis is reachable now.
    pub(crate) connected: bool,
    /// The breaker's time when the record is applied.
    pub(crate) local_now: LocalMs,
}

/// A state to adopt into the local word (through `CircuitBreaker::adopt_in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Adoption {
    Open(LocalMs),
    Closed,
    Isolated,
}

/// What becomes of this instance's probe lease and the grant on its tap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lease {
    Keep,
    /// Forget it and take the grant back.
    Drop,
}

/// What the tap and the timers know of another instance's lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elsewhere {
    Keep,
    Clear,
    /// Another instance holds the lease for `remaining_ms` more, until `until` on this clock.
    Until {
        remaining_ms: u64,
        until: LocalMs,
    },
}

/// The plan for one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Adoptions, in order.
    pub(crate) adopt: Vec<Adoption>,
    /// The new value of `Known::local_trip`, if it changes.
    pub(crate) local_trip: Option<bool>,
    pub(crate) lease: Lease,
    pub(crate) elsewhere: Elsewhere,
    /// No local call waits for the fleet's probe any more (the record is not open).
    pub(crate) unwant: bool,
    /// Whether the fleet decides who takes the probe slot.
    pub(crate) governed: bool,
}

/// Decide what a record does to the dependency.
pub(crate) fn reconcile(news: News<'_>, known: Known) -> Plan {
    let record = news.record;
    let local = |at: ServerMs| LocalMs::of(at, record.now, news.local_now);
    // A change by hand not yet sent decides the state once it is: the record is not adopted
    // over it (that would undo the change locally until the change lands).
    let new = !known.manual_pending
        && (news.force || !known.synced || known.generation != Some(record.generation));
    let newer_generation = known.generation.is_some_and(|g| g != record.generation);
    let mut plan = Plan {
        adopt: Vec::new(),
        local_trip: None,
        lease: Lease::Keep,
        elsewhere: Elsewhere::Keep,
        unwant: false,
        governed: news.connected && record.state == Shared::Open,
    };
    match record.state {
        Shared::Closed | Shared::Isolated => {
            plan.lease = Lease::Drop;
            plan.elsewhere = Elsewhere::Clear;
            plan.unwant = true;
            // An instance's own trip is not undone by a closed record it already knew (or one
            // rebuilt after a wipe): it is sent as a vote. A close the fleet made after (a new
            // generation heard in order) does undo it.
            let own_trip_stands = record.state == Shared::Closed
                && known.local_trip
                && (news.force || !newer_generation);
            if new && !own_trip_stands {
                plan.local_trip = Some(false);
                plan.adopt.push(if record.state == Shared::Closed {
                    Adoption::Closed
                } else {
                    Adoption::Isolated
                });
            }
        }
        Shared::Open => {
            let ours = record.holder.as_deref() == Some(news.holder)
                && known.mine == Some(record.generation);
            if new && !ours {
                plan.local_trip = Some(false);
                // An opening later than the server's own clock (a foreign value, or the server's
                // clock stepped back) counts from now: never kept open longer.
                plan.adopt
                    .push(Adoption::Open(local(record.at.min(record.now))));
            }
            match &record.holder {
                _ if ours => {}
                Some(_) if record.lease_until > record.now => {
                    plan.elsewhere = Elsewhere::Until {
                        remaining_ms: record.lease_until.0 - record.now.0,
                        until: local(record.lease_until),
                    };
                    plan.lease = Lease::Drop;
                }
                _ => {
                    plan.elsewhere = Elsewhere::Clear;
                    if known.mine.is_some_and(|g| g != record.generation) {
                        plan.lease = Lease::Drop;
                    }
                    if record.lease_until.0 > 0 && record.holder.is_none() {
                        // A lease ran out with no verdict: open from its end.
                        plan.adopt.push(Adoption::Open(local(record.lease_until)));
                    }
                }
            }
        }
    }
    plan
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
