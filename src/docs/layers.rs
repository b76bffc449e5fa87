//! The layers of the crate and the seam every change of a breaker's word goes through.
//!
//! The crate is built in one-way layers, bottom up; each module refers only to those below it,
//! at folder and at file level, and `tests/layers.rs` reads the sources and fails on any
//! reference that points up:
//!
//! | layer | what |
//! |---|---|
//! | `sync` | every atomic and lock the crate uses (loom's under `--cfg loom`) |
//! | `time` | the clocks, a breaker's time origin, `Duration` ⇄ milliseconds |
//! | [`config`](crate::config) | [`Config`](crate::Config), [`ConfigError`](crate::ConfigError): `defaults.rs` (the defaults and the largest values accepted), `error.rs` (`ConfigError`, `Problem`), `fields.rs` (one field's check), `shape.rs` (the cooldown's backoff and jitter), `rates.rs` (`Window`, the rate rules), `limits.rs` (a configuration in the word's units), `validated.rs` (`Config`: the whole validation, its accessors); `mod.rs` the index |
//! | [`classify`](crate::classify) | `outcome.rs` (outcomes, failure kinds, `Classified`), `classifier.rs` (the `Classify` trait, `with`), then HTTP and `reqwest` (`http.rs`, `reqwest.rs`) |
//! | `types` | the values a breaker reports: [`State`](crate::State), [`Blocked`](crate::Blocked), [`Transition`](crate::Transition) |
//! | [`observe`](crate::observe) | `counters.rs`, `export.rs` (the counters' metrics export), `listener.rs` (listeners, and one transition told), `events.rs` (tracing events), `herald.rs` (the order listeners hear in) |
//! | `state` | the pure state and its cells: `pack.rs` (the one vocabulary of packed fields), then a file per atomic that takes part in a protocol, each with its encoding and the cell that owns it: `word.rs` (the state word and `WordCell`, its one compare-and-swap loop: the seam), `slots.rs` (several probes' slots), `settings.rs` (the live threshold, cooldown, probe timeout, probes), `backoff.rs`, `hint.rs` (the end a dependency's hint set for an open period) and `cooldown.rs` (the cooldown's shape and the record of the one in force), `rates.rs` (the rate rules' arithmetic); last `decide.rs` and `decide/` (the pure transitions, the only code that builds a next word or slots value, and their exhaustive tests) |
//! | [`breaker`](crate::breaker) | `CircuitBreaker` and one operation per file: `hook.rs` (the hook: what the slow paths tell and ask whoever shares the transitions, feature-neutral), `window.rs` (the rate rules' striped counts, beside the word), `budget_ring.rs` (a retry budget's counts: one CAS'd head slice and a ring of ten), `budget.rs` (`RetryBudget`), `prober.rs` (a health check's prober as the breaker sees it: whether it runs, its wake, `HealthCheck`), `machine.rs` (the type and what every operation shares), `sharing.rs` (the hook called; adopting a state learned elsewhere, freeing the probe slot for a grant), `probes.rs`, `admit.rs`, `report.rs`, `manual.rs`, `reconfigure.rs`, then `permit.rs`, `pooled.rs` (what a pool asks of a member), `call.rs`, `builder.rs`, `hint.rs` (a dependency's hint of how long to stay open: the builder's settings and the report's side), `health.rs` (feature `tokio`: `probe_with`, `build_arc`, the prober's task and step), `checks.rs` (the HTTP health check); the model checks (`loom_tests.rs`, under `--cfg loom`) |
//! | [`registry`](crate::registry) | [`Registry`](crate::Registry): breakers by dependency; `pool_spec.rs` (a pool as configured: `PoolBuilder`, its checked spec, the shape built from it), `config.rs` (`RegistryConfig`, `Reload`), `bounds.rs` (`RegistryFull`, the entries), `hook.rs` (the creation hook a mode installs: it names no fleet type), `map.rs` (the type, what reads its map whole), `budgets.rs` (the dependencies' retry budgets: their rules, each attached to its breaker), `eviction.rs` (the bound kept, idle eviction), `lookup.rs` (`get`, `try_get`, `with`, a name's first use), `pools.rs` (the configured pools, built over the breakers), `reload.rs`, `builder.rs` (`RegistryBuilder`), `toml.rs` and `toml/` (the file, its error, one section's keys), `export.rs`; `mod.rs` the index |
//! | [`pool`](crate::pool) | [`Pool`](crate::Pool): equivalent upstreams over a registry's breakers: `members.rs` (the type, its builder's `build`, `Registry::pool`), `permit.rs` (`PoolPermit`), `choose.rs` (the choice rule, panic, the pool's `Blocked`), `call.rs` (`call`, `run`); the pool as configured (`PoolBuilder`, its spec and shape) is the registry's `pool_spec.rs`, its rebuild on reload `pools.rs` |
//! | `fleet` | fleet mode (feature `redis`, the one `#[cfg]`, on its `mod` line), above the registry, into which it installs its creation hook: `status.rs` (settings, counters, events), `keys.rs` (the names in Redis), `millis.rs` (local and server milliseconds, typed apart), `tap.rs` (the breaker's hook in fleet mode: what the slow paths tell the worker, the gate on the probe slot), `script.rs` (the shared record and its Lua scripts, whose text is in the `.lua` files beside it), `reconcile.rs` (the pure decision on a record), `flush.rs` (the pure order of a flush's sends), `backstop.rs`, `redact.rs`, `error.rs`, `handle.rs`, then the worker, the one background task that does the I/O: `connection.rs`, `send.rs`, `receive.rs`, `worker.rs`; `start.rs` (`Fleet`, and starting the worker), `builder.rs` (`FleetBuilder`, the defaults); `install.rs` (the registry's creation hook, `RegistryBuilder::fleet`, `Registry::fleet`) |
//! | [`agent`](crate::agent) | [`ToolResult`](crate::ToolResult), the result the model sees: `fields.rs` (the values its fields hold: `FailedKind`, `CallStats`, `FailedAttempts`, `StopReason`), `message.rs` (its words for the model), `result.rs`; with `tokio`, the guard pipeline: `retry.rs`, `run.rs` (`AgentRun`), `spans.rs`, `guard.rs` (`ToolGuard`: timeout, retry policy, error text), `target.rs` (a breaker or a pool, asked alike), `pipeline.rs` (its steps for one call, `Attempt`), `pool_call.rs` (`ToolGuard::call_pool`) |
//! | `tower` | the middleware (feature `tower`): `future.rs`, `service.rs` (the service), `layer.rs` |
//! | `mcp` | MCP (feature `mcp`): `classify.rs` (`McpClassifier`), `result.rs` (the model's `CallToolResult`), `client.rs` (`GuardedClient`; its builder in `client/builder.rs`), `gateway.rs` (`McpGateway`) |
//! | [`docs`](crate::docs) | these pages: the contract, calls, configuration, fleet mode, MCP, observability, features, time, the layers, the checks, the examples |
//!
//! # The seam: the word's cell
//!
//! A breaker's state is one packed `u64`: 2 bits of kind (closed, open, probing, half-open),
//! 20 bits of generation and 42 bits of payload (the failure count and two flags of the rate
//! rules, or a time in ms since the
//! breaker's origin). One type owns it (`state::word::WordCell`), and every read-modify-write
//! goes through its one helper: a pure decision from `decide` is applied to the newest word with a
//! compare-and-swap, and decided again from any word that beat it. The decision functions
//! read no atomics and no clock, and are tested exhaustively; the seam carries the one
//! ordering comment (acquire loads, acq-rel writes). The seam is a concrete type with no
//! generics and no dynamic dispatch, so the healthy path stays a plain load; a later store
//! (a word in shared memory) hooks in there.
//!
//! Fleet mode does not replace the seam: the fleet shares transitions, not words. Its
//! worker changes a word only through the same seam, with one more pure decision (`adopt`: a
//! state learned from the fleet), and the slow paths tell it what happened through the
//! breaker's hook (fleet mode's tap). The healthy path reads neither.
//!
//! # Where the guarantees are written
//!
//! Every read-modify-write of a breaker's word goes through `WordCell::update`, which carries the
//! one ordering comment; the guarantees users may rely on are in
//! [`CircuitBreaker`](crate::CircuitBreaker)'s `# Memory ordering` docs. The crate root exports
//! what ordinary code names; the rest is in its module
//! ([`toolbreaker::breaker::Builder`](crate::breaker::Builder),
//! [`toolbreaker::observe::Metrics`](crate::observe::Metrics),
//! [`toolbreaker::registry::Reload`](crate::registry::Reload)).
