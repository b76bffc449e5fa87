//! Differential fuzzing of the breaker against a reference model.
//!
//! An arbitrary configuration and sequence of operations — acquire (keeping every permit), record
//! an outcome on any held permit, drop any held permit, move the mock clock forward or back by any
//! amount, read the state, reconfigure (valid or not), force open, force closed, reset, and the
//! fleet's events: another instance's transition adopted (open at any time, closed, isolated, or
//! the fleet's probe won here), the fleet's probe lost while a local probe may hold the slot, and a
//! stale verdict (a report from a permit that an adoption or a transition left behind) — runs
//! against the real `CircuitBreaker` and against `Model`: the behaviour contract written as plain
//! sequential code, with no bit packing and no generations (permits are told apart by ids). After
//! every step the admitted/blocked decision, the blocked value, the transition a record, a change
//! or an adoption caused, every transition the listener heard (with its reason, in the breaker's
//! order), whether each held permit is still current, and the state must agree.
#![no_main]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use toolbreaker::fuzzing::{self, CLOCK_HEADROOM_MS, MAX_TIME_MS};
use toolbreaker::quanta::Clock;
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Outcome, Permit, State, Transition,
    TransitionReason,
};

const NS_PER_MS: u64 = 1_000_000;
/// The longest duration a configuration may have, in ms (the documented `MAX_DURATION`).
const MAX_DURATION_MS: u64 = 1 << 40;

#[derive(Arbitrary, Debug)]
struct Input {
    threshold: u8,
    cooldown: Span,
    probe_timeout: Span,
    ops: Vec<Op>,
}

/// A configured duration: usually a few milliseconds, sometimes anything at all (zero, a fraction
/// of a millisecond, or too long), which the builder must then refuse or round up.
#[derive(Arbitrary, Debug)]
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

struct Model {
    threshold: u64,
    cooldown: u64,
    probe_timeout: u64,
    state: ModelState,
    period: u64,
    next_id: u64,
    /// The transitions the breaker's listener should have heard since the last check.
    events: Vec<Event>,
}

impl Model {
    /// How the contract reads the clock: whole milliseconds (floor) since construction, counted
    /// from a point the documented headroom before it, clamped to the word's range.
    fn now(clock_ns: u64, built_ns: u64) -> u64 {
        let since = i128::from(clock_ns) - i128::from(built_ns);
        let ms = since.div_euclid(i128::from(NS_PER_MS)) + i128::from(CLOCK_HEADROOM_MS);
        ms.clamp(0, i128::from(MAX_TIME_MS)) as u64
    }

    fn open_view(&self, since: u64, now: u64) -> Seen {
        let ready = since + self.cooldown;
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
                } else {
                    self.open_view(lease_end, now)
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
            if now >= lease_end {
                self.events.push((
                    State::HalfOpen,
                    State::Open,
                    TransitionReason::ProbeTimedOut,
                ));
                self.state = ModelState::Open { since: lease_end };
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
                self.state = ModelState::Isolated;
                State::Open
            }
            (Op::ForceClosed, ModelState::Closed { .. }) => return None,
            (Op::Reset, ModelState::Closed { failures }) => {
                // No change of state; with failures to clear, no permit from before it counts
                // after it.
                if failures > 0 {
                    self.state = ModelState::Closed { failures: 0 };
                    self.period += 1;
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
        self.period += 1;
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
            self.period += 1;
        }
        // An isolation begun or ended is heard even from open to open.
        let isolation_changed =
            matches!(self.state, ModelState::Isolated) != matches!(next, ModelState::Isolated);
        self.state = next;
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
            (ModelPermit::Probe { id }, ModelState::Probing { id: current, since }) => {
                id == current && now < since + self.probe_timeout
            }
            _ => false,
        }
    }

    /// New settings; a closed breaker whose count reaches the new threshold trips.
    fn reconfigure(
        &mut self,
        threshold: u64,
        cooldown: u64,
        probe_timeout: u64,
        now: u64,
    ) -> Option<(State, State)> {
        (self.threshold, self.cooldown, self.probe_timeout) = (threshold, cooldown, probe_timeout);
        match self.state {
            ModelState::Closed { failures } if failures > 0 && failures >= threshold => {
                self.state = ModelState::Open { since: now };
                self.period += 1;
                self.events.push((
                    State::Closed,
                    State::Open,
                    TransitionReason::FailureThreshold,
                ));
                Some((State::Closed, State::Open))
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
                self.state = ModelState::Probing { id, since: now };
                Ok(ModelPermit::Probe { id })
            }
            Seen::Open { remaining } => {
                Err((State::Open, BlockedReason::DependencyOpen, remaining))
            }
            Seen::ProbeInFlight { remaining } => {
                Err((State::HalfOpen, BlockedReason::ProbeInFlight, remaining))
            }
            Seen::Isolated => Err((State::Open, BlockedReason::Isolated, self.cooldown)),
        }
    }

    /// The (from, to) change a verdict causes; `None` for a dropped permit's release too.
    fn report(
        &mut self,
        permit: ModelPermit,
        verdict: Option<Verdict>,
        now: u64,
    ) -> Option<(State, State)> {
        match (permit, self.state) {
            (ModelPermit::Ordinary { period }, ModelState::Closed { failures })
                if period == self.period =>
            {
                match verdict {
                    Some(Verdict::Success) => {
                        self.state = ModelState::Closed { failures: 0 };
                        None
                    }
                    Some(Verdict::Failure) => {
                        if failures + 1 >= self.threshold {
                            self.state = ModelState::Open { since: now };
                            self.period += 1;
                            self.events.push((
                                State::Closed,
                                State::Open,
                                TransitionReason::FailureThreshold,
                            ));
                            Some((State::Closed, State::Open))
                        } else {
                            self.state = ModelState::Closed {
                                failures: failures + 1,
                            };
                            None
                        }
                    }
                    Some(Verdict::Ignored) | None => None,
                }
            }
            (ModelPermit::Probe { id }, ModelState::Probing { id: current, since })
                if id == current && now < since + self.probe_timeout =>
            {
                match verdict {
                    Some(Verdict::Success) => {
                        self.state = ModelState::Closed { failures: 0 };
                        self.events.push((
                            State::HalfOpen,
                            State::Closed,
                            TransitionReason::ProbeSucceeded,
                        ));
                        Some((State::HalfOpen, State::Closed))
                    }
                    Some(Verdict::Failure) => {
                        self.state = ModelState::Open { since: now };
                        self.events.push((
                            State::HalfOpen,
                            State::Open,
                            TransitionReason::ProbeFailed,
                        ));
                        Some((State::HalfOpen, State::Open))
                    }
                    Some(Verdict::Ignored) | None => {
                        self.state = ModelState::Free;
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

fuzz_target!(|input: Input| {
    let threshold = u32::from(input.threshold);
    let (cooldown, probe_timeout) = (input.cooldown.duration(), input.probe_timeout.duration());
    let (clock, mock) = Clock::mock();
    let heard: Arc<Mutex<Vec<Transition>>> = Arc::default();
    let listener = Arc::clone(&heard);
    // Start mid-range so the clock can step back as far as it steps forward.
    mock.increment(u64::MAX / 2);
    let built_ns = mock.value();
    let built = CircuitBreaker::builder()
        .failure_threshold(threshold)
        .cooldown(cooldown)
        .probe_timeout(probe_timeout)
        .clock(clock)
        .on_transition(move |event| listener.lock().unwrap().push(*event.transition()))
        .build();
    let (Some(cooldown_ms), Some(probe_timeout_ms), true) =
        (config_ms(cooldown), config_ms(probe_timeout), threshold > 0)
    else {
        assert!(built.is_err(), "an invalid configuration was accepted");
        return;
    };
    let breaker = built.expect("a valid configuration was refused");
    let mut model = Model {
        threshold: u64::from(threshold),
        cooldown: cooldown_ms,
        probe_timeout: probe_timeout_ms,
        state: ModelState::Closed { failures: 0 },
        period: 0,
        next_id: 0,
        events: Vec::new(),
    };
    let mut held: Vec<(Permit<'_>, ModelPermit)> = Vec::new();
    let mut last_heard = State::Closed;
    let mut last_transition: Option<Transition> = None;

    for op in &input.ops {
        let now = Model::now(mock.value(), built_ns);
        match *op {
            Op::Acquire => match (breaker.try_acquire(), model.acquire(now)) {
                (Ok(permit), Ok(expected)) => {
                    assert_eq!(
                        permit.is_probe(),
                        matches!(expected, ModelPermit::Probe { .. }),
                        "{op:?} at {now}: {:?}",
                        model.state
                    );
                    held.push((permit, expected));
                }
                (Err(blocked), Err((state, reason, retry_ms))) => {
                    assert_eq!(
                        (blocked.state(), blocked.reason(), blocked.retry_after()),
                        (state, reason, Duration::from_millis(retry_ms)),
                        "{op:?} at {now}: {:?}",
                        model.state
                    );
                    assert!(blocked.retry_after() > Duration::ZERO);
                }
                (real, expected) => panic!(
                    "{op:?} at {now}: breaker {:?}, model {expected:?} from {:?}",
                    real.map(|p| p.is_probe()),
                    model.state
                ),
            },
            Op::Record { index, verdict } => {
                if held.is_empty() {
                    continue;
                }
                let (permit, expected) = held.swap_remove(usize::from(index) % held.len());
                let outcome = match verdict {
                    Verdict::Success => Outcome::Success,
                    Verdict::Failure => Outcome::Failure(FailureKind::Unavailable),
                    Verdict::Ignored => Outcome::Ignored,
                };
                let real = permit.record(outcome).map(|t| (t.from(), t.to()));
                let want = model.report(expected, Some(verdict), now);
                assert_eq!(real, want, "{op:?} of {expected:?} at {now}");
            }
            Op::Drop { index } => {
                if held.is_empty() {
                    continue;
                }
                let (permit, expected) = held.swap_remove(usize::from(index) % held.len());
                drop(permit);
                assert_eq!(model.report(expected, None, now), None);
            }
            Op::AdvanceMs(ms) => {
                mock.increment((u64::from(ms) * NS_PER_MS).min(u64::MAX - mock.value()))
            }
            Op::AdvanceNs(ns) => mock.increment(ns.min(u64::MAX - mock.value())),
            Op::BackMs(ms) => mock.decrement((u64::from(ms) * NS_PER_MS).min(mock.value())),
            Op::BackNs(ns) => mock.decrement(ns.min(mock.value())),
            Op::State => {}
            Op::Reconfigure {
                threshold,
                ref cooldown,
                ref probe_timeout,
            } => {
                let (cooldown, probe_timeout) = (cooldown.duration(), probe_timeout.duration());
                let valid = match (config_ms(cooldown), config_ms(probe_timeout), threshold > 0) {
                    (Some(c), Some(p), true) => Some((u64::from(threshold), c, p)),
                    _ => None,
                };
                match (
                    Config::new(u32::from(threshold), cooldown, probe_timeout),
                    valid,
                ) {
                    (Ok(config), Some((t, c, p))) => {
                        let real = breaker.reconfigure(config).map(|t| (t.from(), t.to()));
                        assert_eq!(real, model.reconfigure(t, c, p, now), "{op:?} at {now}");
                        assert_eq!(breaker.config(), config);
                    }
                    (Err(_), None) => {}
                    (real, _) => panic!("{op:?}: Config::new gave {real:?}"),
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
                let outcome = match verdict {
                    Verdict::Success => Outcome::Success,
                    Verdict::Failure => Outcome::Failure(FailureKind::Unavailable),
                    Verdict::Ignored => Outcome::Ignored,
                };
                let before = model.state;
                assert_eq!(
                    permit.record(outcome),
                    None,
                    "{op:?} of {expected:?} at {now}"
                );
                assert_eq!(model.report(expected, Some(verdict), now), None);
                assert_eq!(model.state, before, "a stale verdict moved the model");
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
