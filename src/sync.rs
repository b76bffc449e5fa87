//! The one place the crate's atomics come from.
//!
//! Every atomic the breaker touches is imported from here, so a model checker can swap in its own
//! types without a second copy of the breaker code (the shape of tokio's `src/loom/` and
//! crossbeam-utils' `primitive` module). The 64-bit atomic comes from `portable-atomic`, which is
//! the native instruction where the target has one and a fallback where it does not, so 32-bit
//! targets build too.
//!
//! Under `--cfg loom` the breaker's word is loom's `AtomicU64`, so the model tests in
//! `tests/loom.rs` explore every interleaving of the real breaker code.

pub(crate) use core::sync::atomic::Ordering;
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use portable_atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
