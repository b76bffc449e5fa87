//! The examples: what each does, its options, and one run of each, with the figures it printed.
//!
//! # The gateway
//!
//! ```sh
//! cargo run --release --example gateway   # the main example: an agent gateway on real HTTP failures
//! ```
//!
//! The example starts four tool servers on 127.0.0.1 whose behaviour changes over a 10 s demo —
//! `search` answers 503 for a stretch, `weather` hangs so calls time out, `quotes` has a partial
//! outage (one request in three answered 429 with `Retry-After`, never two in a row), `files` is
//! healthy but a share of its calls carry invalid arguments and get 400 — and runs 64 concurrent
//! agent tasks. Each runs one agent run after another (`AgentRun`: a 2 s deadline, a budget of 40
//! attempts) and makes every tool call through the guard pipeline (`ToolGuard`: the run guard, a
//! registry of breakers, a 250 ms per-call timeout, HTTP classification, 2 retries with jittered
//! backoff that ask the breaker again first) until the run is stopped. Every breaker trips on 5
//! counted failures in a row; `quotes`' has a failure-rate rule as well (30 % of its last 20 judged
//! calls, judged from the 10th), and its outage meets only that one: each of its trips has reason
//! `failure_rate`, none `failure_threshold`. With the consecutive rule alone (`--config` a file of
//! only the `[default]` section) `quotes` never trips, and sends about 1 600 requests during its
//! outage, some 500 of them answered 429, against 50 to 80 with the rate rule. The example prints
//! one progress line a second, then how the runs stopped, a table per dependency (calls asked of the
//! breaker, attempts sent, retries, probes, calls blocked and retries the opened breaker refused,
//! successes, counted failures by kind, ignored, transitions with their times and reasons, and the
//! share of calls to a failing dependency that were never sent), and one `blocked` and one `stopped`
//! result exactly as a model receives them. Each dependency's table also shows its breaker's own
//! counters (`Registry::metrics`: admitted, blocked, outcomes with failures by kind, transitions by
//! reason) and sums them up in one line: whether the service failed, whether the breaker opened (by
//! which rule, where it has a rate rule), and whether the agents kept calling after it did.
//!
//! Two breakers add admission control, which refuses calls for load, never for health (a refused
//! call is answered `blocked` with reason `saturated` or `throttled`, nothing is sent, and the
//! breaker's state and counts are untouched). `weather`'s caps its calls in flight at 8
//! (`max_in_flight`): while it hangs, only 8 calls wait out the 250 ms per-call timeout, and the
//! calls past the cap are answered `saturated` at once; its table gives how many, and how long
//! their answers took, mean and slowest, a fraction of a millisecond. `search` degrades before its
//! outage, from 6 % of the demo: 503 on a growing share of its requests, spread evenly (20 % to
//! 65 %, two in a row at most as the server answers them, so its consecutive rule trips at the
//! outage, or now and then late in the 65 % step when answers come back far out of order), then
//! on every one from 20 %; its breaker throttles adaptively (`adaptive_throttling`, `k` 1.5 over 100 ms), shedding
//! a share of its calls once fewer than half succeed, and its table gives the calls shed before
//! the breaker first tripped and their share of the calls asked since the degradation began (the
//! degradation is the single gateway's: fleet mode runs the schedule without it).
//!
//! A fifth tool, `chat`, is served by the pool `llm` of three model providers (axum servers with
//! `/chat` and `/health`), in groups `[["llm-a", "llm-b"], ["llm-c"]]`, through
//! `ToolGuard::call_pool`, so a retry after a failure goes to another member. `llm-a` answers 429
//! with `x-ratelimit-reset-requests` (the time until its quota resets, as a Go duration) from 25 %
//! to 60 % of the demo, and `llm-b` 503 from 40 % to 70 %: from 40 % to 60 % both preferred
//! members are out and `llm-c` serves. Each member's breaker probes with `HealthCheck::http_get` of
//! its `/health` when its open period ends, so no agent's call is a probe and a recovered member
//! takes its traffic back at once. The pool's table (`--json`: under `pools.llm`) gives per member
//! the calls served and their share, failures by kind, trips, blocked, the longest open period next
//! to the cooldown and the longest hint (`llm-a` stays open until its quota resets, 3.5 s, not the
//! 500 ms cooldown), the health checks and their verdicts, its transitions; and the calls each
//! served in each phase of the schedule. Options:
//! `--duration SECS`, `--concurrency N`, `--json` (one JSON object instead, with each breaker's
//! counters under `metrics`), and:
//!
//! - `--config FILE`: the breakers' settings from a TOML file instead of the built-in ones.
//!   [`examples/gateway/breakers.toml`](examples/gateway/breakers.toml) holds the built-in ones,
//!   commented, so `--config examples/gateway/breakers.toml` runs the same demo. A bad file is
//!   refused at start, with an error naming the dependency and the field.
//! - SIGHUP (unix) reloads that file while the demo runs (`kill -HUP <pid>`): every breaker keeps its
//!   state and takes the new settings, and stderr gets one line per change
//!   (`reloaded FILE: search: failure_threshold 5 -> 3`) or `no change`; a bad file is reported and
//!   the settings in force are kept.
//! - `--log DIRECTIVE` (`info`, `toolbreaker=debug`; tracing-subscriber's `EnvFilter` syntax): the
//!   crate's tracing events on stderr, transitions at `info`, blocked calls and counted failures at
//!   `debug`. A bare word is a level or the crate's target (`toolbreaker`); any other target takes a
//!   level (`hyper=debug`), so `--log notalevel` is refused (exit status 2) rather than printing
//!   nothing.
//!
//! # The gateway in fleet mode
//!
//! The same outages on a fleet of gateways (feature `redis`; it needs
//! `redis-server`: `apt-get install -y redis-server` on Debian or Ubuntu):
//!
//! ```sh
//! cargo run --release --example gateway -- --fleet 3   # three gateway processes sharing their breakers through Redis
//! ```
//!
//! It starts a `redis-server` on a free loopback port (or uses `--redis URL`), runs the four tool
//! servers, and starts three gateway instances as separate processes, which split the 64 agent tasks
//! and call the same servers. Each instance's registry is in fleet mode (`Registry::builder().fleet(..)`):
//! a trip on one instance opens the dependency on all of them, after the cooldown one instance in the
//! fleet gets the probe while the others are blocked (`probe_in_flight`), and the probe's verdict
//! closes or reopens it everywhere; admitting a call is still one local atomic load.
//! `--fleet 3 --independent` runs the same three with breakers of their own and no Redis, for
//! comparison. Next to a line a second with the requests each server had, it prints, per failing
//! dependency, a column per instance and one for the fleet: the requests that reached the failing
//! server during its outage (counted by the server, per instance), the probes and the probes per
//! cooldown (the dependency's probes from every instance, grouped by cooldown), the trips each
//! instance made itself or adopted from the fleet, and how long after the first trip (or close) each
//! other instance adopted it, p50 and p99. With `--json` it is one JSON object, the figures under
//! `fleet`. One 10 s run of each, side by side (`--fleet 3 --json` and `--fleet 3 --independent
//! --json`, on a 2-core machine; they vary from run to run, and the delays are on loopback):
//!
//! | | `search` (503) | `weather` (hangs) | `quotes` (429 on 1 request in 3) |
//! |---|---|---|---|
//! | requests that reached the failing server, fleet / independent | 13 / 39 | 67 / 75 | 126 / 171 |
//! | per instance, fleet | 9, 0, 4 | 23, 22, 22 | 40, 43, 43 |
//! | probes per cooldown, fleet / independent | 1.00 / 3.00 (7 cooldowns) | 1.00 / 3.00 (4) | 1.00 / 3.00 (5) |
//! | adoptions of a trip, and their delay p50 / p99 | 2: 3.54 / 3.65 ms | none (every instance tripped on its own) | 5: 0.51 / 0.84 ms |
//!
//! Over every dependency, a trip reached another instance in 0.84 ms (p50), 3.65 ms (p99), over 7
//! adoptions, and a close in 0.37 ms (p50), 0.73 ms (p99), over 10. At this load (about 5 000
//! requests a second per dependency) an instance reaches its own threshold within a millisecond or
//! two of the first one, often before the fleet's open reaches it (the trips show it); a hang starts
//! with calls in flight on every instance, which time out together, so on `weather` the fleet saves
//! little but the probes. `quotes`' requests are all those its server had during its partial outage,
//! the two in three it answered included: a probe succeeds two times in three and closes the
//! dependency everywhere, and the first instance whose window then holds 10 calls, 30 % of them
//! failed, trips it again (`failure_rate`), for the fleet or, on their own, for itself alone.
//!
//! # The MCP gateway
//!
//! ```sh
//! cargo run --release --example mcp_gateway --features mcp_gateway              # upstream MCP servers that fail, a gateway, MCP clients
//! cargo run --release --example mcp_gateway --features mcp_gateway -- --serve   # keep the gateway up; connect any MCP client to it
//! ```
//!
//! The example starts three upstream MCP servers with rmcp on 127.0.0.1, each behind a counting
//! middleware: `search` answers HTTP 503 for a stretch of the 10 s demo, `weather` hangs (its tool
//! never answers, so the gateway's attempts time out and are cancelled upstream), and `notes` is
//! always up but answers `isError: true` to the bad arguments one call in five carries. It puts the
//! gateway binary's own code in front of them (the `toolbreaker-gateway` package's relay, configured
//! from the TOML text its `--config` reads, served by its HTTP app; breakers from one `Registry`:
//! threshold 5, cooldown 500 ms, an MCP `ping` as the probe, per-call timeout 250 ms, no retries)
//! on a loopback port, and
//! runs 16 concurrent MCP clients that call `search.query`, `weather.forecast`, `notes.get` and
//! `notes.put` through it. It prints a line a second and each transition, then a table per upstream
//! (what the agents were told, what reached the server by its own count, what the breaker counted),
//! the invariants it checked (`notes` never tripped, nothing reached an upstream while its breaker
//! was open, ...; it exits 1 if one failed), and one blocked `CallToolResult` as the model reads it.
//! `--json` gives one object; `--serve` keeps the gateway up with the outages looping every 20 s and
//! prints its address (`http://127.0.0.1:PORT/mcp`), for any MCP client to connect to and see a
//! breaker open. One default run on a 2-core machine:
//!
//! ```text
//! 17602 tool calls in 10.01 s by 16 MCP clients through the gateway: 1758 calls/s
//!
//! upstream                                        search   weather     notes
//! outage (s)                                     1.5-4.5   3.0-6.0      none
//!   how                                         HTTP 503     hangs         -
//! calls made (agents)                               5872      5787      5943
//!   answered                                        4125      4389      4757
//!   tool errors (isError from the tool)                0         0      1186
//!   blocked by the breaker                          1735      1333         0
//!   failed (the upstream's error)                     12        65         0
//!   stopped (call deadline)                            0         0         0
//!   during the outage                               1721      1373         0
//!     of which blocked                              1709      1308         0
//! reached the upstream (its own count)              4137      4454      5943
//!   while it was failing                              12        65         0
//!   while its breaker was open                         4         0         0
//!   given up by the gateway (cancelled)                0        65         0
//! breaker: admitted attempts                        4145      4460      5945
//!   counted failures                                  17        65         0
//!   ignored (tool errors)                              0         0      1186
//!   trips                                              1         4         0
//!   probes                                             6         4         0
//!   closed again by a probe                            1         4         0
//!   final state                                   closed    closed    closed
//! ```
//!
//! The ten invariants it checks all held in that run. `search` tripped once (17 counted failures:
//! the 12 calls that reached it while it answered 503, those before the trip and those already in
//! flight when it came, and 5 failed probes), was probed once per cooldown and closed by the probe
//! after it recovered; the 4 calls that reached it while its breaker read open were on their way
//! when it opened. The probe is an MCP `ping` (the gateway's health check), so no agent's call is
//! spent on it, and a hanging `weather` still answers it: its probes close the breaker while its
//! tool hangs, the next calls time out, and it trips again (4 trips, 65 calls given up and
//! cancelled upstream), yet nothing reached it while its breaker was open.
