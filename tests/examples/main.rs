//! One test binary for the examples' own code and reports: the gateway example's tool servers,
//! `--config` file and flags, its fleet figures, and the checks of their JSON reports. (The MCP
//! gateway example runs the `toolbreaker-gateway` package's code, so its checks are the examples
//! package's test binary of the same name, `examples/tests/`: the same commands run them.) The report checks are `#[ignore]`d: CI runs them by module with the report's
//! path in an environment variable, e.g.
//! `GATEWAY_JSON=target/gateway.json cargo test --all-features --test examples -- --ignored gateway_json::`.
//! Each file is a module, gated on the crate features it uses.
//!
//! The examples' files that the tests include are declared here, at the root, where their own
//! `crate::` paths (to each other) point, as in the examples themselves.

#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
mod gateway;
mod gateway_fleet;
mod gateway_fleet_json;
mod gateway_json;

#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
#[path = "../../examples/gateway/flags.rs"]
mod flags;
#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
#[path = "../../examples/gateway/listen.rs"]
#[allow(dead_code)]
mod listen;
#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
#[path = "../../examples/gateway/logging.rs"]
mod logging;
#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
#[path = "../../examples/gateway/providers.rs"]
#[allow(dead_code)]
mod providers;
#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
#[path = "../../examples/gateway/settings.rs"]
#[allow(dead_code)]
mod settings;
#[cfg(all(feature = "tokio", feature = "reqwest", feature = "toml"))]
#[path = "../../examples/gateway/tools.rs"]
#[allow(dead_code)]
mod tools;
