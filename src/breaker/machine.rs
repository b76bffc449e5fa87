//! [`CircuitBreaker`]: the type, what it is built from, and what every operation shares: the
//! live settings, the clock, the counters, the application of a decision through the word's cell
//! and the telling of the transitions that land. The operations are in files of their own:
//! admission (`admit`), reports (`report`), the several probes' slots (`probes`), changes by hand
//! (`manual`), reconfiguration (`reconfigure`) and sharing transitions through a hook (`sharing`).

use crossbeam_utils::CachePadded;
use once_cell::race::OnceBox;
use smol_str::SmolStr;

use super::cap::Cap;
use super::hook::Hook;
use super::prober::Attached;
use super::window::Windows;
use crate::config::{Config, Limits, Rates, WindowLimit};
use crate::observe::{Counter, Counters, Herald, Listener, Metrics};
use crate::state::cooldown::Cooldown;
use crate::state::decide::{self, Step};
use crate::state::settings::Settings;
use crate::state::slots::SlotsCell;
use crate::state::word::{Kind, Updated, Word, WordCell};
use crate::sync::Mutex;
use crate::time::Origin;
use crate::types::{State, Transition};

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
    pub(super) inner: CachePadded<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) word: WordCell,
    pub(super) settings: Settings,
    pub(super) origin: Origin,
    /// Counters, when counting is on (`Builder::metrics`).
    pub(super) metrics: Option<Box<Counters>>,
    /// The rate rules' window, made when the breaker first has one (see `window`).
    pub(super) windows: OnceBox<Windows>,
    pub(super) name: SmolStr,
    /// The herald and the hook, boxed: only the slow paths reach them.
    pub(super) cold: Box<Cold>,
}

/// What only the slow paths read, boxed so the hot block stays one cache line's pair: the herald,
/// which tells transitions to the trace and the listener in order (only transitions reach it),
/// and what is attached (fleet mode's tap, a health check's prober).
#[derive(Debug)]
pub(super) struct Cold {
    pub(super) herald: Herald,
    /// The hook and the prober, behind one thin pointer set when the first is attached (see
    /// `Attached`): the cold box stays as small as it was with the fleet's tap alone.
    pub(super) attached: OnceBox<Attached>,
    /// Serialises reconfigurations, so two never interleave their fields.
    pub(super) reconfigure: Mutex<()>,
    /// How the cooldown backs off and spreads (`Builder::cooldown_backoff`,
    /// `Builder::cooldown_jitter`) and the record of the one in force, read only when the live
    /// cooldown is shaped.
    pub(super) cooldown: Cooldown,
    /// The probe slots of a breaker that admits several probes (`Builder::probes`).
    pub(super) slots: SlotsCell,
    /// The cap on calls in flight, made when the breaker is first configured with one (`cap`);
    /// the settings' `CAPPED` flag says it is there.
    pub(super) cap: OnceBox<Cap>,
}

/// What a [`CircuitBreaker`] is built with besides its configuration and clock.
#[derive(Debug)]
pub(crate) struct Extras {
    pub(crate) name: SmolStr,
    pub(crate) listener: Option<Listener>,
    pub(crate) metrics: bool,
    /// What the slow paths tell and ask (fleet mode installs one).
    pub(crate) hook: Option<std::sync::Arc<dyn Hook>>,
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
            hook: None,
        };
        Self::with_extras(config, clock, extras)
    }

    pub(crate) fn with_extras(config: Config, clock: quanta::Clock, extras: Extras) -> Self {
        let limits = config.limits();
        let windows = Windows::cell(limits.rates);
        let (cap, settings) = (OnceBox::new(), Settings::new(limits));
        if config.concurrency().is_capped() {
            let _ = cap.set(Box::new(Cap::new(&config.concurrency())));
            settings.mark_capped();
        }
        let breaker = CircuitBreaker {
            inner: CachePadded::new(Inner {
                word: WordCell::new(Word::initial(limits.rates.is_some())),
                settings,
                origin: Origin::new(clock),
                metrics: extras.metrics.then(|| Box::new(Counters::new())),
                windows,
                name: extras.name,
                cold: Box::new(Cold {
                    herald: Herald::new(extras.listener),
                    attached: Attached::with_hook(extras.hook),
                    reconfigure: Mutex::new(()),
                    cooldown: Cooldown::new(limits.shape, limits.cooldown_ms),
                    slots: SlotsCell::new(),
                    cap,
                }),
            }),
        };
        // Adaptive throttling's cell hangs off the window's (see `throttling`).
        breaker.reconfigure_throttle(config.throttling());
        breaker
    }

    /// The dependency this breaker guards, as named by [`Builder::name`](super::Builder::name) or by the
    /// [`Registry`](crate::Registry) that made it; empty if unnamed. Events and metrics carry it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration in force: the one built with, or the latest
    /// [`reconfigure`](Self::reconfigure).
    pub fn config(&self) -> Config {
        let concurrency = self.inner.cold.cap.get().map(Cap::concurrency);
        Config::from_limits(self.limits())
            .with_valid_concurrency(concurrency.unwrap_or_default())
            .with_throttling(self.throttling())
    }

    #[inline]
    pub(super) fn limits(&self) -> Limits {
        self.inner
            .settings
            .load(self.rates(), || self.inner.cold.cooldown.load())
    }

    /// The limits to judge `word` by: with a shaped cooldown, the cooldown in force for it.
    #[inline]
    pub(super) fn limits_at(&self, word: Word, limits: &Limits) -> Limits {
        let mut at = *limits;
        if limits.shape.is_shaped() {
            at.cooldown_ms = self.inner.cold.cooldown.cooldown_of(word, limits);
        }
        at
    }

    /// `transition` with the cooldown in force for the generation it entered, when shaped: its
    /// period's, lengthened by a hint while the word is still that period's.
    pub(super) fn shaped(&self, transition: Transition, limits: &Limits) -> Transition {
        if !limits.shape.is_shaped() || transition.to() != State::Open {
            return transition;
        }
        let cooldown = &self.inner.cold.cooldown;
        let word = self.word();
        let cooldown_ms =
            if word.kind() == Kind::Open && word.generation() == transition.generation() {
                cooldown.cooldown_of(word, limits)
            } else {
                cooldown.of_generation(transition.generation(), limits)
            };
        transition.with_cooldown_ms(cooldown_ms)
    }

    /// The rate rules in force, if any (kept with the window).
    #[inline]
    pub(super) fn rates(&self) -> Option<Rates> {
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
        let mut metrics = counters.snapshot(self.state());
        if let Some(cap) = self.inner.cold.cap.get() {
            (metrics.in_flight, metrics.concurrency_limit) = (cap.in_flight(), cap.limit());
        }
        Some(metrics)
    }

    /// The effective state now.
    ///
    /// Side-effect free: it writes nothing and takes no probe slot, however often it is called.
    /// An open breaker whose cooldown has elapsed reads [`State::HalfOpen`] without any call in
    /// between; a probe past its lease reads [`State::Open`]. Reads the clock only when not closed.
    #[inline]
    pub fn state(&self) -> State {
        let limits = self.limits();
        let word = self.released(self.word(), &limits);
        decide::view(word, &self.limits_at(word, &limits), || self.now_ms()).state()
    }

    /// Whether a permit of `generation` would still count (see `decide::is_current`).
    pub(crate) fn permit_is_current(&self, generation: u32, probe: bool) -> bool {
        let word = self.word();
        decide::is_current(word, generation, probe, &self.limits(), || self.now_ms())
    }

    /// Apply `decide` through the store (see `WordCell::update`); a write that lands a closed word
    /// of a new generation starts the window afresh: every transition empties it.
    #[inline]
    pub(super) fn update<R>(
        &self,
        word: Word,
        mut decide: impl FnMut(Word) -> (Option<Word>, R),
    ) -> Updated<R> {
        let limits = self.limits();
        let shaped = limits.shape.is_shaped();
        // The base the last decision's write enters, written before its swap and again once it
        // has landed (see `cooldown`).
        let mut entered = None;
        let updated = self.inner.word.update(word, |word| {
            let (next, answer) = decide(word);
            entered = None;
            if shaped && let Some(next) = next {
                entered = self.inner.cold.cooldown.entered(word, next, &limits);
                if let Some(in_force) = entered {
                    self.inner.cold.cooldown.write(in_force);
                }
            }
            (next, answer)
        });
        if updated.after.is_some()
            && let Some(in_force) = entered
        {
            self.inner.cold.cooldown.write(in_force);
        }
        if let Some(after) = updated.after
            && after.has(Word::RATED)
            && after.closed_generation().is_some()
            && updated.before.closed_generation() != Some(after.generation())
        {
            self.rebase(after.generation());
        }
        self.throttle_on_update(updated.before, updated.after);
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
    pub(super) fn window_now(&self, rates: &Rates) -> u64 {
        match rates.window {
            WindowLimit::Calls(_) => 0,
            WindowLimit::TimeMs(_) => self.now_ms(),
        }
    }

    /// The word now (see `WordCell::load`).
    #[inline(always)]
    pub(crate) fn word(&self) -> Word {
        self.inner.word.load()
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
        self.tell_transitions(transitions);
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
        self.inner.origin.now_ms(Word::MAX_TIME_MS)
    }

    /// The raw word, for this crate's tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn word_bits(&self) -> u64 {
        self.word().bits()
    }
}

/// A decision that writes `step.next` and answers with its transition; `None` writes nothing.
#[inline]
pub(super) fn split(step: Option<Step>) -> (Option<Word>, Option<Transition>) {
    match step {
        Some(step) => (Some(step.next), step.transition),
        None => (None, None),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A new breaker starts from the initial word, built once (`Word::initial`): closed, no
    /// failures, generation 0, and the rate rules' flag exactly when it has rate rules.
    #[test]
    fn a_new_breaker_starts_from_the_initial_word() {
        let plain = CircuitBreaker::new(Config::default(), quanta::Clock::mock().0);
        assert_eq!(plain.word_bits(), Word::initial(false).bits());
        assert_eq!(plain.state(), State::Closed);
        let rated = CircuitBreaker::builder()
            .failure_rate(0.5)
            .window(crate::config::Window::Calls(10))
            .build()
            .unwrap();
        assert_eq!(rated.word_bits(), Word::initial(true).bits());
        assert_ne!(Word::initial(true).bits(), Word::initial(false).bits());
    }
}
