//! The order of a flush: which of a dependency's pending sends the worker makes next, decided
//! from what is pending, with no I/O (the worker's shell, `send.rs`, makes each send).
//!
//! A flush reads the record first when it has none or was told to read it again, so every later
//! send is made against the generation the fleet is at; then a change made by hand (it clears a
//! verdict the same call would overtake), then a probe's verdict, then the count (whose own
//! decision is [`report`](super::reconcile::report)). A flush starts only while the link is up
//! and the record is good, and ends at the first send that fails: what is still pending is sent
//! at the next flush.

/// One send of a flush, in the order a flush makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    /// Read the record: this instance has none yet.
    Sync,
    /// Read the record again: a message said it changed in a way a push does not carry.
    Resync,
    /// Send a change made by hand (`force_open`, `force_closed`, `reset`).
    Manual,
    /// Send the verdict of this instance's probe.
    Verdict,
    /// Decide on the count, and send it if the decision says so.
    Report,
}

impl Step {
    const ORDER: [Step; 5] = [
        Step::Sync,
        Step::Resync,
        Step::Manual,
        Step::Verdict,
        Step::Report,
    ];
}

/// What a flush knows of a dependency, read afresh before each send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlushFacts {
    /// The link to Redis is up.
    pub(crate) connected: bool,
    /// The dependency's record is bad (local mode until an operator clears it).
    pub(crate) bad: bool,
    /// The record has been read since the link came up.
    pub(crate) synced: bool,
    /// A message asked for the record to be read again.
    pub(crate) resync: bool,
    /// A change made by hand waits to be sent.
    pub(crate) manual: bool,
    /// A probe's verdict waits to be sent.
    pub(crate) verdict: bool,
}

/// The send a flush makes after `done` (`None`: it has made none yet), or `None` when the flush
/// is over: it does not start while the link is down or the record bad, and it ends after the
/// count.
pub(crate) fn next_step(facts: FlushFacts, done: Option<Step>) -> Option<Step> {
    if done.is_none() && (!facts.connected || facts.bad) {
        return None;
    }
    Step::ORDER
        .into_iter()
        .filter(|step| done.is_none_or(|done| *step > done))
        .find(|step| match step {
            Step::Sync => !facts.synced,
            Step::Resync => facts.resync,
            Step::Manual => facts.manual,
            Step::Verdict => facts.verdict,
            Step::Report => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UP: FlushFacts = FlushFacts {
        connected: true,
        bad: false,
        synced: true,
        resync: false,
        manual: false,
        verdict: false,
    };

    /// Every send pending.
    const ALL: FlushFacts = FlushFacts {
        connected: true,
        bad: false,
        synced: false,
        resync: true,
        manual: true,
        verdict: true,
    };

    /// The steps a flush makes, in order, when each send succeeds and leaves the facts as they
    /// were (the worst case for termination: a send that did not clear its flag).
    fn steps(facts: FlushFacts) -> Vec<Step> {
        let mut done = None;
        let mut made = Vec::new();
        while let Some(step) = next_step(facts, done) {
            made.push(step);
            done = Some(step);
            assert!(
                made.len() <= Step::ORDER.len(),
                "a flush never ends: {made:?}"
            );
        }
        made
    }

    #[test]
    fn every_pending_send_is_made_once_in_order_ending_with_the_count() {
        use Step::*;
        let rows: [(FlushFacts, &[Step]); 8] = [
            (UP, &[Report]),
            (
                FlushFacts {
                    synced: false,
                    ..UP
                },
                &[Sync, Report],
            ),
            (FlushFacts { resync: true, ..UP }, &[Resync, Report]),
            (
                FlushFacts {
                    synced: false,
                    resync: true,
                    ..UP
                },
                &[Sync, Resync, Report],
            ),
            (FlushFacts { manual: true, ..UP }, &[Manual, Report]),
            (
                FlushFacts {
                    verdict: true,
                    ..UP
                },
                &[Verdict, Report],
            ),
            (
                FlushFacts {
                    manual: true,
                    verdict: true,
                    ..UP
                },
                &[Manual, Verdict, Report],
            ),
            (ALL, &[Sync, Resync, Manual, Verdict, Report]),
        ];
        for (facts, expected) in rows {
            assert_eq!(steps(facts), expected, "{facts:?}");
        }
    }

    #[test]
    fn no_flush_starts_while_the_link_is_down_or_the_record_bad() {
        for pending in [
            UP,
            FlushFacts {
                synced: false,
                manual: true,
                verdict: true,
                ..UP
            },
        ] {
            for (connected, bad) in [(false, false), (true, true), (false, true)] {
                let facts = FlushFacts {
                    connected,
                    bad,
                    ..pending
                };
                assert_eq!(next_step(facts, None), None, "{facts:?}");
            }
        }
    }

    #[test]
    fn a_flush_under_way_is_decided_by_what_is_still_pending() {
        // The record was read and the link went down meanwhile: the sends go on (each fails on
        // its own, and the flush ends there); a verdict cleared by a change by hand is not sent.
        let down = FlushFacts {
            connected: false,
            manual: true,
            ..UP
        };
        assert_eq!(next_step(down, Some(Step::Sync)), Some(Step::Manual));
        assert_eq!(next_step(UP, Some(Step::Manual)), Some(Step::Report));
        assert_eq!(next_step(UP, Some(Step::Report)), None);
        // Each step comes only after those before it in the order, never again.
        for (i, done) in Step::ORDER.into_iter().enumerate() {
            assert_eq!(next_step(ALL, Some(done)), Step::ORDER.get(i + 1).copied());
        }
    }
}
