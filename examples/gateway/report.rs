//! Counters per dependency and per agent run, the transition log, and the final report (a table,
//! or JSON).
//!
//! Every counter is an atomic bumped with relaxed ordering: they are statistics, read live by the
//! progress line and exactly once the agent tasks have been joined.
//!
//! Attempts are counted as the pipeline reports them (`ToolGuard::call_observed`'s `observe`), and
//! calls by their `ToolResult`, so per dependency, once every call has ended:
//!
//! - `sent` = attempts = `successes` + `failures` + `ignored` + `cut`, where `cut` counts the
//!   attempts the run's deadline cut short (sent, but no outcome is recorded for them: the
//!   pipeline does not report them to `observe`, and they are told apart by the call's attempt
//!   count, one more than the attempts reported);
//! - `sent` + `blocked` = `attempted` + `retries` + `retries_refused`: a call that was asked of
//!   the breaker sends its first attempt or is blocked; every further attempt is a retry, and a
//!   retry the opened breaker refused ends the call `blocked`.
//!
//! Calls answered `blocked` include those refused for load rather than health: `saturated` (over
//! the dependency's cap on calls in flight) and `throttled` (shed by adaptive throttling); each is
//! counted on its own too, with how fast a saturated call was answered and how many calls were
//! shed before the breaker first tripped.
//!
//! Next to them, the report shows the breaker's own counters ([`Metrics`], from
//! `Registry::metrics`), which agree with the gateway's: the breaker admitted `sent` attempts,
//! recorded the same successes, failures by kind and ignored, and refused the same calls (its
//! `blocked`, `saturated` and `throttled` together are the gateway's `blocked`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use toolbreaker::{
    BlockedReason, Config, FailureKind, Outcome, State, StopReason, ToolResult, TransitionReason,
    agent::Attempt, observe::Metrics,
};

use crate::tools::{Mode, Tool};

/// The failure kinds, in report order (`FailureKind::as_str` names).
pub const KINDS: [&str; 5] = ["timeout", "connect", "rate_limited", "unavailable", "other"];

fn kind_index(kind: FailureKind) -> usize {
    KINDS
        .iter()
        .position(|name| *name == kind.as_str())
        .unwrap_or(KINDS.len() - 1)
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn load(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// One logged state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedTransition {
    /// Milliseconds since the start of the run.
    pub at_ms: u64,
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// Why: `failure_threshold`, `failure_rate`, `cooldown_elapsed` (a probe was admitted), ...
    pub reason: TransitionReason,
}

/// Everything counted about one dependency.
pub struct DependencyStats {
    /// The tool.
    pub tool: Tool,
    attempted: AtomicU64,
    sent: AtomicU64,
    blocked: AtomicU64,
    successes: AtomicU64,
    failures: [AtomicU64; 5],
    ignored: AtomicU64,
    retries: AtomicU64,
    retries_refused: AtomicU64,
    probes: AtomicU64,
    /// Attempts the run's deadline cut short: sent (and counted in `sent`, and in `retries` if
    /// they were one), but no outcome recorded.
    cut: AtomicU64,
    outage_attempted: AtomicU64,
    outage_never_sent: AtomicU64,
    /// Attempts sent by the calls attempted during the outage (retries and probes included).
    outage_sent: AtomicU64,
    /// The last `Retry-After` hint seen, in ms (0: none yet).
    retry_after_hint_ms: AtomicU64,
    /// Admission control: the calls answered `saturated` (over the cap), those of them answered
    /// before any attempt, and how long those took (sum and slowest, µs).
    saturated: AtomicU64,
    saturated_at_once: AtomicU64,
    saturated_us_sum: AtomicU64,
    saturated_us_max: AtomicU64,
    /// The calls answered `throttled` (shed), those shed before the breaker first tripped, and the
    /// calls attempted during the outage before that trip.
    throttled: AtomicU64,
    throttled_before_trip: AtomicU64,
    outage_attempted_before_trip: AtomicU64,
    /// Whether the breaker has tripped (closed -> open) yet.
    tripped: AtomicBool,
    /// Transitions are rare (a handful a second at most), so a lock is the simple choice here.
    transitions: Mutex<Vec<LoggedTransition>>,
    /// The first `blocked` result, as the JSON the model received.
    first_blocked: OnceLock<String>,
    /// When each probe was sent, since the start of the run. Probes are rare: a lock is fine.
    probe_starts: Mutex<Vec<Duration>>,
}

impl DependencyStats {
    /// Zeroed counters for `tool`.
    pub fn new(tool: Tool) -> Self {
        DependencyStats {
            tool,
            attempted: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            successes: AtomicU64::new(0),
            failures: Default::default(),
            ignored: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            retries_refused: AtomicU64::new(0),
            probes: AtomicU64::new(0),
            cut: AtomicU64::new(0),
            outage_attempted: AtomicU64::new(0),
            outage_never_sent: AtomicU64::new(0),
            outage_sent: AtomicU64::new(0),
            retry_after_hint_ms: AtomicU64::new(0),
            saturated: AtomicU64::new(0),
            saturated_at_once: AtomicU64::new(0),
            saturated_us_sum: AtomicU64::new(0),
            saturated_us_max: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            throttled_before_trip: AtomicU64::new(0),
            outage_attempted_before_trip: AtomicU64::new(0),
            tripped: AtomicBool::new(false),
            transitions: Mutex::default(),
            first_blocked: OnceLock::new(),
            probe_starts: Mutex::default(),
        }
    }

    /// Count one attempt that reached the dependency, as the pipeline reports it when it ends.
    /// `start`: the start of the demo, for the transition log's times.
    pub fn attempt(&self, attempt: &Attempt, start: Instant) {
        bump(&self.sent);
        if attempt.number > 1 {
            bump(&self.retries);
        }
        let started = attempt.started.saturating_duration_since(start);
        if attempt.probe {
            bump(&self.probes);
            self.probe_starts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(started);
            // Half-open is "open whose cooldown has elapsed": it shows as a change of state when
            // the probe is admitted.
            self.log_transition(
                started,
                State::Open,
                State::HalfOpen,
                TransitionReason::CooldownElapsed,
            );
        }
        match attempt.outcome {
            Outcome::Success => bump(&self.successes),
            Outcome::Ignored => bump(&self.ignored),
            Outcome::Failure(kind) => {
                bump(&self.failures[kind_index(kind)]);
                if let FailureKind::RateLimited {
                    retry_after: Some(hint),
                } = kind
                {
                    self.retry_after_hint_ms
                        .store(millis(hint), Ordering::Relaxed);
                }
            }
        }
        if let Some(transition) = attempt.transition {
            self.log_transition(
                started + attempt.elapsed,
                transition.from(),
                transition.to(),
                transition.reason(),
            );
        }
    }

    /// Count one call by its result. `in_outage`: the dependency's server was in a failing mode
    /// when the call started. `observed`: how many of its attempts the pipeline reported (to
    /// [`attempt`](Self::attempt)); one more was sent if the run's deadline cut it short, and it
    /// is counted here. `took`: how long the call took, as its caller timed it.
    ///
    /// A call the run guard stopped before its first attempt was never asked of the breaker, and
    /// counts nothing here.
    pub fn call(
        &self,
        result: &ToolResult<String>,
        in_outage: bool,
        observed: u32,
        took: Duration,
    ) {
        let attempts = result.stats().map_or(0, |stats| stats.attempts);
        if matches!(result, ToolResult::Stopped { .. }) && attempts > observed {
            bump(&self.cut);
            bump(&self.sent);
            if attempts > 1 {
                bump(&self.retries);
            }
        }
        if attempts == 0 && matches!(result, ToolResult::Stopped { .. }) {
            return;
        }
        bump(&self.attempted);
        let before_trip = !self.tripped.load(Ordering::Relaxed);
        if in_outage {
            bump(&self.outage_attempted);
            if before_trip {
                bump(&self.outage_attempted_before_trip);
            }
            self.outage_sent
                .fetch_add(u64::from(attempts), Ordering::Relaxed);
            if attempts == 0 {
                bump(&self.outage_never_sent);
            }
        }
        if let ToolResult::Blocked { reason, .. } = result {
            bump(&self.blocked);
            match reason {
                BlockedReason::Saturated => {
                    bump(&self.saturated);
                    if attempts == 0 {
                        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
                        bump(&self.saturated_at_once);
                        self.saturated_us_sum.fetch_add(us, Ordering::Relaxed);
                        self.saturated_us_max.fetch_max(us, Ordering::Relaxed);
                    }
                }
                BlockedReason::Throttled => {
                    bump(&self.throttled);
                    if before_trip {
                        bump(&self.throttled_before_trip);
                    }
                }
                _ => {}
            }
            if attempts > 0 {
                bump(&self.retries_refused);
            }
            if self.first_blocked.get().is_none()
                && let Ok(json) = result.to_json()
            {
                let _ = self.first_blocked.set(json);
            }
        }
    }

    fn log_transition(&self, at: Duration, from: State, to: State, reason: TransitionReason) {
        if from == State::Closed && to == State::Open {
            self.tripped.store(true, Ordering::Relaxed);
        }
        let mut log = self.transitions.lock().unwrap_or_else(|e| e.into_inner());
        log.push(LoggedTransition {
            at_ms: millis(at),
            from,
            to,
            reason,
        });
    }

    /// The first `blocked` result, as the JSON the model received.
    pub fn first_blocked(&self) -> Option<&str> {
        self.first_blocked.get().map(String::as_str)
    }

    /// When each probe was sent, in µs since the start of the run, in order.
    pub fn probe_starts_us(&self) -> Vec<u64> {
        let mut starts: Vec<u64> = self
            .probe_starts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|at| u64::try_from(at.as_micros()).unwrap_or(u64::MAX))
            .collect();
        starts.sort_unstable();
        starts
    }

    /// A copy of the counters, once the run is over, with the breaker's settings in force at the
    /// end and its own counters (`None` if it kept none), and the requests that reached the
    /// server (`None` if the server is another process's).
    pub fn snapshot(
        &self,
        window: Option<Window>,
        server_hits: Option<u64>,
        config: Config,
        metrics: Option<Metrics>,
    ) -> Snapshot {
        let mut transitions = self
            .transitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        transitions.sort_by_key(|t| t.at_ms); // stable: ties keep their logging order
        Snapshot {
            tool: self.tool,
            attempted: load(&self.attempted),
            sent: load(&self.sent),
            blocked: load(&self.blocked),
            successes: load(&self.successes),
            failures_by_kind: std::array::from_fn(|i| load(&self.failures[i])),
            ignored: load(&self.ignored),
            retries: load(&self.retries),
            retries_refused: load(&self.retries_refused),
            probes: load(&self.probes),
            cut: load(&self.cut),
            outage_attempted: load(&self.outage_attempted),
            outage_never_sent: load(&self.outage_never_sent),
            outage_sent: load(&self.outage_sent),
            retry_after_hint_ms: match load(&self.retry_after_hint_ms) {
                0 => None,
                ms => Some(ms),
            },
            admission: Admission {
                saturated: load(&self.saturated),
                saturated_at_once: load(&self.saturated_at_once),
                saturated_us_sum: load(&self.saturated_us_sum),
                saturated_us_max: load(&self.saturated_us_max),
                throttled: load(&self.throttled),
                throttled_before_trip: load(&self.throttled_before_trip),
                outage_attempted_before_trip: load(&self.outage_attempted_before_trip),
            },
            server_hits,
            window,
            transitions,
            config,
            metrics,
        }
    }
}

/// When a dependency's server was failing, and how.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// How it failed.
    pub mode: Mode,
    /// From, in ms since the start of the run.
    pub from_ms: u64,
    /// To, in ms since the start of the run.
    pub to_ms: u64,
    /// When it began to degrade before that (a growing share of failures), if it did: the calls
    /// from then on count as the outage's.
    pub degrading_from_ms: Option<u64>,
}

impl Window {
    /// The outage in words: `503 unavailable from 2.00 s to 5.50 s`, after its degradation if it
    /// had one.
    pub fn describe(&self) -> String {
        let outage = format!(
            "{} from {:.2} s to {:.2} s",
            self.mode.describe(),
            self.from_ms as f64 / 1000.0,
            self.to_ms as f64 / 1000.0
        );
        match self.degrading_from_ms {
            Some(from) => format!(
                "503 on a growing share of requests from {:.2} s, then {outage}",
                from as f64 / 1000.0
            ),
            None => outage,
        }
    }
}

/// What admission control refused, for one dependency: calls answered `saturated` and
/// `throttled`.
#[derive(Clone, Copy, Debug, Default)]
struct Admission {
    saturated: u64,
    saturated_at_once: u64,
    saturated_us_sum: u64,
    saturated_us_max: u64,
    throttled: u64,
    throttled_before_trip: u64,
    outage_attempted_before_trip: u64,
}

impl Admission {
    /// The mean time a saturated call took to be answered, when it was answered before any
    /// attempt, in ms.
    fn saturated_mean_ms(&self) -> Option<f64> {
        (self.saturated_at_once > 0)
            .then(|| self.saturated_us_sum as f64 / self.saturated_at_once as f64 / 1000.0)
    }

    /// The share of the calls attempted during the outage before the first trip that were shed.
    fn shed_before_trip(&self) -> Option<f64> {
        (self.outage_attempted_before_trip > 0)
            .then(|| self.throttled_before_trip as f64 / self.outage_attempted_before_trip as f64)
    }
}

/// The counters of one dependency at the end of the run.
pub struct Snapshot {
    tool: Tool,
    attempted: u64,
    sent: u64,
    blocked: u64,
    successes: u64,
    failures_by_kind: [u64; 5],
    ignored: u64,
    retries: u64,
    retries_refused: u64,
    probes: u64,
    cut: u64,
    outage_attempted: u64,
    outage_never_sent: u64,
    outage_sent: u64,
    retry_after_hint_ms: Option<u64>,
    admission: Admission,
    server_hits: Option<u64>,
    window: Option<Window>,
    transitions: Vec<LoggedTransition>,
    config: Config,
    metrics: Option<Metrics>,
}

impl Snapshot {
    fn failures(&self) -> u64 {
        self.failures_by_kind.iter().sum()
    }

    /// The share of calls attempted during the outage that were never sent.
    fn never_sent_share(&self) -> Option<f64> {
        (self.outage_attempted > 0)
            .then(|| self.outage_never_sent as f64 / self.outage_attempted as f64)
    }

    /// This dependency's block of the report table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let outage = match self.window {
            Some(w) => w.describe(),
            None => "none (always healthy)".to_owned(),
        };
        let _ = writeln!(out, "{}  (outage: {outage})", self.tool.name());
        let mut row = |label: &str, value: String| {
            let _ = writeln!(out, "  {label:<42}{value:>10}");
        };
        row("calls asked of the breaker", self.attempted.to_string());
        row("attempts sent to the dependency", self.sent.to_string());
        row("  of which retries", self.retries.to_string());
        row("  of which probes", self.probes.to_string());
        if self.cut > 0 {
            row(
                "  of which cut short by the run's deadline",
                self.cut.to_string(),
            );
        }
        if let Some(hits) = self.server_hits {
            row("requests that reached the server", hits.to_string());
        }
        row("calls answered blocked", self.blocked.to_string());
        row(
            "  of which retries refused (opened breaker)",
            self.retries_refused.to_string(),
        );
        self.admission_rows(&mut row);
        row("successes", self.successes.to_string());
        row("counted failures", self.failures().to_string());
        for (kind, count) in KINDS.iter().zip(self.failures_by_kind) {
            row(&format!("  {kind}"), count.to_string());
        }
        row("ignored (the caller's fault)", self.ignored.to_string());
        if let Some(ms) = self.retry_after_hint_ms {
            row(
                "last Retry-After hint",
                format!("{:.1} s", ms as f64 / 1000.0),
            );
        }
        if self.window.is_some() {
            row(
                "calls attempted during the outage",
                self.outage_attempted.to_string(),
            );
            row("  never sent", self.outage_never_sent.to_string());
            row(
                "  share never sent",
                match self.never_sent_share() {
                    Some(share) => format!("{:.2} %", share * 100.0),
                    None => "-".to_owned(),
                },
            );
            row(
                "  attempts they sent (retries, probes)",
                self.outage_sent.to_string(),
            );
        }
        if self.transitions.is_empty() {
            let _ = writeln!(out, "  transitions: none");
        } else {
            let _ = writeln!(out, "  transitions ({}):", self.transitions.len());
            for t in &self.transitions {
                let _ = writeln!(
                    out,
                    "    {:>8.3} s  {} -> {} ({})",
                    t.at_ms as f64 / 1000.0,
                    t.from,
                    t.to,
                    t.reason
                );
            }
        }
        if let Some(m) = &self.metrics {
            let _ = writeln!(
                out,
                "  the breaker's own counters (state at the end: {}):",
                m.state
            );
            let _ = writeln!(
                out,
                "    admitted {}, blocked {}; successes {}, counted failures {}, ignored {}",
                m.admitted,
                m.blocked,
                m.successes,
                m.failures.total(),
                m.ignored
            );
            if m.saturated + m.throttled > 0 || self.admission_rows_shown() {
                let _ = writeln!(
                    out,
                    "    refused for load, never counted: saturated {}, throttled {}",
                    m.saturated, m.throttled
                );
            }
            let f = &m.failures;
            let _ = writeln!(
                out,
                "    failures by kind: timeout {}, connect {}, rate_limited {}, unavailable {}, \
                 other {}",
                f.timeout, f.connect, f.rate_limited, f.unavailable, f.other
            );
            let t = &m.transitions;
            let _ = writeln!(
                out,
                "    transitions by reason: failure_threshold {}, failure_rate {}, \
                 slow_call_rate {}, cooldown_elapsed {}, probe_succeeded {}, probe_failed {}, \
                 probe_timed_out {}, manual {}",
                t.failure_threshold,
                t.failure_rate,
                t.slow_call_rate,
                t.cooldown_elapsed,
                t.probe_succeeded,
                t.probe_failed,
                t.probe_timed_out,
                t.manual
            );
            let _ = writeln!(out, "  in short: {}", verdict(m, self.config));
        }
        out
    }

    /// The cap in force at the end: the breaker's own (adaptive or fixed), else its setting's.
    fn concurrency_limit(&self) -> Option<u32> {
        self.metrics
            .as_ref()
            .and_then(|m| m.concurrency_limit)
            .or(self.config.max_in_flight())
    }

    /// Whether the table has admission rows: the dependency has a cap or a throttle, or refused
    /// a call for load. The other dependencies' tables are as they were without it.
    fn admission_rows_shown(&self) -> bool {
        let a = &self.admission;
        self.concurrency_limit().is_some()
            || self.config.adaptive_throttling().is_some()
            || a.saturated + a.throttled > 0
    }

    /// The admission control's rows, when [`admission_rows_shown`](Self::admission_rows_shown).
    fn admission_rows(&self, row: &mut impl FnMut(&str, String)) {
        let a = &self.admission;
        let limit = self.concurrency_limit();
        let throttling = self.config.adaptive_throttling();
        if !self.admission_rows_shown() {
            return;
        }
        if limit.is_some() || a.saturated > 0 {
            let label = match limit {
                Some(limit) => format!("  of which saturated (cap: {limit} in flight)"),
                None => "  of which saturated (over the cap)".to_owned(),
            };
            row(&label, a.saturated.to_string());
            row(
                "    answered before any attempt",
                a.saturated_at_once.to_string(),
            );
            if let Some(mean) = a.saturated_mean_ms() {
                row(
                    "    their answer took, mean / slowest",
                    format!("{:.1} / {} µs", mean * 1000.0, a.saturated_us_max),
                );
            }
        }
        if throttling.is_some() || a.throttled > 0 {
            row(
                "  of which throttled (shed, never sent)",
                a.throttled.to_string(),
            );
            row(
                "    shed before the breaker first tripped",
                a.throttled_before_trip.to_string(),
            );
            row(
                "    share of the outage's calls, till then",
                match a.shed_before_trip() {
                    Some(share) => format!("{:.2} %", share * 100.0),
                    None => "-".to_owned(),
                },
            );
        }
    }

    /// This dependency's entry in the JSON report.
    pub fn json(&self) -> Value {
        let by_kind: serde_json::Map<String, Value> = KINDS
            .iter()
            .zip(self.failures_by_kind)
            .map(|(kind, count)| ((*kind).to_owned(), json!(count)))
            .collect();
        let transitions: Vec<Value> = self
            .transitions
            .iter()
            .map(|t| {
                json!({
                    "at_ms": t.at_ms,
                    "from": t.from.as_str(),
                    "to": t.to.as_str(),
                    "reason": t.reason.as_str(),
                })
            })
            .collect();
        json!({
            "attempted": self.attempted,
            "sent": self.sent,
            "blocked": self.blocked,
            "successes": self.successes,
            "failures": self.failures(),
            "ignored": self.ignored,
            "failures_by_kind": by_kind,
            "retries": self.retries,
            "retries_refused": self.retries_refused,
            "probes": self.probes,
            "cut_by_deadline": self.cut,
            "server_hits": self.server_hits,
            "retry_after_hint_ms": self.retry_after_hint_ms,
            "concurrency_limit": self.concurrency_limit(),
            "saturated": self.admission.saturated,
            "saturated_at_once": self.admission.saturated_at_once,
            "saturated_answer_ms": self.admission.saturated_mean_ms().map(|mean| json!({
                "mean": mean,
                "max": self.admission.saturated_us_max as f64 / 1000.0,
            })),
            "throttled": self.admission.throttled,
            "throttled_before_trip": self.admission.throttled_before_trip,
            "outage_attempted_before_trip": self.admission.outage_attempted_before_trip,
            "shed_before_trip_share": self.admission.shed_before_trip(),
            "transitions": transitions,
            "outage": self.window.map(|w| json!({
                "mode": w.mode.describe(),
                "from_ms": w.from_ms,
                "to_ms": w.to_ms,
                "degrading_from_ms": w.degrading_from_ms,
                "attempted": self.outage_attempted,
                "never_sent": self.outage_never_sent,
                "sent": self.outage_sent,
                "never_sent_share": self.never_sent_share(),
            })),
            "metrics": self.metrics.map(|m| serde_json::to_value(m).unwrap_or(Value::Null)),
        })
    }
}

/// What the breaker's counters say, in one line: did the service fail, did the breaker open (and
/// by which rule, when `config` has a rate rule), and did the agents keep calling once it had?
fn verdict(m: &Metrics, config: Config) -> String {
    let failures = m.failures.total();
    let failed = if failures == 0 {
        match m.ignored {
            0 => "the service never failed".to_owned(),
            n => format!(
                "the service never failed ({n} calls failed by the caller's fault, ignored)"
            ),
        }
    } else {
        format!("the service failed ({failures} counted failures)")
    };
    let t = &m.transitions;
    let trips = t.failure_threshold + t.failure_rate + t.slow_call_rate;
    let reopened = t.probe_failed + t.probe_timed_out;
    let times = |n: u64| match n {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    };
    // By which rule, once a rate rule is in play; a consecutive rule alone needs no saying.
    let rated = config.failure_rate().is_some() || config.slow_calls().is_some();
    let in_a_row = match config.failure_threshold() {
        Some(threshold) => format!("on {threshold} failures in a row"),
        None => "on failures in a row".to_owned(),
    };
    let rules: Vec<(u64, &str)> = [
        (t.failure_threshold, in_a_row.as_str()),
        (t.failure_rate, "by its failure rate"),
        (t.slow_call_rate, "by its slow-call rate"),
    ]
    .into_iter()
    .filter(|(count, _)| *count > 0)
    .collect();
    let mut how = match rules.as_slice() {
        [] => String::new(),
        [(_, rule)] if rated || t.failure_threshold == 0 => format!(" {rule}"),
        [_] => String::new(),
        several => {
            let each: Vec<String> = several
                .iter()
                .map(|(count, rule)| format!("{count} {rule}"))
                .collect();
            format!(" ({})", each.join(", "))
        }
    };
    if rated && config.failure_threshold().is_some() && t.failure_threshold == 0 && trips > 0 {
        how.push_str(&format!(", never {in_a_row}"));
    }
    let opened = match (trips, reopened) {
        (0, _) => "the breaker never opened".to_owned(),
        (n, 0) => format!("the breaker opened {}{how}", times(n)),
        (n, r) => format!(
            "the breaker opened {}{how}, and failed probes reopened it {}",
            times(n),
            times(r)
        ),
    };
    let kept_calling = match m.blocked {
        0 if trips == 0 => String::new(),
        0 => "; no call came while it was not closed".to_owned(),
        n => format!("; the agents kept calling after it opened: {n} calls blocked, never sent"),
    };
    format!("{failed}; {opened}{kept_calling}")
}

/// The stop reasons, in report order (`StopReason::as_str` names).
const STOP_REASONS: [StopReason; 3] = [
    StopReason::ToolCallBudget,
    StopReason::Deadline,
    StopReason::TokenBudget,
];

/// What every agent run counts: runs, calls, and how the runs stopped.
#[derive(Default)]
pub struct RunStats {
    runs_started: AtomicU64,
    calls: AtomicU64,
    calls_stopped: AtomicU64,
    /// Runs stopped, by reason, in `STOP_REASONS` order.
    stopped_by: [AtomicU64; 3],
    /// Runs whose deadline was the demo's end (not their own time limit) and stopped at it.
    cut_short: AtomicU64,
    /// The first `stopped` result, as the JSON the model received.
    first_stopped: OnceLock<String>,
}

impl RunStats {
    /// Count a run's start.
    pub fn run_started(&self) {
        bump(&self.runs_started);
    }

    /// Count one call by its result; a `stopped` result ends its run, and is counted as the
    /// run's stop. `cut_short`: the run's deadline is the demo's end.
    pub fn call(&self, result: &ToolResult<String>, cut_short: bool) {
        bump(&self.calls);
        if let ToolResult::Stopped { stop_reason, .. } = result {
            bump(&self.calls_stopped);
            let index = STOP_REASONS
                .iter()
                .position(|reason| reason == stop_reason)
                .unwrap_or(0);
            bump(&self.stopped_by[index]);
            if cut_short && *stop_reason == StopReason::Deadline {
                bump(&self.cut_short);
            }
            if self.first_stopped.get().is_none()
                && let Ok(json) = result.to_json()
            {
                let _ = self.first_stopped.set(json);
            }
        }
    }

    /// Tool calls made so far, whatever their result.
    pub fn calls(&self) -> u64 {
        load(&self.calls)
    }

    /// Runs started so far.
    pub fn runs_started(&self) -> u64 {
        load(&self.runs_started)
    }

    /// The first `stopped` result, as the JSON the model received.
    pub fn first_stopped(&self) -> Option<&str> {
        self.first_stopped.get().map(String::as_str)
    }

    fn stopped(&self, reason: StopReason) -> u64 {
        STOP_REASONS
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |i| load(&self.stopped_by[i]))
    }

    /// The runs' line of the report table.
    pub fn table(&self) -> String {
        let mut line = format!(
            "{} agent runs started; stopped by tool_call_budget: {}, by deadline: {} \
             ({} of them cut short by the demo's end)",
            self.runs_started(),
            self.stopped(StopReason::ToolCallBudget),
            self.stopped(StopReason::Deadline),
            load(&self.cut_short),
        );
        let tokens = self.stopped(StopReason::TokenBudget);
        if tokens > 0 {
            let _ = write!(line, ", by token_budget: {tokens}");
        }
        let _ = write!(
            line,
            "; {} calls answered stopped",
            load(&self.calls_stopped)
        );
        line
    }

    /// The runs' entry in the JSON report.
    pub fn json(&self) -> Value {
        let stopped: serde_json::Map<String, Value> = STOP_REASONS
            .iter()
            .map(|reason| (reason.as_str().to_owned(), json!(self.stopped(*reason))))
            .collect();
        json!({
            "started": self.runs_started(),
            "stopped": stopped,
            "cut_short_by_demo_end": load(&self.cut_short),
        })
    }

    /// Calls answered `stopped`.
    pub fn calls_stopped(&self) -> u64 {
        load(&self.calls_stopped)
    }
}
