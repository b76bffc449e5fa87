//! Long-form documentation, kept out of the item docs (the shape of arc-swap's `docs` module):
//! the behaviour contract, the layers of the crate, observability, features and time.

pub mod contract {
    //! The behaviour contract: what every breaker guarantees.
    //!
    //! 1. One breaker per dependency; one dependency's outage never blocks another.
    //! 2. Only counted failures ([`Outcome::Failure`](crate::Outcome::Failure)) count; [`Outcome::Ignored`](crate::Outcome::Ignored) neither counts nor
    //!    clears the run of failures; a success clears it.
    //! 3. Open rejects before any external effect with [`Blocked`](crate::Blocked), whose `retry_after` is the
    //!    remaining cooldown.
    //! 4. Half-open admits exactly one probe, however many callers race.
    //! 5. The probe's success closes; its counted failure reopens with a fresh cooldown; its `Ignored`
    //!    outcome, or dropping its permit, releases the slot for the next caller.
    //! 6. A probe that does not report within the probe timeout counts as failed; the cooldown restarts
    //!    from the lease's end.
    //! 7. Every trip, probe verdict and change by hand starts a new *generation*; an outcome from an
    //!    older one never moves the state. (Claiming the probe slot keeps it: no probe of it is alive.)
    //! 8. [`CircuitBreaker::state`](crate::CircuitBreaker::state) never writes, and is correct from the clock alone.
    //! 9. Invalid configuration is a [`ConfigError`](crate::ConfigError) naming the field; nothing is clamped.
    //! 10. Settings change live without losing state ([`CircuitBreaker::reconfigure`](crate::CircuitBreaker::reconfigure),
    //!     [`Registry::reload`](crate::Registry::reload)): an open breaker's new cooldown counts from its original opened-at; a
    //!     closed breaker keeps its count and trips at once if the new threshold is already reached.
    //! 11. Changes by hand ([`force_open`](crate::CircuitBreaker::force_open), which isolates,
    //!     [`force_closed`](crate::CircuitBreaker::force_closed), [`reset`](crate::CircuitBreaker::reset)) are
    //!     transitions with reason [`manual`](crate::TransitionReason::Manual).
}

pub mod layers {
    //! The layers of the crate and the seam every change of a breaker's word goes through.
    //!
    //! The crate is built in one-way layers; each module refers only to modules below it, at
    //! folder and at file level (a test reads the sources and holds them to this order):
    //!
    //! | layer | what |
    //! |---|---|
    //! | `sync` | every atomic and lock the crate uses (loom's under `--cfg loom`) |
    //! | `time` | the clocks, a breaker's time origin, `Duration` ⇄ milliseconds |
    //! | [`config`](crate::config) | [`Config`](crate::Config), [`ConfigError`](crate::ConfigError) |
    //! | [`classify`](crate::classify) | outcomes, failure kinds, the `Classify` trait, HTTP and `reqwest` |
    //! | `types` | the values a breaker reports: [`State`](crate::State), [`Blocked`](crate::Blocked), [`Transition`](crate::Transition) |
    //! | [`observe`](crate::observe) | listeners and the order they hear in, counters, tracing events, metrics export |
    //! | [`breaker`](crate::breaker) | `word` (layout), `decide` (pure transitions), `store` (the seam), `machine`, `permit`, `call`, `builder` |
    //! | [`registry`](crate::registry) | breakers by dependency, their configuration, TOML, reload |
    //! | [`agent`](crate::agent) | the result the model sees and the guard pipeline |
    //! | `tower` | the middleware (feature `tower`) |
    //!
    //! # The store seam
    //!
    //! A breaker's state is one packed `u64`: 2 bits of kind (closed, open, probing, half-open),
    //! 20 bits of generation and 42 bits of payload (the failure count, or a time in ms since the
    //! breaker's origin). One type owns it, and every read-modify-write goes through its one
    //! helper: a pure decision from `decide` is applied to the newest word with a
    //! compare-and-swap, and decided again from any word that beat it. The decision functions
    //! read no atomics and no clock, and are tested exhaustively; the seam carries the one
    //! ordering comment (acquire loads, acq-rel writes). The seam is a concrete type with no
    //! generics and no dynamic dispatch, so the healthy path stays a plain load; a later store
    //! (state shared by a fleet, or a word in shared memory) hooks in there.
}

pub mod observability {
    //! What a breaker tells the outside world.
    //!
    //! Every [`Transition`](crate::Transition) carries its reason, generation, failure count and cooldown; a listener
    //! (`on_transition` on [`Builder`](crate::breaker::Builder) or
    //! [`RegistryBuilder`](crate::registry::RegistryBuilder)) hears them outside any retry loop and any lock. Counting is opt-in ([`Builder::metrics`](crate::breaker::Builder::metrics)): thread-striped counters read as a
    //! [`Metrics`](crate::observe::Metrics)
    //! snapshot. Feature `tracing` adds events and pipeline spans; feature `metrics` exports the
    //! counters through the `metrics` facade.
    //!
    //! Listeners hear a breaker's transitions one at a time and in its order
    //! ([`Transition::is_after`](crate::Transition::is_after)): the caller that landed a transition
    //! tells it, unless another thread is telling this breaker's transitions, which then tells it
    //! after its own. A transition overtaken by a later one before it could be told, or waiting
    //! beyond 16 behind a slow listener, is superseded: counted, not heard, so the last one heard is
    //! the newest. Counting counts a call once,
    //! when its permit is used up (recorded, or dropped unrecorded).
}

pub mod features {
    //! The cargo features and what each adds.
    //!
    //! | feature | adds |
    //! |---|---|
    //! | `tokio` | `CircuitBreaker::run_with_timeout`: an async call under a per-call timeout; the guard pipeline (`ToolGuard`, `AgentRun`, `RetryPolicy`): run deadline and budgets, breaker, per-call timeout, classification, bounded retry |
    //! | `serde` | `ToolResult::to_json`, the JSON the model receives; `Serialize` for [`State`](crate::State) and [`BlockedReason`](crate::BlockedReason) |
    //! | `http` | the `http` module: classification of status codes and `Retry-After` |
    //! | `reqwest` | the `classify::reqwest` module: classification of `reqwest` results and transport errors (implies `http`) |
    //! | `tower` | the `tower` module: `CircuitBreakerLayer`, middleware that rejects before the inner service is called or polled (with `http`: `CircuitBreakerLayer::http`) |
    //! | `metrics` | `Registry::export_metrics`, `Metrics::export`: counters through the `metrics` facade, named `toolbreaker_*` and labelled by dependency |
    //! | `toml` | `RegistryConfig::from_toml`/`from_file`, `Registry::reload_toml`/`reload_file`: per-dependency configuration from TOML, reloaded live; errors name the dependency and field |
    //! | `tracing` | events (target `toolbreaker`) for transitions (`info`, `warn` when opening), blocked calls and counted failures (`debug`); with `tokio`, a span per `ToolGuard` call and per attempt, with the fields `tracing-opentelemetry` maps; never a request, response or error message |
}

pub mod time {
    //! How breakers read time.
    //!
    //! Breakers read a [`quanta::Clock`], re-exported as [`toolbreaker::quanta`](crate::quanta) so tests
    //! use the same version: `quanta::Clock::mock()` gives a clock to advance by hand, and nothing in
    //! this crate sleeps.
}
