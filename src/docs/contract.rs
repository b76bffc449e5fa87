//! The behaviour contract: what every breaker guarantees.
//!
//! The rules are numbered so tests, docs and issues can cite them; each is held by named tests
//! (see [`checks`](super::checks)). Rules 1 to 11 hold for every breaker; fleet mode adds 12 to
//! 20, MCP 21 to 24, and the rate rules, the cooldown's shape, several probes, a registry's
//! bounds and the dependency's hints 25 to 32, and the cap on calls in flight 33 to 35.
//!
//! # Every breaker
//!
//! 1. One breaker per dependency; one dependency's outage never blocks another.
//! 2. Only counted failures ([`Outcome::Failure`](crate::Outcome::Failure)) count;
//!    [`Outcome::Ignored`](crate::Outcome::Ignored) outcomes (bad arguments, auth, not found)
//!    neither count nor clear the run of failures; a success clears it.
//! 3. Open rejects before any external effect with [`Blocked`](crate::Blocked), whose
//!    `retry_after` is the remaining cooldown.
//! 4. Half-open admits exactly one probe, however many callers race; the others are blocked
//!    (with `probes(n)`, exactly `n`: rule 31).
//! 5. The probe's success closes; its counted failure reopens with a fresh cooldown; its
//!    `Ignored` outcome, or dropping its permit (cancellation, panic), releases the slot for the
//!    next caller.
//! 6. A probe that does not report within the probe timeout counts as failed; the cooldown
//!    restarts from the end of its lease.
//! 7. Every trip, probe verdict and change by hand starts a new *generation*; an outcome from an
//!    older one never moves the state (a slow call admitted before a trip cannot close or reopen
//!    the breaker). Claiming the probe slot keeps the generation: no probe of it is alive.
//!    Generations are 20 bits: a permit held across 2^20 of them, which takes at least 2^19
//!    cooldowns (8.7 minutes at a 1 ms cooldown, six days at 1 s), could be taken for a current
//!    one. Changes by hand take no time, so a permit held while a script toggles
//!    `force_open`/`force_closed` half a million times could be too.
//! 8. [`CircuitBreaker::state`](crate::CircuitBreaker::state) never writes, and is correct from
//!    the clock alone (open past its cooldown reads half-open with no call in between).
//! 9. Invalid configuration (a zero threshold, a zero or over-long duration, a ratio outside its
//!    range, a setting of a rule that is not set) is a [`ConfigError`](crate::ConfigError) naming
//!    the field, never a panic; nothing is clamped. Read from a TOML file, the error names the
//!    file's key (`cooldown_ms`, `slow_call_rate`), not the builder's name for it.
//! 10. Settings change live without losing state
//!     ([`CircuitBreaker::reconfigure`](crate::CircuitBreaker::reconfigure),
//!     [`Registry::reload`](crate::Registry::reload)): an open breaker stays open and its new
//!     cooldown counts from its original opened-at; a closed one keeps its failure count and
//!     trips at once if the new threshold is already reached, also when a failure is recorded at
//!     the same moment.
//! 11. Changes by hand ([`force_open`](crate::CircuitBreaker::force_open), which isolates: open,
//!     no probe, until closed by hand; [`force_closed`](crate::CircuitBreaker::force_closed);
//!     [`reset`](crate::CircuitBreaker::reset)) are transitions with reason
//!     [`manual`](crate::TransitionReason::Manual).
//!
//! # Fleet mode
//!
//! With `RegistryBuilder::fleet` (feature `redis`)
//! every instance of a gateway shares each dependency's breaker state through Redis; the
//! rules 1 to 11 still hold on each instance, and these are added (how, in
//! [`fleet`](super::fleet)):
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
//! 16. **One probe for the whole fleet.** When the fleet's cooldown ends, every instance's
//!     worker claims the one lease in Redis (`SET NX PX`, carrying the generation; it lasts the
//!     probe window plus the probe timeout), with no call needed, so the first call after the
//!     cooldown finds the probe granted here or known to be elsewhere. A local call that would
//!     take the probe slot asks the fleet first: it is blocked (`probe_in_flight`, retry-after
//!     the command timeout) only while the claim's answer is on its way, and the worker claims
//!     again for it if the lease was given back. The instance that wins frees its local slot for one caller within
//!     the probe window (unused, the lease is given back); every other instance stays blocked
//!     with `probe_in_flight` and a retry-after of the lease's remaining time (an upper bound: a
//!     lease not used within the probe window is given back then, and another instance that
//!     wants the probe claims it at once). The probe's
//!     verdict reaches every instance: a success closes everywhere, a counted failure reopens
//!     everywhere with a fresh cooldown. A lease that runs out with no verdict (its holder
//!     killed) counts as a failed probe: open from the lease's end, and after a cooldown
//!     another instance probes. A breaker with a health check
//!     ([`Builder::probe_with`](crate::breaker::Builder::probe_with)) runs it only on the
//!     instance holding the lease, so once per fleet per cooldown.
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
//!     The worker retries every sync interval; on reconnect it tells
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
//! (How the gateway and the client work: [`mcp`](super::mcp).)
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
//! # Rate rules, the cooldown's shape, probes and bounds
//!
//! With [`Builder::failure_rate`](crate::breaker::Builder::failure_rate) or
//! [`Builder::slow_calls`](crate::breaker::Builder::slow_calls),
//! [`cooldown_backoff`](crate::breaker::Builder::cooldown_backoff),
//! [`probes`](crate::breaker::Builder::probes), and a bounded [`Registry`](crate::Registry)
//! (how to set them, and their defaults beside resilience4j's and Polly's:
//! [`configuration`](super::configuration)):
//!
//! 25. **Judged calls only.** A window holds the judged calls of the closed generation: those
//!     recorded as a success or a counted failure. `Ignored` outcomes, dropped permits and
//!     probes are never judged. A call is slow when its reported time
//!     ([`Permit::record_elapsed`](crate::Permit::record_elapsed); `call`, `run` and the guard
//!     pipeline time their own calls when a slow-call rule is set) is at least the threshold,
//!     whether it succeeded or failed; a call recorded without a time is never slow.
//! 26. **The minimum, then at once.** No rate is judged while the window holds fewer than
//!     `minimum_calls`; from the call that reaches it (a success included) every judged call
//!     is judged, before the window fills. A trip is made when counted failures (or slow
//!     calls) over judged calls reach the ratio, with reason `failure_rate` (or
//!     `slow_call_rate`). A count window of `n ≤ 32` judges exactly the last `n` calls; a
//!     larger one, whole buckets of `⌈n/32⌉`; a time window of `t`, 10 buckets of `⌈t/10⌉`
//!     ms (a call leaves between `0.9 t` and `t` after it was recorded, when `t` is a whole
//!     number of 10 ms). Under racing reports, a judgement may miss a call being recorded at
//!     that instant; the next one counts it.
//! 27. **One trip, fenced.** A window's trip is one compare-and-swap of the word from the
//!     generation it judged: a judgement of a generation that is over (tripped, probed,
//!     reset) trips nothing. Every transition, and a change of the window itself, empties the
//!     window; new ratios or a new minimum judge it as it stands, from the next judged call.
//!     With a rate rule and a `failure_threshold`, whichever rule is met first trips; with a
//!     rate rule alone there is no consecutive rule.
//! 28. **The healthy path stays local.** A healthy call of a breaker with a count-window rule
//!     writes one count to its thread's stripe and nothing shared; with a time window it
//!     also reads the clock. A breaker with the consecutive rule alone keeps the plain path:
//!     one load to admit, one load and no store to record a success, no clock.
//! 29. **A registry has bounds.** With `max_dependencies`, names past the bound that have no
//!     configuration of their own are refused by `try_get` (`RegistryFull`) and share one
//!     overflow breaker through `get`; the map never grows past the bound (plus the
//!     configured names). `idle_eviction` removes only breakers that are closed with nothing
//!     counted, looked up by no one for the whole period and held by no handle: never an
//!     open, half-open or isolated one.
//! 30. **A cooldown that backs off.** With
//!     [`cooldown_backoff(multiplier, max)`](crate::breaker::Builder::cooldown_backoff), each
//!     reopen without a close in between (a failed or timed-out probe) multiplies the cooldown,
//!     up to `max`; a close resets it; a trip from closed starts from the configured one. With
//!     [`cooldown_jitter(f)`](crate::breaker::Builder::cooldown_jitter), each open period's
//!     cooldown is spread by up to ±`f`, fixed when the period begins, so every caller reads
//!     the same end. `Blocked::retry_after`, the model's `retry_after_ms` and
//!     `Transition::cooldown` give the cooldown in force.
//! 31. **N probes, exactly.** With [`probes(n)`](crate::breaker::Builder::probes), half-open
//!     admits exactly `n` probes however many callers race; it closes when all `n` succeed
//!     and reopens on a counted failure of any one (the others' outcomes are then stale); an
//!     `Ignored` or dropped probe gives its slot to the next caller; one lease, counted from
//!     the first probe's admission, covers them all.
//! 32. **The dependency's word on how long.** A counted failure whose outcome carries a hint
//!     ([`Outcome::retry_after`](crate::Outcome::retry_after)) keeps the open period it leads
//!     to, or the one in force, open at least until the hint's end: the time it was reported
//!     plus the hint, capped by
//!     [`max_hinted_open`](crate::breaker::Builder::max_hinted_open) and spread upward only,
//!     by up to [`hint_jitter`](crate::breaker::Builder::hint_jitter) of the hint, one draw per
//!     period so every caller reads the same end. A hint reported while the breaker is open
//!     lengthens its period whoever reports it (a stale permit, a probe past its lease); a
//!     success that clears a consecutive count forgets the hints counted with it. Nothing ends
//!     an open period before its hinted end: not a shorter hint, not a re-trip, not a
//!     reconfiguration (a reconfigured cooldown applies to the period as to any, rule 10). In
//!     fleet mode the record keeps the hinted end of the trip or reopen, and no lease is granted
//!     before it (rule 16).
//!
//! # The cap on calls in flight
//!
//! With [`max_in_flight(n)`](crate::breaker::Builder::max_in_flight) or
//! [`adaptive_concurrency(limit)`](crate::breaker::Builder::adaptive_concurrency) (in a file,
//! `max_in_flight` and `adaptive_concurrency = { algorithm = "aimd" | "gradient", min, max,
//! ... }`):
//!
//! 33. **Never over the cap.** A call is admitted by the breaker's word first (an open breaker
//!     refuses with `dependency_open` and costs the cap nothing), then takes a slot: it is
//!     admitted iff the calls holding one are below the limit at the instant of its
//!     compare-and-swap, so no race puts more than the limit in flight, and a refusal writes
//!     nothing (no overshoot to roll back, so no caller is refused by another's). A half-open
//!     probe needs a slot too. The permit gives its slot back exactly once: when its outcome is
//!     recorded, or when it is dropped (a cancelled future, a panic unwinding through `call`),
//!     also after `into_owned`. A lowered cap (`reconfigure`, a reload) leaves calls in flight
//!     their slots and refuses new calls until enough have ended.
//! 34. **Busy is not down.** A call over the cap is refused as
//!     [`Saturated`](crate::BlockedReason::Saturated) (`saturated`; the model is told the tool is
//!     busy, not down, and to try again shortly or use another tool). The refusal is counted
//!     only as [`Metrics::saturated`](crate::observe::Metrics::saturated) and logged as a
//!     blocked call; it is never a failure or a success, never reaches the rate window, the
//!     fleet's tap or a transition, and never changes the breaker's word. A permit the breaker
//!     issued and the cap then refused vanishes: a closed one is not counted as dropped, a
//!     probe's gives its probe slot back for the next caller. A pool passes over a saturated
//!     member, uncounted, as over any member that refuses, without counting it ejected.
//! 35. **The adaptive limit listens to counted outcomes only.** An adaptive limit (AIMD or the
//!     latency gradient, [`Limit`](crate::Limit)) moves from the outcomes and latencies of calls
//!     recorded as a success or a counted failure; `Ignored` outcomes, dropped permits and every
//!     refusal never move it. With a fixed cap as well, the fixed cap bounds it: the cap in
//!     force is the adaptive value, never above `max_in_flight`. Calls are timed on the
//!     breaker's clock when an adaptive limit is set; an outcome recorded without its time
//!     feeds AIMD's failure signal only. Each change of the limit is a `debug` event.
//!
//! # Adaptive throttling and the retry budget
//!
//! 36. **Shed before the trip, never counted.** With
//!     [`adaptive_throttling(k, window)`](crate::breaker::Builder::adaptive_throttling), a
//!     closed breaker's admission is refused locally, as
//!     [`Throttled`](crate::BlockedReason::Throttled) (`throttled`), with probability
//!     max(0, (requests − k·accepts) / (requests + 1)) over the window (Google's SRE book,
//!     "Handling Overload"): requests are the calls recorded in the current closed generation
//!     plus the calls shed, accepts those recorded as a success or `Ignored`. A probe is never
//!     shed. A shed call is counted only as
//!     [`Metrics::throttled`](crate::observe::Metrics::throttled) and logged as a blocked call;
//!     like a saturated one it never reaches the failure count, the rate window, the fleet's tap
//!     or a transition, and a pool passes over it. A new closed generation starts the counts
//!     afresh.
//! 37. **Retries within the budget.** With a [`RetryBudget`](crate::breaker::RetryBudget) on a
//!     `ToolGuard` (or a registry's per dependency), every first attempt deposits and every
//!     retry withdraws by compare-and-swap: over any stretch of nine tenths of the window (a
//!     count leaves it a tenth at a time), retries are at most `ratio` × the first attempts +
//!     `min_per_second` × the window's seconds, at any concurrency. A retry the
//!     budget refuses stops that call with `stop_reason` `retry_budget`; the run goes on.
