//! The machine: [`CircuitBreaker`], its word's store, live settings, clock, counters and
//! herald, and the application of every decision through the store. The methods that hand out
//! permits are in `permit`, guarded calls in `call`, the builder in `builder`.

use core::time::Duration;

use crossbeam_utils::CachePadded;
use once_cell::race::OnceBox;
use smol_str::SmolStr;

use super::decide::{self, Admission, Manual, Remote, Report, Step, View};
use super::store::{Store, Updated};
use super::tap::{Gate, Tap};
use super::window::{self, Rule, Windows};
use super::word::{Kind, MAX_TIME_MS, RATED, WATCH, Word, next_generation};
use crate::config::{Config, Limits, Rates, Shape, WindowLimit};
use crate::observe::{self, Counter, Counters, Herald, Listener, Metrics};
use crate::sync::{self, AtomicU64, Mutex, Ordering, RelaxedU64};
use crate::time::Origin;
use crate::types::{Blocked, BlockedReason, State, Transition};

/// A lock-free circuit breaker for one dependency.
///
/// State, consecutive failure count and opened-at time live in one 64-bit word (its layout is in
/// [`docs::layers`](crate::docs::layers)) that changes only by compare-and-swap, so the probe slot
/// is claimed without a lock and a reader never sees one state with another state's timestamp.
///
/// Costs: while closed with no failures, [`try_acquire`](Self::try_acquire) is one atomic load and
/// recording a success is one load and no store; neither reads the clock. While open, a rejection
/// is one load and one clock read. A compare-and-swap happens only on a real change. Counting
/// ([`Builder::metrics`](super::Builder::metrics)) adds one atomic add to a per-thread stripe per
/// call, when its permit is used up, and one per rejection.
///
/// # Time
///
/// Deadlines are judged in whole milliseconds on the breaker's clock, as it reads at each call.
/// A clock that steps backwards can only delay: an open breaker stays open until the clock again
/// passes its opened-at time plus the cooldown, and a probe whose lease had run out counts as in
/// flight again until the clock passes the lease's end once more (unless a caller had already
/// found it timed out, which made the breaker open from the lease's end). The clock may step
/// back up to about 35 years behind the breaker's construction; it saturates about 104 years
/// after it.
///
/// # Memory ordering
///
/// Every transition is published with release ordering and every admission decision reads the
/// word with acquire ordering. So everything a caller did before recording the outcome that moved
/// the breaker (for example, the probe that closed it) happens-before whatever a caller does after
/// a [`try_acquire`](Self::try_acquire) that observes the new state.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
///
/// let (clock, mock) = toolbreaker::quanta::Clock::mock();
/// let breaker = CircuitBreaker::builder()
///     .failure_threshold(2)
///     .cooldown(Duration::from_millis(100))
///     .clock(clock)
///     .build()?;
///
/// for _ in 0..2 {
///     let permit = breaker.try_acquire().expect("closed admits");
///     permit.record(Outcome::Failure(FailureKind::Unavailable));
/// }
/// assert_eq!(breaker.state(), State::Open);
/// let blocked = breaker.try_acquire().unwrap_err();
/// assert_eq!(blocked.retry_after(), Duration::from_millis(100));
///
/// mock.increment(Duration::from_millis(100));
/// assert_eq!(breaker.state(), State::HalfOpen);
/// let probe = breaker.try_acquire().expect("one probe after the cooldown");
/// assert!(breaker.try_acquire().is_err(), "only one probe");
/// probe.record(Outcome::Success);
/// assert_eq!(breaker.state(), State::Closed);
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct CircuitBreaker {
    // The word, the settings and the clock share one padded block: the non-healthy paths read
    // them together, the settings change only on reconfiguration, and the padding keeps the
    // word's line away from neighbours (an `Arc`'s counts, other breakers in a map).
    inner: CachePadded<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    limits: LiveLimits,
    origin: Origin,
    /// Counters, when counting is on (`Builder::metrics`).
    metrics: Option<Box<Counters>>,
    /// The rate rules' window, made when the breaker first has one (see `window`).
    windows: OnceBox<Windows>,
    name: SmolStr,
    /// The herald and the fleet's tap, boxed: only the slow paths reach them.
    cold: Box<Cold>,
}

/// What only the slow paths read, boxed so the hot block stays one cache line's pair: the herald,
/// which tells transitions to the trace and the listener in order (only transitions reach it),
/// and the fleet's tap (feature `redis`).
#[derive(Debug)]
struct Cold {
    herald: Herald,
    tap: Option<std::sync::Arc<Tap>>,
    /// Serialises reconfigurations, so two never interleave their fields.
    reconfigure: Mutex<()>,
    /// How the cooldown backs off and spreads (`Builder::cooldown_backoff`,
    /// `Builder::cooldown_jitter`), read only when the live cooldown carries `SHAPED`.
    shape: LiveShape,
    /// The probe slots of a breaker that admits several probes (`Builder::probes`; see
    /// `slots`). The model checker's atomic under loom, as the word is.
    probe_slots: AtomicU64,
}

/// The cooldown's live shape, and the cooldown in force.
///
/// The cooldown of an open period is fixed when the period begins: its *base* (the configured
/// cooldown at a trip, the previous base times the multiplier, capped, at a reopen) is written
/// with the generation the period entered, `(generation << 44) | base_ms`, and the spread is a
/// pure function of the generation and the breaker's seed, so every caller reads the same end.
/// The base is written before the compare-and-swap that enters the generation and again by the
/// writer that landed it: every writer racing into one generation reads the same previous one,
/// so they write the same base (but for a fleet's probe grant racing a probe's failure, where the
/// landed writer's second write settles it).
#[derive(Debug)]
struct LiveShape {
    multiplier_ppm: RelaxedU64,
    max_cooldown_ms: RelaxedU64,
    jitter_ppm: RelaxedU64,
    in_force: RelaxedU64,
    seed: u64,
}

/// The live cooldown's flag: its shape is not fixed.
const SHAPED: u64 = 1 << 63;
const BASE_BITS: u32 = 44;
const BASE_MASK: u64 = (1 << BASE_BITS) - 1;

/// Whether a call that took `elapsed` is slow under `rates`; an untimed call never is.
#[inline]
fn is_slow(rates: &Rates, elapsed: Option<Duration>) -> bool {
    rates.times_calls() && elapsed.is_some_and(|elapsed| elapsed >= rates.slow_threshold)
}

/// Gives a probe's slot back if dropped, that is, if the code between taking the permit's flags
/// and its report unwinds; forgotten once the report is made.
struct SlotOnUnwind<'a> {
    breaker: &'a CircuitBreaker,
    generation: u32,
    probe: bool,
}

impl Drop for SlotOnUnwind<'_> {
    fn drop(&mut self) {
        if self.probe {
            self.breaker.report(self.generation, true, Report::Dropped);
        }
    }
}

/// What a [`CircuitBreaker`] is built with besides its configuration and clock.
#[derive(Debug)]
pub(crate) struct Extras {
    pub(crate) name: SmolStr,
    pub(crate) listener: Option<Listener>,
    pub(crate) metrics: bool,
    pub(crate) tap: Option<std::sync::Arc<Tap>>,
}

/// The settings in force, one atomic per field, changed by [`CircuitBreaker::reconfigure`].
///
/// Read with relaxed loads: each decision uses the value of each field at the time it is made.
/// Only the threshold takes part in a protocol with the word (a lowered threshold must trip a
/// breaker whose count a racing report just raised: see `reconfigure`), so only it is the model
/// checker's atomic under loom; the durations are read afresh by every decision and order nothing,
/// so they stay out of the explored state.
#[derive(Debug)]
struct LiveLimits {
    failure_threshold: AtomicU64,
    cooldown_ms: RelaxedU64,
    probe_timeout_ms: RelaxedU64,
}

impl LiveLimits {
    fn new(limits: Limits) -> Self {
        let live = LiveLimits {
            failure_threshold: AtomicU64::new(limits.failure_threshold),
            cooldown_ms: RelaxedU64::new(limits.cooldown_ms),
            probe_timeout_ms: RelaxedU64::new(limits.probe_timeout_ms),
        };
        live.store(limits);
        live
    }

    /// Relaxed loads: see the type's docs. The rate rules live with the window (`Windows`), the
    /// cooldown's shape in the cold part: `shape` reads it when the cooldown is shaped. The
    /// probes ride above the probe timeout (`PROBES_SHIFT`).
    #[inline]
    fn load(&self, rates: Option<Rates>, shape: impl FnOnce() -> Shape) -> Limits {
        let cooldown = self.cooldown_ms.load(Ordering::Relaxed);
        let lease = self.probe_timeout_ms.load(Ordering::Relaxed);
        Limits {
            failure_threshold: self.failure_threshold.load(Ordering::Relaxed),
            cooldown_ms: cooldown & !SHAPED,
            probe_timeout_ms: lease & LEASE_MASK,
            probes: (lease >> PROBES_SHIFT) as u32 + 1,
            rates,
            shape: if cooldown & SHAPED != 0 {
                shape()
            } else {
                Shape::FIXED
            },
        }
    }

    /// Relaxed stores: `reconfigure`'s read-modify-write of the word, after them, publishes them.
    fn store(&self, limits: Limits) {
        self.failure_threshold
            .store(limits.failure_threshold, Ordering::Relaxed);
        let shaped = if limits.shape.is_shaped() { SHAPED } else { 0 };
        self.cooldown_ms
            .store(limits.cooldown_ms | shaped, Ordering::Relaxed);
        let probes = u64::from(limits.probes.max(1) - 1) << PROBES_SHIFT;
        self.probe_timeout_ms
            .store(limits.probe_timeout_ms | probes, Ordering::Relaxed);
    }
}

/// The live probe timeout's high bits hold the probes less one (a timeout is at most 2^40 ms).
const PROBES_SHIFT: u32 = 44;
const LEASE_MASK: u64 = (1 << PROBES_SHIFT) - 1;

/// The slots of a half-open breaker that admits several probes, beside the word:
/// `generation << 40 | claimed << 20 | succeeded`, for the probing generation it counts. The
/// first probe is admitted by the word's compare-and-swap (open → probing, as a single probe
/// is); the others by this word's, while the breaker's word is probing in that generation and
/// its lease holds. Whoever first finds it counting another generation starts it at one claimed,
/// the word's own probe, and adds its own claim if it is not that probe: so exactly `probes` are
/// admitted however the claims interleave. A success adds one succeeded; the one that makes
/// them all is the verdict, made on the word (closed, in a new generation); a counted failure
/// reopens the word at once; a probe that gives its slot back takes one claimed off.
const SLOT_BITS: u32 = 20;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

const fn slots(generation: u32, claimed: u64, succeeded: u64) -> u64 {
    ((generation as u64) << (2 * SLOT_BITS)) | (claimed << SLOT_BITS) | succeeded
}

const fn slots_generation(slots: u64) -> u32 {
    (slots >> (2 * SLOT_BITS)) as u32
}

impl LiveShape {
    /// The shape, and generation 0's base: the configured `cooldown_ms` (no open period has
    /// written one yet).
    fn new(shape: Shape, cooldown_ms: u64) -> Self {
        let live = LiveShape {
            multiplier_ppm: RelaxedU64::new(0),
            max_cooldown_ms: RelaxedU64::new(0),
            jitter_ppm: RelaxedU64::new(0),
            in_force: RelaxedU64::new(cooldown_ms & BASE_MASK),
            // A seed of the breaker's own, so breakers of one name in separate processes spread
            // apart too.
            seed: std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), 0u64),
        };
        live.store(shape);
        live
    }

    /// Relaxed, as the other live settings.
    fn load(&self) -> Shape {
        Shape {
            multiplier_ppm: self.multiplier_ppm.load(Ordering::Relaxed),
            max_cooldown_ms: self.max_cooldown_ms.load(Ordering::Relaxed),
            jitter_ppm: self.jitter_ppm.load(Ordering::Relaxed),
        }
    }

    fn store(&self, shape: Shape) {
        self.multiplier_ppm
            .store(shape.multiplier_ppm, Ordering::Relaxed);
        self.max_cooldown_ms
            .store(shape.max_cooldown_ms, Ordering::Relaxed);
        self.jitter_ppm.store(shape.jitter_ppm, Ordering::Relaxed);
    }

    /// The base cooldown of the open period that entered `generation`: the one written for it,
    /// or the configured one if none was (the first period after construction or a change of
    /// shape).
    fn base_of(&self, generation: u32, limits: &Limits) -> u64 {
        let in_force = self.in_force.load(Ordering::Relaxed);
        if (in_force >> BASE_BITS) as u32 == generation {
            in_force & BASE_MASK
        } else {
            limits.cooldown_ms
        }
    }

    /// The base after one more reopen: times the multiplier, up to the maximum.
    fn backed_off(base: u64, limits: &Limits) -> u64 {
        let shape = &limits.shape;
        if shape.multiplier_ppm == 1_000_000 {
            return base;
        }
        let grown = u128::from(base) * u128::from(shape.multiplier_ppm) / 1_000_000;
        u64::try_from(grown)
            .unwrap_or(u64::MAX)
            .min(shape.max_cooldown_ms)
            .max(base.min(shape.max_cooldown_ms))
    }

    /// `base` spread by the jitter drawn for `generation`: `base × (1 + j·u)`, `u` in [−1, 1)
    /// from a hash of the generation and the seed; at least 1 ms.
    fn effective(&self, generation: u32, base: u64, limits: &Limits) -> u64 {
        let jitter = limits.shape.jitter_ppm;
        if jitter == 0 {
            return base;
        }
        // splitmix64's finaliser over the seed and the generation.
        let mut z = self.seed ^ u64::from(generation).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // u in millionths: −1,000,000 ..= 999,999.
        let u = (z % 2_000_000) as i128 - 1_000_000;
        let delta = i128::from(base) * i128::from(jitter) * u / 1_000_000_000_000;
        u64::try_from((i128::from(base) + delta).max(1)).unwrap_or(u64::MAX)
    }

    /// The cooldown in force for `word`: an open word's period's; a probing word's the one its
    /// lease's end would begin (a reopen); otherwise the configured one.
    fn cooldown_of(&self, word: Word, limits: &Limits) -> u64 {
        let generation = word.generation();
        match word.kind() {
            Kind::Open => self.effective(generation, self.base_of(generation, limits), limits),
            Kind::Probing => {
                let next = next_generation(generation);
                let base = Self::backed_off(self.base_of(generation, limits), limits);
                self.effective(next, base, limits)
            }
            Kind::Closed | Kind::HalfOpen => limits.cooldown_ms,
        }
    }

    /// The record of the period `after` enters, if it enters one: from closed, the configured
    /// cooldown; from a probe (failed, timed out, or claimed again after its lease), one more
    /// backoff; from open or half-open (a fleet's grant, an isolation), the same.
    fn entered(&self, before: Word, after: Word, limits: &Limits) -> Option<u64> {
        if after.generation() == before.generation() || after.kind() == Kind::Closed {
            return None;
        }
        let base = match (before.kind(), after.kind()) {
            (Kind::Closed, _) => limits.cooldown_ms,
            // Several probes that all gave their slots back: no reopen, the same period.
            (Kind::Probing, Kind::HalfOpen) => self.base_of(before.generation(), limits),
            (Kind::Probing, _) => {
                Self::backed_off(self.base_of(before.generation(), limits), limits)
            }
            (Kind::Open | Kind::HalfOpen, _) => self.base_of(before.generation(), limits),
        };
        Some((u64::from(after.generation()) << BASE_BITS) | (base & BASE_MASK))
    }

    /// Relaxed: written before the swap that enters the generation, whose release publishes it
    /// to every caller that reads the new word (acquire); the landed writer's second write is
    /// the same value but for the race `LiveShape` describes.
    fn write(&self, in_force: u64) {
        self.in_force.store(in_force, Ordering::Relaxed);
    }
}

impl CircuitBreaker {
    /// A closed breaker with `config`, reading time from `clock`; unnamed, with no listener and
    /// no counting (the [builder](Self::builder) sets those).
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, Config, State};
    ///
    /// let breaker = CircuitBreaker::new(Config::default(), toolbreaker::quanta::Clock::new());
    /// assert_eq!(breaker.state(), State::Closed);
    /// ```
    pub fn new(config: Config, clock: quanta::Clock) -> Self {
        let extras = Extras {
            name: SmolStr::default(),
            listener: None,
            metrics: false,
            tap: None,
        };
        Self::with_extras(config, clock, extras)
    }

    pub(crate) fn with_extras(config: Config, clock: quanta::Clock, extras: Extras) -> Self {
        let limits = config.limits();
        let windows = OnceBox::new();
        let mut first = Word::INITIAL;
        if let Some(rates) = limits.rates {
            let made = Box::new(Windows::new());
            made.set_rates(Some(rates));
            made.rebase(0, &rates, 0);
            let _ = windows.set(made);
            first = Word::closed_with(0, 0, RATED);
        }
        CircuitBreaker {
            inner: CachePadded::new(Inner {
                store: Store::new(first),
                limits: LiveLimits::new(limits),
                origin: Origin::new(clock),
                metrics: extras.metrics.then(|| Box::new(Counters::new())),
                windows,
                name: extras.name,
                cold: Box::new(Cold {
                    herald: Herald::new(extras.listener),
                    tap: extras.tap,
                    reconfigure: Mutex::new(()),
                    shape: LiveShape::new(limits.shape, limits.cooldown_ms),
                    probe_slots: AtomicU64::new(0),
                }),
            }),
        }
    }

    /// The dependency this breaker guards, as named by [`Builder::name`](super::Builder::name) or by the
    /// [`Registry`](crate::Registry) that made it; empty if unnamed. Events and metrics carry it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration in force: the one built with, or the latest
    /// [`reconfigure`](Self::reconfigure).
    pub fn config(&self) -> Config {
        Config::from_limits(self.limits())
    }

    #[inline]
    fn limits(&self) -> Limits {
        self.inner
            .limits
            .load(self.rates(), || self.inner.cold.shape.load())
    }

    /// The limits to judge `word` by: with a shaped cooldown, the cooldown in force for it.
    #[inline]
    fn limits_at(&self, word: Word, limits: &Limits) -> Limits {
        let mut at = *limits;
        if limits.shape.is_shaped() {
            at.cooldown_ms = self.inner.cold.shape.cooldown_of(word, limits);
        }
        at
    }

    /// `transition` with the cooldown in force for the generation it entered, when shaped.
    fn shaped(&self, transition: Transition, limits: &Limits) -> Transition {
        if !limits.shape.is_shaped() || transition.to() != State::Open {
            return transition;
        }
        let shape = &self.inner.cold.shape;
        let generation = transition.generation();
        transition.with_cooldown_ms(shape.effective(
            generation,
            shape.base_of(generation, limits),
            limits,
        ))
    }

    /// The cooldown in force now: for an open breaker, its open period's; else the one the next
    /// trip would start with (the configured one, spread if jitter is set, is drawn at the trip).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn cooldown_in_force(&self) -> Duration {
        let limits = self.limits();
        Duration::from_millis(self.limits_at(self.word(), &limits).cooldown_ms)
    }

    /// The rate rules in force, if any (kept with the window).
    #[inline]
    fn rates(&self) -> Option<Rates> {
        self.inner.windows.get()?.rates()
    }

    /// A snapshot of this breaker's counters, or `None` when counting is off (the default; turn
    /// it on with [`Builder::metrics`](super::Builder::metrics) or [`RegistryBuilder::metrics`](crate::registry::RegistryBuilder::metrics)).
    ///
    /// The counts are read one after another while calls go on, so a snapshot taken under load
    /// may count a call's admission and not yet its outcome.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(1).metrics(true).build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert!(breaker.try_acquire().is_err());
    ///
    /// let metrics = breaker.metrics().expect("counting is on");
    /// assert_eq!((metrics.admitted, metrics.blocked), (1, 1));
    /// assert_eq!(metrics.failures.timeout, 1);
    /// assert_eq!(metrics.transitions.failure_threshold, 1);
    /// assert_eq!(CircuitBreaker::builder().build()?.metrics(), None, "off by default");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn metrics(&self) -> Option<Metrics> {
        let counters = self.inner.metrics.as_deref()?;
        Some(counters.snapshot(self.state()))
    }

    /// The effective state now.
    ///
    /// Side-effect free: it writes nothing and takes no probe slot, however often it is called.
    /// An open breaker whose cooldown has elapsed reads [`State::HalfOpen`] without any call in
    /// between; a probe past its lease reads [`State::Open`]. Reads the clock only when not closed.
    #[inline]
    pub fn state(&self) -> State {
        let limits = self.limits();
        let word = self.released(self.inner.store.load(), &limits);
        decide::view(word, &self.limits_at(word, &limits), || self.now_ms()).state()
    }

    /// `word`, or, for a breaker of several probes whose lease has run out with every slot given
    /// back (each probe's outcome `Ignored`, or its permit dropped), the half-open word with its
    /// slots free that it stands for: no probe failed, so the breaker does not reopen. (A single
    /// probe that gives its slot back writes that word itself; several share one lease, which
    /// is only found over with every slot back.) In the next generation, so the slots start
    /// afresh.
    /// Several probes' lease over with every slot given back ([`released`](Self::released)):
    /// written down as half-open with its slots free (no transition: the state stays half-open),
    /// so what follows is decided from there. The word after it.
    fn settle_released(&self, word: Word, limits: &Limits) -> Word {
        if self.released(word, limits) == word {
            return word;
        }
        let updated = self.update(word, |seen| {
            let next = self.released(seen, limits);
            ((next != seen).then_some(next), ())
        });
        updated.after.unwrap_or(updated.before)
    }

    fn released(&self, word: Word, limits: &Limits) -> Word {
        if limits.probes <= 1 || word.kind() != Kind::Probing {
            return word;
        }
        let slots_word = self.inner.cold.probe_slots.load(Ordering::Acquire);
        let all_back = slots_generation(slots_word) == word.generation()
            && (slots_word >> SLOT_BITS) & SLOT_MASK == 0;
        if all_back && !self.permit_is_current(word.generation(), true) {
            Word::half_open(next_generation(word.generation()))
        } else {
            word
        }
    }

    /// Decide an admission for a word that is not closed, and apply it: the rest of
    /// `try_acquire`. `permit` makes the permit of an admission (its generation, whether it is
    /// the probe) before anyone hears of the write: a listener that panics then unwinds through
    /// the permit, whose drop gives the probe slot back. Inlined into the one out-of-line caller,
    /// so the answer is built in place.
    #[inline(always)]
    pub(crate) fn acquire_slow<P>(
        &self,
        word: Word,
        permit: impl FnOnce(u32, bool) -> P,
    ) -> Result<P, Blocked> {
        let limits = self.limits();
        let mut now = None;
        let word = self.settle_released(word, &limits);
        let updated = self.update(word, |word| {
            let (admission, next) = decide::acquire(word, &self.limits_at(word, &limits), || {
                *now.get_or_insert_with(|| self.now_ms())
            });
            // In fleet mode the fleet says which instance takes the probe slot.
            if let (
                Admission::Admit {
                    generation,
                    probe: true,
                },
                Some(tap),
            ) = (admission, self.inner.cold.tap.as_deref())
            {
                let now_ms = *now.get_or_insert_with(|| self.now_ms());
                if let Gate::Closed { retry_after_ms } = tap.gate(generation, now_ms) {
                    let blocked = Admission::Reject {
                        state: State::HalfOpen,
                        reason: BlockedReason::ProbeInFlight,
                        retry_after_ms,
                    };
                    return (None, blocked);
                }
            }
            (next, admission)
        });
        let admission = match updated.answer {
            // The word's own probe of a breaker that admits several: it starts their count.
            Admission::Admit {
                generation,
                probe: true,
            } if limits.probes > 1 => {
                self.start_slots(generation);
                updated.answer
            }
            // Another probe of a breaker that admits several, while the first one's lease holds.
            Admission::Reject {
                reason: BlockedReason::ProbeInFlight,
                ..
            } if limits.probes > 1
                && updated.before.kind() == Kind::Probing
                && self.claim_slot(updated.before.generation(), &limits) =>
            {
                Admission::Admit {
                    generation: updated.before.generation(),
                    probe: true,
                }
            }
            answer => answer,
        };
        let answer = match admission {
            Admission::Admit { generation, probe } => Ok(permit(generation, probe)),
            Admission::Reject {
                state,
                reason,
                retry_after_ms,
            } => {
                self.count(Counter::Blocked);
                Err(self.blocked(state, reason, retry_after_ms))
            }
        };
        if let Some(after) = updated.after {
            // Only the caller whose write landed reports what it wrote.
            let landed = decide::acquire_transitions(updated.before, after, &limits);
            if landed.0.iter().any(Option::is_some) {
                self.announce_all(&landed.0.map(|t| t.map(|t| self.shaped(t, &limits))));
            }
        }
        // After the transition that explains it (a timed-out probe found by this caller).
        if let Err(blocked) = &answer {
            observe::blocked(self.name(), blocked);
        }
        answer
    }

    fn blocked(&self, state: State, reason: BlockedReason, retry_after_ms: u64) -> Blocked {
        Blocked::new(state, reason, retry_after_ms)
    }

    /// Whether [`try_acquire`](Self::try_acquire) would admit a call now (closed, or half-open
    /// with the probe slot free), asked without taking a permit or the slot, without writing and
    /// without counting: for a caller that must wait on something else before it can use a
    /// permit, such as the tower service waiting on its inner service's readiness. The answer
    /// may be stale by the time the caller asks for the permit, which decides.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn would_admit(&self) -> bool {
        let word = self.released(self.word(), &self.limits());
        word.closed_generation().is_some()
            || decide::view(word, &self.limits_at(word, &self.limits()), || {
                self.now_ms()
            }) == View::HalfOpen
    }

    /// `Blocked` if the breaker is open (or isolated) now, as [`try_acquire`](Self::try_acquire)
    /// would answer, but without taking a permit or the probe slot and without writing the word:
    /// for a caller deciding whether a retry is worth waiting for. Half-open is `Ok`, probe in
    /// flight or not: the probe may have finished by the time the retry asks. A `Blocked` answer is
    /// counted and logged as a blocked call, since the caller gives up on it.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn check_open(&self) -> Result<(), Blocked> {
        let word = self.released(self.inner.store.load(), &self.limits());
        if word.closed_generation().is_some() {
            return Ok(());
        }
        match decide::acquire(word, &self.limits_at(word, &self.limits()), || {
            self.now_ms()
        })
        .0
        {
            Admission::Reject {
                state: State::Open,
                reason,
                retry_after_ms,
            } => {
                let blocked = self.blocked(State::Open, reason, retry_after_ms);
                self.count(Counter::Blocked);
                observe::blocked(self.name(), &blocked);
                Err(blocked)
            }
            _ => Ok(()),
        }
    }

    /// Whether a permit of `generation` would still count (see `decide::is_current`).
    pub(crate) fn permit_is_current(&self, generation: u32, probe: bool) -> bool {
        let word = self.inner.store.load();
        decide::is_current(word, generation, probe, &self.limits(), || self.now_ms())
    }

    /// Apply `decide` through the store (see `Store::update`); a write that lands a closed word
    /// of a new generation starts the window afresh: every transition empties it.
    #[inline]
    fn update<R>(
        &self,
        word: Word,
        mut decide: impl FnMut(Word) -> (Option<Word>, R),
    ) -> Updated<R> {
        let limits = self.limits();
        let shaped = limits.shape.is_shaped();
        // The base the last decision's write enters, written before its swap and again once it
        // has landed (see `LiveShape`).
        let mut entered = None;
        let updated = self.inner.store.update(word, |word| {
            let (next, answer) = decide(word);
            entered = None;
            if shaped && let Some(next) = next {
                entered = self.inner.cold.shape.entered(word, next, &limits);
                if let Some(in_force) = entered {
                    self.inner.cold.shape.write(in_force);
                }
            }
            (next, answer)
        });
        if updated.after.is_some()
            && let Some(in_force) = entered
        {
            self.inner.cold.shape.write(in_force);
        }
        if let Some(after) = updated.after
            && after.flags() & RATED != 0
            && after.closed_generation().is_some()
            && updated.before.closed_generation() != Some(after.generation())
        {
            self.rebase(after.generation());
        }
        updated
    }

    /// Start `generation`'s window (see `update`).
    #[cold]
    fn rebase(&self, generation: u32) {
        if let Some(windows) = self.inner.windows.get()
            && let Some(rates) = windows.rates()
        {
            windows.rebase(generation, &rates, self.window_now(&rates));
        }
    }

    /// The clock for a window: read for a time window only.
    #[inline]
    fn window_now(&self, rates: &Rates) -> u64 {
        match rates.window {
            WindowLimit::Calls(_) => 0,
            WindowLimit::TimeMs(_) => self.now_ms(),
        }
    }

    /// Count a healthy call into the window: the whole of a rated breaker's healthy report,
    /// unless `elapsed` makes it slow (then `false`: the caller takes the slow path).
    #[inline]
    pub(crate) fn count_healthy(&self, elapsed: Option<Duration>) -> bool {
        let Some(windows) = self.inner.windows.get() else {
            return true;
        };
        let Some(rates) = windows.rates() else {
            return true;
        };
        if is_slow(&rates, elapsed) {
            return false;
        }
        windows.add_call(&rates, || self.now_ms());
        true
    }

    /// Whether calls are to be timed: a slow-call rule is set.
    #[inline]
    pub(crate) fn times_calls(&self) -> bool {
        self.rates().is_some_and(|rates| rates.times_calls())
    }

    /// The breaker's clock, read raw to time a call if `timed` (its permit says a slow-call rule
    /// is set: `call` and `run` time their calls only then); `None` reads no clock.
    #[inline]
    pub(crate) fn start_timing(&self, timed: bool) -> Option<u64> {
        timed.then(|| self.inner.origin.raw())
    }

    /// The time since `start_timing`'s reading, on the breaker's clock.
    #[inline]
    pub(crate) fn timed_since(&self, start: Option<u64>) -> Option<Duration> {
        start.map(|start| self.inner.origin.since(start))
    }

    /// The word now (see `Store::load`).
    #[inline(always)]
    pub(crate) fn word(&self) -> Word {
        self.inner.store.load()
    }

    /// Everything a report does besides the healthy path: counting, the failure event, clearing
    /// a count, transitions and stale reports. Out of line, with plain arguments, so the
    /// caller's healthy path keeps no stack frame.
    #[inline(never)]
    pub(crate) fn record_slow(
        &self,
        generation: u32,
        probe: bool,
        counting: bool,
        counter: Counter,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        if counting {
            self.count(counter);
        }
        if let Some(kind) = counter.failure_kind() {
            // The event is the subscriber's code and runs before the report lands: if it panics,
            // a probe's slot is given back as if its permit were dropped (the permit no longer
            // holds it), rather than held until the lease ends.
            let slot = SlotOnUnwind {
                breaker: self,
                generation,
                probe,
            };
            observe::failure(self.name(), kind, elapsed);
            core::mem::forget(slot);
        }
        let report = match counter {
            Counter::Success => Report::Success,
            Counter::Ignored => Report::Ignored,
            _ => Report::Failure,
        };
        self.report_timed(generation, probe, report, elapsed)
    }

    /// Apply `change` to the probe slots (see `slots`) until it lands or declines; the value it
    /// replaced, or `Err` with the value it declined.
    ///
    /// AcqRel on success, Acquire on failure: the count is exact from the total order of this one
    /// word's read-modify-writes alone; the orderings keep a claimer's re-reading of the state
    /// word after its claim, so the admission is decided on a word read once the slot was taken
    /// (loom model 19 explores the claims).
    fn update_slots(&self, change: impl FnMut(u64) -> Option<u64>) -> Result<u64, u64> {
        self.inner
            .cold
            .probe_slots
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, change)
    }

    /// Start the slots of `generation`, whose first probe the word's swap just admitted (see
    /// `slots`): unless a racing claim started them first, counting this probe.
    #[cold]
    fn start_slots(&self, generation: u32) {
        let _ = self.update_slots(|seen| {
            (slots_generation(seen) != generation).then(|| slots(generation, 1, 0))
        });
    }

    /// Claim one more probe slot of the probing `generation`; `false` if all are taken.
    #[cold]
    fn claim_slot(&self, generation: u32, limits: &Limits) -> bool {
        let probes = u64::from(limits.probes);
        let claimed = self.update_slots(|seen| {
            if slots_generation(seen) != generation {
                // Not started yet: the word's own probe, and this one.
                return Some(slots(generation, 2, 0));
            }
            ((seen >> SLOT_BITS) & SLOT_MASK < probes).then(|| seen + (1 << SLOT_BITS))
        });
        if claimed.is_err() {
            return false;
        }
        // Admitted only if the word is still probing in its generation with its lease holding:
        // the admission is this reading. A verdict, a lease found expired or a change by hand
        // made since the rejection that led here gives the slot back (nothing is sent to a
        // dependency whose breaker reopened).
        if self.permit_is_current(generation, true) {
            return true;
        }
        self.give_slot_back(generation);
        false
    }

    /// Give back a slot of `generation`: a probe ignored or dropped, or a claim not admitted.
    fn give_slot_back(&self, generation: u32) {
        let _ = self.update_slots(|seen| {
            let claimed = (seen >> SLOT_BITS) & SLOT_MASK;
            (slots_generation(seen) == generation)
                .then(|| slots(generation, claimed.saturating_sub(1), seen & SLOT_MASK))
        });
    }

    /// Report a probe of several that is not a counted failure: a success adds to the succeeded
    /// (`true`: it is the last, and closes the breaker through the word); an ignored or dropped
    /// outcome gives the slot back. Nothing counts from a probe that is no longer current.
    #[cold]
    fn report_slot(&self, generation: u32, report: Report, limits: &Limits) -> bool {
        if !self.permit_is_current(generation, true) {
            return false;
        }
        if report != Report::Success {
            self.give_slot_back(generation);
            return false;
        }
        let before =
            self.update_slots(|seen| (slots_generation(seen) == generation).then_some(seen + 1));
        before.is_ok_and(|seen| (seen & SLOT_MASK) + 1 >= u64::from(limits.probes))
    }

    /// A permit dropped unrecorded: count it if it is counted, give the probe slot back if it
    /// holds it.
    #[cold]
    #[inline(never)]
    pub(crate) fn dropped(&self, generation: u32, probe: bool, counting: bool) {
        if counting {
            self.count(Counter::Dropped);
        }
        if probe {
            self.report(generation, true, Report::Dropped);
        }
    }

    /// Apply a permit's report. Returns the state change it caused, if any.
    pub(crate) fn report(
        &self,
        generation: u32,
        probe: bool,
        report: Report,
    ) -> Option<Transition> {
        self.report_timed(generation, probe, report, None)
    }

    /// [`report`](Self::report) of a call that took `elapsed`, if it was timed.
    fn report_timed(
        &self,
        generation: u32,
        probe: bool,
        report: Report,
        elapsed: Option<Duration>,
    ) -> Option<Transition> {
        let limits = self.limits();
        // A probe of several: only the last success, and a counted failure, move the word.
        if probe
            && limits.probes > 1
            && report != Report::Failure
            && !self.report_slot(generation, report, &limits)
        {
            return None;
        }
        // A probe given back whose half-open period admitted several (`probes` lowered since):
        // the slot is freed in a new generation, so the period's other probes are stale and a
        // new claim cannot make them current again.
        if probe
            && limits.probes <= 1
            && matches!(report, Report::Ignored | Report::Dropped)
            && slots_generation(self.inner.cold.probe_slots.load(Ordering::Acquire)) == generation
            && self.permit_is_current(generation, true)
        {
            self.update(self.inner.store.load(), |word| {
                let current = word.kind() == Kind::Probing && word.generation() == generation;
                (
                    current.then(|| Word::half_open(next_generation(generation))),
                    (),
                )
            });
            return None;
        }
        let mut now = None;
        let updated = self.update(self.inner.store.load(), |word| {
            split(decide::report(
                word,
                generation,
                probe,
                report,
                &limits,
                || *now.get_or_insert_with(|| self.now_ms()),
            ))
        });
        if let Some(tap) = self.inner.cold.tap.as_deref()
            && updated.after.is_some()
            && updated.before.closed_generation().is_some()
            && matches!(report, Report::Failure | Report::Success)
        {
            tap.count_changed();
        }
        if let Some(transition) = updated.answer {
            let transition = self.shaped(transition, &limits);
            self.announce(transition);
            return Some(transition);
        }
        // A judged call of a current ordinary permit of a breaker with a rate rule: into the
        // window, and judged.
        if !probe
            && matches!(report, Report::Success | Report::Failure)
            && updated.before.closed_generation() == Some(generation)
            && updated.before.flags() & RATED != 0
            && let Some(transition) =
                self.judge_window(generation, report == Report::Failure, elapsed, &limits)
        {
            return Some(transition);
        }
        match updated.after {
            // A failure counted below the threshold read before the swap. If the threshold was
            // lowered meanwhile, the reconfiguration's read-modify-write of the word came before
            // our swap (or it saw our count and tripped): our swap read from it, so this load
            // sees the new threshold. One of the two always trips.
            Some(after) if report == Report::Failure => self.check_threshold(after),
            _ => None,
        }
    }

    /// Record a judged call into the window and judge it: trip the word if a rate is reached
    /// (one compare-and-swap, fenced by `generation`), else set or clear its `WATCH` flag.
    #[cold]
    fn judge_window(
        &self,
        generation: u32,
        failure: bool,
        elapsed: Option<Duration>,
        limits: &Limits,
    ) -> Option<Transition> {
        let rates = limits.rates?;
        let windows = self.inner.windows.get()?;
        // A report whose generation ended since its swap (a trip, a reset) counts in no window:
        // and it must not rebase the window to its own generation.
        if self.word().closed_generation() != Some(generation) {
            return None;
        }
        let now_ms = self.window_now(&rates);
        let slow = is_slow(&rates, elapsed);
        let judged = windows.record(generation, &rates, now_ms, failure, slow);
        if let Some((rule, counted)) = window::verdict(&judged, &rates) {
            let reason = match rule {
                Rule::FailureRate => crate::types::TransitionReason::FailureRate,
                Rule::SlowCallRate => crate::types::TransitionReason::SlowCallRate,
            };
            let mut now = None;
            let updated = self.update(self.word(), |word| {
                let now_ms = *now.get_or_insert_with(|| self.now_ms());
                split(decide::window_trip(
                    word, generation, reason, counted, now_ms, limits,
                ))
            });
            let transition = self.shaped(updated.answer?, limits);
            self.announce(transition);
            return Some(transition);
        }
        let watch = window::watch(&judged, &rates);
        let word = self.word();
        if word.closed_generation() == Some(generation) && (word.flags() & WATCH != 0) != watch {
            self.update(word, |word| (decide::watch(word, generation, watch), ()));
        }
        None
    }

    /// Trip `judged`, the word this caller just stored, if its count reaches the threshold in
    /// force now; nothing if the word has moved on (whoever moved it checks for themselves).
    #[cold]
    fn check_threshold(&self, judged: Word) -> Option<Transition> {
        let limits = self.limits();
        let mut now = None;
        let updated = self.update(judged, |word| {
            if word != judged {
                return (None, None);
            }
            split(decide::check_threshold(word, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            }))
        });
        let transition = self.shaped(updated.answer?, &limits);
        self.announce(transition);
        Some(transition)
    }

    /// Apply a change made by hand to the newest word.
    fn manual(&self, action: Manual) -> Option<Transition> {
        let in_force = self.limits();
        let word = self.settle_released(self.inner.store.load(), &in_force);
        let updated = self.update(word, |word| {
            let limits = self.limits_at(word, &in_force);
            // A probe that outlived its lease is written down first, in the same write, as the
            // next caller would: the change follows a transition that is heard.
            let expired = decide::expired_probe(word, &limits, || self.now_ms());
            let (base, timed_out) = match expired {
                Some(step) => (step.next, step.transition),
                None => (word, None),
            };
            match decide::manual(base, action, &limits) {
                Some(step) => (Some(step.next), [timed_out, step.transition]),
                None => (expired.map(|step| step.next), [timed_out, None]),
            }
        });
        if action == Manual::Reset
            && updated.after.is_some()
            && let Some(tap) = self.inner.cold.tap.as_deref()
        {
            tap.reset();
        }
        let answer = updated.answer.map(|t| t.map(|t| self.shaped(t, &in_force)));
        // Announced once the change has landed, so a listener's panic cannot stop it.
        if answer.iter().any(Option::is_some) {
            self.announce_all(&answer);
        }
        answer[1]
    }

    /// Isolate the dependency: open now, and stay open, admitting no probe, until
    /// [`force_closed`](Self::force_closed) or [`reset`](Self::reset). Blocked calls say
    /// [`BlockedReason::Isolated`](crate::BlockedReason::Isolated) and suggest asking again after
    /// a cooldown.
    ///
    /// Returns the transition (reason `manual`), or `None` if the breaker was already isolated.
    /// From open the transition reads `open → open`: the state is the same, but no cooldown ends
    /// it now.
    /// Outcomes of calls admitted before it no longer count.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{BlockedReason, CircuitBreaker, State, TransitionReason};
    ///
    /// let breaker = CircuitBreaker::builder().build()?;
    /// let isolated = breaker.force_open().expect("it was closed");
    /// assert_eq!((isolated.from(), isolated.to()), (State::Closed, State::Open));
    /// assert_eq!(isolated.reason(), TransitionReason::Manual);
    /// assert_eq!(breaker.try_acquire().unwrap_err().reason(), BlockedReason::Isolated);
    /// assert_eq!(breaker.force_open(), None, "already isolated");
    ///
    /// breaker.force_closed().expect("it was open");
    /// assert!(breaker.try_acquire().is_ok());
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn force_open(&self) -> Option<Transition> {
        self.manual(Manual::ForceOpen)
    }

    /// Close now, from open, half-open or isolated; a closed breaker is left as it is (with its
    /// failure count). Returns the transition (reason `manual`), or `None` if it was closed.
    /// Outcomes of calls admitted before it (a probe in flight) no longer count.
    pub fn force_closed(&self) -> Option<Transition> {
        self.manual(Manual::ForceClosed)
    }

    /// Back to as built: closed with no counted failures, in a new generation, so outcomes of
    /// calls admitted before it no longer count. Returns the transition (reason `manual`) if the
    /// breaker was not closed; resetting a closed breaker changes no state, so it is no
    /// transition and returns `None` (and one with no failures to clear is left as it is).
    /// Metrics counters are not reset: they only grow.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(2).build()?;
    /// let in_flight = breaker.try_acquire().unwrap();
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(breaker.reset(), None, "closed stays closed; its one failure is cleared");
    /// assert!(!in_flight.is_current(), "a call admitted before the reset no longer counts");
    /// in_flight.record(Outcome::Failure(FailureKind::Timeout));
    /// breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
    /// assert_eq!(breaker.state(), State::Closed, "one failure since the reset, below 2");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn reset(&self) -> Option<Transition> {
        self.manual(Manual::Reset)
    }

    /// Change the settings (the threshold, cooldown and probe timeout, the rate rules, the
    /// cooldown's shape, the probes) without losing the breaker's state.
    ///
    /// - Open: stays open; the new cooldown counts from the original opened-at time (so a
    ///   shorter cooldown that has already elapsed makes it half-open at once).
    /// - Half-open with a probe in flight: the new probe timeout counts from the probe's start.
    /// - Closed: keeps its consecutive failure count, and trips at once (reason
    ///   `failure_threshold`) if the new threshold is already reached; that transition is
    ///   returned. A failure recorded while the change is made is judged against the new
    ///   threshold or, if judged against the old one, checked again against the new one, so no
    ///   interleaving leaves a closed breaker at or past its threshold.
    /// - Isolated: stays isolated.
    /// - Rate rules: new ratios, a new minimum or a new slow-call threshold judge the window as it
    ///   stands (from the next judged call). A window added, removed, or of another kind or size
    ///   starts afresh: a closed breaker moves to a new generation, as after a
    ///   [`reset`](Self::reset), so calls admitted before the change no longer count.
    /// - Cooldown's shape: an open period keeps the cooldown it began with (a lowered cap applies
    ///   from the next reopen); with the backoff and jitter removed, the configured cooldown
    ///   applies at once.
    /// - Probes: a half-open period already started admits up to the new number.
    ///
    /// Reconfigurations of one breaker are serialised; each call's decisions use the settings in
    /// force when they are made. The three settings are stored one after another, so a decision
    /// or a [`config`](Self::config) read during the change may see some new and some old.
    ///
    /// # Panics
    ///
    /// If a previous reconfiguration of this breaker panicked while holding its lock (it cannot:
    /// the lock guards only stores).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{CircuitBreaker, Config, FailureKind, Outcome, State};
    ///
    /// let breaker = CircuitBreaker::builder().failure_threshold(5).build()?;
    /// for _ in 0..3 {
    ///     breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Unavailable));
    /// }
    /// let trip = breaker.reconfigure(Config::new(3, Duration::from_secs(10), Duration::from_secs(5))?);
    /// assert_eq!(trip.map(|t| t.to()), Some(State::Open), "3 failures reach the new threshold");
    /// assert_eq!(breaker.config().cooldown(), Duration::from_secs(10));
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: Config) -> Option<Transition> {
        let transition = self.reconfigure_silently(config);
        // After the lock is released, so a listener may reconfigure this breaker in turn.
        if let Some(transition) = transition {
            self.announce(transition);
        }
        transition
    }

    /// `reconfigure` without announcing the transition: the registry announces after releasing
    /// its own lock.
    pub(crate) fn reconfigure_silently(&self, config: Config) -> Option<Transition> {
        let _serialised = sync::lock(&self.inner.cold.reconfigure);
        let limits = config.limits();
        // A rate rule's window exists before any word says the breaker has one.
        if limits.rates.is_some() {
            self.inner.windows.get_or_init(|| Box::new(Windows::new()));
        }
        // A new window (added, removed, or of another kind or size) starts afresh; new ratios, a
        // new minimum or a new slow-call threshold judge the window as it is.
        let window_of = |rates: Option<Rates>| rates.map(|rates| rates.window);
        let rules_changed = self.rates() != limits.rates;
        let rates_changed = window_of(self.rates()) != window_of(limits.rates);
        self.inner.cold.shape.store(limits.shape);
        self.inner.limits.store(limits);
        if let Some(windows) = self.inner.windows.get() {
            windows.set_rates(limits.rates);
        }
        // A read-modify-write of the word, even when it writes the same value: it comes after the
        // stores above, so a report whose swap reads from it (or from a later write) sees the new
        // settings, and one that swapped before it is seen here (loom model 9 fails if this is a
        // plain load). The store's write is the release that publishes the settings.
        let mut now = None;
        let updated = self.update(self.inner.store.load(), |word| {
            let step = decide::check_threshold(word, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            });
            match step {
                Some(step) => (Some(step.next), step.transition),
                // A new window starts a closed breaker's counting afresh, in a new generation
                // (as a reset does, and without a transition): no judgement of the old window,
                // and no permit counted into it, meets the new one. Calls in flight then no
                // longer count, as after a reset.
                None if rates_changed && word.closed_generation().is_some() => (
                    Some(Word::closed_with(
                        super::word::next_generation(word.generation()),
                        word.failures(),
                        decide::closed_flags(&limits),
                    )),
                    None,
                ),
                // New ratios or a new minimum may be met by the window as it stands: the next
                // judged call, a success included, is judged against them (`WATCH`).
                None if rules_changed
                    && word.closed_generation().is_some()
                    && word.flags() & RATED != 0 =>
                {
                    (
                        Some(Word::closed_with(
                            word.generation(),
                            word.failures(),
                            word.flags() | WATCH,
                        )),
                        None,
                    )
                }
                None => (Some(word), None),
            }
        });
        updated.answer.map(|t| self.shaped(t, &limits))
    }

    /// Adopt a state learned from the fleet (see `decide::adopt`); returns the word after it and
    /// the transition it made, if any, announced with reason `fleet`.
    #[cfg_attr(not(any(feature = "redis", test)), allow(dead_code))]
    pub(crate) fn adopt(&self, remote: Remote) -> (Word, Option<Transition>) {
        let limits = self.limits();
        let mut now = None;
        let updated = self.update(self.inner.store.load(), |word| {
            split(decide::adopt(word, remote, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            }))
        });
        let answer = updated.answer.map(|t| self.shaped(t, &limits));
        if let Some(transition) = answer {
            self.announce(transition);
        }
        (updated.after.unwrap_or(updated.before), answer)
    }

    /// [`adopt`](Self::adopt), but only while the word is still in local `generation` (read by
    /// the caller before it took the tap's news): a local change made since (a change by hand, a
    /// trip, a probe's verdict) is not overwritten, and `Err` says so; the caller hears of the
    /// change from the tap and decides again. `Ok` gives the word's generation after the
    /// adoption and its transition.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn adopt_in(
        &self,
        remote: Remote,
        generation: u32,
    ) -> Result<(u32, Option<Transition>), ()> {
        let limits = self.limits();
        let mut now = None;
        let updated = self.update(self.inner.store.load(), |word| {
            if word.generation() != generation {
                return (None, Err(()));
            }
            let (next, transition) = split(decide::adopt(word, remote, &limits, || {
                *now.get_or_insert_with(|| self.now_ms())
            }));
            (next, Ok(transition))
        });
        let transition = updated.answer?.map(|t| self.shaped(t, &limits));
        if let Some(transition) = transition {
            self.announce(transition);
        }
        let word = updated.after.unwrap_or(updated.before);
        Ok((word.generation(), transition))
    }

    /// The generation of the word now.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn generation(&self) -> u32 {
        self.word().generation()
    }

    /// Take the fleet's probe: free the probe slot of an open word, or of a probing word past its
    /// lease, in a new generation (see `decide::adopt`; a local probe within its lease, or a slot
    /// already free, is kept) and let local callers claim it for `window_ms`. Returns the
    /// generation granted, or `None` if the word is closed or isolated (changed meanwhile).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn take_fleet_probe(&self, window_ms: u64) -> Option<u32> {
        let tap = self.inner.cold.tap.as_deref()?;
        let (word, _) = self.adopt(Remote::ProbeHere);
        match word.kind() {
            super::word::Kind::HalfOpen | super::word::Kind::Probing => {
                let generation = word.generation();
                tap.grant(generation, self.now_ms().saturating_add(window_ms));
                Some(generation)
            }
            _ => None,
        }
    }

    /// Whether the probe slot the fleet granted in `generation` is still free: no local caller
    /// took it.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn fleet_probe_unused(&self, generation: u32) -> bool {
        let word = self.word();
        word.kind() == super::word::Kind::HalfOpen && word.generation() == generation
    }

    /// What the fleet is told of this breaker when its record is missing: the state, whether it
    /// is isolated, and how long ago (ms) an open state began.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn local_record(&self) -> (State, bool, u64) {
        let word = self.word();
        let state = self.state();
        let elapsed = match word.kind() {
            super::word::Kind::Open if !word.is_isolated() => {
                self.now_ms().saturating_sub(word.payload())
            }
            _ => 0,
        };
        (state, word.is_isolated(), elapsed)
    }

    /// The consecutive counted failures of a closed word; `None` when not closed.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn closed_failures(&self) -> Option<u64> {
        let word = self.word();
        word.closed_generation().map(|_| word.failures())
    }

    /// Whether the word is closed with nothing counted: no consecutive failures, and no failure
    /// or slow call in a rate rule's window.
    pub(crate) fn is_closed_and_clear(&self) -> bool {
        let word = self.word();
        let Some(generation) = word.closed_generation() else {
            return false;
        };
        if word.failures() != 0 || word.flags() & WATCH != 0 {
            return false;
        }
        // A window past its minimum may hold failures without watching for successes.
        match (word.flags() & RATED != 0, self.inner.windows.get()) {
            (true, Some(windows)) => windows.rates().is_none_or(|rates| {
                windows.holds_nothing(generation, &rates, self.window_now(&rates))
            }),
            _ => true,
        }
    }

    /// The fleet's tap, if this breaker has one.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn tap(&self) -> Option<&Tap> {
        self.inner.cold.tap.as_deref()
    }

    /// Tell the counters, the trace and the listener about a transition that just landed.
    /// Called after the write, never inside a retry loop or under a lock.
    #[cold]
    pub(crate) fn announce(&self, transition: Transition) {
        self.announce_all(&[Some(transition)]);
    }

    /// [`announce`](Self::announce) for transitions that landed together, oldest first. Every
    /// one is counted at once; then the herald tells them in the breaker's order (see `Herald`),
    /// even if a listener panics: the first panic is resumed once all have been told, so one
    /// failing alert hook loses no transition.
    #[cold]
    pub(crate) fn announce_all(&self, transitions: &[Option<Transition>]) {
        if let Some(counters) = self.inner.metrics.as_deref() {
            for transition in transitions.iter().flatten() {
                counters.transition(transition.reason());
            }
        }
        if let Some(tap) = self.inner.cold.tap.as_deref() {
            for transition in transitions.iter().flatten() {
                if transition.reason() != crate::types::TransitionReason::Fleet {
                    tap.transition(*transition);
                }
            }
        }
        self.inner
            .cold
            .herald
            .tell(self.name(), transitions.iter().flatten().copied());
    }

    /// Whether this breaker counts; a permit keeps the answer, so recording its outcome reads
    /// no more than the word.
    #[inline(always)]
    pub(crate) fn counting(&self) -> bool {
        self.inner.metrics.is_some()
    }

    /// Count one event, when counting is on.
    #[inline(always)]
    pub(crate) fn count(&self, counter: Counter) {
        if let Some(counters) = self.inner.metrics.as_deref() {
            counters.add(counter);
        }
    }

    /// The clock's reading in the word's unit: ms since the breaker's origin (see `time`).
    pub(crate) fn now_ms(&self) -> u64 {
        self.inner.origin.now_ms(MAX_TIME_MS)
    }

    /// The raw word, for this crate's tests.
    #[cfg(test)]
    pub(crate) fn word_bits(&self) -> u64 {
        self.inner.store.load().0
    }
}

/// A state learned from the fleet, for the model checks in `tests/loom.rs`: `decide::Remote`,
/// with an open state's start given as ms before the breaker's clock reads now. Built only under
/// `--cfg loom`; not part of the API.
#[cfg(loom)]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoomRemote {
    /// `Remote::Open`, opened `ago_ms` before now.
    Open {
        /// How long before now the fleet's open state began, in ms.
        ago_ms: u64,
    },
    /// `Remote::Closed`.
    Closed,
    /// `Remote::Isolated`.
    Isolated,
    /// `Remote::ProbeHere`.
    ProbeHere,
}

/// Hooks for the model checks in `tests/loom.rs`, which reach the fleet's side of a breaker (its
/// agent's calls) without the fleet. Built only under `--cfg loom`; not part of the API.
#[cfg(loom)]
#[doc(hidden)]
impl CircuitBreaker {
    /// A breaker with a fleet tap that the fleet governs (it chooses who takes the probe slot),
    /// as a registry with a fleet builds it, and no agent: the model plays the agent.
    pub fn loom_fleet(config: Config, clock: quanta::Clock) -> Self {
        let outbox = std::sync::Arc::new(super::tap::Outbox::new(|| {}));
        let tap = std::sync::Arc::new(Tap::new(SmolStr::default(), outbox, 50));
        tap.set_governed(true);
        let extras = Extras {
            name: SmolStr::default(),
            listener: None,
            metrics: false,
            tap: Some(tap),
        };
        Self::with_extras(config, clock, extras)
    }

    /// What the fleet agent does when another instance's transition arrives:
    /// [`adopt`](Self::adopt). Returns the transition announced.
    pub fn loom_adopt(&self, remote: LoomRemote) -> Option<Transition> {
        let remote = match remote {
            LoomRemote::Open { ago_ms } => Remote::Open {
                opened_at_ms: self.now_ms().saturating_sub(ago_ms),
            },
            LoomRemote::Closed => Remote::Closed,
            LoomRemote::Isolated => Remote::Isolated,
            LoomRemote::ProbeHere => Remote::ProbeHere,
        };
        self.adopt(remote).1
    }

    /// What the fleet agent does when this instance wins the fleet's probe:
    /// [`take_fleet_probe`](Self::take_fleet_probe) (adopt `ProbeHere`, then grant the slot).
    pub fn loom_take_fleet_probe(&self, window_ms: u64) -> Option<u32> {
        self.take_fleet_probe(window_ms)
    }

    /// What the fleet agent does when the fleet's probe is no longer this instance's: take the
    /// grant back.
    pub fn loom_revoke(&self) {
        if let Some(tap) = self.tap() {
            tap.revoke();
        }
    }
}

/// A decision that writes `step.next` and answers with its transition; `None` writes nothing.
#[inline]
fn split(step: Option<Step>) -> (Option<Word>, Option<Transition>) {
    match step {
        Some(step) => (Some(step.next), step.transition),
        None => (None, None),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::classify::{FailureKind, Outcome};
    use crate::types::BlockedReason;

    /// The retry check reads and never claims: at any state it leaves the probe slot, the word,
    /// the admission count and the transitions as they were.
    #[test]
    fn the_open_check_never_takes_the_probe_slot_or_writes() {
        let (clock, mock) = quanta::Clock::mock();
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let breaker = CircuitBreaker::builder()
            .failure_threshold(1)
            .cooldown(Duration::from_millis(100))
            .probe_timeout(Duration::from_millis(50))
            .clock(clock)
            .metrics(true)
            .on_transition(move |e| log.lock().unwrap().push(e.transition().reason()))
            .build()
            .unwrap();
        let word = || breaker.word_bits();
        assert_eq!(breaker.check_open(), Ok(()), "closed");

        breaker
            .try_acquire()
            .unwrap()
            .record(Outcome::Failure(FailureKind::Unavailable));
        let before = (word(), heard.lock().unwrap().len());
        let blocked = breaker.check_open().unwrap_err();
        assert_eq!(
            (blocked.state(), blocked.reason(), blocked.retry_after()),
            (
                State::Open,
                BlockedReason::DependencyOpen,
                Duration::from_millis(100)
            )
        );

        mock.increment(Duration::from_millis(100)); // half-open, slot free
        for _ in 0..3 {
            assert_eq!(breaker.check_open(), Ok(()));
        }
        assert_eq!(
            (word(), heard.lock().unwrap().len()),
            before,
            "nothing written"
        );
        let probe = breaker.try_acquire().expect("the slot is still free");
        assert!(probe.is_probe());
        assert_eq!(
            breaker.check_open(),
            Ok(()),
            "half-open with a probe in flight"
        );

        mock.increment(Duration::from_millis(50)); // the probe's lease runs out: open again
        let before = word();
        assert_eq!(breaker.check_open().unwrap_err().state(), State::Open);
        assert_eq!(
            word(),
            before,
            "the timed-out probe is left for a caller to write down"
        );
        drop(probe);

        let metrics = breaker.metrics().unwrap();
        assert_eq!(
            metrics.admitted, 2,
            "the first call and the probe, nothing else"
        );
        assert_eq!(metrics.blocked, 2, "the two open answers");
        assert_eq!(
            *heard.lock().unwrap(),
            [
                crate::TransitionReason::FailureThreshold,
                crate::TransitionReason::CooldownElapsed
            ]
        );
    }
}
