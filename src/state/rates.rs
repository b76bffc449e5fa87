//! The rate rules' pure arithmetic: the window's bucket widths, the time bucket a reading falls
//! in, and what a judgement's counts say (trip, or watch successes). No atomic and no clock: the
//! window's counters are in `breaker::window`.

use crate::config::{Rates, WindowLimit};
use crate::time::CLOCK_HEADROOM_MS;

/// Buckets a count window is split into.
pub(crate) const CALL_BUCKETS: u64 = 32;
/// Buckets a time window is split into.
pub(crate) const TIME_BUCKETS: u64 = 10;

/// What a judgement found in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Judged {
    /// Judged calls the minimum is compared with: for a count window, at most its size.
    pub(crate) calls: u64,
    /// Judged calls the rates are taken over (the whole buckets judged).
    pub(crate) span: u64,
    /// Counted failures among them.
    pub(crate) failures: u64,
    /// Slow calls among them.
    pub(crate) slow: u64,
}

/// A count window's bucket width in calls: `⌈n/32⌉`.
pub(crate) fn call_width(n: u32) -> u64 {
    u64::from(n).div_ceil(CALL_BUCKETS)
}

/// A time window's bucket width in ms: `⌈t/10⌉`, at least 1.
pub(crate) fn width(window_ms: u64) -> u64 {
    window_ms.div_ceil(TIME_BUCKETS).max(1)
}

/// The time bucket `now_ms` falls in. Buckets are counted from the breaker's construction (its
/// clock's reading `CLOCK_HEADROOM_MS`), so one begins when the breaker does.
pub(crate) fn time_bucket(now_ms: u64, window_ms: u64) -> u64 {
    let width = width(window_ms);
    now_ms.saturating_sub(CLOCK_HEADROOM_MS % width) / width
}

/// What the rates say of a judgement: the rule that trips, with its count, if one does.
pub(crate) fn verdict(judged: &Judged, rates: &Rates) -> Option<(Rule, u64)> {
    if judged.calls < u64::from(rates.minimum_calls) || judged.span == 0 {
        return None;
    }
    let reached = |count: u64, ppm: u32| {
        ppm != 0 && u128::from(count) * 1_000_000 >= u128::from(ppm) * u128::from(judged.span)
    };
    if reached(judged.failures, rates.failure_ppm) {
        Some((Rule::FailureRate, judged.failures))
    } else if reached(judged.slow, rates.slow_ppm) {
        Some((Rule::SlowCallRate, judged.slow))
    } else {
        None
    }
}

/// Whether successes must be judged: the window holds failures or slow calls, and a success
/// may still change the verdict (an exact count window that has reached its minimum only loses
/// its oldest call to each new one, so its rate rises only with a failure or a slow call).
pub(crate) fn watch(judged: &Judged, rates: &Rates) -> bool {
    let holds = judged.failures != 0 || judged.slow != 0;
    match rates.window {
        // Exact (one call per bucket): past the minimum a success only replaces the oldest
        // call, which lowers the rate or keeps it.
        WindowLimit::Calls(n) if call_width(n) == 1 => {
            holds && judged.calls < u64::from(rates.minimum_calls)
        }
        // Whole buckets leave at once, so a success can raise the rate by pushing out a bucket
        // of successes; time windows lose calls as time passes.
        WindowLimit::Calls(_) | WindowLimit::TimeMs(_) => holds,
    }
}

/// The rule a window trip is made by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    FailureRate,
    SlowCallRate,
}
