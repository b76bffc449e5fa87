//! The one place the crate's atomics and locks come from.
//!
//! Every atomic the crate touches is imported from here, so a model checker can swap in its own
//! types without a second copy of the code (the shape of tokio's `src/loom/` and crossbeam-utils'
//! `primitive` module). Nothing else in the crate names `core::sync::atomic`, `std::sync`'s locks
//! or `portable_atomic`.
//!
//! - [`AtomicU64`] is the breaker's word and its threshold: under `--cfg loom` they are loom's, so
//!   the model tests (`breaker::loom_tests`) explore every interleaving of the real breaker code.
//!   Elsewhere it comes from `portable-atomic`, the native instruction where the target has one
//!   and a fallback where it does not, so 32-bit targets build too.
//! - [`RelaxedU64`] is for values that take part in no protocol (the live durations, counters):
//!   always `portable-atomic`'s, also under loom, so they stay out of the explored state.
//! - [`AtomicU128`] is the rate rules' window's buckets and header: `portable-atomic`'s, also
//!   under loom (the window orders nothing: see `breaker::window`).
//! - The narrower atomics (among them the fleet's `connected` flag, an `AtomicBool` under feature
//!   `redis`) and the locks are the standard library's (loom's `Mutex` under loom).

#[cfg(feature = "redis")]
pub(crate) use core::sync::atomic::AtomicBool;
#[cfg(feature = "tokio")]
pub(crate) use core::sync::atomic::{AtomicU8, AtomicU32};
pub(crate) use core::sync::atomic::{AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use portable_atomic::AtomicU64;
pub(crate) use portable_atomic::AtomicU64 as RelaxedU64;
pub(crate) use portable_atomic::AtomicU128;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
pub(crate) use std::sync::RwLock;
pub(crate) use std::sync::{RwLockReadGuard, RwLockWriteGuard};

/// The guard of `lock`, recovering it if a thread panicked while holding it: every lock in the
/// crate guards only plain stores, so the data behind a poisoned lock is whole.
pub(crate) fn lock<T>(lock: &Mutex<T>) -> MutexGuard<'_, T> {
    // loom's `lock` returns the standard library's `LockResult` too.
    lock.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A read guard of `lock`, recovering it if a writer panicked while holding it, as [`lock`] does.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The write guard of `lock`, recovering it if a writer panicked while holding it, as [`lock`]
/// does.
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(not(loom))]
pub(crate) use std::sync::MutexGuard;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A lock whose writer panicked while holding it.
    fn poisoned() -> RwLock<Vec<u32>> {
        let lock = RwLock::new(vec![1]);
        let panicked = std::thread::scope(|s| {
            s.spawn(|| {
                let mut guard = lock.write().unwrap();
                guard.push(2);
                panic!("a writer panics while holding the lock");
            })
            .join()
        });
        assert!(panicked.is_err());
        assert!(lock.is_poisoned());
        lock
    }

    #[test]
    fn a_poisoned_rw_lock_is_recovered_for_reading_and_writing() {
        let lock = poisoned();
        assert_eq!(*read(&lock), [1, 2], "the writer's store is kept");
        write(&lock).push(3);
        assert_eq!(*read(&lock), [1, 2, 3]);
    }
}
