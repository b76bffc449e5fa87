//! What a breaker tells the outside world.
//!
//! Every [`Transition`](crate::Transition) carries its reason, generation, failure count and cooldown; a listener
//! (`on_transition` on [`Builder`](crate::breaker::Builder) or
//! [`RegistryBuilder`](crate::registry::RegistryBuilder)) hears them outside any retry loop and any lock. Counting is opt-in ([`Builder::metrics`](crate::breaker::Builder::metrics)): thread-striped counters read as a
//! [`Metrics`](crate::observe::Metrics)
//! snapshot. Feature `tracing` adds events and pipeline spans; feature `metrics` exports the
//! counters through the `metrics` facade.
//!
//! **Transitions.** Each transition says `from`, `to`, `generation`, `reason` (`failure_threshold`,
//! `failure_rate`, `slow_call_rate`, `cooldown_elapsed`, `probe_succeeded`, `probe_failed`,
//! `probe_timed_out`, `manual`, `fleet`), the `failures` behind it (the consecutive count, or for a
//! rate trip the counted failures, or slow calls, in the window) and the `cooldown` in force. `record` returns it; a listener
//! registered with `on_transition` (on a breaker's builder or a registry's) hears them one at a time,
//! in the breaker's order (`Transition::is_after`: by generation, wrapping), after the swap that made
//! each and outside any retry loop or lock; a listener that panics loses no other transition (the
//! panic reaches the telling thread afterwards). A caller that lands a transition while another
//! thread is telling this breaker's transitions leaves it to that thread and returns. A transition
//! overtaken by a later one before it could be told, or waiting beyond 16 behind a slow listener, is
//! superseded: counted, but not heard, so the transitions heard never go back and the last one heard
//! is the newest (a gauge fed by the listener ends on the breaker's state).
//! Changes time alone makes (a cooldown ending, a probe's lease running out) are written down, and
//! heard, when the next caller finds them, so the transitions heard chain (each one's `from` is the
//! previous one's `to`) except across a superseded one.
//!
//! **Tracing** (feature `tracing`, target `toolbreaker`): each transition at `info` (`warn` when
//! opening) with the dependency and every field above; blocked calls and counted failures at `debug`
//! with the dependency, the blocked reason or failure kind, and (through the pipeline) the call's
//! duration; a pool's blocked call under the pool's name, and each call its panic rule admits
//! (`pool panic`, with the pool and the member) at `debug`. A `ToolGuard` call is an `execute_tool` span (OpenTelemetry's GenAI tool-execution span:
//! `otel.name`, `gen_ai.tool.name`, `otel.status_code`, `error.type`) with the run id, attempts,
//! outcome and duration, and a `client` span per attempt, so adding `tracing-opentelemetry` yields
//! traces with no further code. A retry a retry budget refuses is an `info` event in the call's
//! span (`retry refused by the retry budget`, with the dependency, `ratio`, `min_per_second`,
//! `window_ms` and the budget's `refused` count). Nothing from a request or response, and no error message, is ever
//! recorded. Without the feature nothing is traced and nothing is timed.
//!
//! **Metrics** (opt-in: `Builder::metrics(true)`, `RegistryBuilder::metrics(true)`): admitted,
//! blocked, successes, counted failures by kind, ignored, dropped (permits dropped unrecorded:
//! cancelled or panicked calls), throttled (calls adaptive throttling shed while closed: in no
//! other count), and transitions by reason, read as a `Metrics` snapshot from a
//! breaker or from the registry (all dependencies, keyed by name; `Serialize` with feature `serde`).
//! A call is counted once, when its permit is used up, so a call in flight is not counted yet and
//! `admitted` is the sum of the outcomes and `dropped`. Each thread adds to its own cache-padded
//! stripe, so counting puts no shared write on the healthy path; its measured cost is in the
//! benchmarks' figures (`benches/README.md`). With feature
//! `metrics`, `Registry::export_metrics()` hands the snapshots to the `metrics` facade (call it on a
//! timer or before a scrape), with each counting dependency's retry budget's refusals
//! (`toolbreaker_retries_refused_total`).
