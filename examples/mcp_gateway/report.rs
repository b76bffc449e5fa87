//! The MCP gateway demo's report: per upstream, what the agents saw, what reached the server and
//! what its breaker did; the invariants the run checks; a table, or JSON.
//!
//! Shared by the example (`mcp_gateway.rs`) and its test (`examples/tests/gateway_mcp.rs`).
//!
//! Three views of one upstream, from three places, that the invariants hold against each other:
//!
//! - the agents': each call's `CallToolResult` as the model reads it (answered, a tool error,
//!   blocked, failed, stopped);
//! - the server's: the `tools/call` requests that reached it, counted in front of its MCP
//!   endpoint, and how many of them arrived while it was failing or while the gateway's breaker
//!   for it read open;
//! - the breaker's: its own counters (`Registry::metrics`) and the transitions its
//!   `on_transition` listener heard.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolbreaker::observe::Metrics;
use toolbreaker::{State, TransitionReason};

use crate::agents::CallCounts;
use crate::scenario::{COOLDOWN, FAILURE_THRESHOLD, Logged, Settings, settings_json};
use crate::upstream::{Mode, Reached, Upstream};

/// A scheduled outage, in ms since the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// How the upstream fails.
    pub mode: Mode,
    /// From ...
    pub from_ms: u64,
    /// ... to.
    pub to_ms: u64,
}

/// Everything known about one upstream at the end.
#[derive(Clone, Debug)]
pub struct UpstreamReport {
    /// The upstream.
    pub upstream: Upstream,
    /// Its scheduled outage, if it has one.
    pub outage: Option<Window>,
    /// What the agents saw.
    pub calls: CallCounts,
    /// What reached the server.
    pub reached: Reached,
    /// Its breaker's counters.
    pub metrics: Option<Metrics>,
    /// Its breaker's transitions, as heard.
    pub transitions: Vec<Logged>,
    /// Its breaker's state at the end.
    pub final_state: State,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl UpstreamReport {
    fn count(&self, reason: TransitionReason) -> u64 {
        self.transitions
            .iter()
            .filter(|t| t.reason == reason)
            .count() as u64
    }

    /// Trips: closed → open on the failure threshold.
    pub fn trips(&self) -> u64 {
        self.count(TransitionReason::FailureThreshold)
    }

    /// Probes: open → half-open, when a probe takes the slot.
    pub fn probes(&self) -> u64 {
        self.count(TransitionReason::CooldownElapsed)
    }

    /// Closes: half-open → closed on a probe's success.
    pub fn closes(&self) -> u64 {
        self.count(TransitionReason::ProbeSucceeded)
    }

    fn json(&self) -> Value {
        let c = &self.calls;
        json!({
            "tools": self.upstream.tools(),
            "outage": self.outage.map(|w| json!({
                "mode": w.mode.as_str(),
                "from_ms": w.from_ms,
                "to_ms": w.to_ms,
            })),
            "calls": c.calls,
            "answered": c.answered,
            "tool_errors": c.tool_errors,
            "blocked": c.blocked,
            "retries_refused": c.retries_refused,
            "failed": c.failed,
            "stopped": c.stopped,
            "gateway_errors": c.gateway_errors,
            "outage_calls": c.outage_calls,
            "outage_blocked": c.outage_blocked,
            "reached": self.reached.calls,
            "reached_while_failing": self.reached.while_failing,
            "reached_while_open": self.reached.while_open,
            "cancelled_upstream": self.reached.cancelled,
            "trips": self.trips(),
            "probes": self.probes(),
            "closes": self.closes(),
            "final_state": self.final_state.as_str(),
            "metrics": self.metrics.map(|m| serde_json::to_value(m).unwrap_or(Value::Null)),
            "transitions": self.transitions.iter().map(|t| json!({
                "at_ms": t.at_ms,
                "from": t.from.as_str(),
                "to": t.to.as_str(),
                "reason": t.reason.as_str(),
                "failures": t.failures,
            })).collect::<Vec<_>>(),
        })
    }
}

/// What a run says of one of its invariants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It held.
    Holds,
    /// It did not.
    Fails,
    /// The run was too small to put it to the test (too few agents, or too short a demo, for an
    /// outage to see a threshold's worth of failures, or for a probe to close the breaker after
    /// it): neither held nor failed.
    Skipped,
}

impl Verdict {
    /// The verdict as the JSON report names it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Fails => "fails",
            Verdict::Skipped => "skipped",
        }
    }

    fn of(holds: bool) -> Verdict {
        if holds {
            Verdict::Holds
        } else {
            Verdict::Fails
        }
    }
}

/// One checked property of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invariant {
    /// Its name in the JSON report.
    pub name: &'static str,
    /// What it says, in words.
    pub says: &'static str,
    /// Whether it held.
    pub verdict: Verdict,
    /// The figures it was judged on.
    pub detail: String,
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Report {
    /// What it ran with.
    pub settings: Settings,
    /// How long the agents called.
    pub elapsed: Duration,
    /// The gateway's MCP endpoint.
    pub gateway_url: String,
    /// The tools the gateway listed.
    pub tools: Vec<String>,
    /// Per upstream, in [`Upstream::ALL`] order.
    pub upstreams: Vec<UpstreamReport>,
    /// The first blocked `CallToolResult` (preferably `search`'s), as the model received it.
    pub blocked_example: Option<Value>,
}

impl Report {
    /// Every call the agents made.
    pub fn calls(&self) -> u64 {
        self.upstreams.iter().map(|u| u.calls.calls).sum()
    }

    /// The properties the run checks. None depends on how fast anything ran, only on what the
    /// schedule did and what the breakers are for, so each holds however loaded the machine. The
    /// three about the failing upstreams' trips and closes need the run to give each outage a
    /// threshold's worth of counted failures, and each recovery room for a probe (the defaults
    /// give plenty); where it did not, they are [`Verdict::Skipped`] for that upstream.
    pub fn invariants(&self) -> Vec<Invariant> {
        let clients = self.settings.clients as u64;
        let threshold = u64::from(FAILURE_THRESHOLD);
        let failing: Vec<&UpstreamReport> = self
            .upstreams
            .iter()
            .filter(|u| u.outage.is_some())
            .collect();
        // Put to the test: the failing upstreams whose breaker counted enough failures to trip,
        // and of those that tripped, the ones left room after their outage to be probed and
        // closed again (two cooldowns: a probe still timing out on the hang, then the next).
        let failed_enough: Vec<&UpstreamReport> = failing
            .iter()
            .copied()
            .filter(|u| u.metrics.is_some_and(|m| m.failures.total() >= threshold))
            .collect();
        let tripped: Vec<&UpstreamReport> =
            failing.iter().copied().filter(|u| u.trips() >= 1).collect();
        let duration_ms = millis(self.settings.duration);
        let recovery_room = |u: &UpstreamReport| {
            u.outage.map_or(0, |w| duration_ms.saturating_sub(w.to_ms)) >= 2 * millis(COOLDOWN)
        };
        let recovered: Vec<&UpstreamReport> = tripped
            .iter()
            .copied()
            .filter(|u| recovery_room(u))
            .collect();

        let mut checks = Vec::new();
        let mut check = |name, says, verdict, detail: String| {
            checks.push(Invariant {
                name,
                says,
                verdict,
                detail,
            });
        };
        let over = |upstreams: &[&UpstreamReport], holds: &dyn Fn(&UpstreamReport) -> bool| {
            if upstreams.is_empty() {
                Verdict::Skipped
            } else {
                Verdict::of(upstreams.iter().all(|u| holds(u)))
            }
        };
        let describe =
            |upstreams: &[&UpstreamReport], figure: &dyn Fn(&UpstreamReport) -> String| -> String {
                if upstreams.is_empty() {
                    return "none to check".to_owned();
                }
                upstreams
                    .iter()
                    .map(|u| format!("{} {}", u.upstream.name(), figure(u)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
        let all: Vec<&UpstreamReport> = self.upstreams.iter().collect();
        let notes: Vec<&UpstreamReport> = all
            .iter()
            .copied()
            .filter(|u| u.upstream == Upstream::Notes)
            .collect();
        let gave_tool_errors: Vec<&UpstreamReport> = notes
            .iter()
            .copied()
            .filter(|u| u.calls.tool_errors > 0)
            .collect();

        check(
            "notes_never_tripped",
            "notes, always up, never tripped and never blocked a call, however many isError \
             answers it gave",
            over(&notes, &|u| {
                u.trips() == 0 && u.calls.blocked == 0 && u.metrics.is_some_and(|m| m.blocked == 0)
            }),
            describe(&notes, &|u| {
                format!(
                    "trips {}, blocked {}, tool errors {}",
                    u.trips(),
                    u.calls.blocked,
                    u.calls.tool_errors
                )
            }),
        );
        check(
            "tool_errors_not_counted",
            "notes answered bad arguments with isError: true, and its breaker recorded each as \
             ignored, never as a failure",
            over(&gave_tool_errors, &|u| {
                u.metrics.is_some_and(|m| m.ignored == u.calls.tool_errors)
            }),
            describe(&gave_tool_errors, &|u| {
                format!(
                    "tool errors {}, recorded as ignored {}",
                    u.calls.tool_errors,
                    u.metrics.map_or(0, |m| m.ignored)
                )
            }),
        );
        check(
            "failing_upstreams_tripped",
            "each upstream that failed on the schedule tripped its breaker",
            over(&failed_enough, &|u| u.trips() >= 1),
            describe(&failed_enough, &|u| {
                format!(
                    "{} trips after {} counted failures",
                    u.trips(),
                    u.metrics.map_or(0, |m| m.failures.total())
                )
            }),
        );
        check(
            "failing_upstreams_closed_again",
            "each was closed again by a successful probe after it recovered, and is closed at \
             the end",
            over(&recovered, &|u| {
                u.closes() >= 1 && u.final_state == State::Closed
            }),
            describe(&recovered, &|u| {
                format!("{} ({} closes)", u.final_state.as_str(), u.closes())
            }),
        );
        check(
            "outage_calls_blocked",
            "once it had tripped, most calls made during the outage were answered blocked at once",
            over(&tripped, &|u| {
                u.calls.outage_blocked * 2 > u.calls.outage_calls
            }),
            describe(&tripped, &|u| {
                format!(
                    "{} of {} blocked",
                    u.calls.outage_blocked, u.calls.outage_calls
                )
            }),
        );
        check(
            "nothing_sent_while_open",
            "nothing reached an upstream while its breaker was open but calls already on their \
             way when it opened (at most one per agent per trip); probes go while half-open",
            over(&all, &|u| u.reached.while_open <= clients * u.trips()),
            describe(&all, &|u| {
                format!(
                    "{} while open (bound {})",
                    u.reached.while_open,
                    clients * u.trips()
                )
            }),
        );
        check(
            "reached_only_what_was_admitted",
            "every call that reached an upstream was admitted by its breaker",
            over(&all, &|u| {
                u.metrics.is_some_and(|m| u.reached.calls <= m.admitted)
            }),
            describe(&all, &|u| {
                format!(
                    "{} reached, {} admitted",
                    u.reached.calls,
                    u.metrics.map_or(0, |m| m.admitted)
                )
            }),
        );
        check(
            "breaker_and_agents_agree",
            "the breaker blocked exactly the calls the agents were told were blocked",
            over(&all, &|u| {
                u.metrics.is_some_and(|m| m.blocked == u.calls.blocked)
            }),
            describe(&all, &|u| {
                format!(
                    "{} blocked, breaker {}",
                    u.calls.blocked,
                    u.metrics.map_or(0, |m| m.blocked)
                )
            }),
        );
        check(
            "every_call_answered",
            "the gateway answered every call with a CallToolResult",
            over(&all, &|u| {
                let c = &u.calls;
                c.gateway_errors == 0
                    && c.calls == c.answered + c.tool_errors + c.blocked + c.failed + c.stopped
            }),
            describe(&all, &|u| format!("{} unanswered", u.calls.gateway_errors)),
        );
        let example = self.blocked_example.as_ref();
        check(
            "blocked_example_reads_as_blocked",
            "a blocked call reads isError: true, its one text content the message, and \
             structuredContent.status \"blocked\"",
            match example {
                Some(example) => Verdict::of(is_blocked_result(example)),
                None => Verdict::Skipped,
            },
            match example {
                Some(example) => format!("from {}", example["structuredContent"]["dependency"]),
                None => "no call was blocked".into(),
            },
        );
        checks
    }

    /// The report as one JSON object.
    pub fn json(&self) -> Value {
        let secs = self.elapsed.as_secs_f64();
        let upstreams: Map<String, Value> = self
            .upstreams
            .iter()
            .map(|u| (u.upstream.name().to_owned(), u.json()))
            .collect();
        let invariants = self.invariants();
        let checked: Map<String, Value> = invariants
            .iter()
            .map(|i| {
                (
                    i.name.to_owned(),
                    json!({"verdict": i.verdict.as_str(), "says": i.says, "detail": i.detail}),
                )
            })
            .collect();
        json!({
            "duration_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "clients": self.settings.clients,
            "calls": self.calls(),
            "calls_per_second": (self.calls() as f64 / secs.max(1e-9)).round(),
            "gateway": self.gateway_url,
            "tools": self.tools,
            "settings": settings_json(&self.settings),
            "upstreams": upstreams,
            "blocked_example": self.blocked_example,
            "invariants": checked,
            "ok": invariants.iter().all(|i| i.verdict != Verdict::Fails),
        })
    }

    /// The report as a table, one column per upstream, then the invariants checked.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let calls = self.calls();
        let _ = writeln!(
            out,
            "{calls} tool calls in {:.2} s by {} MCP clients through the gateway: {:.0} calls/s",
            self.elapsed.as_secs_f64(),
            self.settings.clients,
            calls as f64 / self.elapsed.as_secs_f64().max(1e-9),
        );
        let _ = writeln!(out);
        let mut row = |label: &str, cell: &dyn Fn(&UpstreamReport) -> String| {
            let _ = write!(out, "{label:<44}");
            for u in &self.upstreams {
                let _ = write!(out, "{:>10}", cell(u));
            }
            let _ = writeln!(out);
        };
        row("upstream", &|u| u.upstream.name().to_owned());
        row("outage (s)", &|u| match u.outage {
            Some(w) => format!(
                "{:.1}-{:.1}",
                w.from_ms as f64 / 1000.0,
                w.to_ms as f64 / 1000.0
            ),
            None => "none".to_owned(),
        });
        row("  how", &|u| match u.outage {
            Some(w) if w.mode == Mode::Unavailable => "HTTP 503".to_owned(),
            Some(w) if w.mode == Mode::Hang => "hangs".to_owned(),
            _ => "-".to_owned(),
        });
        row("calls made (agents)", &|u| u.calls.calls.to_string());
        row("  answered", &|u| u.calls.answered.to_string());
        row("  tool errors (isError from the tool)", &|u| {
            u.calls.tool_errors.to_string()
        });
        row("  blocked by the breaker", &|u| u.calls.blocked.to_string());
        row("  failed (the upstream's error)", &|u| {
            u.calls.failed.to_string()
        });
        row("  stopped (call deadline)", &|u| {
            u.calls.stopped.to_string()
        });
        row("  during the outage", &|u| u.calls.outage_calls.to_string());
        row("    of which blocked", &|u| {
            u.calls.outage_blocked.to_string()
        });
        row("reached the upstream (its own count)", &|u| {
            u.reached.calls.to_string()
        });
        row("  while it was failing", &|u| {
            u.reached.while_failing.to_string()
        });
        row("  while its breaker was open", &|u| {
            u.reached.while_open.to_string()
        });
        row("  given up by the gateway (cancelled)", &|u| {
            u.reached.cancelled.to_string()
        });
        row("breaker: admitted attempts", &|u| {
            u.metrics.map_or(0, |m| m.admitted).to_string()
        });
        row("  counted failures", &|u| {
            u.metrics.map_or(0, |m| m.failures.total()).to_string()
        });
        row("  ignored (tool errors)", &|u| {
            u.metrics.map_or(0, |m| m.ignored).to_string()
        });
        row("  trips", &|u| u.trips().to_string());
        row("  probes", &|u| u.probes().to_string());
        row("  closed again by a probe", &|u| u.closes().to_string());
        row("  final state", &|u| u.final_state.as_str().to_owned());
        let _ = writeln!(out);
        for invariant in self.invariants() {
            let _ = writeln!(
                out,
                "{} {}: {}",
                match invariant.verdict {
                    Verdict::Holds => "ok     ",
                    Verdict::Fails => "FAILED ",
                    Verdict::Skipped => "skipped",
                },
                invariant.says,
                invariant.detail
            );
        }
        out
    }
}

/// Whether a `CallToolResult`, as JSON, is what the gateway answers for a blocked call.
pub fn is_blocked_result(result: &Value) -> bool {
    let structured = &result["structuredContent"];
    result["isError"] == true
        && structured["status"] == "blocked"
        && result["content"].as_array().is_some_and(|c| c.len() == 1)
        && result["content"][0]["text"] == structured["message"]
}
