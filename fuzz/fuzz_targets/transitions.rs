//! Differential fuzzing of the breaker against a reference model.
//!
//! An arbitrary configuration and sequence of operations — acquire (keeping every permit), record
//! an outcome on any held permit (with or without the call's elapsed time), drop any held permit,
//! move the mock clock forward or back by any amount, read the state, reconfigure (valid or not,
//! with or without rate rules), force open, force closed, reset, and the fleet's events: another
//! instance's transition adopted (open at any time, closed, isolated, or the fleet's probe won
//! here), the fleet's probe lost while a local probe may hold the slot, and a stale verdict (a
//! report from a permit that an adoption or a transition left behind) — runs against the real
//! `CircuitBreaker` and against `Model`: the behaviour contract written as plain sequential code,
//! with no bit packing, no generations (permits are told apart by ids) and no buckets but the
//! documented ones. After every step the admitted/blocked decision, the blocked value, the
//! transition a record, a change or an adoption caused (with its reason and count), every
//! transition the listener heard (with its reason, in the breaker's order), whether each held
//! permit is still current, and the state must agree.
//!
//! # Probes and backoff
//!
//! A configuration also sets how many probes half-open admits (1 to 4, or 0, refused) and may
//! set the cooldown's backoff (a multiplier of 1 + k/4 up to a maximum, which the builder refuses
//! when zero, too long or shorter than the cooldown); every reconfiguration of the input keeps
//! both. The model keeps the probing period's live slots and its successes: another probe is
//! admitted while slots and successes are fewer than the probes; the last success closes, any
//! counted failure reopens, an ignored or dropped probe gives its slot back, and a lease that
//! ends with every slot back leaves the breaker half-open (no reopen). Each open period has a
//! base cooldown: the configured one at a trip, one more backoff (capped) at a reopen (a failed
//! or timed-out probe), the same through a change by hand or a fleet's grant; the blocked
//! value's `retry_after` must agree to the millisecond. (Jitter is left out: its spread is drawn
//! from a seed of each breaker's own, checked by range in `tests/breaker/cooldown.rs`.)
//!
//! # Rate rules
//!
//! A configuration may carry a rate rule: a failure rate, a slow-call rule, both or neither (then
//! a window or a minimum alone must be refused), a window, a minimum, with or without the
//! consecutive rule beside it. The model keeps the judged calls of the closed period in force in
//! a plain `VecDeque` (its position among the period's judged calls, when it was recorded, failed,
//! slow) and judges them as `Window` documents:
//!
//! - a count window of `n ≤ 32`: exactly the last `n` judged calls;
//! - a larger count window: the buckets of `⌈n/32⌉` positions (counted from the period's first
//!   judged call) that the last `n` positions touch, whole, compared exactly (a success that
//!   drops the oldest bucket, and so raises the rate to the ratio, trips it);
//! - a time window of `t`: the judged calls whose bucket of `⌈t/10⌉` ms, counted from the
//!   breaker's construction, is the current one or one of the 9 before it. The bucket rule is
//!   written for a clock that only goes forward (a breaker's clock is monotonic), so an input
//!   that sets a time window anywhere never steps the clock back.
//!
//! Only judged calls (a success or a counted failure from a current ordinary permit) enter the
//! window; every transition, every reset of a closed breaker, and every change of the window
//! empties it; the consecutive rule is checked first, then the failure rate, then the slow-call
//! rate.
#![no_main]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use toolbreaker::breaker::Builder;
use toolbreaker::fuzzing::{self, CLOCK_HEADROOM_MS, MAX_TIME_MS};
use toolbreaker::quanta::Clock;
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Outcome, Permit, State, Transition,
    TransitionReason, Window,
};

const NS_PER_MS: u64 = 1_000_000;
/// The longest duration a configuration may have, in ms (the documented `MAX_DURATION`).
const MAX_DURATION_MS: u64 = 1 << 40;

#[derive(Arbitrary, Debug)]
struct Input {
    threshold: u8,
    cooldown: Span,
    probe_timeout: Span,
    /// `None`: the consecutive rule alone, with `threshold`, as before rate rules existed.
    rates: Option<RateRule>,
    /// Probes half-open admits, and the cooldown's backoff: set at construction and kept by every
    /// reconfiguration of the input.
    shape: ShapeChoice,
    ops: Vec<Op>,
}

/// `probes(n)` and `cooldown_backoff(multiplier, max)` as a caller sets them: usually 1 to 4
/// probes (sometimes 0, refused) and a multiplier of 1 + k/4 (k < 9) up to a maximum that may be
/// refused (zero, shorter than the cooldown, too long).
#[derive(Arbitrary, Debug, Clone, Copy)]
struct ShapeChoice {
    probes: u8,
    backoff: Option<(u8, Span)>,
}

impl ShapeChoice {
    fn probes(self) -> u32 {
        match self.probes % 16 {
            15 => 0,
            n => u32::from(n % 4) + 1,
        }
    }

    fn multiplier(k: u8) -> f64 {
        1.0 + f64::from(k % 9) / 4.0
    }
}

/// A rate rule as the builder is given it: each part may be left to its default, or be invalid.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct RateRule {
    failure_rate: Option<Ratio>,
    /// The slow-call threshold and ratio.
    slow_calls: Option<(Span, Ratio)>,
    window: Option<WindowChoice>,
    minimum_calls: Option<u8>,
    /// Whether `failure_threshold` is set beside the rate rule (the consecutive rule kept).
    consecutive: bool,
}

/// A ratio: usually a simple fraction or a count of millionths, sometimes any float at all
/// (NaN, negative, above 1, or too small for a millionth).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Ratio {
    Fraction(u8, u8),
    Millionths(u32),
    Any(f64),
}

impl Ratio {
    fn value(self) -> f64 {
        match self {
            Ratio::Fraction(a, b) => f64::from(a) / f64::from(b),
            Ratio::Millionths(ppm) => f64::from(ppm) / 1_000_000.0,
            Ratio::Any(ratio) => ratio,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum WindowChoice {
    /// A count window of at most 32 calls (or 0): judged exactly.
    Exact(u8),
    /// A count window of any size up to 255 (or 0): bucketed above 32.
    Calls(u8),
    Time(Span),
}

impl WindowChoice {
    fn window(self) -> Window {
        match self {
            WindowChoice::Exact(n) => Window::Calls(u32::from(n % 33)),
            WindowChoice::Calls(n) => Window::Calls(u32::from(n)),
            WindowChoice::Time(span) => Window::Time(span.duration()),
        }
    }
}

/// A configured duration: usually a few milliseconds, sometimes anything at all (zero, a fraction
/// of a millisecond, or too long), which the builder must then refuse or round up.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Span {
    Ms(u8),
    Ns(u64),
}

impl Span {
    fn duration(&self) -> Duration {
        match *self {
            Span::Ms(ms) => Duration::from_millis(u64::from(ms)),
            Span::Ns(ns) => Duration::from_nanos(ns),
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Verdict {
    Success,
    Failure,
    Ignored,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Acquire,
    Record {
        index: u8,
        verdict: Verdict,
    },
    Drop {
        index: u8,
    },
    AdvanceMs(u8),
    AdvanceNs(u64),
    BackMs(u8),
    BackNs(u64),
    State,
    /// A new configuration (refused, and nothing changes, when invalid).
    Reconfigure {
        threshold: u8,
        cooldown: Span,
        probe_timeout: Span,
    },
    ForceOpen,
    ForceClosed,
    Reset,
    // The fleet's events (appended, so the committed seeds keep their meaning).
    /// Another instance's transition, adopted as the fleet agent adopts it.
    Adopt(Remote),
    /// The fleet's probe lost to another instance (or its lease ran out) while a local probe may
    /// hold the slot: the agent adopts the fleet's `open`, opened now.
    LeaseLost,
    /// A report from a held permit that is no longer current (a stale verdict): it changes
    /// nothing. Skipped when every held permit is current.
    StaleVerdict {
        index: u8,
        verdict: Verdict,
    },
    // The rate rules' operations.
    /// A report with the call's elapsed time (`record_elapsed`): slow at the slow-call threshold.
    RecordElapsed {
        index: u8,
        verdict: Verdict,
        elapsed: Span,
    },
    /// `count` calls one after another at this instant, each acquired and recorded at once (a
    /// run long enough to fill a large window): call `i` fails if bit `i % 64` of `failures` is
    /// set, and reports an elapsed time just at the slow-call threshold if that bit of `slow` is
    /// set, just below it if not. A blocked call is skipped.
    Calls {
        count: u8,
        failures: u64,
        slow: u64,
    },
    /// A new configuration built with the builder, with or without rate rules (refused, and
    /// nothing changes, when invalid).
    SetRules {
        threshold: u8,
        rates: Option<RateRule>,
        cooldown: Span,
        probe_timeout: Span,
    },
}

/// What the fleet tells the breaker.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Remote {
    /// Open since `offset_ms` from now: a trip or a failed probe elsewhere (in the past), or a
    /// time ahead of this clock.
    Open {
        offset_ms: i16,
    },
    /// Open since any time at all, in ms since the origin (past the word's range too).
    OpenAt {
        ms: u64,
    },
    Closed,
    Isolated,
    /// This instance won the fleet's probe.
    ProbeHere,
}

// ---------------------------------------------------------------------------------------------
// The reference model.

#[derive(Debug, Clone, Copy, PartialEq)]
enum ModelState {
    Closed {
        failures: u64,
    },
    Open {
        since: u64,
    },
    /// Half-open, slot free (a probe gave it back).
    Free,
    Probing {
        id: u64,
        since: u64,
    },
    /// Forced open by hand: no cooldown ends it.
    Isolated,
}

#[derive(Debug, Clone, Copy)]
enum ModelPermit {
    /// Admitted while closed, in closed period `period`.
    Ordinary {
        period: u64,
    },
    Probe {
        id: u64,
    },
}

#[derive(Debug, PartialEq)]
enum Seen {
    Closed,
    Open { remaining: u64 },
    HalfOpenFree,
    ProbeInFlight { remaining: u64 },
    Isolated,
}

/// A transition as the listener reports it.
type Event = (State, State, TransitionReason);

/// A transition as a record, a change or a trip returns it: with its reason and its count.
type Change = (State, State, TransitionReason, u64);

/// The threshold of a model with no consecutive rule: no count reaches it.
const CONSECUTIVE_OFF: u64 = u64::MAX;

/// A validated rate rule, as the documentation resolves it (defaults filled in).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rules {
    /// Trip at counted failures / judged calls ≥ this many millionths; 0: no failure-rate rule.
    failure_ppm: u32,
    /// Trip at slow calls / judged calls ≥ this many millionths; 0: no slow-call rule.
    slow_ppm: u32,
    /// A call that took at least this long is slow (`Duration::ZERO` with no slow-call rule).
    slow_threshold: Duration,
    window: ModelWindow,
    minimum: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ModelWindow {
    /// The last `n` judged calls.
    Calls(u64),
    /// The judged calls of the last 10 buckets of `⌈ms/10⌉` ms.
    TimeMs(u64),
}

/// A validated configuration in the model's units.
#[derive(Debug, Clone, Copy)]
struct Settings {
    /// [`CONSECUTIVE_OFF`] when the consecutive rule is off.
    threshold: u64,
    cooldown: u64,
    probe_timeout: u64,
    rules: Option<Rules>,
    probes: u64,
    /// The backoff's multiplier in millionths and its maximum in ms; `None` for a fixed cooldown
    /// (a multiplier of 1 is none).
    backoff: Option<(u64, u64)>,
}

/// A ratio in (0, 1], kept to the millionth (at least one); `None` when the builder must
/// refuse it.
fn ratio_ppm(ratio: f64) -> Option<u32> {
    (ratio > 0.0 && ratio <= 1.0).then(|| ((ratio * 1_000_000.0).round() as u32).max(1))
}

/// What the builder must make of these settings, as the documentation says; `None` when it must
/// refuse them. With no rate rule (`rates` is `None`) the consecutive rule is set with
/// `threshold`, as `Config::new` sets it.
fn expected_settings(
    threshold: u8,
    rates: Option<&RateRule>,
    cooldown: Duration,
    probe_timeout: Duration,
    shape: ShapeChoice,
) -> Option<Settings> {
    let (cooldown, probe_timeout) = (config_ms(cooldown)?, config_ms(probe_timeout)?);
    let threshold = u64::from(threshold);
    let probes = u64::from(shape.probes());
    if probes == 0 {
        return None;
    }
    let backoff = match shape.backoff {
        None => None,
        Some((k, max)) => {
            let max = config_ms(max.duration())?;
            if max < cooldown {
                return None;
            }
            let ppm = (ShapeChoice::multiplier(k) * 1_000_000.0).round() as u64;
            (ppm != 1_000_000).then_some((ppm, max))
        }
    };
    let Some(rule) = rates else {
        return (threshold > 0).then_some(Settings {
            threshold,
            cooldown,
            probe_timeout,
            rules: None,
            probes,
            backoff,
        });
    };
    let consecutive = match rule.consecutive {
        true if threshold == 0 => return None,
        true => Some(threshold),
        false => None,
    };
    let failure_ppm = match rule.failure_rate {
        Some(ratio) => ratio_ppm(ratio.value())?,
        None => 0,
    };
    let (slow_threshold, slow_ppm) = match rule.slow_calls {
        Some((threshold, _)) if threshold.duration().is_zero() => return None,
        Some((threshold, ratio)) => (threshold.duration(), ratio_ppm(ratio.value())?),
        None => (Duration::ZERO, 0),
    };
    let window = match rule.window.map(WindowChoice::window) {
        // The default: the last 100 calls.
        None => ModelWindow::Calls(100),
        Some(Window::Calls(0)) => return None,
        Some(Window::Calls(n)) => ModelWindow::Calls(u64::from(n)),
        Some(Window::Time(t)) => ModelWindow::TimeMs(config_ms(t)?),
    };
    let minimum = match (rule.minimum_calls, window) {
        (Some(0), _) => return None,
        (Some(m), ModelWindow::Calls(n)) if u64::from(m) > n => return None,
        (Some(m), _) => u64::from(m),
        // The default: 10, or a count window's size if smaller.
        (None, ModelWindow::Calls(n)) => n.min(10),
        (None, ModelWindow::TimeMs(_)) => 10,
    };
    if failure_ppm == 0 && slow_ppm == 0 {
        // A window or a minimum needs a rule; with neither, the consecutive rule's default.
        if rule.window.is_some() || rule.minimum_calls.is_some() {
            return None;
        }
        return Some(Settings {
            threshold: consecutive.unwrap_or(5),
            cooldown,
            probe_timeout,
            rules: None,
            probes,
            backoff,
        });
    }
    Some(Settings {
        threshold: consecutive.unwrap_or(CONSECUTIVE_OFF),
        cooldown,
        probe_timeout,
        rules: Some(Rules {
            failure_ppm,
            slow_ppm,
            slow_threshold,
            window,
            minimum,
        }),
        probes,
        backoff,
    })
}

/// The builder given these settings, as a caller writes it.
fn builder(
    threshold: u8,
    rates: Option<&RateRule>,
    cooldown: Duration,
    probe_timeout: Duration,
    shape: ShapeChoice,
) -> Builder {
    let mut builder = CircuitBreaker::builder()
        .cooldown(cooldown)
        .probe_timeout(probe_timeout)
        .probes(shape.probes());
    if let Some((k, max)) = shape.backoff {
        builder = builder.cooldown_backoff(ShapeChoice::multiplier(k), max.duration());
    }
    let Some(rule) = rates else {
        return builder.failure_threshold(u32::from(threshold));
    };
    let mut builder = builder;
    if rule.consecutive {
        builder = builder.failure_threshold(u32::from(threshold));
    }
    if let Some(ratio) = rule.failure_rate {
        builder = builder.failure_rate(ratio.value());
    }
    if let Some((threshold, ratio)) = rule.slow_calls {
        builder = builder.slow_calls(threshold.duration(), ratio.value());
    }
    if let Some(window) = rule.window {
        builder = builder.window(window.window());
    }
    if let Some(minimum) = rule.minimum_calls {
        builder = builder.minimum_calls(u32::from(minimum));
    }
    builder
}

/// The configuration the breaker reports agrees with the model's settings.
fn check_config(config: &Config, settings: &Settings) {
    let threshold = (settings.threshold != CONSECUTIVE_OFF).then_some(settings.threshold as u32);
    let rules = settings.rules;
    let ppm = |ppm: u32| (ppm != 0).then(|| f64::from(ppm) / 1_000_000.0);
    let want = (
        threshold,
        Duration::from_millis(settings.cooldown),
        Duration::from_millis(settings.probe_timeout),
        rules.and_then(|r| ppm(r.failure_ppm)),
        rules.and_then(|r| Some((r.slow_threshold, ppm(r.slow_ppm)?))),
        rules.map(|r| match r.window {
            ModelWindow::Calls(n) => Window::Calls(n as u32),
            ModelWindow::TimeMs(ms) => Window::Time(Duration::from_millis(ms)),
        }),
        rules.map(|r| r.minimum as u32),
        settings.probes as u32,
        settings
            .backoff
            .map(|(ppm, max)| (ppm as f64 / 1_000_000.0, Duration::from_millis(max))),
    );
    let real = (
        config.failure_threshold(),
        config.cooldown(),
        config.probe_timeout(),
        config.failure_rate(),
        config.slow_calls(),
        config.window(),
        config.minimum_calls(),
        config.probes(),
        config.cooldown_backoff(),
    );
    assert_eq!(real, want, "{settings:?}");
}

/// A judged call in the model's window.
#[derive(Debug, Clone, Copy)]
struct Judged {
    /// Its place among the closed period's judged calls, from 1.
    position: u64,
    /// When it was recorded (the model's clock, in ms).
    at: u64,
    failed: bool,
    slow: bool,
}

/// The bucket of a time window of `window_ms` that `now` falls in: buckets of `⌈t/10⌉` ms counted
/// from the breaker's construction (`now` reads `CLOCK_HEADROOM_MS` then).
fn time_bucket(now: u64, window_ms: u64) -> u64 {
    now.saturating_sub(CLOCK_HEADROOM_MS) / window_ms.div_ceil(10)
}

struct Model {
    /// [`CONSECUTIVE_OFF`] when the consecutive rule is off (failures are still counted).
    threshold: u64,
    cooldown: u64,
    probe_timeout: u64,
    /// The rate rules, if any.
    rules: Option<Rules>,
    state: ModelState,
    period: u64,
    next_id: u64,
    /// The judged calls of the closed period in force that may still be judged, oldest first.
    window: VecDeque<Judged>,
    /// How many calls the closed period in force has judged.
    judged: u64,
    /// The transitions the breaker's listener should have heard since the last check.
    events: Vec<Event>,
    /// Probes half-open admits.
    probes: u64,
    /// The backoff (multiplier in millionths, maximum in ms), if the cooldown backs off.
    backoff: Option<(u64, u64)>,
    /// The cooldown of the open period in force when the cooldown backs off: the configured one
    /// at a trip, one more backoff at a reopen, the same otherwise.
    base: u64,
    /// The probes of the half-open period in force that hold a slot and have not reported.
    slots: Vec<u64>,
    /// Its probes that succeeded.
    succeeded: u64,
}

impl Model {
    fn new(settings: Settings) -> Self {
        Model {
            threshold: settings.threshold,
            cooldown: settings.cooldown,
            probe_timeout: settings.probe_timeout,
            rules: settings.rules,
            state: ModelState::Closed { failures: 0 },
            period: 0,
            next_id: 0,
            window: VecDeque::new(),
            judged: 0,
            events: Vec::new(),
            probes: settings.probes,
            backoff: settings.backoff,
            base: settings.cooldown,
            slots: Vec::new(),
            succeeded: 0,
        }
    }

    /// The cooldown in force for the open period: its base when the cooldown backs off.
    fn cooldown_in_force(&self) -> u64 {
        match self.backoff {
            Some(_) => self.base,
            None => self.cooldown,
        }
    }

    /// The base after one more reopen: times the multiplier, up to the maximum.
    fn backed_off(&self) -> u64 {
        let Some((ppm, max)) = self.backoff else {
            return self.base;
        };
        let grown = u128::from(self.base) * u128::from(ppm) / 1_000_000;
        u64::try_from(grown)
            .unwrap_or(u64::MAX)
            .min(max)
            .max(self.base.min(max))
    }

    /// The state becomes `next`: an open (or isolated, or freed) period that begins takes its
    /// base from the one before, as the breaker's `LiveShape::entered` does: from closed, the
    /// configured cooldown; from a probe (failed, timed out), one more backoff, but a probe's
    /// slots given back (or the fleet's grant) keep it; from open or half-open, the same.
    fn enter(&mut self, next: ModelState) {
        match (self.state, next) {
            (_, ModelState::Closed { .. }) => {}
            (ModelState::Closed { .. }, _) => self.base = self.cooldown,
            (ModelState::Probing { .. }, ModelState::Free) => {}
            (ModelState::Probing { .. }, _) => self.base = self.backed_off(),
            _ => {}
        }
        self.state = next;
    }

    /// Whether a probing period's slots are all back (no probe holds one, none succeeded).
    fn slots_all_back(&self) -> bool {
        self.probes > 1 && self.slots.is_empty() && self.succeeded == 0
    }

    /// A closed period ends (or a new one begins with nothing counted): no permit from before it
    /// counts after it, and the window is empty.
    fn new_period(&mut self) {
        self.period += 1;
        self.window.clear();
        self.judged = 0;
    }

    /// Whether a call reported with `elapsed` is slow: a slow-call rule is set and the call took
    /// at least its threshold. An untimed call never is.
    fn is_slow(&self, elapsed: Option<Duration>) -> bool {
        match (self.rules, elapsed) {
            (Some(rules), Some(elapsed)) => rules.slow_ppm != 0 && elapsed >= rules.slow_threshold,
            _ => false,
        }
    }

    /// Put a judged call into the window and judge it: the rule that trips and its count
    /// (counted failures, or slow calls), if one does.
    fn judge(&mut self, failed: bool, slow: bool, now: u64) -> Option<(TransitionReason, u64)> {
        let rules = self.rules?;
        self.judged += 1;
        self.window.push_back(Judged {
            position: self.judged,
            at: now,
            failed,
            slow,
        });
        // Forget what has left the window (it never comes back), and find the calls the rates
        // are taken over (`span`) and the calls the minimum is compared with.
        let (calls, span) = match rules.window {
            ModelWindow::Calls(n) if n <= 32 => {
                while self.window.len() as u64 > n {
                    self.window.pop_front();
                }
                let len = self.window.len() as u64;
                (len, len)
            }
            ModelWindow::Calls(n) => {
                // Buckets of ⌈n/32⌉ positions; the oldest one the last n positions touch is
                // judged whole.
                let width = n.div_ceil(32);
                let oldest = self.judged.saturating_sub(n) / width;
                while self
                    .window
                    .front()
                    .is_some_and(|call| (call.position - 1) / width < oldest)
                {
                    self.window.pop_front();
                }
                let span = self.judged - oldest * width;
                assert_eq!(span, self.window.len() as u64);
                assert!(span >= self.judged.min(n) && span < n + width);
                (self.judged.min(n), span)
            }
            ModelWindow::TimeMs(ms) => {
                // A call leaves when the bucket 10 after its own begins.
                let current = time_bucket(now, ms);
                while self
                    .window
                    .front()
                    .is_some_and(|call| time_bucket(call.at, ms) + 10 <= current)
                {
                    self.window.pop_front();
                }
                let len = self.window.len() as u64;
                (len, len)
            }
        };
        if calls < rules.minimum {
            return None;
        }
        let failures = self.window.iter().filter(|call| call.failed).count() as u64;
        let slows = self.window.iter().filter(|call| call.slow).count() as u64;
        let reached = |count: u64, ppm: u32| {
            ppm != 0 && u128::from(count) * 1_000_000 >= u128::from(ppm) * u128::from(span)
        };
        if reached(failures, rules.failure_ppm) {
            Some((TransitionReason::FailureRate, failures))
        } else if reached(slows, rules.slow_ppm) {
            Some((TransitionReason::SlowCallRate, slows))
        } else {
            None
        }
    }

    /// A closed breaker trips at `now`.
    fn trip(&mut self, reason: TransitionReason, count: u64, now: u64) -> Change {
        self.enter(ModelState::Open { since: now });
        self.new_period();
        self.events.push((State::Closed, State::Open, reason));
        (State::Closed, State::Open, reason, count)
    }

    /// How the contract reads the clock: whole milliseconds (floor) since construction, counted
    /// from a point the documented headroom before it, clamped to the word's range.
    fn now(clock_ns: u64, built_ns: u64) -> u64 {
        let since = i128::from(clock_ns) - i128::from(built_ns);
        let ms = since.div_euclid(i128::from(NS_PER_MS)) + i128::from(CLOCK_HEADROOM_MS);
        ms.clamp(0, i128::from(MAX_TIME_MS)) as u64
    }

    fn open_view(&self, since: u64, now: u64) -> Seen {
        let ready = since + self.cooldown_in_force();
        if now >= ready {
            Seen::HalfOpenFree
        } else {
            Seen::Open {
                remaining: ready - now,
            }
        }
    }

    fn see(&self, now: u64) -> Seen {
        match self.state {
            ModelState::Closed { .. } => Seen::Closed,
            ModelState::Free => Seen::HalfOpenFree,
            ModelState::Isolated => Seen::Isolated,
            ModelState::Open { since } => self.open_view(since, now),
            ModelState::Probing { since, .. } => {
                let lease_end = since + self.probe_timeout;
                if now < lease_end {
                    Seen::ProbeInFlight {
                        remaining: lease_end - now,
                    }
                } else if self.slots_all_back() {
                    Seen::HalfOpenFree
                } else {
                    // The reopen the lease's end makes: one more backoff.
                    let ready = lease_end
                        + match self.backoff {
                            Some(_) => self.backed_off(),
                            None => self.cooldown,
                        };
                    if now >= ready {
                        Seen::HalfOpenFree
                    } else {
                        Seen::Open {
                            remaining: ready - now,
                        }
                    }
                }
            }
        }
    }

    fn state(&self, now: u64) -> State {
        match self.see(now) {
            Seen::Closed => State::Closed,
            Seen::Open { .. } | Seen::Isolated => State::Open,
            Seen::HalfOpenFree | Seen::ProbeInFlight { .. } => State::HalfOpen,
        }
    }

    /// The transitions time made that the first caller to find them writes down: a timed-out
    /// probe (half-open → open), and a claim of the probe slot from open (open → half-open).
    fn found_by_caller(&mut self, now: u64, claims: bool) {
        if let ModelState::Probing { since, .. } = self.state {
            let lease_end = since + self.probe_timeout;
            if now >= lease_end && self.slots_all_back() {
                // Several probes, all given back: half-open with the slots free, no transition.
                self.enter(ModelState::Free);
            } else if now >= lease_end {
                self.events.push((
                    State::HalfOpen,
                    State::Open,
                    TransitionReason::ProbeTimedOut,
                ));
                self.enter(ModelState::Open { since: lease_end });
            }
        }
        if claims && matches!(self.state, ModelState::Open { .. }) {
            self.events.push((
                State::Open,
                State::HalfOpen,
                TransitionReason::CooldownElapsed,
            ));
        }
    }

    /// A change made by hand; `None` when nothing changes state.
    fn manual(&mut self, op: &Op, now: u64) -> Option<(State, State)> {
        // A probe past its lease is written down first, as by the next caller. `from` is the
        // state as last announced: an open breaker past its cooldown whose slot no caller has
        // claimed is still `open` to a listener.
        self.found_by_caller(now, false);
        let from = match self.state {
            ModelState::Closed { .. } => State::Closed,
            ModelState::Open { .. } | ModelState::Isolated => State::Open,
            ModelState::Free | ModelState::Probing { .. } => State::HalfOpen,
        };
        let to = match (op, self.state) {
            (Op::ForceOpen, ModelState::Isolated) => return None,
            (Op::ForceOpen, _) => {
                self.enter(ModelState::Isolated);
                State::Open
            }
            (Op::ForceClosed, ModelState::Closed { .. }) => return None,
            (Op::Reset, ModelState::Closed { failures }) => {
                // No change of state; with failures to clear (a rated breaker's window always
                // counts as some), no permit from before it counts after it.
                if failures > 0 || self.rules.is_some() {
                    self.state = ModelState::Closed { failures: 0 };
                    self.new_period();
                }
                return None;
            }
            (Op::ForceClosed | Op::Reset, _) => {
                self.state = ModelState::Closed { failures: 0 };
                State::Closed
            }
            _ => unreachable!("not a change by hand: {op:?}"),
        };
        // Every change of state by hand leaves no permit from before it current.
        self.new_period();
        self.events.push((from, to, TransitionReason::Manual));
        Some((from, to))
    }

    /// The state as last announced: an open breaker past its cooldown whose slot no caller has
    /// claimed is still `open` to a listener, a probe past its lease still `half-open`.
    fn announced(&self) -> State {
        match self.state {
            ModelState::Closed { .. } => State::Closed,
            ModelState::Open { .. } | ModelState::Isolated => State::Open,
            ModelState::Free | ModelState::Probing { .. } => State::HalfOpen,
        }
    }

    /// Adopt a state learned from the fleet (the rules of `decide::adopt`): the (from, to,
    /// failures) of the transition announced, `None` when the announced state does not change.
    /// Every change of state leaves no permit from before it current; a local probe's slot or a
    /// closed period that ends is gone.
    fn adopt(&mut self, remote: fuzzing::Remote, now: u64) -> Option<(State, State, u64)> {
        let from = self.announced();
        let failures = match self.state {
            ModelState::Closed { failures } => failures,
            _ => 0,
        };
        let next = match (remote, self.state) {
            // An open period is never shortened; moving its start changes no state.
            (fuzzing::Remote::Open { opened_at_ms }, ModelState::Open { since }) => {
                let at = opened_at_ms.min(MAX_TIME_MS);
                if at > since {
                    self.state = ModelState::Open { since: at };
                }
                return None;
            }
            // A local probe within its lease is kept: no second probe starts while it runs.
            (fuzzing::Remote::Open { .. }, ModelState::Probing { since, .. })
                if now < since.saturating_add(self.probe_timeout) =>
            {
                return None;
            }
            (fuzzing::Remote::Open { opened_at_ms }, _) => ModelState::Open {
                since: opened_at_ms.min(MAX_TIME_MS),
            },
            (fuzzing::Remote::Closed, ModelState::Closed { .. }) => return None,
            (fuzzing::Remote::Closed, _) => ModelState::Closed { failures: 0 },
            (fuzzing::Remote::Isolated, ModelState::Isolated) => return None,
            (fuzzing::Remote::Isolated, _) => ModelState::Isolated,
            // The fleet's probe is here: the slot is freed for a local caller, from open, or
            // from a local probe past its lease (which counts as failed).
            (fuzzing::Remote::ProbeHere, ModelState::Open { .. }) => ModelState::Free,
            (fuzzing::Remote::ProbeHere, ModelState::Probing { since, .. })
                if now >= since + self.probe_timeout =>
            {
                ModelState::Free
            }
            (fuzzing::Remote::ProbeHere, _) => return None,
        };
        if matches!(self.state, ModelState::Closed { .. }) {
            self.new_period();
        }
        // An isolation begun or ended is heard even from open to open.
        let isolation_changed =
            matches!(self.state, ModelState::Isolated) != matches!(next, ModelState::Isolated);
        self.enter(next);
        let to = match next {
            ModelState::Closed { .. } => State::Closed,
            ModelState::Open { .. } | ModelState::Isolated => State::Open,
            ModelState::Free | ModelState::Probing { .. } => State::HalfOpen,
        };
        if from == to && !isolation_changed {
            return None;
        }
        self.events.push((from, to, TransitionReason::Fleet));
        Some((from, to, failures))
    }

    /// Whether a report from `permit` would count now: an ordinary permit of the closed period in
    /// force, or the probe holding the slot within its lease.
    fn is_current(&self, permit: ModelPermit, now: u64) -> bool {
        match (permit, self.state) {
            (ModelPermit::Ordinary { period }, ModelState::Closed { .. }) => period == self.period,
            (ModelPermit::Probe { id }, ModelState::Probing { since, .. }) => {
                self.slots.contains(&id) && now < since + self.probe_timeout
            }
            _ => false,
        }
    }

    /// New settings; a closed breaker whose count reaches the new threshold trips, and one whose
    /// window changes (added, removed, another kind or size) starts a new closed period with its
    /// count kept (no transition) and an empty window. New ratios, minimum or slow threshold
    /// judge the window as it stands.
    fn reconfigure(&mut self, settings: Settings, now: u64) -> Option<Change> {
        let window = |rules: &Option<Rules>| rules.as_ref().map(|rules| rules.window);
        let rules_changed = window(&self.rules) != window(&settings.rules);
        (
            self.threshold,
            self.cooldown,
            self.probe_timeout,
            self.rules,
        ) = (
            settings.threshold,
            settings.cooldown,
            settings.probe_timeout,
            settings.rules,
        );
        match self.state {
            ModelState::Closed { failures } if failures > 0 && failures >= self.threshold => {
                Some(self.trip(TransitionReason::FailureThreshold, failures, now))
            }
            ModelState::Closed { .. } if rules_changed => {
                self.new_period();
                None
            }
            _ => None,
        }
    }

    /// `Ok(permit)` or `Err((state, reason, retry_after_ms))`.
    fn acquire(&mut self, now: u64) -> Result<ModelPermit, (State, BlockedReason, u64)> {
        let seen = self.see(now);
        self.found_by_caller(now, seen == Seen::HalfOpenFree);
        match seen {
            Seen::Closed => Ok(ModelPermit::Ordinary {
                period: self.period,
            }),
            Seen::HalfOpenFree => {
                let id = self.next_id;
                self.next_id += 1;
                self.enter(ModelState::Probing { id, since: now });
                self.slots = vec![id];
                self.succeeded = 0;
                Ok(ModelPermit::Probe { id })
            }
            // Several probes: another slot while one is free.
            Seen::ProbeInFlight { .. }
                if self.probes > 1 && self.slots.len() as u64 + self.succeeded < self.probes =>
            {
                let id = self.next_id;
                self.next_id += 1;
                self.slots.push(id);
                Ok(ModelPermit::Probe { id })
            }
            Seen::Open { remaining } => {
                Err((State::Open, BlockedReason::DependencyOpen, remaining))
            }
            Seen::ProbeInFlight { remaining } => {
                Err((State::HalfOpen, BlockedReason::ProbeInFlight, remaining))
            }
            Seen::Isolated => Err((
                State::Open,
                BlockedReason::Isolated,
                self.cooldown_in_force(),
            )),
        }
    }

    /// The change a verdict causes; `None` for a dropped permit's release too. `slow`: the call
    /// took at least the slow-call threshold.
    fn report(
        &mut self,
        permit: ModelPermit,
        verdict: Option<Verdict>,
        slow: bool,
        now: u64,
    ) -> Option<Change> {
        match (permit, self.state) {
            (ModelPermit::Ordinary { period }, ModelState::Closed { failures })
                if period == self.period =>
            {
                match verdict {
                    Some(Verdict::Success) => {
                        self.state = ModelState::Closed { failures: 0 };
                        let (reason, count) = self.judge(false, slow, now)?;
                        Some(self.trip(reason, count, now))
                    }
                    Some(Verdict::Failure) => {
                        let failures = failures.saturating_add(1);
                        if failures >= self.threshold {
                            return Some(self.trip(
                                TransitionReason::FailureThreshold,
                                failures,
                                now,
                            ));
                        }
                        self.state = ModelState::Closed { failures };
                        let (reason, count) = self.judge(true, slow, now)?;
                        Some(self.trip(reason, count, now))
                    }
                    Some(Verdict::Ignored) | None => None,
                }
            }
            (ModelPermit::Probe { id }, ModelState::Probing { since, .. })
                if self.slots.contains(&id) && now < since + self.probe_timeout =>
            {
                // A probe is never judged by a rate rule. Of several, only the last success and
                // a counted failure are verdicts; an ignored or dropped one gives its slot back.
                self.slots.retain(|&slot| slot != id);
                match verdict {
                    Some(Verdict::Success)
                        if self.probes > 1 && self.succeeded + 1 < self.probes =>
                    {
                        self.succeeded += 1;
                        None
                    }
                    Some(Verdict::Success) => {
                        self.enter(ModelState::Closed { failures: 0 });
                        let reason = TransitionReason::ProbeSucceeded;
                        self.events.push((State::HalfOpen, State::Closed, reason));
                        Some((State::HalfOpen, State::Closed, reason, 0))
                    }
                    Some(Verdict::Failure) => {
                        self.enter(ModelState::Open { since: now });
                        let reason = TransitionReason::ProbeFailed;
                        self.events.push((State::HalfOpen, State::Open, reason));
                        Some((State::HalfOpen, State::Open, reason, 1))
                    }
                    Some(Verdict::Ignored) | None if self.probes > 1 => None,
                    Some(Verdict::Ignored) | None => {
                        self.enter(ModelState::Free);
                        None
                    }
                }
            }
            // Stale: from an older period, an older probe, or a probe past its lease.
            _ => None,
        }
    }
}

/// Whole milliseconds, rounded up; `None` when the builder must refuse the duration.
fn config_ms(duration: Duration) -> Option<u64> {
    let ms = duration.as_nanos().div_ceil(u128::from(NS_PER_MS));
    (1..=u128::from(MAX_DURATION_MS))
        .contains(&ms)
        .then_some(ms as u64)
}

/// Whether a rate rule has a time window.
fn timed(rates: Option<&RateRule>) -> bool {
    matches!(
        rates,
        Some(RateRule {
            window: Some(WindowChoice::Time(_)),
            ..
        })
    )
}

fn outcome(verdict: Verdict) -> Outcome {
    match verdict {
        Verdict::Success => Outcome::Success,
        Verdict::Failure => Outcome::Failure(FailureKind::Unavailable),
        Verdict::Ignored => Outcome::Ignored,
    }
}

/// Acquire on both and compare: the permits if admitted, `None` if both blocked alike.
fn acquire<'a>(
    breaker: &'a CircuitBreaker,
    model: &mut Model,
    now: u64,
    op: &Op,
) -> Option<(Permit<'a>, ModelPermit)> {
    match (breaker.try_acquire(), model.acquire(now)) {
        (Ok(permit), Ok(expected)) => {
            assert_eq!(
                permit.is_probe(),
                matches!(expected, ModelPermit::Probe { .. }),
                "{op:?} at {now}: {:?}",
                model.state
            );
            Some((permit, expected))
        }
        (Err(blocked), Err((state, reason, retry_ms))) => {
            assert_eq!(
                (blocked.state(), blocked.reason(), blocked.retry_after()),
                (state, reason, Duration::from_millis(retry_ms)),
                "{op:?} at {now}: {:?}",
                model.state
            );
            assert!(blocked.retry_after() > Duration::ZERO);
            None
        }
        (real, expected) => panic!(
            "{op:?} at {now}: breaker {:?}, model {expected:?} from {:?}",
            real.map(|p| p.is_probe()),
            model.state
        ),
    }
}

/// Record `verdict` (with `elapsed`, if given) on both and compare the change it made.
fn record(
    (permit, expected): (Permit<'_>, ModelPermit),
    verdict: Verdict,
    elapsed: Option<Duration>,
    model: &mut Model,
    now: u64,
    op: &Op,
) {
    let real = match elapsed {
        Some(elapsed) => permit.record_elapsed(outcome(verdict), elapsed),
        None => permit.record(outcome(verdict)),
    };
    let real = real.map(|t| (t.from(), t.to(), t.reason(), t.failures()));
    // The model before the report: its state, and its window's judged calls and failures.
    let before = (
        model.state,
        model.judged,
        model.window.len(),
        model.window.iter().filter(|call| call.failed).count(),
    );
    let slow = model.is_slow(elapsed);
    let want = model.report(expected, Some(verdict), slow, now);
    assert_eq!(
        real, want,
        "{op:?}: {verdict:?} of {expected:?} at {now}, slow {slow}, model (state, judged, window, \
         failures) {before:?}"
    );
}

fuzz_target!(|input: Input| {
    let (cooldown, probe_timeout) = (input.cooldown.duration(), input.probe_timeout.duration());
    let rates = input.rates.as_ref();
    let (clock, mock) = Clock::mock();
    let heard: Arc<Mutex<Vec<Transition>>> = Arc::default();
    let listener = Arc::clone(&heard);
    // Start mid-range so the clock can step back as far as it steps forward.
    mock.increment(u64::MAX / 2);
    let built_ns = mock.value();
    let shape = input.shape;
    let built = builder(input.threshold, rates, cooldown, probe_timeout, shape)
        .clock(clock)
        .on_transition(move |event| listener.lock().unwrap().push(*event.transition()))
        .build();
    let Some(settings) = expected_settings(input.threshold, rates, cooldown, probe_timeout, shape)
    else {
        assert!(
            built.is_err(),
            "an invalid configuration was accepted: {rates:?}"
        );
        return;
    };
    let breaker = built.expect("a valid configuration was refused");
    check_config(&breaker.config(), &settings);
    let mut model = Model::new(settings);
    // A time window's buckets are read on a clock that never goes back (see the module's docs).
    let forward_only = timed(rates)
        || input.ops.iter().any(|op| match op {
            Op::SetRules { rates, .. } => timed(rates.as_ref()),
            _ => false,
        });
    let mut held: Vec<(Permit<'_>, ModelPermit)> = Vec::new();
    let mut last_heard = State::Closed;
    let mut last_transition: Option<Transition> = None;

    for op in &input.ops {
        let now = Model::now(mock.value(), built_ns);
        match *op {
            Op::Acquire => held.extend(acquire(&breaker, &mut model, now, op)),
            Op::Record { index, verdict } | Op::RecordElapsed { index, verdict, .. } => {
                if held.is_empty() {
                    continue;
                }
                let elapsed = match *op {
                    Op::RecordElapsed { elapsed, .. } => Some(elapsed.duration()),
                    _ => None,
                };
                let permit = held.swap_remove(usize::from(index) % held.len());
                record(permit, verdict, elapsed, &mut model, now, op);
            }
            Op::Calls {
                count,
                failures,
                slow,
            } => {
                // Just at the threshold is slow; a nanosecond below it is not.
                let threshold = model
                    .rules
                    .map_or(Duration::from_millis(1), |rules| rules.slow_threshold);
                for i in 0..count {
                    let Some(permit) = acquire(&breaker, &mut model, now, op) else {
                        continue;
                    };
                    let bit = |bits: u64| bits >> (i % 64) & 1 == 1;
                    let verdict = match bit(failures) {
                        true => Verdict::Failure,
                        false => Verdict::Success,
                    };
                    let elapsed = match bit(slow) {
                        true => threshold,
                        false => threshold.saturating_sub(Duration::from_nanos(1)),
                    };
                    record(permit, verdict, Some(elapsed), &mut model, now, op);
                }
            }
            Op::Drop { index } => {
                if held.is_empty() {
                    continue;
                }
                let (permit, expected) = held.swap_remove(usize::from(index) % held.len());
                drop(permit);
                assert_eq!(model.report(expected, None, false, now), None);
            }
            Op::AdvanceMs(ms) => {
                mock.increment((u64::from(ms) * NS_PER_MS).min(u64::MAX - mock.value()))
            }
            Op::AdvanceNs(ns) => mock.increment(ns.min(u64::MAX - mock.value())),
            Op::BackMs(_) | Op::BackNs(_) if forward_only => {}
            Op::BackMs(ms) => mock.decrement((u64::from(ms) * NS_PER_MS).min(mock.value())),
            Op::BackNs(ns) => mock.decrement(ns.min(mock.value())),
            Op::State => {}
            // `Reconfigure` is the consecutive rule alone, as `Config::new` sets it; both keep
            // the input's probes and backoff.
            Op::Reconfigure {
                threshold,
                ref cooldown,
                ref probe_timeout,
            }
            | Op::SetRules {
                threshold,
                ref cooldown,
                ref probe_timeout,
                ..
            } => {
                let rates = match op {
                    Op::SetRules { rates, .. } => rates.as_ref(),
                    _ => None,
                };
                let (cooldown, probe_timeout) = (cooldown.duration(), probe_timeout.duration());
                match (
                    builder(threshold, rates, cooldown, probe_timeout, shape).build_config(),
                    expected_settings(threshold, rates, cooldown, probe_timeout, shape),
                ) {
                    (Ok(config), Some(settings)) => {
                        let real = breaker.reconfigure(config);
                        let real = real.map(|t| (t.from(), t.to(), t.reason(), t.failures()));
                        assert_eq!(real, model.reconfigure(settings, now), "{op:?} at {now}");
                        assert_eq!(breaker.config(), config);
                        check_config(&config, &settings);
                    }
                    (Err(_), None) => {}
                    (real, _) => panic!("{op:?}: the builder gave {real:?}"),
                }
            }
            Op::ForceOpen | Op::ForceClosed | Op::Reset => {
                let real = match op {
                    Op::ForceOpen => breaker.force_open(),
                    Op::ForceClosed => breaker.force_closed(),
                    _ => breaker.reset(),
                };
                let real = real.map(|t| (t.from(), t.to()));
                assert_eq!(real, model.manual(op, now), "{op:?} at {now}");
            }
            Op::Adopt(_) | Op::LeaseLost => {
                let remote = match *op {
                    Op::Adopt(Remote::Open { offset_ms }) => fuzzing::Remote::Open {
                        opened_at_ms: now.saturating_add_signed(i64::from(offset_ms)),
                    },
                    Op::Adopt(Remote::OpenAt { ms }) => fuzzing::Remote::Open { opened_at_ms: ms },
                    Op::Adopt(Remote::Closed) => fuzzing::Remote::Closed,
                    Op::Adopt(Remote::Isolated) => fuzzing::Remote::Isolated,
                    Op::Adopt(Remote::ProbeHere) => fuzzing::Remote::ProbeHere,
                    _ => fuzzing::Remote::Open { opened_at_ms: now },
                };
                let before = model.state;
                let real = fuzzing::adopt(&breaker, remote);
                if let Some(t) = real {
                    assert_eq!(t.reason(), TransitionReason::Fleet, "{op:?} at {now}");
                }
                let real = real.map(|t| (t.from(), t.to(), t.failures()));
                assert_eq!(
                    real,
                    model.adopt(remote, now),
                    "{op:?} ({remote:?}) at {now} from {before:?}"
                );
            }
            Op::StaleVerdict { index, verdict } => {
                let stale: Vec<usize> = (0..held.len())
                    .filter(|&i| !model.is_current(held[i].1, now))
                    .collect();
                if stale.is_empty() {
                    continue;
                }
                let (permit, expected) = held.swap_remove(stale[usize::from(index) % stale.len()]);
                let before = (model.state, model.judged);
                assert_eq!(
                    permit.record(outcome(verdict)),
                    None,
                    "{op:?} of {expected:?} at {now}"
                );
                assert_eq!(model.report(expected, Some(verdict), false, now), None);
                assert_eq!(
                    (model.state, model.judged),
                    before,
                    "a stale verdict moved the model"
                );
            }
        }
        // The listener heard exactly the transitions the model made, in order, and they chain:
        // each one starts where the one before it ended.
        let transitions: Vec<Transition> = std::mem::take(&mut *heard.lock().unwrap());
        let events: Vec<Event> = transitions
            .iter()
            .map(|t| (t.from(), t.to(), t.reason()))
            .collect();
        assert_eq!(
            events,
            std::mem::take(&mut model.events),
            "after {op:?} at {now}"
        );
        for &(from, to, reason) in &events {
            assert_eq!(from, last_heard, "{reason:?} after {op:?} at {now}");
            last_heard = to;
        }
        // Heard in the breaker's order: each one after the one before it.
        for t in transitions {
            if let Some(last) = last_transition {
                assert!(t.is_after(&last), "{t:?} after {last:?}, {op:?} at {now}");
            }
            last_transition = Some(t);
        }
        // After every step, the state agrees (read at the clock as it is now), and so does whether
        // each held permit would still count.
        let now = Model::now(mock.value(), built_ns);
        for (permit, expected) in &held {
            assert_eq!(
                permit.is_current(),
                model.is_current(*expected, now),
                "{expected:?} after {op:?} at {now}: {:?}",
                model.state
            );
        }
        assert_eq!(
            breaker.state(),
            model.state(now),
            "after {op:?} at {now}: {:?}",
            model.state
        );
    }
});
