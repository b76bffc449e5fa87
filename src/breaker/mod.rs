//! [`CircuitBreaker`]: one packed word behind one compare-and-swap seam, and the calls that go
//! through it.
//!
//! The files of this folder, bottom up, each importing only from those before it: `word` (the
//! layout and its constants), `decide` (the pure transitions), `store` (the type that owns the
//! word and its one read-modify-write), `machine` (the breaker: it reads the clock and the live
//! settings, applies the decisions through the store and tells the observers), `permit` (the
//! permits, and the methods that issue them), `call` (guarded calls) and `builder`. `tap` (what
//! the slow paths tell the fleet agent, feature `redis`) and `window` (the rate rules' counts,
//! beside the word) sit between `store` and `machine`.

mod builder;
mod call;
mod decide;
mod machine;
mod permit;
mod store;
mod tap;
mod window;
mod word;

pub use self::builder::Builder;
pub use self::call::{CallError, RunFuture};
#[cfg_attr(not(feature = "redis"), allow(unused_imports))]
pub(crate) use self::decide::Remote;
pub use self::machine::CircuitBreaker;
pub(crate) use self::machine::Extras;
/// The model checks' hook type (`tests/loom.rs`), built only under `--cfg loom`.
#[cfg(loom)]
#[doc(hidden)]
pub use self::machine::LoomRemote;
pub use self::permit::{OwnedPermit, Permit};
#[cfg_attr(not(feature = "redis"), allow(unused_imports))]
pub(crate) use self::tap::{Outbox, Tap};

/// Word-layout internals for the fuzz targets (`fuzz/`), built only under `--cfg fuzzing`.
#[cfg(fuzzing)]
pub(crate) mod fuzzing {
    pub(crate) use super::word::{
        GENERATION_BITS, KIND_BITS, Kind, MAX_GENERATION, MAX_TIME_MS, PAYLOAD_BITS, Word,
    };
}
