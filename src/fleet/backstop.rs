//! The backstop's count of writes: the epoch read every sync interval against the messages
//! received since, so a worker that missed a message reads every record once.

/// The backstop's bookkeeping: the epoch read at the last look, and the messages (each one write)
/// received since.
#[derive(Debug, Default)]
pub(crate) struct Backstop {
    base: Option<u64>,
    received: u64,
    /// The last look found fewer messages than writes: they may have been in flight.
    behind: bool,
}

impl Backstop {
    /// A message of a write arrived.
    pub(crate) fn received(&mut self) {
        self.received += 1;
    }

    /// Look at the epoch now (`None`: missing or not a count). Returns whether a write was
    /// missed: fewer messages arrived than the epoch moved, at two looks in a row (messages in
    /// flight at the first are forgiven), or the epoch went back (restored from an older
    /// snapshot, or written by something else).
    pub(crate) fn look(&mut self, epoch: Option<u64>) -> bool {
        let Some(epoch) = epoch else {
            // Gone (or not a count) since the last look: something other than a script wrote
            // it; read every record once, so each reports what it finds.
            let was = self.base.is_some();
            *self = Backstop::default();
            return was;
        };
        let Some(base) = self.base else {
            *self = Backstop {
                base: Some(epoch),
                ..Backstop::default()
            };
            return false;
        };
        let expected = base.saturating_add(self.received);
        let missed = if epoch < base {
            true
        } else if epoch <= expected {
            // All heard (some messages counted may already have been in the last look's epoch).
            false
        } else if !self.behind {
            self.behind = true;
            return false; // look again before syncing; do not rebase
        } else {
            true
        };
        *self = Backstop {
            base: Some(epoch),
            ..Backstop::default()
        };
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One look: messages received before it, the epoch read, whether a write was missed.
    type Look = (u64, Option<u64>, bool);

    #[test]
    fn the_backstop_finds_a_missed_write_and_forgives_one_in_flight() {
        let cases: [(&str, &[Look]); 7] = [
            ("the first look sets the base", &[(0, Some(7), false)]),
            (
                "every write heard",
                &[
                    (0, Some(7), false),
                    (2, Some(9), false),
                    (0, Some(9), false),
                ],
            ),
            (
                "a message in flight at one look, heard by the next",
                &[
                    (0, Some(7), false),
                    (1, Some(9), false),
                    (1, Some(9), false),
                ],
            ),
            (
                "a write missed at two looks in a row",
                &[(0, Some(7), false), (0, Some(8), false), (0, Some(8), true)],
            ),
            (
                "the epoch went back (an older snapshot)",
                &[(0, Some(7), false), (0, Some(3), true)],
            ),
            (
                "the epoch gone since the last look",
                &[(0, Some(7), false), (0, None, true), (0, None, false)],
            ),
            (
                "more messages than writes (echoes counted twice): all heard",
                &[(0, Some(7), false), (5, Some(8), false)],
            ),
        ];
        for (what, looks) in cases {
            let mut backstop = Backstop::default();
            for (i, &(messages, epoch, missed)) in looks.iter().enumerate() {
                for _ in 0..messages {
                    backstop.received();
                }
                assert_eq!(backstop.look(epoch), missed, "{what}, look {i}");
            }
        }
    }
}
