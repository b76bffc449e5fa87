//! Long-form documentation, kept out of the item docs (the shape of arc-swap's `docs` module):
//! the behaviour contract, the layers of the crate, observability, features, time, and fleet mode.

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
    //!
    //! # Fleet mode
    //!
    //! With `RegistryBuilder::fleet` (feature `redis`)
    //! every instance of a gateway shares each dependency's breaker state through Redis; the
    //! rules 1 to 11 still hold on each instance, and these are added (how, in
    //! [`docs::fleet`](crate::docs::fleet)):
    //!
    //! 12. **Admission stays local.** A call is admitted or blocked by the local word alone; no
    //!     Redis command is sent per call, and no call waits on Redis.
    //! 13. **A trip anywhere opens the dependency everywhere.** With the default `min_instances(1)`
    //!     an instance's own trip opens the fleet's record; every other instance adopts it (a
    //!     transition with reason [`fleet`](crate::TransitionReason::Fleet)) and blocks its next
    //!     call, having seen no failure itself (a breaker first used on an instance after the
    //!     trip admits calls until its first sync lands: one round trip). The cooldown counts
    //!     from the time the fleet
    //!     opened, read from the Redis server's clock, so instances whose clocks disagree still
    //!     agree on when it ends.
    //! 14. **Fleet-wide counting.** Each instance reports its *consecutive counted failures* (its
    //!     whole run since its last success, not per failure: one report however many failures
    //!     came since the last, and at most one per 5 ms; a trip is sent at once) with the
    //!     server's time. The fleet trips when, counting only the
    //!     instances whose last report is within the window (default 30 s), the sum of their runs
    //!     reaches the fleet threshold (default: the dependency's own `failure_threshold`) or one
    //!     of them tripped on its own, *and* at least `min_instances` (default 1) instances are
    //!     counted. A success on an instance clears that instance's run only. A trip, a verdict or a
    //!     change by hand clears every run.
    //! 15. **One bad instance does not open the fleet.** With `min_instances(k)`, `k > 1`, an
    //!     instance that trips on its own opens its own breaker at once and votes; the fleet opens
    //!     only when `k` instances have failures or trips in the window. While the fleet's record
    //!     is closed, such an instance probes for itself after its own cooldown.
    //! 16. **One probe for the whole fleet.** Once the fleet is open and its cooldown has ended, a
    //!     local call that would take the probe slot asks the fleet first: it is blocked
    //!     (`probe_in_flight`, retry-after the command timeout) while the instance's agent claims
    //!     the one lease in Redis (`SET NX PX`, carrying the generation; it lasts the probe window
    //!     plus the probe timeout). The instance that wins frees its local slot for one caller within
    //!     the probe window (unused, the lease is given back); every other instance stays blocked
    //!     with `probe_in_flight` and a retry-after of the lease's remaining time (an upper bound: a
    //!     lease not used within the probe window is given back then, and another instance that
    //!     wants the probe claims it at once). The probe's
    //!     verdict reaches every instance: a success closes everywhere, a counted failure reopens
    //!     everywhere with a fresh cooldown. A lease that runs out with no verdict (its holder
    //!     killed) counts as a failed probe: open from the lease's end, and after a cooldown
    //!     another instance probes.
    //! 17. **Fenced.** Each shared transition is one script that checks the fleet generation: two
    //!     instances tripping at once make one generation, and a verdict of an older generation
    //!     changes nothing. A local permit issued before an adopted change is stale (rule 7).
    //! 18. **Changes by hand reach the fleet.** `force_open` isolates the dependency on every
    //!     instance, always. `force_closed` and `reset` close it (and clear every run) on every
    //!     instance if the fleet is still in the generation the instance knew; one made while a trip
    //!     elsewhere had not yet been heard is stale, changes nothing, and the instance adopts the
    //!     newer state. [`Registry::reload`](crate::Registry::reload) is per instance: settings are
    //!     each instance's own (give every instance the same file: a claim judges the cooldown
    //!     by the claiming instance's own, so instances with different cooldowns probe after the
    //!     shortest); the fleet settings are the
    //!     `FleetBuilder`'s.
    //! 19. **Redis down, slow, restarted or wiped.** A command that fails or takes longer than the
    //!     command timeout (default 250 ms) makes every breaker of the registry a local breaker
    //!     (its own threshold, cooldown and probe) and tells one
    //!     `FleetEvent::Unreachable`, once per outage.
    //!     The agent retries every sync interval; on reconnect it tells
    //!     `Reconnected` and reconciles each dependency:
    //!     a record missing (Redis restarted empty, or `FLUSHALL`) is rebuilt from the first
    //!     instance to sync; the fleet's record wins over the local state, except that a trip
    //!     made on its own while apart is sent as a vote at the fleet's current generation (with
    //!     `min_instances(1)` it opens the fleet), and changes by hand made while apart are sent
    //!     as rule 18 says. A local close (a local probe's success while apart) never closes an
    //!     open fleet: the fleet's own probe does.
    //! 20. **Bad data.** A record under the crate's key that this build cannot read (a foreign
    //!     value, a truncated record, another format version), or a foreign value under its
    //!     votes, lease, epoch or incarnation key, is never overwritten: that
    //!     dependency works as a local breaker, one
    //!     `FleetEvent::BadRecord` names it and the
    //!     problem, and it joins the fleet again once the key is readable (or deleted). A
    //!     malformed message on the channel is ignored with a
    //!     `FleetEvent::BadMessage`. Nothing panics.
    //!
    //! # MCP
    //!
    //! Through `mcp::GuardedClient` and `mcp::McpGateway` (feature `mcp`), every MCP `tools/call`
    //! is a call of the rules above, and these are added:
    //!
    //! 21. **An answer proves the server reachable.** A `CallToolResult` with `isError: true`, a
    //!     JSON-RPC invalid-params error (an unknown tool included) and an HTTP 4xx never count
    //!     by default; a closed or failed transport, a timeout and JSON-RPC internal errors do
    //!     (`mcp::McpClassifier`, overridable per server and per tool).
    //! 22. **Nothing is sent while open.** A blocked call sends no request to the MCP server; the
    //!     model receives a `CallToolResult` with `isError: true`, the model's message as its one
    //!     text content and the `ToolResult` JSON as `structuredContent`. No transport error's
    //!     text is in it.
    //! 23. **Cancellation gives the probe back.** A call cancelled by its caller (a dropped
    //!     future, a client's `notifications/cancelled`, a dropped HTTP connection or a closed
    //!     stdio at the gateway) sends the server `notifications/cancelled`, records nothing, and
    //!     frees a probe's slot for the next caller.
    //! 24. **One upstream's outage is fenced.** A gateway's upstreams have a breaker each; an open
    //!     one answers at once and the others' calls are forwarded as before.
    //!
    //! # Rate rules and bounds
    //!
    //! With [`Builder::failure_rate`](crate::breaker::Builder::failure_rate) or
    //! [`Builder::slow_calls`](crate::breaker::Builder::slow_calls), and a bounded
    //! [`Registry`](crate::Registry):
    //!
    //! 25. **Judged calls only.** A window holds the judged calls of the closed generation: those
    //!     recorded as a success or a counted failure. `Ignored` outcomes, dropped permits and
    //!     probes are never judged. A call is slow when its reported time is at least the
    //!     threshold, whether it succeeded or failed; a call recorded without a time is never
    //!     slow.
    //! 26. **The minimum, then at once.** No rate is judged while the window holds fewer than
    //!     `minimum_calls`; from the call that reaches it (a success included) every judged call
    //!     is judged, before the window fills. A trip is made when counted failures (or slow
    //!     calls) over judged calls reach the ratio, with reason `failure_rate` (or
    //!     `slow_call_rate`). A count window of `n ≤ 32` judges exactly the last `n` calls; a
    //!     larger one, whole buckets of `⌈n/32⌉`; a time window of `t`, 10 buckets of `⌈t/10⌉`
    //!     ms (a call leaves between `0.9 t` and `t` after it was recorded, when `t` is a whole
    //!     number of 10 ms). Under racing reports, a
    //!     judgement may miss a call being recorded at that instant; the next one counts it.
    //! 27. **One trip, fenced.** A window's trip is one compare-and-swap of the word from the
    //!     generation it judged: a judgement of a generation that is over (tripped, probed,
    //!     reset) trips nothing. Every transition, and a change of the window itself, empties the
    //!     window; new ratios or a new minimum judge it as it stands, from the next judged call.
    //!     With a rate rule and a `failure_threshold`, whichever rule is met first trips; with a
    //!     rate rule alone there is no consecutive rule.
    //! 28. **The healthy path stays local.** A healthy call of a breaker with a count-window rule
    //!     writes one count to its thread's stripe and nothing shared; with a time window it
    //!     also reads the clock. A breaker with the consecutive rule alone has today's path: one
    //!     load to admit, one load and no store to record a success, no clock.
    //! 29. **A registry has bounds.** With `max_dependencies`, names past the bound that have no
    //!     configuration of their own are refused by `try_get` (`RegistryFull`) and share one
    //!     overflow breaker through `get`; the map never grows past the bound (plus the
    //!     configured names). `idle_eviction` removes only breakers that are closed with nothing
    //!     counted, looked up by no one for the whole period and held by no handle: never an
    //!     open, half-open or isolated one.
    //! 30. **A cooldown that backs off.** With
    //!     [`cooldown_backoff`](crate::breaker::Builder::cooldown_backoff), each reopen without a
    //!     close in between (a failed or timed-out probe) multiplies the cooldown, up to its
    //!     maximum; a close resets it; a trip from closed starts from the configured one. With
    //!     [`cooldown_jitter`](crate::breaker::Builder::cooldown_jitter), each open period's
    //!     cooldown is spread by up to ± the fraction, fixed when the period begins, so every
    //!     caller reads the same end. `Blocked::retry_after`, the model's `retry_after_ms` and
    //!     `Transition::cooldown` give the cooldown in force.
    //! 31. **N probes, exactly.** With [`probes(n)`](crate::breaker::Builder::probes), half-open
    //!     admits exactly `n` probes however many callers race; it closes when all `n` succeed
    //!     and reopens on a counted failure of any one (the others' outcomes are then stale); an
    //!     `Ignored` or dropped probe gives its slot back; one lease, counted from the first
    //!     probe's admission, covers them all.
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
    //! | [`breaker`](crate::breaker) | `word` (layout), `decide` (pure transitions), `store` (the seam), `tap` (what the slow paths tell the fleet), `window` (the rate rules' counts), `machine`, `permit`, `call`, `builder` |
    //! | `fleet` | fleet mode (feature `redis`): `status` (settings, counters, events), `script` (the shared record and its Lua scripts), `agent` (the task), the API |
    //! | [`registry`](crate::registry) | breakers by dependency, their configuration, bounds and eviction, TOML, reload |
    //! | [`agent`](crate::agent) | the result the model sees and the guard pipeline |
    //! | `tower` | the middleware (feature `tower`) |
    //! | `mcp` | MCP (feature `mcp`): `classify` (`McpClassifier`), `result` (the model's `CallToolResult`), `client` (`GuardedClient`), `gateway` (`McpGateway`) |
    //!
    //! # The store seam
    //!
    //! A breaker's state is one packed `u64`: 2 bits of kind (closed, open, probing, half-open),
    //! 20 bits of generation and 42 bits of payload (the failure count and two flags of the rate
    //! rules, or a time in ms since the
    //! breaker's origin). One type owns it, and every read-modify-write goes through its one
    //! helper: a pure decision from `decide` is applied to the newest word with a
    //! compare-and-swap, and decided again from any word that beat it. The decision functions
    //! read no atomics and no clock, and are tested exhaustively; the seam carries the one
    //! ordering comment (acquire loads, acq-rel writes). The seam is a concrete type with no
    //! generics and no dynamic dispatch, so the healthy path stays a plain load; a later store
    //! (a word in shared memory) hooks in there.
    //!
    //! Fleet mode does not replace the seam: the fleet shares transitions, not words. Its
    //! agent changes a word only through the same seam, with one more pure decision (`adopt`: a
    //! state learned from the fleet), and the slow paths tell it what happened through the
    //! breaker's tap. The healthy path reads neither.
}

pub mod fleet {
    //! How fleet mode works: the record in Redis, its scripts, the worker (feature `redis`). The
    //! rules it keeps are in [`contract`](super::contract), 12 to 20.
    //!
    //! # Shape
    //!
    //! ```text
    //!  calls ──► local word (one atomic load) ──► dependency
    //!               │ slow paths only: a counted failure, a cleared count, a transition,
    //!               │ a call blocked waiting for the fleet's probe
    //!               ▼
    //!            tap (flags; wakes the worker) ──► worker task ──EVALSHA──► Redis record
    //!                                                 ▲                       │ PUBLISH
    //!               adopt (through the store seam) ◄──┴──── pub/sub ◄─────────┘
    //!                                                 + MGET epoch every sync interval
    //! ```
    //!
    //! One worker per registry runs on the Tokio runtime the `Fleet` was built in.
    //! Its one connection (redis-rs's `ConnectionManager`, RESP3) carries the scripts and the
    //! subscription, and reconnects with backoff.
    //!
    //! # Keys (prefix `P`, dependency `D`)
    //!
    //! `P` stands for the prefix as it is written in a name: its `%` as `%25` and its `:` as
    //! `%3A` (percent-encoding of those two characters; a prefix with neither, such as the
    //! default `toolbreaker`, is written as it is). The written prefix thus holds no `:`, so the
    //! first `:` of a name ends it and the prefix can be read back: no two fleets' names meet,
    //! whatever their prefixes and dependency names. After it comes the role: `breaker`,
    //! `votes`, `probe` followed by `:D` (the dependency is the rest of the name, whatever it
    //! holds), or `epoch`, `incarnation`, `transitions` alone. Prefix `gw:breaker` writes its
    //! epoch as `gw%3Abreaker:epoch`, apart from prefix `gw`'s record of a dependency named
    //! `epoch`, `gw:breaker:epoch`. The crate uses no hash tags: a fleet's scripts touch several
    //! of its keys at once, so a fleet needs one Redis server (or a primary with replicas), not a
    //! Cluster.
    //!
    //! | key | type | contents |
    //! |---|---|---|
    //! | `P:breaker:D` | hash, expiring after the record TTL (`FleetBuilder::record_ttl`, default 1 day) | `v` (format version, `1`), `gen` (the fleet generation), `state` (`closed`, `open`, `isolated`), `at` (server ms when the state began), `lu` (server ms when the last probe lease of this open period ends; `0` if none or given back), `m` (the id of the last change by hand, so a resend applies once) |
    //! | `P:votes:D` | hash, expiring after the window | one field per instance: `count at tripped` |
    //! | `P:probe:D` | string with a TTL | `gen holder`: the probe lease; the holder is the instance's name and a random token per worker, so two workers given one name by mistake never share a lease |
    //! | `P:epoch` | integer | bumped by every write of any record |
    //! | `P:incarnation` | string | the server's time when the keys were first written after a wipe (`FLUSHALL`, a restart with no persistence) |
    //!
    //! A record expires once idle: every write and every sync sets its expiry again, and each
    //! worker syncs every dependency its registry holds once a third of the TTL, so a record in
    //! use is kept and the record of a dependency name no instance uses any more leaves Redis
    //! after the TTL (the fleet's counterpart of the registry's idle eviction, which fleet mode
    //! turns off). A record that expires while in use is rebuilt from the instances, as after a
    //! wipe. The epoch and incarnation keys, one each per prefix, do not expire.
    //!
    //! Every write publishes the record on channel `P:transitions`, one line of tab-separated
    //! fields: `1 epoch gen state at now holder lease_until dependency`.
    //!
    //! # Scripts
    //!
    //! Each is one Lua script run with `EVALSHA` (loaded on a `NOSCRIPT` answer), so it is
    //! atomic on the server; each reads `TIME`, checks the record's shape, and answers with the
    //! record as it stands:
    //!
    //! | script | when | what |
    //! |---|---|---|
    //! | sync | a dependency's first use, each reconnect, a changed or missing epoch | reads; creates the record from the instance's state if missing |
    //! | report | a closed count changed, a trip on its own | writes the instance's run; trips if the rule holds (contract 14) |
    //! | claim | a call wants the probe after the cooldown | takes the lease if the record is open, the cooldown (from `at` or the last lease's end) is over and no lease is held |
    //! | verdict | the fleet's probe reported | closes or reopens, if the generation and the lease are the caller's |
    //! | release | a granted probe slot was not used within the probe window | gives the lease back |
    //! | manual | `force_open`, `force_closed`, `reset` | isolates, or closes if the generation is the one known |
    //!
    //! # Commands
    //!
    //! In the background, one `MGET` of the epoch and the incarnation per sync interval per
    //! registry. The epoch counts every write and each write publishes one message, so a worker
    //! that received fewer messages than the epoch moved (at two looks in a row) missed one and
    //! reads every record once; so does one that finds the epoch went back (a server restored
    //! from an older snapshot) or gone, or the incarnation changed or gone (a wipe). A message is
    //! ordered against the worker's own replies by epoch; only a reply moves that mark, so a
    //! forged message cannot cut a dependency off.
    //!
    //! # Refusals, timeouts and credentials
    //!
    //! An unreachable server (a connection refused, no answer within the command timeout, a
    //! server loading or read-only) is an outage: every breaker works locally, the worker tries
    //! again every sync interval, and one `FleetEvent::Unreachable` is told per outage (a
    //! timeout says `no answer within the command timeout`). A refusal of this instance
    //! (`WRONGPASS`, `NOAUTH`: a wrong or missing password or user; `NOPERM`: the user's ACL) is
    //! a configuration error, not an outage: one `FleetEvent::Refused`, an error-level `tracing`
    //! event, every breaker local, and the worker does not ask again. `FleetHandle::connected`
    //! waits for the first connection at start (`Ok`), or returns `FleetError::Refused`, or
    //! `FleetError::Timeout` with the last error. Every URL the crate prints or tells (in
    //! `FleetError`, events, `tracing`) passes through `fleet::redact`, which replaces its
    //! password with `***`.
    //!
    //! # Time and manual clocks
    //!
    //! The worker turns the server's times into a breaker's with the breaker's clock as it reads
    //! when the record is applied. A test on a mock clock (`RegistryBuilder::clock`) should let
    //! the worker apply a change before moving the clock, or the jump counts as time that passed
    //! before it. Per shared trip
    //! cycle between instances: one report (the trip), one or two claims (the first answer may be
    //! *wait*), one verdict, and each instance's worker reacts to the messages without a command.
    //! The benchmark `fleet` (package `toolbreaker-benches`) counts them with `INFO commandstats`.
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
    //! | `redis` | fleet mode: the `fleet` module, `Fleet`, `RegistryBuilder::fleet`, `Registry::fleet`: transitions shared by every gateway instance through Redis (redis-rs, Tokio), admission still local (implies `tokio`) |
    //! | `mcp` | the `mcp` module: `GuardedClient` (every `call_tool` of an rmcp client through the guard pipeline), `McpClassifier`, blocked, stopped and failed calls as the `CallToolResult` the model reads, and `McpGateway` (an MCP server over Streamable HTTP and stdio in front of upstream MCP servers) (implies `tokio`, `serde`, `http`) |
    //! | `tracing` | events (target `toolbreaker`) for transitions (`info`, `warn` when opening), blocked calls and counted failures (`debug`); with `tokio`, a span per `ToolGuard` call and per attempt, with the fields `tracing-opentelemetry` maps; never a request, response or error message |
}

pub mod time {
    //! How breakers read time.
    //!
    //! Breakers read a [`quanta::Clock`], re-exported as [`toolbreaker::quanta`](crate::quanta) so tests
    //! use the same version: `quanta::Clock::mock()` gives a clock to advance by hand, and nothing in
    //! this crate sleeps.
}
