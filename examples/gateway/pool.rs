//! The `chat` tool: a pool of three model providers (`providers.rs`), its schedule, its calls
//! through `ToolGuard::call_pool`, its counters and its part of the report (under `pools`).
//!
//! Each chat call asks the registry's pool `llm` (`Registry::pool`, looked up per call, so a
//! SIGHUP reload that changes its groups takes effect at once) for a member; a retry after a
//! counted failure goes to another member. Each member's breaker has an HTTP health check of
//! its provider's `/health` (`HealthCheck::http_get`), run in the background when its open
//! period ends, so no agent's call is spent as a probe and a recovered member closes by itself.
//!
//! Every transition of a member is heard by the registry's listener ([`PoolStats::heard`]):
//! those the health checks make are no call's, so no attempt reports them. Each open period is
//! the time from a member's change to open until its next change to half-open: its cooldown, or
//! longer when a 429's `x-ratelimit-reset-requests` asked for longer.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use toolbreaker::observe::{Metrics, TransitionEvent};
use toolbreaker::{
    AgentRun, BlockedReason, FailureKind, Outcome, Pool, Registry, State, ToolResult, classify,
};

use crate::Log;
use crate::providers::{PROVIDERS, ProviderControl, ProviderMode};
use crate::report::{KINDS, LoggedTransition};
use crate::tools::{self, Classified, Guard};

/// A provider's scheduled outage, in fractions of `--duration`.
struct Outage {
    member: usize,
    rate_limited: bool,
    from: f64,
    to: f64,
}

/// `llm-a` is rate limited (429, its quota reset at the stretch's end) from 25 % to 60 %; `llm-b`
/// answers 503 from 40 % to 70 %: from 40 % to 60 % both preferred members are out, and `llm-c`
/// serves.
const OUTAGES: [Outage; 2] = [
    Outage {
        member: 0,
        rate_limited: true,
        from: 0.25,
        to: 0.60,
    },
    Outage {
        member: 1,
        rate_limited: false,
        from: 0.40,
        to: 0.70,
    },
];

fn ms(duration: Duration, fraction: f64) -> u64 {
    (duration.as_secs_f64() * fraction * 1000.0).round() as u64
}

/// Member `member`'s outage: its mode and window in ms since the start.
fn outage(member: usize, duration: Duration) -> Option<(ProviderMode, u64, u64)> {
    OUTAGES.iter().find(|o| o.member == member).map(|o| {
        let (from, to) = (ms(duration, o.from), ms(duration, o.to));
        let mode = if o.rate_limited {
            ProviderMode::RateLimited { reset_at_ms: to }
        } else {
            ProviderMode::Unavailable
        };
        (mode, from, to)
    })
}

/// The phases of the demo between the providers' switches, in ms since the start.
fn phases(duration: Duration) -> Vec<(u64, u64)> {
    let mut cuts: Vec<u64> = OUTAGES
        .iter()
        .flat_map(|o| [ms(duration, o.from), ms(duration, o.to)])
        .chain([0, ms(duration, 1.0)])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Switch the providers' modes (`controls`, in [`PROVIDERS`] order) at their scheduled times
/// after `start`, until the run is over.
pub async fn schedule(
    start: Instant,
    controls: Vec<Arc<ProviderControl>>,
    duration: Duration,
    mut finished: watch::Receiver<bool>,
    log: Log,
) {
    let mut switches: Vec<(u64, usize, ProviderMode)> = (0..PROVIDERS.len())
        .filter_map(|member| outage(member, duration).map(|o| (member, o)))
        .flat_map(|(member, (mode, from, to))| {
            [(from, member, mode), (to, member, ProviderMode::Healthy)]
        })
        .collect();
    switches.sort_by_key(|(at, _, _)| *at);
    for (at, member, mode) in switches {
        tokio::select! {
            () = tokio::time::sleep_until(start + Duration::from_millis(at)) => {}
            _ = finished.wait_for(|finished| *finished) => return,
        }
        controls[member].set_mode(mode);
        log.line(&format!(
            "[{:>6.2} s] {} provider is now {}",
            start.elapsed().as_secs_f64(),
            PROVIDERS[member],
            mode.describe()
        ));
    }
}

/// One member's counters.
#[derive(Default)]
struct MemberStats {
    sent: AtomicU64,
    served: AtomicU64,
    failures: [AtomicU64; 5],
    /// The longest hint its failures carried, in ms.
    largest_hint_ms: AtomicU64,
    /// Attempts that were the member's probe: an agent's call spent as one.
    call_probes: AtomicU64,
}

/// Everything counted about the pool: its calls, its members', the calls each served in each
/// phase, and the members' transitions as the registry's listener heard them.
pub struct PoolStats {
    start: Instant,
    phases: Vec<(u64, u64)>,
    calls: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
    blocked: AtomicU64,
    pool_exhausted: AtomicU64,
    stopped: AtomicU64,
    retries_moved: AtomicU64,
    members: [MemberStats; 3],
    /// Served, by phase then member.
    served_in: Vec<[AtomicU64; 3]>,
    /// Transitions are rare: a lock is the simple choice.
    transitions: Mutex<Vec<(usize, LoggedTransition)>>,
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

impl PoolStats {
    /// Zeroed counters for a demo of `duration` from `start`.
    pub fn new(start: Instant, duration: Duration) -> Self {
        let phases = phases(duration);
        PoolStats {
            start,
            served_in: phases.iter().map(|_| Default::default()).collect(),
            phases,
            calls: AtomicU64::new(0),
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            blocked: AtomicU64::new(0),
            pool_exhausted: AtomicU64::new(0),
            stopped: AtomicU64::new(0),
            retries_moved: AtomicU64::new(0),
            members: Default::default(),
            transitions: Mutex::default(),
        }
    }

    /// The registry's transition listener: keeps a member's transition, with its time.
    pub fn heard(&self, event: &TransitionEvent<'_>) {
        let Some(member) = PROVIDERS.iter().position(|p| *p == event.dependency()) else {
            return;
        };
        let t = event.transition();
        let logged = LoggedTransition {
            at_ms: millis(self.start.elapsed()),
            from: t.from(),
            to: t.to(),
            reason: t.reason(),
        };
        let mut log = self.transitions.lock().unwrap_or_else(|e| e.into_inner());
        log.push((member, logged));
    }

    fn phase(&self, at: Duration) -> Option<usize> {
        let at = millis(at);
        self.phases.iter().position(|(_, to)| at < *to)
    }

    /// One attempt that reached `member` ended with `outcome`.
    fn attempt(&self, member: usize, outcome: Outcome, probe: bool, started: Instant) {
        let stats = &self.members[member];
        if probe {
            bump(&stats.call_probes);
        }
        match outcome {
            Outcome::Success => {
                bump(&stats.served);
                let at = started.saturating_duration_since(self.start);
                if let Some(phase) = self.phase(at) {
                    bump(&self.served_in[phase][member]);
                }
            }
            Outcome::Failure(kind) => {
                let index = KINDS.iter().position(|k| *k == kind.as_str()).unwrap_or(4);
                bump(&stats.failures[index]);
                if let FailureKind::RateLimited {
                    retry_after: Some(hint),
                } = kind
                {
                    stats
                        .largest_hint_ms
                        .fetch_max(millis(hint), Ordering::Relaxed);
                }
            }
            Outcome::Ignored => {}
        }
    }

    fn call(&self, result: &ToolResult<String>) {
        bump(&self.calls);
        match result {
            ToolResult::Ok { .. } => bump(&self.ok),
            ToolResult::Failed { .. } => bump(&self.failed),
            ToolResult::Blocked { reason, .. } => {
                bump(&self.blocked);
                if *reason == BlockedReason::PoolExhausted {
                    bump(&self.pool_exhausted);
                }
            }
            _ => bump(&self.stopped),
        }
    }
}

/// What the agents need for a chat call.
pub struct Chat {
    /// The registry whose pool `llm` serves the calls.
    pub registry: Arc<Registry>,
    /// Each provider's chat URL, in [`PROVIDERS`] order.
    pub urls: Vec<String>,
    /// Each provider's control, in [`PROVIDERS`] order (for the report's outages).
    pub controls: Vec<Arc<ProviderControl>>,
    /// The counters.
    pub stats: Arc<PoolStats>,
}

/// One chat call through the pool: each attempt goes to the member the pool chooses, a retry to
/// another; every attempt's outcome is counted against its member.
pub async fn call_chat(
    chat: &Chat,
    pool: &Pool,
    guard: &Guard,
    run: &AgentRun,
    client: &reqwest::Client,
) -> ToolResult<String> {
    // The member of the attempt under way, and of the one before (`NONE` for none yet): the
    // attempts of one call run one after another, and the future must be `Send`.
    const NONE: usize = usize::MAX;
    let asked = AtomicUsize::new(NONE);
    let result = guard
        .call_pool_observed(
            run,
            pool,
            classify::with(&Classified),
            |member| {
                let index = PROVIDERS.iter().position(|p| *p == member);
                let previous = asked.swap(index.unwrap_or(NONE), Ordering::Relaxed);
                if let Some(i) = index {
                    bump(&chat.stats.members[i].sent);
                    if previous != NONE && previous != i {
                        bump(&chat.stats.retries_moved);
                    }
                }
                let url = index.map(|i| chat.urls[i].as_str()).unwrap_or_default();
                tools::fetch(client, url)
            },
            |attempt| {
                let member = asked.load(Ordering::Relaxed);
                if member != NONE {
                    chat.stats
                        .attempt(member, attempt.outcome, attempt.probe, attempt.started);
                }
            },
        )
        .await;
    chat.stats.call(&result);
    result
}

/// The pool's report: its figures and its members', with each member's breaker counters
/// (`metrics`, by member name) and the cooldown in force for each.
pub struct PoolReport {
    groups: Vec<Vec<String>>,
    duration: Duration,
    figures: [u64; 7],
    members: Vec<MemberReport>,
    phases: Vec<(u64, u64, [u64; 3])>,
}

struct MemberReport {
    sent: u64,
    served: u64,
    failures: [u64; 5],
    largest_hint_ms: u64,
    call_probes: u64,
    cooldown_ms: u64,
    open_periods_ms: Vec<u64>,
    server_hits: u64,
    health_ok: u64,
    health_refused: u64,
    transitions: Vec<LoggedTransition>,
    metrics: Option<Metrics>,
}

impl PoolReport {
    /// The report at the end of the run: `pool` the one in force, `metrics` the registry's.
    pub fn new(
        chat: &Chat,
        pool: &Pool,
        duration: Duration,
        metrics: &std::collections::BTreeMap<String, Metrics>,
    ) -> Self {
        let s = &chat.stats;
        let mut log = s
            .transitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        log.sort_by_key(|(_, t)| t.at_ms); // stable: ties keep the order they were told in
        let members = (0..PROVIDERS.len())
            .map(|i| {
                let m = &s.members[i];
                let transitions: Vec<LoggedTransition> = log
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .map(|(_, t)| *t)
                    .collect();
                let mut opened = None;
                let mut open_periods_ms = Vec::new();
                for t in &transitions {
                    if t.to == State::Open {
                        opened = Some(t.at_ms);
                    } else if t.from == State::Open
                        && let Some(at) = opened.take()
                    {
                        open_periods_ms.push(t.at_ms.saturating_sub(at));
                    }
                }
                let breaker = chat.registry.get(PROVIDERS[i]);
                MemberReport {
                    sent: load(&m.sent),
                    served: load(&m.served),
                    failures: std::array::from_fn(|k| load(&m.failures[k])),
                    largest_hint_ms: load(&m.largest_hint_ms),
                    call_probes: load(&m.call_probes),
                    cooldown_ms: millis(breaker.config().cooldown()),
                    open_periods_ms,
                    server_hits: chat.controls[i].chat_hits(),
                    health_ok: chat.controls[i].health_ok(),
                    health_refused: chat.controls[i].health_refused(),
                    transitions,
                    metrics: metrics.get(PROVIDERS[i]).copied(),
                }
            })
            .collect();
        PoolReport {
            groups: pool
                .groups()
                .map(|g| g.iter().map(|b| b.name().to_owned()).collect())
                .collect(),
            duration,
            figures: [
                &s.calls,
                &s.ok,
                &s.failed,
                &s.blocked,
                &s.pool_exhausted,
                &s.stopped,
                &s.retries_moved,
            ]
            .map(load),
            members,
            phases: s
                .phases
                .iter()
                .zip(&s.served_in)
                .map(|((from, to), served)| (*from, *to, std::array::from_fn(|i| load(&served[i]))))
                .collect(),
        }
    }

    /// The providers failing in the phase starting at `from_ms`, in words.
    fn failing_at(&self, from_ms: u64) -> String {
        let failing: Vec<String> = (0..PROVIDERS.len())
            .filter_map(|i| {
                let (mode, from, to) = outage(i, self.duration)?;
                (from <= from_ms && from_ms < to).then(|| {
                    let what = match mode {
                        ProviderMode::Unavailable => "503",
                        _ => "429",
                    };
                    format!("{} {what}", PROVIDERS[i])
                })
            })
            .collect();
        if failing.is_empty() {
            "all healthy".to_owned()
        } else {
            failing.join(", ")
        }
    }

    /// The pool's block of the report table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let [calls, ok, failed, blocked, exhausted, stopped, moved] = self.figures;
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| format!("[{}]", g.join(", ")))
            .collect();
        let _ = writeln!(out, "pool llm (chat): groups {}", groups.join(" then "));
        let _ = writeln!(
            out,
            "  {calls} calls: ok {ok}, failed {failed}, blocked {blocked} ({exhausted} \
             pool_exhausted), stopped {stopped}; {moved} retries moved to another member"
        );
        let _ = writeln!(
            out,
            "  {:<6} {:>7} {:>6} {:>9} {:>6} {:>6} {:>5} {:>8} {:>10} {:>8} {:>7} {:>9}",
            "member",
            "served",
            "share",
            "failures",
            "429",
            "503",
            "trips",
            "blocked",
            "longest",
            "cooldown",
            "hint",
            "health"
        );
        let _ = writeln!(
            out,
            "  {:<6} {:>7} {:>6} {:>9} {:>6} {:>6} {:>5} {:>8} {:>10} {:>8} {:>7} {:>9}",
            "", "", "", "", "", "", "", "", "open (ms)", "(ms)", "(ms)", "ok/fail"
        );
        let total: u64 = self.members.iter().map(|m| m.served).sum();
        for (name, m) in PROVIDERS.iter().zip(&self.members) {
            let t = m.metrics.map(|m| m.transitions);
            let trips = t.map_or(0, |t| t.failure_threshold + t.failure_rate + t.retry_after);
            let _ = writeln!(
                out,
                "  {:<6} {:>7} {:>5.1}% {:>9} {:>6} {:>6} {:>5} {:>8} {:>10} {:>8} {:>7} {:>9}",
                name,
                m.served,
                share(m.served, total) * 100.0,
                m.failures.iter().sum::<u64>(),
                m.failures[2],
                m.failures[3],
                trips,
                m.metrics.map_or(0, |m| m.blocked),
                m.open_periods_ms
                    .iter()
                    .max()
                    .map_or("-".to_owned(), u64::to_string),
                m.cooldown_ms,
                match m.largest_hint_ms {
                    0 => "-".to_owned(),
                    hint => hint.to_string(),
                },
                format!("{}/{}", m.health_ok, m.health_refused),
            );
        }
        let _ = writeln!(out, "  calls served, by phase:");
        for (from, to, served) in &self.phases {
            let sum: u64 = served.iter().sum();
            let mut line = format!(
                "    {:>5.2} s to {:>5.2} s  {:<20}",
                *from as f64 / 1000.0,
                *to as f64 / 1000.0,
                self.failing_at(*from)
            );
            for (name, n) in PROVIDERS.iter().zip(served) {
                let _ = write!(line, "  {name} {n:>6} ({:>3.0} %)", share(*n, sum) * 100.0);
            }
            let _ = writeln!(out, "{line}");
        }
        for (name, m) in PROVIDERS.iter().zip(&self.members) {
            let _ = writeln!(
                out,
                "  {name}: {} transitions; agents' calls spent as probes: {}",
                m.transitions.len(),
                m.call_probes
            );
            for t in &m.transitions {
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
        out
    }

    /// The pool's entry in the JSON report.
    pub fn json(&self) -> Value {
        let [calls, ok, failed, blocked, exhausted, stopped, moved] = self.figures;
        let total: u64 = self.members.iter().map(|m| m.served).sum();
        let members: serde_json::Map<String, Value> = PROVIDERS
            .iter()
            .zip(&self.members)
            .enumerate()
            .map(|(i, (name, m))| {
                let by_kind: serde_json::Map<String, Value> = KINDS
                    .iter()
                    .zip(m.failures)
                    .map(|(kind, n)| ((*kind).to_owned(), json!(n)))
                    .collect();
                let transitions: Vec<Value> = m
                    .transitions
                    .iter()
                    .map(|t| {
                        json!({"at_ms": t.at_ms, "from": t.from.as_str(), "to": t.to.as_str(),
                               "reason": t.reason.as_str()})
                    })
                    .collect();
                let outage = outage(i, self.duration).map(|(mode, from, to)| {
                    json!({"mode": mode.describe(), "from_ms": from, "to_ms": to})
                });
                let entry = json!({
                    "outage": outage,
                    "sent": m.sent,
                    "server_hits": m.server_hits,
                    "served": m.served,
                    "share": share(m.served, total),
                    "failures": m.failures.iter().sum::<u64>(),
                    "failures_by_kind": by_kind,
                    "largest_hint_ms": (m.largest_hint_ms > 0).then_some(m.largest_hint_ms),
                    "cooldown_ms": m.cooldown_ms,
                    "open_periods_ms": m.open_periods_ms,
                    "longest_open_ms": m.open_periods_ms.iter().max(),
                    "call_probes": m.call_probes,
                    "health_checks": {
                        "run": m.health_ok + m.health_refused,
                        "success": m.health_ok,
                        "failure": m.health_refused,
                    },
                    "transitions": transitions,
                    "metrics": m.metrics.map(|m| serde_json::to_value(m).unwrap_or(Value::Null)),
                });
                ((*name).to_owned(), entry)
            })
            .collect();
        let phases: Vec<Value> = self
            .phases
            .iter()
            .map(|(from, to, served)| {
                let served: serde_json::Map<String, Value> = PROVIDERS
                    .iter()
                    .zip(served)
                    .map(|(name, n)| ((*name).to_owned(), json!(n)))
                    .collect();
                json!({"from_ms": from, "to_ms": to, "failing": self.failing_at(*from),
                       "served": served})
            })
            .collect();
        json!({
            "groups": self.groups,
            "calls": calls,
            "ok": ok,
            "failed": failed,
            "blocked": blocked,
            "pool_exhausted": exhausted,
            "stopped": stopped,
            "retries_moved": moved,
            "members": members,
            "phases": phases,
        })
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}
