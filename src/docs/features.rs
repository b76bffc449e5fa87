//! The cargo features: what each adds and what it brings in. None is on by default.
//!
//! | feature | adds | brings in |
//! |---|---|---|
//! | `tokio` | `CircuitBreaker::run_with_timeout`: an async call under a per-call timeout; the guard pipeline (`ToolGuard`, `AgentRun`, `RetryPolicy`): run deadline and budgets, breaker, per-call timeout, classification, bounded retry; health checks run as the probe in the background (`Builder::probe_with`, `HealthCheck`; with `reqwest`, `HealthCheck::http_get`; with `mcp`, `HealthCheck::mcp_ping`) | `tokio` (time, rt, sync), `backon` (the retry's backoff) |
//! | `serde` | `ToolResult::to_json`, the JSON the model receives; `Serialize` for `State` and `BlockedReason` | `serde`, `serde_json` |
//! | `http` | `toolbreaker::classify::http`: status-code and `Retry-After` classification | `http`, `httpdate` |
//! | `reqwest` | classification of `reqwest` results and transport errors (implies `http`) | `reqwest` (no default features) |
//! | `tower` | `toolbreaker::tower::CircuitBreakerLayer`: middleware for any `tower::Service`; a rejection completes at once with the `Blocked` value and never calls or polls the inner service (with `http`: `CircuitBreakerLayer::http`) | `tower` (no default features) |
//! | `tracing` | events for transitions, blocked calls and counted failures; with `tokio`, a span per `ToolGuard` call and per attempt (see [`observability`](super::observability)) | `tracing` (no default features) |
//! | `metrics` | `Registry::export_metrics` / `Metrics::export`: the counters through the `metrics` facade, as `toolbreaker_*` labelled by dependency | `metrics` (no default features) |
//! | `redis` | fleet mode: `Fleet`, `RegistryBuilder::fleet`: every breaker's transitions shared by all gateway instances through Redis, admission still a local atomic load (implies `tokio`) | `redis` (redis-rs 1.x: `tokio-comp`, `connection-manager`, `script`) |
//! | `mcp` | `toolbreaker::mcp`: `GuardedClient` puts every `call_tool` of an rmcp client through the guard pipeline; `McpClassifier`; blocked, stopped and failed calls as a `CallToolResult` the model can act on; `McpGateway`, an MCP server (Streamable HTTP, stdio) in front of upstream MCP servers (implies `tokio`, `serde`, `http`) | `rmcp` 3.x (`client`, `server`, Streamable HTTP client and server, stdio), `axum` (serves the gateway), `futures`, `reqwest` (rmcp's Streamable HTTP client) |
//! | `toml` | `RegistryConfig::from_toml` / `from_file`, `Registry::reload_toml` / `reload_file`: per-dependency configuration from a TOML file, reloaded live (implies `serde`) | `toml` |
//!
//! The core (breaker, permit, registry, classification trait) needs none of them. The clock crate,
//! `quanta`, is re-exported as `toolbreaker::quanta`, so tests build mock clocks of the same version.
