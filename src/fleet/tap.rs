//! The fleet's tap on a breaker, the breaker's hook in fleet mode (`breaker::hook`): what the slow
//! paths tell the fleet's worker, and the one thing the worker tells the slow paths back (who may
//! take the probe slot).
//!
//! A breaker built without a fleet has no hook, and the healthy path never looks at it: it is read
//! only where a failure is counted, a count is cleared, a transition lands, a call is blocked, or
//! the probe slot is about to be claimed. Everything here is a flag, a short lock on a small
//! queue (a transition, at most [`MAX_PENDING`] kept; the breaker's name, once until the worker
//! takes it) and a wake of the worker; nothing waits on the worker, and nothing talks to the
//! network.
//!
//! # Memory ordering
//!
//! The flags are one word changed by `fetch_or` and `swap` (acq-rel): a signal set after the
//! worker's swap queues the breaker again, so nothing told is lost between two turns; what the
//! flags stand for (the word's count, the transitions queue under its lock) is read by the worker
//! after its swap. The fleet's answers (`governed`, `grant`) are release stores read with acquire
//! loads: a caller that sees a grant sees the word the worker freed before granting it (the
//! gate's decision is still checked by the word's own compare-and-swap, which is what makes the
//! claim exclusive). `elsewhere_until_ms` only shapes a retry-after, so it is relaxed.

use smol_str::SmolStr;

use super::millis::LocalMs;
use crate::breaker::CircuitBreaker;
use crate::breaker::Hook;

use crate::state::pack::Field;
use crate::state::word::Word;
use crate::sync::{self, AtomicU64, Mutex, Ordering};
use crate::types::Transition;

/// Transitions kept for the worker between two of its turns; older ones are dropped (the worker
/// reads the word itself, so it only loses their order).
pub(crate) const MAX_PENDING: usize = 16;

/// The worker's inbox, shared by every tap of one registry: the names of breakers with something
/// to tell, each at most once until the worker takes it, and the worker's wake.
pub(crate) struct Outbox {
    queue: Mutex<Vec<SmolStr>>,
    /// Unwind-safe by assertion, as a breaker's listener is: the wake (a `Notify`'s
    /// `notify_one`) leaves nothing half-changed that a caught panic could observe.
    wake: std::panic::AssertUnwindSafe<Box<dyn Fn() + Send + Sync>>,
}

impl core::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Outbox").finish_non_exhaustive()
    }
}

impl Outbox {
    pub(crate) fn new(wake: impl Fn() + Send + Sync + 'static) -> Self {
        Outbox {
            queue: Mutex::new(Vec::new()),
            wake: std::panic::AssertUnwindSafe(Box::new(wake)),
        }
    }

    /// The names queued since the last take.
    pub(crate) fn take(&self) -> Vec<SmolStr> {
        core::mem::take(&mut *sync::lock(&self.queue))
    }
}

/// What one breaker tells the fleet worker, and the worker's answer on the probe slot.
#[derive(Debug)]
pub(crate) struct Tap {
    name: SmolStr,
    outbox: std::sync::Arc<Outbox>,
    flags: AtomicU64,
    transitions: Mutex<Vec<Transition>>,
    /// Whether the fleet decides who takes the probe slot (connected, record read and valid).
    governed: AtomicU64,
    /// The probe slot the fleet gave this instance: `Tap::GRANT_GENERATION | Tap::GRANT_UNTIL`, the
    /// local generation of the free slot and the local time (ms since the breaker's origin) until
    /// which a caller may claim it; 0 for none.
    grant: AtomicU64,
    /// While another instance holds the fleet's probe: the local time its lease ends (0: unknown).
    elsewhere_until_ms: AtomicU64,
    /// The retry-after given to a caller blocked while the fleet chooses the probe, in ms.
    choosing_ms: u64,
}

impl Tap {
    // Bits of `Tap::flags`.
    const QUEUED: u64 = 1;
    /// A closed count changed since the worker's last turn.
    const COUNTED: u64 = 1 << 1;
    /// A call was blocked because the fleet has not given this instance the probe.
    const WANTED: u64 = 1 << 2;
    /// `reset` was called (it clears a closed count without a transition).
    const RESET: u64 = 1 << 3;
    /// The grant's end: a local time, in the word's time field's width.
    const GRANT_UNTIL: Field = Field::low(Word::PAYLOAD_BITS);
    /// The grant's local generation, above its end.
    const GRANT_GENERATION: Field = Self::GRANT_UNTIL.above(Word::GENERATION_BITS);

    pub(crate) fn new(name: SmolStr, outbox: std::sync::Arc<Outbox>, choosing_ms: u64) -> Self {
        Tap {
            name,
            outbox,
            flags: AtomicU64::new(0),
            transitions: Mutex::new(Vec::new()),
            governed: AtomicU64::new(0),
            grant: AtomicU64::new(0),
            elsewhere_until_ms: AtomicU64::new(0),
            choosing_ms: choosing_ms.max(1),
        }
    }

    /// Set `bits` and queue this breaker for the worker if it was not queued.
    fn signal(&self, bits: u64) {
        let before = self.flags.fetch_or(bits | Self::QUEUED, Ordering::AcqRel);
        if before & Self::QUEUED == 0 {
            sync::lock(&self.outbox.queue).push(self.name.clone());
            (*self.outbox.wake)();
        }
    }

    // The worker's side.

    /// Take what was told since the last take.
    pub(crate) fn drain(&self) -> Drained {
        // Unqueue first: anything told from here on queues the breaker again.
        let flags = self.flags.swap(0, Ordering::AcqRel);
        let transitions = core::mem::take(&mut *sync::lock(&self.transitions));
        Drained {
            counted: flags & Self::COUNTED != 0,
            wanted: flags & Self::WANTED != 0,
            reset: flags & Self::RESET != 0,
            transitions,
        }
    }

    /// Let the fleet decide who takes the probe slot, or (`false`) let local callers take it.
    pub(crate) fn set_governed(&self, governed: bool) {
        self.governed.store(u64::from(governed), Ordering::Release);
    }

    /// Give local callers the probe slot of `generation` until local time `until`.
    pub(crate) fn grant(&self, generation: u32, until: LocalMs) {
        let packed = Self::GRANT_GENERATION.put(u64::from(generation))
            | Self::GRANT_UNTIL.put(until.0.min(Word::MAX_TIME_MS));
        self.grant.store(packed.max(1), Ordering::Release);
    }

    /// Take the grant back.
    pub(crate) fn revoke(&self) {
        self.grant.store(0, Ordering::Release);
    }

    /// Another instance holds the fleet's probe until local time `until`.
    pub(crate) fn set_elsewhere_until(&self, until: LocalMs) {
        self.elsewhere_until_ms.store(until.0, Ordering::Relaxed);
    }

    /// No other instance is known to hold the fleet's probe.
    pub(crate) fn clear_elsewhere(&self) {
        self.elsewhere_until_ms.store(0, Ordering::Relaxed);
    }
}

impl Hook for Tap {
    /// A closed count changed: a failure was counted, or a success cleared the count. The worker
    /// reads the count from the word, so any number of changes between its turns cost one report.
    fn count_changed(&self) {
        self.signal(Self::COUNTED);
    }

    /// `reset` was called.
    fn reset(&self) {
        self.signal(Self::RESET);
    }

    /// A transition landed (not one adopted from the fleet).
    fn transition(&self, transition: Transition) {
        {
            let mut pending = sync::lock(&self.transitions);
            if pending.len() == MAX_PENDING {
                pending.remove(0);
            }
            pending.push(transition);
        }
        self.signal(0);
    }

    /// Whether a caller may claim the probe slot of local `generation` at `now_ms`; if not, the
    /// worker is told that this instance wants the probe.
    fn gate(&self, generation: u32, now_ms: u64) -> Option<u64> {
        if self.governed.load(Ordering::Acquire) == 0 {
            return None;
        }
        let grant = self.grant.load(Ordering::Acquire);
        if grant != 0 && Self::GRANT_GENERATION.get(grant) == u64::from(generation) {
            let until = Self::GRANT_UNTIL.get(grant);
            if now_ms < until {
                return None;
            }
        }
        if self.flags.load(Ordering::Relaxed) & Self::WANTED == 0 {
            self.signal(Self::WANTED);
        }
        let elsewhere = self.elsewhere_until_ms.load(Ordering::Relaxed);
        let retry_after_ms = if elsewhere > now_ms {
            elsewhere - now_ms
        } else {
            self.choosing_ms
        };
        Some(retry_after_ms)
    }
}

/// The tap behind `breaker`'s hook: the fleet's, when the breaker was made by a registry in
/// fleet mode.
pub(crate) fn tap_of(breaker: &CircuitBreaker) -> Option<&Tap> {
    let hook: &dyn core::any::Any = breaker.hook()?;
    hook.downcast_ref::<Tap>()
}

/// Take the fleet's probe: free `breaker`'s probe slot (see `CircuitBreaker::free_probe_slot`)
/// and let local callers claim it for `window_ms`. Returns the generation granted, or `None` if
/// the breaker has no tap or its word is closed or isolated (changed meanwhile).
pub(crate) fn take_fleet_probe(breaker: &CircuitBreaker, window_ms: u64) -> Option<u32> {
    let tap = tap_of(breaker)?;
    let generation = breaker.free_probe_slot()?;
    tap.grant(generation, LocalMs::now(breaker).after(window_ms));
    // A health check's prober takes the granted slot (it waits for the fleet's grant).
    breaker.wake_prober();
    Some(generation)
}

/// What [`Tap::drain`] took.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// The closed count changed.
    pub(crate) counted: bool,
    /// A call was blocked waiting for the fleet's probe.
    pub(crate) wanted: bool,
    /// `reset` was called.
    pub(crate) reset: bool,
    /// Transitions made here (not adopted), oldest first.
    pub(crate) transitions: Vec<Transition>,
}

const _: () = assert!(Tap::GRANT_GENERATION.end() <= 64);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_grant_round_trips_at_the_limits_of_its_fields_and_none_is_zero() {
        let tap = Tap::new(
            SmolStr::default(),
            std::sync::Arc::new(Outbox::new(|| {})),
            50,
        );
        tap.set_governed(true);
        for generation in [0, 1, Word::MAX_GENERATION] {
            for until_ms in [1, 2, Word::MAX_TIME_MS] {
                tap.grant(generation, LocalMs(until_ms));
                assert_eq!(tap.gate(generation, until_ms - 1), None);
                assert_ne!(tap.gate(generation, until_ms), None, "over at its end");
                let other = crate::state::word::next_generation(generation);
                assert_ne!(tap.gate(other, 0), None, "another generation's slot");
            }
        }
        tap.revoke();
        assert_ne!(tap.gate(0, 0), None);
    }
}
