//! Reports: a permit's outcome (or its drop) applied to the word, the rate rules' window judged,
//! and the threshold checked again after a failure counted under an older one.

use core::time::Duration;

use super::machine::{CircuitBreaker, split};
use crate::config::{Limits, Rates};
use crate::observe::{self, Counter};
use crate::state::decide::{self, Report};
use crate::state::rates::{Rule, verdict, watch};
use crate::state::word::Word;
use crate::types::Transition;

/// Whether a call that took `elapsed` is slow under `rates`; an untimed call never is.
#[inline]
fn is_slow(rates: &Rates, elapsed: Option<Duration>) -> bool {
    rates.times_calls() && elapsed.is_some_and(|elapsed| elapsed >= rates.slow_threshold)
}

/// Gives a probe's slot back if dropped, that is, if the code between taking the permit's flags
/// and its report unwinds; forgotten once the report is made.
struct SlotOnUnwind<'a> {
    breaker: &'a CircuitBreaker,
    generation: u32,
    probe: bool,
}

impl Drop for SlotOnUnwind<'_> {
    fn drop(&mut self) {
        if self.probe {
            self.breaker.report(self.generation, true, Report::Dropped);
        }
    }
}

impl CircuitBreaker {
    /// Count a healthy call into the window: the whole of a rated breaker's healthy report,
    /// unless `elapsed` makes it slow (then `false`: the caller takes the slow path).
    #[inline]
    pub(crate) fn count_healthy(&self, elapsed: Option<Duration>) -> bool {
        let Some(windows) = self.inner.windows.get() else {
            return true;
        };
        let Some(rates) = windows.rates() else {
            return true;
        };
        if is_slow(&rates, elapsed) {
            return false;
        }
        windows.add_call(&rates, || self.now_ms());
        true
    }

    /// Whether calls are to be timed: a slow-call rule is set.
    #[inline]
    pub(crate) fn times_calls(&self) -> bool {
        self.rates().is_some_and(|rates| rates.times_calls())
    }

    /// The breaker's clock, read raw to time a call if `timed` (its permit says a slow-call rule
    /// is set: `call` and `run` time their calls only then); `None` reads no clock.
    #[inline]
    pub(crate) fn start_timing(&self, timed: bool) -> Option<u64> {
        timed.then(|| self.inner.origin.raw())
    }

    /// The time since `start_timing`'s reading, on the breaker's clock.
    #[inline]
    pub(crate) fn timed_since(&self, start: Option<u64>) -> Option<Duration> {
        start.map(|start| self.inner.origin.since(start))
    }

    /// Everything a report does besides the healthy path: counting, the failure event, clearing
    /// a count, transitions and stale reports. Out of line, with plain arguments, so the
    /// caller's healthy path keeps no stack frame.
    #[inline(never)]
    pub(crate) fn record_slow(
        &self,
        generation: u32,
        probe: bool,
        counting: bool,
        counter: Counter,
        elapsed: Option<Duration>,
        hint_ms: u64,
    ) -> Option<Transition> {
        if counting {
            self.count(counter);
        }
        if !probe {
            self.throttle_record(generation, counter);
        }
        if let Some(kind) = counter.failure_kind() {
            // The event is the subscriber's code and runs before the report lands: if it panics,
            // a probe's slot is given back as if its permit were dropped (the permit no longer
            // holds it), rather than held until the lease ends.
            let slot = SlotOnUnwind {
                breaker: self,
                generation,
                probe,
            };
            observe::failure(self.name(), kind, elapsed);
            core::mem::forget(slot);
        }
        let report = match counter {
            Counter::Success => Report::Success,
            Counter::Ignored => Report::Ignored,
            _ => Report::Failure,
        };
        // The hint is kept before the report that may trip, so the trip's open period reads it.
        if hint_ms != 0
            && let Some(transition) = self.hear_hint(generation, probe, hint_ms)
        {
            return Some(transition);
        }
        self.report_timed(generation, probe, report, elapsed)
    }

    /// A permit dropped unrecorded: count it if it is counted, give the probe slot back if it
    /// holds it.
    #[cold]
    #[inline(never)]
    pub(crate) fn dropped(&self, generation: u32, probe: bool, counting: bool) {
        if counting {
            self.count(Counter::Dropped);
        }
        if probe {
            self.report(generation, true, Report::Dropped);
        }
    }

    /// Apply a permit's report. Returns the state change it caused, if any.
    pub(crate) fn report(
        &self,
        generation: u32,
        probe: bool,
        report: Report,
    ) -> Option<Transition> {
        self.report_timed(generation, probe, report, None)
    }

    /// [`report`](Self::report) of a call that took `elapsed`, if it was timed.
    pub(super) fn report_timed(
        &self,
        generation: u32,
        probe: bool,
        report: Report,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        let limits = self.limits();
        // A probe of several: only the last success, and a counted failure, move the word.
        if probe
            && decide::uses_slots(&limits)
            && report != Report::Failure
            && !self.report_slot(generation, report, &limits)
        {
            return None;
        }
        // A probe given back whose half-open period admitted several (`probes` lowered since):
        // the slot is freed in a new generation, so the period's other probes are stale and a
        // new claim cannot make them current again.
        if probe
            && !decide::uses_slots(&limits)
            && matches!(report, Report::Ignored | Report::Dropped)
            && self.slots_count(generation)
            && self.permit_is_current(generation, true)
        {
            self.update(self.word(), |word| {
                (decide::free_lowered(word, generation), ())
            });
            return None;
        }
        let mut now = None;
        let updated = self.update(self.word(), |word| {
            split(decide::report(
                word,
                generation,
                probe,
                report,
                &limits,
                || *now.get_or_insert_with(|| self.now_ms()),
            ))
        });
        if updated.after.is_some()
            && updated.before.closed_generation().is_some()
            && matches!(report, Report::Failure | Report::Success)
        {
            self.tell_count();
            // A success that cleared a consecutive count forgets the hint heard with it.
            if report == Report::Success && !updated.before.has(Word::RATED) {
                let next = crate::state::word::next_generation(updated.before.generation());
                self.inner.cold.cooldown.forget_hint(next);
            }
        }
        if let Some(transition) = updated.answer {
            let transition = self.shaped(transition, &limits);
            self.announce(transition);
            return Some(transition);
        }
        // A judged call of a current ordinary permit of a breaker with a rate rule: into the
        // window, and judged.
        if !probe
            && matches!(report, Report::Success | Report::Failure)
            && updated.before.closed_generation() == Some(generation)
            && updated.before.has(Word::RATED)
            && let Some(transition) =
                self.judge_window(generation, report == Report::Failure, elapsed, &limits)
        {
            return Some(transition);
        }
        match updated.after {
            // A failure counted below the threshold read before the swap. If the threshold was
            // lowered meanwhile, the reconfiguration's read-modify-write of the word came before
            // our swap (or it saw our count and tripped): our swap read from it, so this load
            // sees the new threshold. One of the two always trips.
            Some(after) if report == Report::Failure => self.check_threshold(after),
            _ => None,
        }
    }

    /// Record a judged call into the window and judge it: trip the word if a rate is reached
    /// (one compare-and-swap, fenced by `generation`), else set or clear its `WATCH` flag.
    #[cold]
    fn judge_window(
        &self,
        generation: u32,
        failure: bool,
        elapsed: Option<Duration>,
        limits: &Limits,
    ) -> Option<Transition> {
        let rates = limits.rates?;
        let windows = self.inner.windows.get()?;
        // A report whose generation ended since its swap (a trip, a reset) counts in no window:
        // and it must not rebase the window to its own generation.
        if self.word().closed_generation() != Some(generation) {
            return None;
        }
        let now_ms = self.window_now(&rates);
        let slow = is_slow(&rates, elapsed);
        let judged = windows.record(generation, &rates, now_ms, failure, slow);
        if let Some((rule, counted)) = verdict(&judged, &rates) {
            let reason = match rule {
                Rule::FailureRate => crate::types::TransitionReason::FailureRate,
                Rule::SlowCallRate => crate::types::TransitionReason::SlowCallRate,
            };
            let mut now = None;
            let updated = self.update(self.word(), |word| {
                let now_ms = *now.get_or_insert_with(|| self.now_ms());
                split(decide::window_trip(
                    word, generation, reason, counted, now_ms, limits,
                ))
            });
            let transition = self.shaped(updated.answer?, limits);
            self.announce(transition);
            return Some(transition);
        }
        let watch = watch(&judged, &rates);
        let word = self.word();
        if word.closed_generation() == Some(generation) && word.has(Word::WATCH) != watch {
            self.update(word, |word| (decide::watch(word, generation, watch), ()));
        }
        None
    }

    /// Trip `judged`, the word this caller just stored, if its count reaches the threshold in
    /// force now; nothing if the word has moved on (whoever moved it checks for themselves).
    #[cold]
    pub(super) fn check_threshold(&self, judged: Word) -> Option<Transition> {
        let limits = self.limits();
        let mut now = None;
        let updated = self.update(judged, |word| {
            if word != judged {
                return (None, None);
            }
            split(decide::check_threshold(word, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            }))
        });
        let transition = self.shaped(updated.answer?, &limits);
        self.announce(transition);
        Some(transition)
    }

    /// Whether the word is closed with nothing counted: no consecutive failures, and no failure
    /// or slow call in a rate rule's window.
    pub(crate) fn is_closed_and_clear(&self) -> bool {
        let word = self.word();
        let Some(generation) = word.closed_generation() else {
            return false;
        };
        if word.failures() != 0 || word.has(Word::WATCH) {
            return false;
        }
        // A window past its minimum may hold failures without watching for successes.
        match (word.has(Word::RATED), self.inner.windows.get()) {
            (true, Some(windows)) => windows.rates().is_none_or(|rates| {
                windows.holds_nothing(generation, &rates, self.window_now(&rates))
            }),
            _ => true,
        }
    }
}
