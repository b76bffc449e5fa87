//! Counters per dependency, the transition log, and the final report (a table, or JSON).
//!
//! Every counter is an atomic bumped with relaxed ordering: they are statistics, read live by the
//! progress line and exactly once the agent tasks have been joined.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use toolbreaker::{Blocked, FailureKind, State, ToolResult};

use crate::tools::{CallOutcome, CallRecord, Mode, Tool};

/// The failure kinds, in report order (`FailureKind::as_str` names).
pub const KINDS: [&str; 5] = ["timeout", "connect", "rate_limited", "unavailable", "other"];

fn kind_index(kind: FailureKind) -> usize {
    KINDS
        .iter()
        .position(|name| *name == kind.as_str())
        .unwrap_or(KINDS.len() - 1)
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
    probes: AtomicU64,
    outage_attempted: AtomicU64,
    outage_blocked: AtomicU64,
    /// The last `Retry-After` hint seen, in ms (0: none yet).
    retry_after_hint_ms: AtomicU64,
    /// Transitions are rare (a handful a second at most), so a lock is the simple choice here.
    transitions: Mutex<Vec<LoggedTransition>>,
    first_blocked: OnceLock<Blocked>,
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
            probes: AtomicU64::new(0),
            outage_attempted: AtomicU64::new(0),
            outage_blocked: AtomicU64::new(0),
            retry_after_hint_ms: AtomicU64::new(0),
            transitions: Mutex::default(),
            first_blocked: OnceLock::new(),
        }
    }

    /// Count one call. `in_outage`: the dependency's server was in a failing mode when the call
    /// was attempted. `started` and `ended`: when the call was attempted and when it ended, since
    /// the start of the run.
    pub fn record(&self, call: &CallRecord, in_outage: bool, started: Duration, ended: Duration) {
        let bump = |counter: &AtomicU64| {
            counter.fetch_add(1, Ordering::Relaxed);
        };
        bump(&self.attempted);
        if in_outage {
            bump(&self.outage_attempted);
        }
        if call.probe {
            bump(&self.probes);
            // Half-open is "open whose cooldown has elapsed": it shows as a change of state when
            // the probe is admitted.
            self.log_transition(started, State::Open, State::HalfOpen);
        }
        if let Some(blocked) = call.blocked() {
            bump(&self.blocked);
            if in_outage {
                bump(&self.outage_blocked);
            }
            if self.first_blocked.get().is_none() {
                let _ = self.first_blocked.set(*blocked);
            }
        }
        match call.outcome {
            CallOutcome::Success { .. } => bump(&self.successes),
            CallOutcome::Ignored => bump(&self.ignored),
            _ => {}
        }
        if call.admitted() {
            bump(&self.sent);
        }
        if let Some(kind) = call.failure_kind() {
            bump(&self.failures[kind_index(kind)]);
            if let FailureKind::RateLimited {
                retry_after: Some(hint),
            } = kind
            {
                let ms = u64::try_from(hint.as_millis()).unwrap_or(u64::MAX);
                self.retry_after_hint_ms.store(ms, Ordering::Relaxed);
            }
        }
        if let Some(transition) = call.transition {
            self.log_transition(ended, transition.from(), transition.to());
        }
    }

    fn log_transition(&self, at: Duration, from: State, to: State) {
        let at_ms = u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
        let mut log = self.transitions.lock().unwrap_or_else(|e| e.into_inner());
        log.push(LoggedTransition { at_ms, from, to });
    }

    /// Calls attempted so far.
    pub fn attempted(&self) -> u64 {
        self.attempted.load(Ordering::Relaxed)
    }

    /// The first call the breaker blocked, if any.
    pub fn first_blocked(&self) -> Option<Blocked> {
        self.first_blocked.get().copied()
    }

    /// A consistent-enough copy of the counters, once the run is over.
    pub fn snapshot(&self, window: Option<Window>, server_hits: u64) -> Snapshot {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
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
            probes: load(&self.probes),
            outage_attempted: load(&self.outage_attempted),
            outage_blocked: load(&self.outage_blocked),
            retry_after_hint_ms: match load(&self.retry_after_hint_ms) {
                0 => None,
                ms => Some(ms),
            },
            server_hits,
            window,
            transitions,
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
    probes: u64,
    outage_attempted: u64,
    outage_blocked: u64,
    retry_after_hint_ms: Option<u64>,
    server_hits: u64,
    window: Option<Window>,
    transitions: Vec<LoggedTransition>,
}

impl Snapshot {
    fn failures(&self) -> u64 {
        self.failures_by_kind.iter().sum()
    }

    /// The share of calls attempted during the outage that were never sent.
    fn never_sent_share(&self) -> Option<f64> {
        (self.outage_attempted > 0)
            .then(|| self.outage_blocked as f64 / self.outage_attempted as f64)
    }

    /// This dependency's block of the report table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let outage = match self.window {
            Some(w) => format!(
                "{} from {:.2} s to {:.2} s",
                w.mode.describe(),
                w.from_ms as f64 / 1000.0,
                w.to_ms as f64 / 1000.0
            ),
            None => "none (always healthy)".to_owned(),
        };
        let _ = writeln!(out, "{}  (outage: {outage})", self.tool.name());
        let mut row = |label: &str, value: String| {
            let _ = writeln!(out, "  {label:<36}{value:>12}");
        };
        row("calls attempted", self.attempted.to_string());
        row("sent to the dependency", self.sent.to_string());
        row("  of which probes", self.probes.to_string());
        row(
            "requests that reached the server",
            self.server_hits.to_string(),
        );
        row("blocked without sending", self.blocked.to_string());
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
            row("  never sent (blocked)", self.outage_blocked.to_string());
            row(
                "  share never sent",
                match self.never_sent_share() {
                    Some(share) => format!("{:.1} %", share * 100.0),
                    None => "-".to_owned(),
                },
            );
        }
        if self.transitions.is_empty() {
            let _ = writeln!(out, "  transitions: none");
        } else {
            let _ = writeln!(out, "  transitions ({}):", self.transitions.len());
            for t in &self.transitions {
                let _ = writeln!(
                    out,
                    "    {:>8.3} s  {} -> {}",
                    t.at_ms as f64 / 1000.0,
                    t.from,
                    t.to
                );
            }
        }
        out
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
            .map(|t| json!({"at_ms": t.at_ms, "from": t.from.as_str(), "to": t.to.as_str()}))
            .collect();
        json!({
            "attempted": self.attempted,
            "sent": self.sent,
            "blocked": self.blocked,
            "successes": self.successes,
            "failures": self.failures(),
            "ignored": self.ignored,
            "failures_by_kind": by_kind,
            "probes": self.probes,
            "server_hits": self.server_hits,
            "retry_after_hint_ms": self.retry_after_hint_ms,
            "transitions": transitions,
            "outage": self.window.map(|w| json!({
                "mode": w.mode.describe(),
                "from_ms": w.from_ms,
                "to_ms": w.to_ms,
                "attempted": self.outage_attempted,
                "blocked": self.outage_blocked,
                "never_sent_share": self.never_sent_share(),
            })),
        })
    }
}

/// The blocked result a model would receive, as JSON text and as a value.
pub fn blocked_tool_result(tool: Tool, blocked: &Blocked) -> Option<(String, Value)> {
    let text = ToolResult::<()>::blocked(tool.name(), blocked)
        .to_json()
        .ok()?;
    let value = serde_json::from_str(&text).ok()?;
    Some((text, value))
}
