//! The breaker's state: the packed encodings, the cells that hold them, and the decider.
//!
//! The files, bottom up, each importing only from those before it: `pack` (the one vocabulary of
//! packed fields), then one file per atomic that takes part in a protocol, each holding its
//! encoding (associated constants, round-trip tests at the limits) and the cell whose private
//! atomic it is, with that atomic's only read-modify-write: `word` (the state word), `slots` (the
//! several probes' slots), `settings` (the live threshold, cooldown, probe timeout and probes),
//! `backoff` (the cooldown's pure backoff and jitter), `hint` (the end a dependency's hint set for
//! an open period) and `cooldown` (the cooldown's shape and the record of the one in force), `rates` (the rate rules' pure arithmetic), `limit` (the adaptive concurrency limit's pure
//! algorithms); last `decide`, the pure transitions, the only code that builds a
//! next word or a next slots value. The breaker (`breaker`) loads from the cells, asks `decide`
//! and applies the answer through the cells; the rate rules' window keeps its own counters beside
//! the word (`breaker::window`).

pub(crate) mod backoff;
pub(crate) mod cooldown;
pub(crate) mod decide;
pub(crate) mod hint;
pub(crate) mod limit;
pub(crate) mod pack;
pub(crate) mod rates;
pub(crate) mod settings;
pub(crate) mod slots;
pub(crate) mod word;
