//! The spans of a call through the pipeline (feature `tracing`); without the feature, empty
//! types whose methods do nothing.

use core::future::Future;
use core::time::Duration;

#[cfg(feature = "tracing")]
use tokio::time::Instant;

#[cfg(feature = "tracing")]
use super::fields::StopReason;
use super::result::ToolResult;
use super::run::AgentRun;
use crate::breaker::RetryBudget;
use crate::classify::Outcome;
#[cfg(feature = "tracing")]
use crate::time::tokio_now;

/// The spans of one call through the pipeline (feature `tracing`). Without the feature these
/// types are empty and every method does nothing, so the pipeline pays nothing for them.
#[derive(Debug)]
pub(super) struct CallSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
    /// When the call started, on tokio's clock.
    #[cfg(feature = "tracing")]
    started: Instant,
}

/// One attempt's span, inside its call's.
#[derive(Debug)]
pub(super) struct AttemptSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

#[cfg(feature = "tracing")]
pub(super) type Instrumented<F> = tracing::instrument::Instrumented<F>;
#[cfg(not(feature = "tracing"))]
pub(super) type Instrumented<F> = F;

impl CallSpan {
    /// The call's span: named for OpenTelemetry's GenAI tool-execution span, carrying the
    /// dependency (as the tool's name too) and the run's id; the rest is recorded when the call
    /// ends.
    #[inline(always)]
    pub(super) fn new(dependency: &str, run: &AgentRun) -> Self {
        Self::named(dependency, dependency, run)
    }

    /// [`new`](Self::new) for tool `tool`, guarded by `dependency`'s breaker (one that guards
    /// several tools): `gen_ai.tool.name` and `otel.name` name the tool.
    #[inline(always)]
    pub(super) fn named(tool: &str, dependency: &str, run: &AgentRun) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = (tool, dependency, run);
        CallSpan {
            #[cfg(feature = "tracing")]
            span: tracing::info_span!(
                target: "toolbreaker",
                "execute_tool",
                "otel.name" = format_args!("execute_tool {tool}"),
                "otel.kind" = "internal",
                "otel.status_code" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = tool,
                dependency,
                run_id = run.id(),
                attempt = tracing::field::Empty,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            ),
            #[cfg(feature = "tracing")]
            started: tokio_now(),
        }
    }

    /// `future`, inside the call's span whenever it is polled.
    #[inline(always)]
    pub(super) fn instrument<F: Future>(&self, future: F) -> Instrumented<F> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(future, self.span.clone());
        #[cfg(not(feature = "tracing"))]
        future
    }

    /// A span for attempt `number`, inside the call's.
    #[inline(always)]
    pub(super) fn attempt(&self, dependency: &str, number: u32, probe: bool) -> AttemptSpan {
        #[cfg(not(feature = "tracing"))]
        let _ = (dependency, number, probe);
        AttemptSpan {
            #[cfg(feature = "tracing")]
            span: tracing::info_span!(
                target: "toolbreaker",
                parent: &self.span,
                "attempt",
                "otel.name" = format_args!("attempt {dependency}"),
                "otel.kind" = "client",
                "otel.status_code" = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                dependency,
                attempt = number,
                probe,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            ),
        }
    }

    /// The answer of the call's last attempt, passed through; a failed answer's class (the
    /// failure kind, or `ignored` when the failure did not count) goes on the span.
    #[inline(always)]
    pub(super) fn answered<T>(&self, answer: ToolResult<T>, outcome: &Outcome) -> ToolResult<T> {
        #[cfg(feature = "tracing")]
        if let ToolResult::Failed { .. } = answer {
            self.span.record("error.type", error_type(outcome));
        }
        #[cfg(not(feature = "tracing"))]
        let _ = outcome;
        answer
    }

    /// `dependency`'s retry budget refused the call's retry: an event (`info`, in the call's span)
    /// with the budget's rules and the retries it refused so far.
    #[cold]
    pub(super) fn retry_refused(&self, dependency: &str, budget: &RetryBudget) {
        #[cfg(feature = "tracing")]
        self.span.in_scope(|| {
            tracing::info!(
                target: "toolbreaker",
                dependency,
                ratio = budget.ratio(),
                min_per_second = budget.min_per_second(),
                window_ms = crate::time::millis_floor(budget.window()),
                refused = budget.refused(),
                "retry refused by the retry budget"
            );
        });
        #[cfg(not(feature = "tracing"))]
        let _ = (dependency, budget);
    }

    /// The call ended with `result`.
    #[inline(always)]
    pub(super) fn finish<T>(&self, result: &ToolResult<T>) {
        #[cfg(feature = "tracing")]
        {
            let span = &self.span;
            if span.is_disabled() {
                return;
            }
            let (outcome, error_type) = match result {
                ToolResult::Ok { .. } => ("ok", None),
                ToolResult::Blocked { reason, .. } => ("blocked", Some(reason.as_str())),
                // Recorded by `answered`, which knows the last attempt's outcome.
                ToolResult::Failed { .. } => ("failed", None),
                ToolResult::Stopped { stop_reason, .. } => ("stopped", Some(stop_reason.as_str())),
            };
            span.record("attempt", result.stats().map_or(0, |stats| stats.attempts));
            let elapsed = self.started.elapsed();
            record_end(span, outcome, elapsed, error_type, result.is_ok());
        }
        #[cfg(not(feature = "tracing"))]
        let _ = result;
    }
}

impl AttemptSpan {
    /// `f`, inside the attempt's span.
    #[inline(always)]
    pub(super) fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        return self.span.in_scope(f);
        #[cfg(not(feature = "tracing"))]
        f()
    }

    /// `future`, inside the attempt's span whenever it is polled.
    #[inline(always)]
    pub(super) fn instrument<F: Future>(&self, future: F) -> Instrumented<F> {
        #[cfg(feature = "tracing")]
        return tracing::Instrument::instrument(future, self.span.clone());
        #[cfg(not(feature = "tracing"))]
        future
    }

    /// The attempt ran for `elapsed` and was classified as `outcome` (a timeout as
    /// `Failure(Timeout)`). The span closes here, before any wait for a retry.
    #[inline(always)]
    pub(super) fn ended(self, outcome: &Outcome, elapsed: Duration) {
        #[cfg(feature = "tracing")]
        {
            let name = match outcome {
                Outcome::Success => "success",
                Outcome::Failure(_) => "failure",
                Outcome::Ignored => "ignored",
            };
            let ok = matches!(outcome, Outcome::Success);
            let error = (!ok).then(|| error_type(outcome));
            record_end(&self.span, name, elapsed, error, ok);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (outcome, elapsed);
    }

    /// The run's deadline cut the attempt short after `elapsed`; nothing was recorded. The span
    /// closes here.
    #[inline(always)]
    pub(super) fn cut(self, elapsed: Duration) {
        #[cfg(feature = "tracing")]
        {
            let stopped = Some(StopReason::Deadline.as_str());
            record_end(&self.span, "stopped", elapsed, stopped, false);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = elapsed;
    }
}

/// What a span records when its call or attempt ends: `outcome`, `duration_ms`, `error.type`
/// when there is one, and `otel.status_code` (`ok` or `error`).
#[cfg(feature = "tracing")]
fn record_end(
    span: &tracing::Span,
    outcome: &str,
    elapsed: Duration,
    error_type: Option<&str>,
    ok: bool,
) {
    span.record("outcome", outcome);
    span.record("duration_ms", elapsed.as_secs_f64() * 1e3);
    if let Some(error_type) = error_type {
        span.record("error.type", error_type);
    }
    span.record("otel.status_code", if ok { "ok" } else { "error" });
}

/// The class of a failed attempt, for `error.type`: the failure kind, or `ignored` for a failure
/// that did not count against the dependency. Never the error itself.
#[cfg(feature = "tracing")]
fn error_type(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Failure(kind) => kind.as_str(),
        Outcome::Success | Outcome::Ignored => "ignored",
    }
}
