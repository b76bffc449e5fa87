//! The fleet worker's decisions, pure: given the fleet's record (a script's reply or a message),
//! what the worker knows of the dependency, and whether Redis is reachable, what to do with the
//! local breaker (`reconcile`); whether to claim the fleet's probe (`claim`, and of its own
//! accord at a cooldown's end: `claim_at_cooldown_end`) and what the claim's answer does
//! (`claimed`); what to do with a changed count (`report`); and what the timers do with a lease,
//! this instance's (`lease_timer`) or another's that ran out (`elsewhere_ran_out`). No I/O, no
//! clock, no atomics: the worker reads the breaker's time and its timers and performs the plan.

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
                        remaining_ms: record.now.until(record.lease_until),
                        until: local(record.lease_until),
                    };
                    plan.lease = Lease::Drop;
                }
                _ => {
                    plan.elsewhere = Elsewhere::Clear;
                    if known.mine.is_some_and(|g| g != record.generation) {
                        plan.lease = Lease::Drop;
                    }
                    if record.lease_until != ServerMs::UNSET && record.holder.is_none() {
                        // A lease ran out with no verdict: open from its end.
                        plan.adopt.push(Adoption::Open(local(record.lease_until)));
                    }
                }
            }
        }
    }
    plan
}

/// When to claim the fleet's probe of its own accord, at the end of an open period's cooldown,
/// so a call that arrives then finds the probe granted here or known to be another instance's
/// (not blocked while no probe is out anywhere). `record` is the record applied; `scheduled` the
/// start of the last period a claim was scheduled for; `cooldown_ms` the cooldown in force.
/// A period starts at the record's `at`, or at the end of its last lease (a lease that ran out
/// with no verdict), as the claim script counts it. Each period is claimed for once: a lease given
/// back (the record's lease end cleared) starts none, so idle instances do not pass the lease
/// around. `Some((start, ms))`: claim in `ms` (0: now), and remember `start`.
pub(crate) fn claim_at_cooldown_end(
    record: &Record,
    connected: bool,
    scheduled: Option<ServerMs>,
    cooldown_ms: u64,
) -> Option<(ServerMs, u64)> {
    if !connected || record.state != Shared::Open || record.holder.is_some() {
        return None;
    }
    let start = record.at.max(record.lease_until);
    if scheduled.is_some_and(|scheduled| start <= scheduled) {
        return None;
    }
    let ready = ServerMs(start.0.saturating_add(cooldown_ms));
    Some((start, record.now.until(ready)))
}

/// What the worker knows when it may claim the fleet's probe for a dependency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClaimFacts {
    /// Redis is reachable.
    pub(crate) connected: bool,
    /// A local call was blocked waiting for the fleet's probe.
    pub(crate) wanted: bool,
    /// The last record applied is open.
    pub(crate) open: bool,
    /// This instance holds a probe lease already.
    pub(crate) mine: bool,
    /// The dependency's record is bad (the breaker works locally).
    pub(crate) bad: bool,
    /// The wait the last claim was told has not ended.
    pub(crate) waiting: bool,
    /// Another instance's lease has not ended.
    pub(crate) elsewhere: bool,
}

/// Whether to claim the fleet's probe now: only for a wanted probe of an open record, with Redis
/// reachable, holding no lease, with no wait or other instance's lease still running, and a
/// record that is not bad.
pub(crate) fn claim(facts: ClaimFacts) -> bool {
    facts.connected
        && facts.wanted
        && facts.open
        && !facts.mine
        && !facts.bad
        && !facts.waiting
        && !facts.elsewhere
}

/// What the claim script answered, as the decision after it needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClaimAnswer {
    /// This instance holds the lease; `already`: of the generation it already held.
    Won { already: bool },
    /// Another instance holds it; `end_known`: its lease's end lies after the server's now.
    Held { end_known: bool },
    /// Not before `ms` more milliseconds (the fleet's cooldown).
    Wait { ms: u64 },
    /// Any other reply (bad, missing, a record written): no claim was decided.
    Other,
}

/// When to claim again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Again {
    /// Keep the timer as it is.
    Keep,
    /// No timer: the record applied with the reply (a lease's end, a release) decides.
    Clear,
    /// In this many milliseconds.
    After { ms: u64 },
}

/// What to do after a claim's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AfterClaim {
    /// Free the local probe slot for the fleet's probe and grant it (a lease newly won).
    pub(crate) take_probe: bool,
    /// Whether a local call still wants the probe.
    pub(crate) wanted: bool,
    pub(crate) again: Again,
}

/// Decide what a claim's answer does. Held with its lease's end known: the record applied sets
/// that end as the time another instance probes, and its release or verdict, when heard, clears
/// it, so the claim is made again then; with no end known, not again before a probe window
/// (`probe_window_ms`), or blocked calls would ask at every turn.
pub(crate) fn claimed(answer: ClaimAnswer, probe_window_ms: u64) -> AfterClaim {
    match answer {
        ClaimAnswer::Won { already } => AfterClaim {
            take_probe: !already,
            wanted: false,
            again: Again::Clear,
        },
        ClaimAnswer::Held { end_known } => AfterClaim {
            take_probe: false,
            wanted: true,
            again: if end_known {
                Again::Clear
            } else {
                Again::After {
                    ms: probe_window_ms,
                }
            },
        },
        // The call that wanted it will ask again; keep wanting so the timer claims.
        ClaimAnswer::Wait { ms } => AfterClaim {
            take_probe: false,
            wanted: true,
            again: Again::After { ms },
        },
        ClaimAnswer::Other => AfterClaim {
            take_probe: false,
            wanted: false,
            again: Again::Keep,
        },
    }
}

/// What the worker knows when a dependency's count may be reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReportFacts {
    /// A count changed or a trip happened since the last report.
    pub(crate) pending: bool,
    /// The breaker's consecutive counted failures; `None` when it is not closed.
    pub(crate) closed_failures: Option<u64>,
    /// The last report was less than the report interval ago.
    pub(crate) recent: bool,
    /// The last record applied is closed.
    pub(crate) fleet_closed: bool,
    /// The breaker is open because of its own trip (it votes).
    pub(crate) local_trip: bool,
    /// The breaker's own consecutive-failure threshold, if it has one.
    pub(crate) own_threshold: Option<u32>,
    /// The fleet's shared threshold, if one is set (`Fleet::failure_threshold`).
    pub(crate) fleet_threshold: Option<u32>,
}

/// What to do with a dependency's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// Nothing is pending.
    Nothing,
    /// A count that changes again within the report interval of the last report waits for the
    /// interval's end (a flapping dependency costs one report per interval).
    Later,
    /// Send `count` (a trip: the own threshold) against `threshold`.
    Send { count: u64, threshold: u32 },
    /// Nothing to tell the fleet (its record is not closed, or the breaker neither counts nor
    /// tripped): the pending report is dropped.
    Drop,
}

/// Decide what a dependency's count does. A trip is sent at once. A breaker with only a rate
/// rule counts no consecutive failures the fleet could add up: its shared threshold is out of
/// reach, and its trips are shared as trips.
pub(crate) fn report(facts: ReportFacts) -> Report {
    if !facts.pending {
        return Report::Nothing;
    }
    if facts.closed_failures.is_some() && facts.recent {
        return Report::Later;
    }
    if !facts.fleet_closed || (facts.closed_failures.is_none() && !facts.local_trip) {
        return Report::Drop;
    }
    let own = facts.own_threshold.unwrap_or(u32::MAX);
    Report::Send {
        count: facts.closed_failures.unwrap_or(u64::from(own)),
        threshold: facts.fleet_threshold.unwrap_or(own),
    }
}

/// What the timers know of this instance's probe lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeaseFacts {
    /// The local probe slot was granted (the word was open when the lease was won).
    pub(crate) granted: bool,
    /// The granted slot is still free: no local caller took it.
    pub(crate) slot_unused: bool,
    /// The probe window (the time a local caller has to take the slot) is over.
    pub(crate) window_over: bool,
    /// The lease itself is over.
    pub(crate) lease_over: bool,
}

/// What the timers do with this instance's probe lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeaseTimer {
    Keep,
    /// No local caller took the probe (none was granted, or its window is over): take the grant
    /// back and give the lease back to the fleet.
    Release,
    /// The lease ran out under a probe taken here: take the grant back and forget it (the fleet
    /// reopens from its end).
    Expire,
}

/// Decide what the timers do with this instance's probe lease.
pub(crate) fn lease_timer(facts: LeaseFacts) -> LeaseTimer {
    let unused = !facts.granted || facts.slot_unused;
    if unused && (facts.window_over || !facts.granted) {
        LeaseTimer::Release
    } else if facts.lease_over {
        LeaseTimer::Expire
    } else {
        LeaseTimer::Keep
    }
}

/// Another instance's lease ran out with no verdict heard (at `local_now` on this breaker's
/// clock): adopt open from its end, that is from now; the worker claims again after the
/// cooldown in force. `None` while the lease runs.
pub(crate) fn elsewhere_ran_out(over: bool, local_now: LocalMs) -> Option<Adoption> {
    over.then_some(Adoption::Open(local_now))
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
