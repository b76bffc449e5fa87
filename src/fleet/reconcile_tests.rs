//! Every branch of the worker's decision, by table.

use super::*;

/// The server's time in every record here, and the breaker's when it is applied.
const SERVER_NOW: u64 = 10_000;
const LOCAL_NOW: u64 = 1_000;
const ME: &str = "gw-1#0000abcd";

fn record(state: Shared, generation: u64, holder: Option<&str>, at: u64, lease: u64) -> Record {
    Record {
        epoch: 1,
        generation,
        state,
        at: ServerMs(at),
        now: ServerMs(SERVER_NOW),
        holder: holder.map(str::to_owned),
        lease_until: ServerMs(lease),
        hinted_until: ServerMs(0),
    }
}

/// Synced at fleet generation 4, nothing pending, no trip of its own, no lease.
const KNOWN: Known = Known {
    synced: true,
    generation: Some(4),
    manual_pending: false,
    local_trip: false,
    mine: None,
};

/// Server time `at` in the breaker's time.
fn local(at: u64) -> LocalMs {
    LocalMs(LOCAL_NOW + at - SERVER_NOW)
}

fn plan(
    adopt: Vec<Adoption>,
    local_trip: Option<bool>,
    lease: Lease,
    elsewhere: Elsewhere,
) -> Plan {
    Plan {
        adopt,
        local_trip,
        lease,
        elsewhere,
        unwant: false,
        governed: false,
    }
}

/// A closed or isolated record: every lease and wait ends, whatever is adopted.
fn settled(adopt: Vec<Adoption>, local_trip: Option<bool>) -> Plan {
    Plan {
        unwant: true,
        ..plan(adopt, local_trip, Lease::Drop, Elsewhere::Clear)
    }
}

/// An open record, connected: governed.
fn open(
    adopt: Vec<Adoption>,
    local_trip: Option<bool>,
    lease: Lease,
    elsewhere: Elsewhere,
) -> Plan {
    Plan {
        governed: true,
        ..plan(adopt, local_trip, lease, elsewhere)
    }
}

#[test]
fn every_branch_of_the_decision_on_a_record() {
    use Adoption as A;
    use Shared::{Closed, Isolated, Open};
    let trip = Known {
        local_trip: true,
        ..KNOWN
    };
    let mine = |generation| Known {
        mine: Some(generation),
        ..KNOWN
    };
    let live = SERVER_NOW + 300;
    let until = Elsewhere::Until {
        remaining_ms: 300,
        until: local(live),
    };
    // (what, record, known, force, connected, plan)
    let cases: Vec<(&str, Record, Known, bool, bool, Plan)> = vec![
        (
            "closed, a new generation: adopted",
            record(Closed, 5, None, 9_000, 0),
            KNOWN,
            false,
            true,
            settled(vec![A::Closed], Some(false)),
        ),
        (
            "closed, the generation known: nothing adopted",
            record(Closed, 4, None, 9_000, 0),
            KNOWN,
            false,
            true,
            settled(vec![], None),
        ),
        (
            "closed, the generation known, forced: adopted",
            record(Closed, 4, None, 9_000, 0),
            KNOWN,
            true,
            true,
            settled(vec![A::Closed], Some(false)),
        ),
        (
            "closed, the generation known, not synced since a reconnection: adopted",
            record(Closed, 4, None, 9_000, 0),
            Known {
                synced: false,
                ..KNOWN
            },
            false,
            false,
            settled(vec![A::Closed], Some(false)),
        ),
        (
            "closed, a change by hand pending: not adopted over it",
            record(Closed, 5, None, 9_000, 0),
            Known {
                manual_pending: true,
                ..KNOWN
            },
            true,
            true,
            settled(vec![], None),
        ),
        (
            "closed, an own trip, the generation known: the trip stands (a vote)",
            record(Closed, 4, None, 9_000, 0),
            Known {
                synced: false,
                ..trip
            },
            false,
            true,
            settled(vec![], None),
        ),
        (
            "closed, an own trip, a record rebuilt after a wipe (forced): the trip stands",
            record(Closed, 5, None, 9_000, 0),
            trip,
            true,
            true,
            settled(vec![], None),
        ),
        (
            "closed, an own trip, no record known before: the trip stands",
            record(Closed, 1, None, 9_000, 0),
            Known {
                generation: None,
                ..trip
            },
            false,
            true,
            settled(vec![], None),
        ),
        (
            "closed, an own trip, a close of a newer generation heard in order: undone",
            record(Closed, 5, None, 9_000, 0),
            trip,
            false,
            true,
            settled(vec![A::Closed], Some(false)),
        ),
        (
            "isolated: adopted over an own trip",
            record(Isolated, 5, None, 9_000, 0),
            trip,
            true,
            true,
            settled(vec![A::Isolated], Some(false)),
        ),
        (
            "isolated, the lease of this instance: dropped",
            record(Isolated, 5, None, 9_000, 0),
            mine(4),
            false,
            true,
            settled(vec![A::Isolated], Some(false)),
        ),
        (
            "open, a new generation, no lease: adopted from its time, governed",
            record(Open, 5, None, 9_000, 0),
            KNOWN,
            false,
            true,
            open(
                vec![A::Open(local(9_000))],
                Some(false),
                Lease::Keep,
                Elsewhere::Clear,
            ),
        ),
        (
            "open, Redis unreachable: adopted, not governed",
            record(Open, 5, None, 9_000, 0),
            KNOWN,
            false,
            false,
            plan(
                vec![A::Open(local(9_000))],
                Some(false),
                Lease::Keep,
                Elsewhere::Clear,
            ),
        ),
        (
            "open after the server's own clock: from now",
            record(Open, 5, None, SERVER_NOW + 5_000, 0),
            KNOWN,
            false,
            true,
            open(
                vec![A::Open(LocalMs(LOCAL_NOW))],
                Some(false),
                Lease::Keep,
                Elsewhere::Clear,
            ),
        ),
        (
            "open, the generation known: nothing adopted",
            record(Open, 4, None, 9_000, 0),
            KNOWN,
            false,
            true,
            open(vec![], None, Lease::Keep, Elsewhere::Clear),
        ),
        (
            "open, another instance's live lease: its end kept, the lease here dropped",
            record(Open, 5, Some("gw-2#1"), 9_000, live),
            mine(4),
            false,
            true,
            open(vec![A::Open(local(9_000))], Some(false), Lease::Drop, until),
        ),
        (
            "open, another instance's lease past its end: no end kept, nothing more adopted",
            record(Open, 5, Some("gw-2#1"), 9_000, SERVER_NOW),
            KNOWN,
            false,
            true,
            open(
                vec![A::Open(local(9_000))],
                Some(false),
                Lease::Keep,
                Elsewhere::Clear,
            ),
        ),
        (
            "open, this instance's own lease: left as it is",
            record(Open, 5, Some(ME), 9_000, live),
            mine(5),
            false,
            true,
            open(vec![], None, Lease::Keep, Elsewhere::Keep),
        ),
        (
            "open, held under this name but not by this lease: another's",
            record(Open, 5, Some(ME), 9_000, live),
            KNOWN,
            false,
            true,
            open(vec![A::Open(local(9_000))], Some(false), Lease::Drop, until),
        ),
        (
            "open, a lease that ran out with no verdict: open from its end too",
            record(Open, 5, None, 9_000, 9_500),
            KNOWN,
            false,
            true,
            open(
                vec![A::Open(local(9_000)), A::Open(local(9_500))],
                Some(false),
                Lease::Keep,
                Elsewhere::Clear,
            ),
        ),
        (
            "open, this instance's lease of an older generation: dropped",
            record(Open, 5, None, 9_000, 0),
            mine(4),
            false,
            true,
            open(
                vec![A::Open(local(9_000))],
                Some(false),
                Lease::Drop,
                Elsewhere::Clear,
            ),
        ),
        (
            "open, this instance's lease given back (same generation, none held): kept",
            record(Open, 5, None, 9_000, 0),
            Known {
                generation: Some(5),
                ..mine(5)
            },
            false,
            true,
            open(vec![], None, Lease::Keep, Elsewhere::Clear),
        ),
        (
            "open, a change by hand pending: the lease bookkeeping still follows",
            record(Open, 5, Some("gw-2#1"), 9_000, live),
            Known {
                manual_pending: true,
                ..KNOWN
            },
            false,
            true,
            open(vec![], None, Lease::Drop, until),
        ),
    ];
    for (what, record, known, force, connected, expected) in cases {
        let news = News {
            record: &record,
            force,
            holder: ME,
            connected,
            local_now: LocalMs(LOCAL_NOW),
        };
        assert_eq!(reconcile(news, known), expected, "{what}");
    }
}

#[test]
fn a_message_older_than_the_last_reply_is_dropped_and_only_replies_set_the_mark() {
    let cases = [
        (Source::Reply, 5, 9, Some(5)),
        (Source::Reply, 9, 5, Some(9)),
        (Source::Message, 5, 9, None),
        (Source::Message, 9, 9, Some(9)),
        (Source::Message, 10, 9, Some(9)),
    ];
    for (source, epoch, mark, expected) in cases {
        assert_eq!(
            order(source, epoch, mark),
            expected,
            "{source:?} {epoch} {mark}"
        );
    }
}

#[test]
fn server_times_become_local_times_saturating_at_both_ends() {
    let cases = [
        (100, 150, 1_000, 950),
        (150, 150, 1_000, 1_000),
        (200, 150, 1_000, 1_050),
        (0, 10_000, 5, 0),
        (u64::MAX, 0, u64::MAX - 1, u64::MAX),
    ];
    for (at, server_now, local_now, expected) in cases {
        assert_eq!(
            LocalMs::of(ServerMs(at), ServerMs(server_now), LocalMs(local_now)),
            LocalMs(expected),
            "{at} at server {server_now}, local {local_now}"
        );
    }
}

/// Every branch of the claim's gate: one fact against the claim per row, and all for it.
#[test]
fn the_fleets_probe_is_claimed_only_when_every_condition_holds() {
    let all = ClaimFacts {
        connected: true,
        wanted: true,
        open: true,
        mine: false,
        bad: false,
        waiting: false,
        elsewhere: false,
    };
    assert!(claim(all), "every condition holds");
    let rows: [(&str, ClaimFacts); 7] = [
        (
            "Redis unreachable",
            ClaimFacts {
                connected: false,
                ..all
            },
        ),
        (
            "no local call wants it",
            ClaimFacts {
                wanted: false,
                ..all
            },
        ),
        ("the record is not open", ClaimFacts { open: false, ..all }),
        ("a lease held already", ClaimFacts { mine: true, ..all }),
        ("a bad record", ClaimFacts { bad: true, ..all }),
        (
            "told to wait, not over",
            ClaimFacts {
                waiting: true,
                ..all
            },
        ),
        (
            "another's lease runs",
            ClaimFacts {
                elsewhere: true,
                ..all
            },
        ),
    ];
    for (what, facts) in rows {
        assert!(!claim(facts), "{what}");
    }
}

/// Every branch of the decision after a claim's answer.
#[test]
fn a_claims_answer_takes_the_probe_only_when_newly_won_and_says_when_to_claim_again() {
    let window = 50;
    let after = |take_probe, wanted, again| AfterClaim {
        take_probe,
        wanted,
        again,
    };
    let rows = [
        (
            "won: free the slot and grant it",
            ClaimAnswer::Won { already: false },
            after(true, false, Again::Clear),
        ),
        (
            "won again in the generation held: nothing to take",
            ClaimAnswer::Won { already: true },
            after(false, false, Again::Clear),
        ),
        (
            "held, its end known: the record's end or release decides",
            ClaimAnswer::Held { end_known: true },
            after(false, true, Again::Clear),
        ),
        (
            "held, no end known: not before a probe window",
            ClaimAnswer::Held { end_known: false },
            after(false, true, Again::After { ms: window }),
        ),
        (
            "wait: claim again when it ends",
            ClaimAnswer::Wait { ms: 70 },
            after(false, true, Again::After { ms: 70 }),
        ),
        (
            "any other reply: nothing wanted, timer kept",
            ClaimAnswer::Other,
            after(false, false, Again::Keep),
        ),
    ];
    for (what, answer, expected) in rows {
        assert_eq!(claimed(answer, window), expected, "{what}");
    }
}

/// Every branch of the report decision.
#[test]
fn a_count_is_sent_later_dropped_or_sent_with_the_threshold_in_force() {
    let base = ReportFacts {
        pending: true,
        closed_failures: Some(2),
        recent: false,
        fleet_closed: true,
        local_trip: false,
        own_threshold: Some(5),
        fleet_threshold: None,
    };
    let rows = [
        (
            "nothing pending",
            ReportFacts {
                pending: false,
                ..base
            },
            Report::Nothing,
        ),
        (
            "a count within the interval waits",
            ReportFacts {
                recent: true,
                ..base
            },
            Report::Later,
        ),
        (
            "a trip within the interval is sent at once",
            ReportFacts {
                recent: true,
                closed_failures: None,
                local_trip: true,
                ..base
            },
            Report::Send {
                count: 5,
                threshold: 5,
            },
        ),
        (
            "a count, the breaker's own threshold",
            base,
            Report::Send {
                count: 2,
                threshold: 5,
            },
        ),
        (
            "a count, the fleet's threshold",
            ReportFacts {
                fleet_threshold: Some(9),
                ..base
            },
            Report::Send {
                count: 2,
                threshold: 9,
            },
        ),
        (
            "a trip of a rate rule only: out of the shared threshold's reach",
            ReportFacts {
                closed_failures: None,
                local_trip: true,
                own_threshold: None,
                ..base
            },
            Report::Send {
                count: u64::from(u32::MAX),
                threshold: u32::MAX,
            },
        ),
        (
            "the fleet's record is not closed",
            ReportFacts {
                fleet_closed: false,
                ..base
            },
            Report::Drop,
        ),
        (
            "not closed and no trip of its own",
            ReportFacts {
                closed_failures: None,
                ..base
            },
            Report::Drop,
        ),
    ];
    for (what, facts, expected) in rows {
        assert_eq!(report(facts), expected, "{what}");
    }
}

/// Every branch of the timers' decision on this instance's lease.
#[test]
fn a_lease_no_local_caller_took_is_given_back_and_one_that_ran_out_is_forgotten() {
    let facts = |granted, slot_unused, window_over, lease_over| LeaseFacts {
        granted,
        slot_unused,
        window_over,
        lease_over,
    };
    let rows = [
        (
            "nothing granted: given back at once",
            facts(false, false, false, false),
            LeaseTimer::Release,
        ),
        (
            "granted, unused, window running",
            facts(true, true, false, false),
            LeaseTimer::Keep,
        ),
        (
            "granted, unused, window over",
            facts(true, true, true, false),
            LeaseTimer::Release,
        ),
        (
            "granted, unused, lease over too",
            facts(true, true, true, true),
            LeaseTimer::Release,
        ),
        (
            "taken, lease running",
            facts(true, false, true, false),
            LeaseTimer::Keep,
        ),
        (
            "taken, lease over",
            facts(true, false, true, true),
            LeaseTimer::Expire,
        ),
    ];
    for (what, facts, expected) in rows {
        assert_eq!(lease_timer(facts), expected, "{what}");
    }
}

/// Another instance's lease that ran out opens the breaker from its end, now; one that runs
/// changes nothing.
#[test]
fn another_instances_lease_that_ran_out_is_adopted_open_from_now() {
    let now = LocalMs(LOCAL_NOW);
    assert_eq!(elsewhere_ran_out(true, now), Some(Adoption::Open(now)));
    assert_eq!(elsewhere_ran_out(false, now), None);
}

/// The spans between two server times and a local time moved on saturate, never wrap.
#[test]
fn server_spans_and_local_offsets_saturate() {
    assert_eq!(ServerMs(100).until(ServerMs(150)), 50);
    assert_eq!(ServerMs(150).until(ServerMs(100)), 0, "not after: none");
    assert_eq!(LocalMs(5).after(10), LocalMs(15));
    assert_eq!(LocalMs(u64::MAX - 1).after(10), LocalMs(u64::MAX));
}

/// A row of the claim-at-cooldown's-end table: what, the record, connected, the period already
/// scheduled, and the claim expected (the period's start, in how many ms).
type Row = (&'static str, Record, bool, Option<u64>, Option<(u64, u64)>);

#[test]
fn the_probe_is_claimed_once_per_open_period_at_its_cooldowns_end() {
    const COOLDOWN: u64 = 300;
    let open = |at, lease| record(Shared::Open, 5, None, at, lease);
    let rows: [Row; 9] = [
        (
            "an open period not yet claimed for",
            open(9_900, 0),
            true,
            None,
            Some((9_900, 200)),
        ),
        (
            "its cooldown already over: now",
            open(9_000, 0),
            true,
            None,
            Some((9_000, 0)),
        ),
        ("already scheduled", open(9_900, 0), true, Some(9_900), None),
        (
            "a lease that ran out with no verdict starts a period",
            open(9_000, 9_800),
            true,
            Some(9_000),
            Some((9_800, 100)),
        ),
        (
            "a lease given back (its end cleared) starts none",
            open(9_000, 0),
            true,
            Some(9_800),
            None,
        ),
        (
            "a reopen (a new `at`) starts one",
            open(9_950, 0),
            true,
            Some(9_800),
            Some((9_950, 250)),
        ),
        ("Redis unreachable", open(9_900, 0), false, None, None),
        (
            "a lease held",
            record(Shared::Open, 5, Some("gw-2#1"), 9_000, 10_500),
            true,
            None,
            None,
        ),
        (
            "closed",
            record(Shared::Closed, 5, None, 9_000, 0),
            true,
            None,
            None,
        ),
    ];
    for (what, record, connected, scheduled, expected) in rows {
        let decided = claim_at_cooldown_end(&record, connected, scheduled.map(ServerMs), COOLDOWN);
        assert_eq!(
            decided,
            expected.map(|(start, ms)| (ServerMs(start), ms)),
            "{what}"
        );
    }
    let isolated = record(Shared::Isolated, 5, None, 9_000, 0);
    assert_eq!(claim_at_cooldown_end(&isolated, true, None, COOLDOWN), None);
}
