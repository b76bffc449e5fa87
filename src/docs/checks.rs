//! How the claims are checked: the tests, the model checks, the fuzzing, and the runs against
//! real Redis and real MCP servers that hold the [contract](super::contract) and the figures.
//!
//!
//! - **Contract tests** (`tests/`): the behaviour contract and ten failure scenarios other breakers
//!   shipped, each as a named test on a mock clock — nothing sleeps. The tests are grouped by
//!   surface, one binary each with a module per file (`breaker`, `registry`, `observe`, `agent`,
//!   `http`, `tower`, `fleet`, `mcp`, and `examples` for the examples' code and reports), so the
//!   crate is linked once per surface; apart are `layers` (it reads the sources), `memory` and
//!   `registry_bounds_memory` (a counting global allocator) and `mcp_stdio` (its own child
//!   server, with a `main` of its own). Run one file's tests with its module as the filter:
//!   `cargo test --all-features --test breaker -- rates::`.
//! - **Loom** (`breaker::loom_tests`, in the crate, built only under `--cfg loom`): the real breaker code, with its atomic swapped for loom's through
//!   `src/sync.rs`, under the interleavings loom explores for 2–3 threads: racing probes, concurrent
//!   trips, stale outcomes racing the probe's, a dropped probe racing new callers, a success racing a
//!   failure, an expired probe racing the next claim, and the release/acquire publication a close
//!   promises, a lowered threshold racing the failures that reach it (the breaker always trips,
//!   exactly once), an isolation by hand racing the probe's success (always ends isolated), and a trip
//!   racing a change by hand to be told (the listener hears them in order, and the last one heard is
//!   the state); and for fleet mode, the local word adopting a remote transition while a local trip, a
//!   probe's success, or a probe's claim and report race it (exactly one generation, stale reports
//!   change nothing), the fleet's probe granted while callers ask (exactly one probe, in the granted
//!   generation), and the fleet's probe lost while a caller claims it; and for the new rules, a window
//!   trip racing a probe's verdict (never reopens the new generation) and a reset by hand (always ends
//!   closed, with an empty window), and two probes claimed by three racers (exactly two); and for
//!   health checks, the prober's claim racing callers (the prober's in every interleaving, every
//!   caller blocked with `probe_in_flight`) and two of its steps racing a caller (exactly one
//!   claims: the check runs once per cooldown). Dropping the gate that keeps the slot from
//!   callers makes both fail. For the cap on calls in flight (rules 33 to 35), a cap of one
//!   raced by a failing and a succeeding caller, and a cap of two raced by two failing callers
//!   and a dropped permit: never more inside than the cap, every slot given back, the trip as
//!   without a cap, and refusals counted as saturated only (`tests/breaker/concurrency.rs`
//!   holds the threads, cancellation, panic and reload tests; `tests/breaker/adaptive.rs` the
//!   adaptive limits' convergence on the mock clock).
//!   (Loom does not preempt a new thread before its first atomic load; the models yield
//!   where that matters. Turning a compare-and-swap into a load and a store, dropping the generation
//!   check, relaxing every ordering, dropping a report's second look at the threshold, or making the
//!   reconfiguration's read-modify-write of the word a plain load each makes a model fail.) CI runs
//!   the three-thread reconfiguration and probe-slot models with the preemption bound only:
//!   unbounded they take one to two minutes each.
//!
//!   ```sh
//!   RUSTFLAGS="--cfg loom" cargo test -p toolbreaker --release --lib loom_tests                     # exhaustive
//!   RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p toolbreaker --release --lib loom_tests # bounded
//!   ```
//! - **Differential fuzzing** (`fuzz/`, its own workspace, cargo-fuzz on the stable toolchain):
//!   `transitions` runs arbitrary operations — acquire, record any held permit, drop one, move the
//!   clock forward or back by any amount, reconfigure, force open, force closed, reset, and the
//!   fleet's events (adopt a remote open at any time, close, isolation, or the fleet's probe; lose
//!   the fleet's probe; a stale verdict after an adoption), under any configuration the builder
//!   takes or must refuse (rate rules with count and time windows, slow calls, 1 to 4 probes, a
//!   backed-off cooldown) — against the
//!   breaker and a plain sequential model of the contract, comparing every decision, state and
//!   transition the listener hears (and checking that they chain), and stops at the first
//!   disagreement; `word` checks the packed word's layout. CI replays
//!   the seed corpus and fuzzes each target for 60 s. To fuzz longer:
//!
//!   ```sh
//!   cargo install cargo-fuzz --locked
//!   cd fuzz && cargo fuzz run transitions -s none -- -max_total_time=3600   # or: word
//!   ```
//! - **Fleet mode against a real Redis** (`tests/fleet/fleet.rs`): each behaviour of fleet mode is a
//!   test that starts its own `redis-server` on a free loopback port: `INFO commandstats` around
//!   100 000
//!   healthy calls, a trip reaching another instance (also in its own OS process), fleet-wide
//!   counting and its window, `min_instances`, one probe per fleet and a probe holder killed with
//!   SIGKILL, one generation when two instances trip at once, stale verdicts, clocks seconds apart,
//!   changes by hand, Redis killed and restarted, `CLIENT PAUSE`, `FLUSHALL`, and bad records.
//! - **MCP against real rmcp servers** (`tests/mcp/mcp.rs`, `tests/mcp_stdio.rs`,
//!   `tests/mcp/mcp_fleet.rs`):
//!   upstream MCP servers written with rmcp, over Streamable HTTP on loopback ports and as child
//!   processes on stdio: the breaker opening on a stopped endpoint, an HTTP 503 and a killed child
//!   (and nothing sent after), the exact blocked `CallToolResult`, `isError`, invalid params and
//!   unknown tools never tripping (an override does), exactly one probe of 32 racing calls and its
//!   verdict both ways, a cancelled probe freeing its slot (a dropped future,
//!   `notifications/cancelled`, a dropped HTTP connection, a closed stdin at a gateway child), the
//!   gateway listing and forwarding namespaced tools and fencing one upstream's outage, and two
//!   gateways on one fleet-mode registry sharing a trip and one probe.
//! - **Rate rules, cooldown shape, probes, bounds** (`tests/breaker/rates.rs`,
//!   `tests/breaker/cooldown.rs`, `tests/breaker/probes.rs`, `tests/registry/registry_bounds.rs`,
//!   `tests/registry_bounds_memory.rs`): every rule at
//!   its edges on the mock clock — exactly at `minimum_calls` (reached by a success or a failure), a
//!   count window's last `n` calls and its buckets, a time window's boundary, the backoff at its cap,
//!   the jitter within its range, `n` probes of `n + 3` racers, every bad value as a `ConfigError`
//!   through the builder, the TOML file and reload; one million distinct names through a bounded
//!   registry (bounded memory, no open, half-open or isolated breaker evicted) and bytes per entry.
//! - **The dependency's hints** (`src/classify/hints.rs`, `tests/http.rs`,
//!   `tests/breaker/hints.rs`, `tests/fleet/fleet_hints.rs`, rule 32): every header form and bad
//!   value (counted), the longest winning; a hinted trip open for the longer of the cooldown and
//!   the hint, a hint counted before the trip, a later or shorter hint and a reopen never
//!   shortening the period, a huge hint capped, the upward spread of 200 breakers within its
//!   bound, eight racing hinted failures leaving the longest, the trip at once, the settings
//!   through the builder and the TOML file; in fleet mode, the hinted end kept in the record,
//!   adopted by an instance that never saw the 429, and no probe before it.
//! - **Pools** (`tests/pool/`, unit tests in `src/pool/choose.rs` and `src/breaker/pooled.rs`):
//!   group order and the even spread inside a group, failover across groups and then one
//!   `blocked` with the earliest retry-after (an isolated member's left out), a half-open member
//!   probed while its group serves, the panic rule after every later group and its oldest trip,
//!   a member never handed out while open, checked from inside eight racing threads, bad pools
//!   (empty names, duplicates, a full registry) as `ConfigError`s, `[pools.NAME]` and its reload
//!   keeping the members' state, `ToolGuard::call_pool` failing over without waiting out the
//!   failed member's hint, and a pool's healthy path allocating nothing (`tests/memory.rs`).
//! - **Health checks** (`tests/breaker/health.rs`, `tests/mcp/mcp_health.rs`,
//!   `tests/fleet/fleet_health.rs`, loom models in `breaker::loom_tests`): one check per cooldown
//!   under eight threads and four tasks, callers blocked `probe_in_flight` meanwhile, success
//!   closing and failure reopening with the backoff, a hung check timed out, a panicking one
//!   giving the slot back, the prober probing with no call, no runtime (or one without its time
//!   driver) refused, the HTTP check against a real axum server (503, 200, a wrong path as a
//!   failure, a refused connection), MCP `ping` against a real rmcp server, once per fleet on a
//!   real redis-server, and the fleet's probe claimed when the cooldown ends.
//! - **Stress** (`tests/breaker/stress.rs`): eight threads cycle one breaker for two seconds through
//!   trips, cooldowns and probes on a shared mock clock; never more than one probe in flight, and every
//!   admitted call is accounted for.
//!
//! `bash .ci/run` runs all of it, with formatting, clippy (warnings denied), docs and the example.
//!
//! # Build times
//!
//! What a first build costs, from a clean target folder (`CARGO_TARGET_DIR` pointing at an empty
//! folder) on two idle cores (2 vCPUs, AMD EPYC; Rust 1.95.0), measured with `/usr/bin/time`,
//! crates counted from cargo's `Compiling` lines, the folder's size with `du -sh` at the end.
//! Before: d3f55b6, when the examples and tests shared the dev-dependencies and every feature.
//! After: 8ed627d, with each example and test building only the features it uses and the tests
//! one binary per surface (the layout changed after it; the dependencies did not).
//!
//! | command | before: wall, CPU, crates, `target/` | after |
//! |---|---|---|
//! | `cargo build --release --example gateway` (what `cargo run` of the main example builds) | 118.6 s, 228 s, 180, 490 MB | 72.2 s, 138 s, 127, 309 MB |
//! | `cargo test --all-features --no-run` | 126.3 s, 239 s, 180, 5.4 GB | 106.7 s, 206 s, 181, 3.7 GB |
//!
//! (CPU is user plus system time. The tests build one crate more than before, the examples'
//! package.)
