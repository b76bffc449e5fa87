//! [`RetryBudget`]: retries limited to a share of the first attempts made over a sliding window,
//! plus a floor per second; its counts are in `budget_ring`.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

use super::budget_ring::{Now, Ring, SLICES, Totals};
use crate::config::{ConfigError, MAX_DURATION_MS, Problem};
use crate::sync::{Ordering, RelaxedU64};
use crate::time::{Origin, millis_ceil};

/// The largest `ratio` a [`RetryBudget`] takes: a thousand retries per first attempt, the
/// bound tower's `TpsBudget` puts on its `retry_percent` too.
pub const MAX_RETRY_RATIO: f64 = 1000.0;

/// A retry budget: retries to a dependency may be at most `ratio` of the first attempts made to
/// it over a sliding `window`, plus a floor of `min_per_second` retries per second, so a caller
/// making few calls can still retry one.
///
/// The rule is Finagle's `RetryBudget` and tower's `retry::budget::TpsBudget` (`ttl`,
/// `min_per_sec`, `retry_percent`): every first attempt *deposits*, every retry *withdraws*, and
/// a retry is allowed only while, over the window,
///
/// `retries + 1 ≤ ratio × first attempts + min_per_second × window (in seconds)`.
///
/// (Envoy's `retry_budget` bounds retries the same way, counted in flight rather than over a
/// window: `budget_percent` of the active requests, at least `min_retry_concurrency`.)
///
/// So a failing upstream that every caller retries sees at most
/// **`(1 + ratio) × first attempts + min_per_second × window`** attempts over any stretch of
/// nine tenths of the window (a count leaves the window nine to ten tenths of it after it was
/// made: see *Counting*), whatever the concurrency: a retry storm cannot multiply its load. Without a budget, a policy
/// of 3 retries quadruples the load on an upstream that fails every call.
///
/// # Counting
///
/// The window is counted in ten slices of a tenth of it (in whole milliseconds, rounded up);
/// counts leave the window a slice at a time, so a count is kept for nine to ten tenths of the
/// window after it was made. Every deposit and withdrawal is one compare-and-swap of one 16-byte
/// word holding the current slice; a withdrawal lands only on the word it was judged against, so
/// concurrent callers can never overspend the budget (the bound above is exact, not
/// approximate). No call allocates or takes a lock. Time is the budget's clock
/// (`quanta`; [`clock`](Self::clock) gives tests a mock).
///
/// `Clone` is cheap and shares the budget: clones given to several `ToolGuard`s (feature
/// `tokio`) draw on the same counts. A budget is this process's: in fleet mode each instance
/// keeps its own (the bound holds per instance).
///
/// Re-exported at the crate root with feature `tokio` (the guard pipeline draws on it); here,
/// in `breaker`, it is there without it too, for a registry's budgets and callers of their own.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use toolbreaker::breaker::RetryBudget;
///
/// let (clock, mock) = toolbreaker::quanta::Clock::mock();
/// // 10% of first attempts, plus 1 retry per second over 10 s: a floor of 10 retries.
/// let budget = RetryBudget::new(0.1, 1, Duration::from_secs(10))?.clock(clock);
/// for _ in 0..100 {
///     budget.deposit(); // a first attempt
/// }
/// let allowed = (0..1000).filter(|_| budget.try_withdraw()).count();
/// assert_eq!(allowed, 20, "0.1 × 100 first attempts + 1/s × 10 s");
/// assert_eq!(budget.refused(), 980);
///
/// mock.increment(Duration::from_secs(10)); // the window slides past all of them
/// assert_eq!(budget.retries_left(), 10, "the floor alone");
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct RetryBudget {
    shared: Arc<Shared>,
}

/// The rules (each its own atomic: a reload changes them in place) and the counts.
struct Shared {
    origin: Origin,
    ratio_bits: RelaxedU64,
    min_per_second: RelaxedU64,
    window_ms: RelaxedU64,
    /// The slice width in ms, with the window's generation in the top 8 bits.
    timing: RelaxedU64,
    /// Off: every retry allowed and nothing counted (a registry's budget with no rule).
    on: RelaxedU64,
    refused: RelaxedU64,
    ring: Ring,
}

/// A retry budget's rules, validated: what a registry's configuration holds per dependency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BudgetRule {
    pub(crate) ratio: f64,
    pub(crate) min_per_second: u32,
    pub(crate) window_ms: u64,
}

// The ratio is finite and never -0.0 (`BudgetRule::new`), so equality is an equivalence.
impl Eq for BudgetRule {}

impl BudgetRule {
    /// The rules, or the error naming the field at fault (`retry_budget.ratio`,
    /// `retry_budget.window`).
    pub(crate) fn new(
        ratio: f64,
        min_per_second: u32,
        window: Duration,
    ) -> Result<Self, ConfigError> {
        if !(0.0..=MAX_RETRY_RATIO).contains(&ratio) {
            return Err(ConfigError::new("retry_budget.ratio", Problem::OutOfRange));
        }
        let window_ms = millis_ceil(window);
        if window_ms == 0 {
            return Err(ConfigError::new("retry_budget.window", Problem::Zero));
        }
        if window_ms > MAX_DURATION_MS {
            return Err(ConfigError::new("retry_budget.window", Problem::TooLong));
        }
        Ok(BudgetRule {
            ratio: ratio + 0.0, // -0.0 is 0.0
            min_per_second,
            window_ms,
        })
    }

    /// The retries the floor allows over the window.
    fn reserve(&self) -> f64 {
        f64::from(self.min_per_second) * self.window_ms as f64 / 1000.0
    }
}

impl RetryBudget {
    /// A budget allowing retries of at most `ratio` (a fraction: 0.2 is one retry per five first
    /// attempts) of the first attempts made over `window`, plus `min_per_second` retries per
    /// second of the window (so `min_per_second × window` retries whatever the first attempts).
    /// `window` is counted in whole milliseconds, rounded up. A ratio and floor of zero allow no
    /// retry at all. The budget reads the system clock; see [`clock`](Self::clock).
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the field: `retry_budget.ratio` when `ratio` is not a number
    /// from 0 to [`MAX_RETRY_RATIO`] (1000); `retry_budget.window` when `window` is zero or
    /// longer than [`MAX_DURATION`](crate::config::MAX_DURATION).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::breaker::RetryBudget;
    ///
    /// let budget = RetryBudget::new(0.2, 10, Duration::from_secs(10))?;
    /// assert_eq!((budget.ratio(), budget.min_per_second(), budget.window()), (0.2, 10, Duration::from_secs(10)));
    /// let err = RetryBudget::new(f64::NAN, 10, Duration::from_secs(10)).unwrap_err();
    /// assert_eq!(err.field(), "retry_budget.ratio");
    /// assert_eq!(RetryBudget::new(0.2, 10, Duration::ZERO).unwrap_err().field(), "retry_budget.window");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn new(ratio: f64, min_per_second: u32, window: Duration) -> Result<Self, ConfigError> {
        let rule = BudgetRule::new(ratio, min_per_second, window)?;
        Ok(Self::from_rule(rule, quanta::Clock::new()))
    }

    /// A new budget of `rule`'s, on `clock`.
    pub(crate) fn from_rule(rule: BudgetRule, clock: quanta::Clock) -> Self {
        let shared = Shared {
            origin: Origin::new(clock),
            ratio_bits: RelaxedU64::new(0),
            min_per_second: RelaxedU64::new(0),
            window_ms: RelaxedU64::new(0),
            timing: RelaxedU64::new(0),
            on: RelaxedU64::new(1),
            refused: RelaxedU64::new(0),
            ring: Ring::default(),
        };
        let budget = RetryBudget {
            shared: Arc::new(shared),
        };
        budget.apply(Some(rule));
        budget
    }

    /// The same rules in a new budget that reads `clock` (tests pass the first half of
    /// `quanta::Clock::mock()`); its counts start empty, and it shares nothing with `self`.
    #[must_use]
    pub fn clock(self, clock: quanta::Clock) -> Self {
        Self::from_rule(self.rule(), clock)
    }

    /// Put `rule` in force (a reload), or switch the budget off (`None`: every retry allowed,
    /// nothing counted). The counts are kept; a changed window starts a new generation of
    /// slices that carries the old window's live totals.
    pub(crate) fn apply(&self, rule: Option<BudgetRule>) {
        let shared = &*self.shared;
        // The rule's fields are relaxed stores published by the release that follows them (the
        // timing's update, then `on`): a caller that reads this write of either with acquire
        // (`is_on`, `timing`) then reads this rule's fields or a later rule's.
        let Some(rule) = rule else {
            shared.on.store(0, Ordering::Release);
            return;
        };
        shared
            .ratio_bits
            .store(rule.ratio.to_bits(), Ordering::Relaxed);
        shared
            .min_per_second
            .store(u64::from(rule.min_per_second), Ordering::Relaxed);
        shared.window_ms.store(rule.window_ms, Ordering::Relaxed);
        let width = rule.window_ms.div_ceil(SLICES);
        let _ = shared
            .timing
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |timing| {
                let (generation, old) = (timing >> 56, timing & ((1 << 56) - 1));
                let generation = if old == width || old == 0 {
                    generation
                } else {
                    (generation + 1) & 0xff
                };
                Some((generation << 56) | width)
            });
        shared.on.store(1, Ordering::Release);
    }

    /// The rules in force.
    pub(crate) fn rule(&self) -> BudgetRule {
        let shared = &*self.shared;
        BudgetRule {
            ratio: f64::from_bits(shared.ratio_bits.load(Ordering::Relaxed)),
            min_per_second: shared.min_per_second.load(Ordering::Relaxed) as u32,
            window_ms: shared.window_ms.load(Ordering::Relaxed),
        }
    }

    /// Whether the budget counts and limits (a registry's is off while its rule is removed).
    pub(crate) fn is_on(&self) -> bool {
        self.shared.on.load(Ordering::Acquire) == 1
    }

    /// The share of first attempts that may be retried over the window.
    pub fn ratio(&self) -> f64 {
        self.rule().ratio
    }

    /// The floor: retries per second of the window allowed whatever the first attempts.
    pub fn min_per_second(&self) -> u32 {
        self.rule().min_per_second
    }

    /// The window over which first attempts and retries are counted (whole milliseconds).
    pub fn window(&self) -> Duration {
        Duration::from_millis(self.rule().window_ms)
    }

    /// Count one first attempt (a deposit): the guard pipeline does this for every call's first
    /// attempt that reaches the dependency. One compare-and-swap.
    pub fn deposit(&self) {
        if self.is_on() {
            self.shared.ring.deposit(|| self.now());
        }
    }

    /// Take one retry from the budget if it allows one now (a withdrawal): `true` if the retry
    /// may go, `false` if the budget refuses it (counted in [`refused`](Self::refused)).
    /// Concurrent withdrawals never overspend: each lands only if the counts it was judged
    /// against are still the latest.
    pub fn try_withdraw(&self) -> bool {
        if !self.is_on() {
            return true;
        }
        let rule = self.rule();
        let allows = |totals: &Totals| allows(&rule, totals);
        let (_, withdrawn) = self.shared.ring.withdraw(|| self.now(), allows);
        if !withdrawn {
            self.shared.refused.fetch_add(1, Ordering::Relaxed);
        }
        withdrawn
    }

    /// How many retries the budget would allow now, if no first attempt came first
    /// (`u32::MAX` for a budget that is off).
    pub fn retries_left(&self) -> u32 {
        if !self.is_on() {
            return u32::MAX;
        }
        let totals = self.shared.ring.totals(&|| self.now());
        let rule = self.rule();
        let room = rule.reserve() + rule.ratio * totals.deposits as f64 - totals.withdrawals as f64;
        room.clamp(0.0, f64::from(u32::MAX)) as u32
    }

    /// Retries refused since the budget was made (not windowed).
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::Relaxed)
    }

    /// Where the clock is: the window's generation and the slice's number.
    fn now(&self) -> Now {
        let timing = self.shared.timing.load(Ordering::Acquire);
        let width = (timing & ((1 << 56) - 1)).max(1);
        Now {
            generation: (timing >> 56) as u8,
            number: self.shared.origin.now_ms(u64::MAX) / width,
        }
    }
}

/// Whether the counts leave room for one more retry: `withdrawals + 1 ≤ ratio × deposits +
/// min_per_second × window`.
fn allows(rule: &BudgetRule, totals: &Totals) -> bool {
    (totals.withdrawals + 1) as f64 <= rule.reserve() + rule.ratio * totals.deposits as f64
}

/// Two handles are equal when they share one budget.
impl PartialEq for RetryBudget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = self.rule();
        f.debug_struct("RetryBudget")
            .field("ratio", &rule.ratio)
            .field("min_per_second", &rule.min_per_second)
            .field("window_ms", &rule.window_ms)
            .field("on", &self.is_on())
            .field("refused", &self.refused())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn budget(
        ratio: f64,
        min_per_second: u32,
        window_ms: u64,
    ) -> (RetryBudget, std::sync::Arc<quanta::Mock>) {
        let (clock, mock) = quanta::Clock::mock();
        let window = Duration::from_millis(window_ms);
        (
            RetryBudget::new(ratio, min_per_second, window)
                .unwrap()
                .clock(clock),
            mock,
        )
    }

    /// With no first attempts, the floor alone: `min_per_second × window` retries, then none.
    #[test]
    fn a_quiet_caller_has_the_floor() {
        let (budget, _mock) = budget(0.2, 3, 2_000);
        assert_eq!(budget.retries_left(), 6);
        assert_eq!((0..10).filter(|_| budget.try_withdraw()).count(), 6);
        assert_eq!((budget.retries_left(), budget.refused()), (0, 4));
    }

    /// Deposits add `ratio` each; withdrawals spend whole retries.
    #[test]
    fn deposits_add_the_ratio_and_withdrawals_spend_it() {
        let (budget, _mock) = budget(0.25, 0, 10_000);
        assert!(!budget.try_withdraw(), "nothing deposited, no floor");
        for _ in 0..7 {
            budget.deposit();
        }
        assert_eq!(budget.retries_left(), 1, "0.25 × 7 = 1.75: one whole retry");
        assert!(budget.try_withdraw());
        assert!(!budget.try_withdraw());
        budget.deposit();
        assert!(budget.try_withdraw(), "0.25 × 8 = 2");
    }

    /// Counts leave the window a tenth of it at a time, by the budget's clock.
    #[test]
    fn counts_leave_the_window_a_slice_at_a_time() {
        let (budget, mock) = budget(1.0, 0, 1_000);
        for _ in 0..4 {
            budget.deposit();
        }
        mock.increment(Duration::from_millis(500));
        for _ in 0..2 {
            budget.deposit();
        }
        assert!(budget.try_withdraw());
        assert_eq!(budget.retries_left(), 5);
        mock.increment(Duration::from_millis(500)); // the first four are a window old
        assert_eq!(budget.retries_left(), 1, "2 deposits less 1 withdrawal");
        mock.increment(Duration::from_millis(500));
        assert_eq!(
            budget.retries_left(),
            0,
            "the withdrawal has left, but so has every deposit"
        );
        budget.deposit();
        assert_eq!(budget.retries_left(), 1);
    }

    /// A reload's new ratio applies to the counts kept; a new window carries them over.
    #[test]
    fn new_rules_keep_the_counts() {
        let (budget, mock) = budget(0.5, 0, 1_000);
        for _ in 0..10 {
            budget.deposit();
        }
        assert!(budget.try_withdraw());
        assert_eq!(budget.retries_left(), 4);
        budget.apply(Some(
            BudgetRule::new(1.0, 0, Duration::from_millis(1_000)).unwrap(),
        ));
        assert_eq!(budget.retries_left(), 9);
        budget.apply(Some(
            BudgetRule::new(1.0, 0, Duration::from_millis(4_000)).unwrap(),
        ));
        assert_eq!(budget.retries_left(), 9, "carried into the new window");
        mock.increment(Duration::from_millis(3_000));
        assert_eq!(budget.retries_left(), 9, "kept for the new window's length");
        mock.increment(Duration::from_millis(1_000));
        assert_eq!(budget.retries_left(), 0);
        budget.apply(None);
        assert!(
            (0..100).all(|_| budget.try_withdraw()),
            "off: every retry allowed"
        );
    }

    /// Each bad rule is refused, naming its field.
    #[test]
    fn bad_rules_name_their_field() {
        let window = Duration::from_secs(10);
        for ratio in [-0.1, 1000.5, f64::NAN, f64::INFINITY] {
            let err = RetryBudget::new(ratio, 10, window).unwrap_err();
            assert_eq!(
                (err.field(), err.problem()),
                ("retry_budget.ratio", Problem::OutOfRange)
            );
            assert_eq!(
                err.to_string(),
                "invalid breaker configuration: `retry_budget.ratio` must be a number from 0 to 1000"
            );
        }
        assert!(
            RetryBudget::new(0.0, 0, window).is_ok(),
            "no retries at all is a rule"
        );
        assert!(RetryBudget::new(1000.0, u32::MAX, window).is_ok());
        let zero = RetryBudget::new(0.2, 10, Duration::ZERO).unwrap_err();
        assert_eq!(
            (zero.field(), zero.problem()),
            ("retry_budget.window", Problem::Zero)
        );
        let long = Duration::from_millis(MAX_DURATION_MS + 1);
        let long = RetryBudget::new(0.2, 10, long).unwrap_err();
        assert_eq!(
            (long.field(), long.problem()),
            ("retry_budget.window", Problem::TooLong)
        );
        let tiny = RetryBudget::new(0.2, 10, Duration::from_micros(1)).unwrap();
        assert_eq!(
            tiny.window(),
            Duration::from_millis(1),
            "rounded up to whole ms"
        );
    }
}
