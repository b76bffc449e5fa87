//! Long-form documentation, kept out of the item docs (the shape of arc-swap's `docs` module):
//! one page per subject, each the one place its text lives. The crate's README is the front door
//! and links here.
//!
//! | page | what |
//! |---|---|
//! | [`contract`] | the behaviour contract: the numbered rules every breaker keeps, with fleet mode, MCP, the rate rules and bounds |
//! | [`calls`] | calls and classification, the tower layer, health checks run as the probe, the guard pipeline and what the model receives |
//! | [`configuration`] | the rules that trip a breaker, their defaults beside resilience4j's and Polly's, the TOML file, live reload, changes by hand |
//! | [`fleet`] | fleet mode: using it, the record in Redis, its keys, scripts and commands |
//! | [`mcp`] | MCP: the guarded client, the gateway, the classification of an MCP call, what the model sees |
//! | [`observability`] | transitions and listeners, tracing events and spans, counters and metrics export |
//! | [`features`] | the cargo features: what each adds and brings in |
//! | [`time`] | how breakers read time, and the clock tests drive by hand |
//! | [`layers`] | the layers of the crate, its files, and the seam every change of a word goes through |
//! | [`atomics`] | each atomic of the crate, its cell and the ordering of each operation on it |
//! | [`checks`] | how the claims are checked: tests, model checks, fuzzing, runs against real servers |
//! | [`examples`] | the examples, their options, and one run of each with its figures |
//!
//! The benchmarks' figures, with the commit and the command that measured each, are in the
//! repository's `benches/README.md`.

pub mod atomics;
pub mod calls;
pub mod checks;
pub mod configuration;
pub mod contract;
pub mod examples;
pub mod features;
pub mod fleet;
pub mod layers;
pub mod mcp;
pub mod observability;
pub mod time;
