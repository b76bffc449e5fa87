//! The generation-tagged permit `try_acquire` hands out.

use core::mem::ManuallyDrop;

use crate::breaker::CircuitBreaker;
use crate::classify::Outcome;
use crate::state::{Report, Transition};

/// Permission to make one call to the dependency; report how it went with [`record`](Self::record).
///
/// The permit carries the generation it was issued in, so an outcome that arrives after the
/// breaker has moved on (tripped, probed, closed again) changes nothing.
///
/// Dropping a permit without recording (the call was cancelled, or panicked) counts nothing; if
/// the permit held the probe slot, the slot is released so the next caller becomes the probe.
///
/// Generations are 20 bits and wrap, but they move only as time passes (at most twice per
/// cooldown), so a permit would have to be held for 2^19 cooldowns (six days at a 1 s cooldown)
/// before it could be mistaken for a current one.
///
/// # Examples
///
/// ```
/// use toolbreaker::{CircuitBreaker, Outcome};
///
/// let breaker = CircuitBreaker::builder().build()?;
/// let permit = breaker.try_acquire().expect("a new breaker is closed");
/// assert!(!permit.is_probe());
/// assert_eq!(permit.record(Outcome::Success), None, "a success while closed changes nothing");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[must_use = "a permit must be used to make the call and then recorded; dropping it counts nothing"]
#[derive(Debug)]
pub struct Permit<'a> {
    breaker: &'a CircuitBreaker,
    generation: u32,
    probe: bool,
}

impl<'a> Permit<'a> {
    pub(crate) fn new(breaker: &'a CircuitBreaker, generation: u32, probe: bool) -> Self {
        Permit {
            breaker,
            generation,
            probe,
        }
    }

    /// The generation the permit was issued in (wraps after
    /// [`MAX_GENERATION`](crate::MAX_GENERATION)).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Whether this permit holds the half-open probe slot.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Report the call's outcome, consuming the permit.
    ///
    /// Returns the state change the outcome caused: a counted failure at the threshold trips the
    /// breaker (`closed → open`), a probe's success closes it, a probe's counted failure reopens
    /// it. An outcome from an older generation, or from a probe whose lease has run out, changes
    /// nothing and returns `None`.
    #[inline]
    pub fn record(self, outcome: Outcome) -> Option<Transition> {
        // The report below replaces what `Drop` would do.
        let this = ManuallyDrop::new(self);
        let report = match outcome {
            Outcome::Success => Report::Success,
            Outcome::Failure(_) => Report::Failure,
            Outcome::Ignored => Report::Ignored,
        };
        this.breaker.report(this.generation, this.probe, report)
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        // Only the probe's slot needs giving back: an unrecorded ordinary call counts nothing and
        // costs nothing to drop.
        if self.probe {
            self.breaker.report(self.generation, true, Report::Dropped);
        }
    }
}
