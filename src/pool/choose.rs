//! The choice of a member: [`Pool::try_acquire`], the spread over a group's members, and, when
//! no member admits, the panic rule or the pool's one rejection (see the module docs).

use core::cell::Cell;

use super::members::Pool;
use super::permit::PoolPermit;
use crate::observe;
use crate::types::{Blocked, BlockedReason, State};

std::thread_local! {
    /// This thread's draw for the member a group is asked first: a xorshift state, 0 until the
    /// thread's first call seeds it. Thread-local, so spreading calls writes no shared memory.
    static DRAW: Cell<u32> = const { Cell::new(0) };
}

/// The next draw of this thread.
#[inline(always)]
fn draw() -> u32 {
    DRAW.with(|cell| {
        let mut x = cell.get();
        if x == 0 {
            x = seed(cell);
        }
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        cell.set(x);
        x
    })
}

/// A member of `n` from a draw, uniform, without a division: in `0..n` (0 when `n` is 0).
#[inline(always)]
fn pick(draw: u32, n: usize) -> usize {
    ((u64::from(draw) * n as u64) >> 32) as usize
}

/// The order a group of `n` is asked in for a draw: its drawn member, then the others from a
/// second draw of theirs on, wrapping, each once.
fn order(draw: u32, n: usize) -> impl Iterator<Item = usize> {
    let first = pick(draw, n);
    let mut next = pick(draw.rotate_left(16), n.saturating_sub(1));
    (0..n).map(move |step| {
        if step == 0 {
            return first;
        }
        let at = first + 1 + next;
        next = if next + 2 == n { 0 } else { next + 1 };
        if at >= n { at - n } else { at }
    })
}

/// A thread's first state: from the address of its cell, so threads start apart; never 0.
#[cold]
fn seed(cell: &Cell<u32>) -> u32 {
    let address = core::ptr::from_ref(cell) as usize as u64;
    ((address.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32) | 1
}

/// What a survey of every member found when the first pass found none that admits.
enum Survey<'a> {
    /// A member admitted on the second asking (it recovered meanwhile), or a panic permit.
    Admitted(PoolPermit<'a>),
    /// A member would admit, or may soon (a probe in flight), or a panic would admit one: the
    /// answer to a check that takes nothing.
    Open,
    /// No member admits: the earliest retry-after of theirs, in ms, and the load refusal all of
    /// them gave, if every one was refused for load (see `Refusal::busy`).
    Exhausted(u64, Option<BlockedReason>),
}

impl Pool {
    /// Ask for one call to one member.
    ///
    /// The first group with a member that admits serves it; inside the group the member asked
    /// first is drawn per call from a thread-local generator, and the others follow in order,
    /// so calls spread over the group's members. A member whose breaker refuses (open,
    /// isolated, its probe taken) is passed over. When no member of any group admits, the
    /// panic rule may admit an open member ([`PoolPermit::is_panic`]); else the call is
    /// blocked. See the [module docs](crate::pool) for the rules.
    ///
    /// The healthy path writes no shared memory: a thread-local draw and the member's one load.
    ///
    /// # Errors
    ///
    /// One [`Blocked`] for the pool when no member admits the call and no panic admits one:
    /// reason [`BlockedReason::PoolExhausted`], state [`State::Open`], and the earliest
    /// retry-after of the members. It carries no name: the pool's is [`name`](Self::name).
    /// Nothing was sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbreaker::{BlockedReason, Config, FailureKind, Outcome, Pool, Registry};
    ///
    /// let (clock, mock) = toolbreaker::quanta::Clock::mock();
    /// let registry = Registry::builder()
    ///     .default_config(Config::new(1, Duration::from_secs(10), Duration::from_secs(5))?)
    ///     .clock(clock)
    ///     .build();
    /// let pool = Pool::builder("search").group(["eu"]).group(["us"]).build(&registry)?;
    ///
    /// let first = pool.try_acquire().unwrap();
    /// assert_eq!(first.member(), "eu", "the first group serves while it admits");
    /// first.record(Outcome::Failure(FailureKind::Unavailable)); // eu trips
    /// mock.increment(Duration::from_secs(4));
    /// let failover = pool.try_acquire().unwrap();
    /// assert_eq!(failover.member(), "us");
    /// failover.record(Outcome::Failure(FailureKind::Unavailable)); // us trips too
    ///
    /// let blocked = pool.try_acquire().unwrap_err();
    /// assert_eq!(blocked.reason(), BlockedReason::PoolExhausted);
    /// assert_eq!(blocked.retry_after(), Duration::from_secs(6), "eu's cooldown ends first");
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<PoolPermit<'_>, Blocked> {
        self.acquire(None)
    }

    /// [`try_acquire`](Self::try_acquire), asking the member at `avoid` (a member whose call
    /// just failed) only when no other admits.
    ///
    /// Inline, the healthy path alone: the draw and the first group's member it names, which
    /// admits on its one load when closed. Everything else is out of line.
    #[inline]
    pub(crate) fn acquire(&self, avoid: Option<usize>) -> Result<PoolPermit<'_>, Blocked> {
        let shape = &*self.shape;
        let draw = draw();
        let first = pick(draw, shape.ends[0]);
        if avoid != Some(first) {
            let member = &shape.members[first];
            if let Ok(permit) = member.try_acquire_pooled() {
                return Ok(PoolPermit::new(member, first, Some(permit)));
            }
        }
        self.acquire_past_first(draw, avoid)
    }

    /// The rest of the first pass, after the first group's drawn member refused (or was
    /// `avoid`): the group's other members, from a second draw of theirs on, in order, so a
    /// refusing member's share spreads over the rest rather than falling to its neighbour;
    /// then each later group in order, from its drawn member on.
    #[inline(never)]
    fn acquire_past_first(
        &self,
        draw: u32,
        avoid: Option<usize>,
    ) -> Result<PoolPermit<'_>, Blocked> {
        let shape = &*self.shape;
        let mut begin = 0;
        for &end in &*shape.ends {
            let n = end - begin;
            // The first group's drawn member was asked already.
            for at in order(draw, n).skip(usize::from(begin == 0)) {
                let index = begin + at;
                if avoid == Some(index) {
                    continue;
                }
                let member = &shape.members[index];
                if let Ok(permit) = member.try_acquire_pooled() {
                    return Ok(PoolPermit::new(member, index, Some(permit)));
                }
            }
            begin = end;
        }
        self.exhausted(avoid)
    }

    /// No member but `avoid` admitted on the first pass: `avoid` if it admits, else a survey of
    /// every member, which admits one that recovered meanwhile or a panic's, or blocks.
    #[cold]
    #[inline(never)]
    fn exhausted(&self, avoid: Option<usize>) -> Result<PoolPermit<'_>, Blocked> {
        if let Some(index) = avoid {
            let member = &self.shape.members[index];
            if let Ok(permit) = member.try_acquire_pooled() {
                return Ok(PoolPermit::new(member, index, Some(permit)));
            }
        }
        match self.survey(true) {
            Survey::Admitted(permit) => Ok(permit),
            // A survey that takes answers with a permit or the retry-after.
            Survey::Open => unreachable!("a taking survey admits or is exhausted"),
            Survey::Exhausted(retry_after_ms, busy) => Err(self.blocked(retry_after_ms, busy)),
        }
    }

    /// `Blocked` if no member would admit a call now and no panic would admit one, asked without
    /// taking a permit or a probe slot and without writing: for the pipeline deciding whether a
    /// retry is worth waiting for. A member half-open with its probe in flight is `Ok`, as for
    /// one breaker (`CircuitBreaker::check_open`): the probe may be done by then. A `Blocked`
    /// answer is logged as a blocked call of the pool.
    #[cfg(feature = "tokio")]
    pub(crate) fn check_open(&self) -> Result<(), Blocked> {
        match self.survey(false) {
            Survey::Exhausted(retry_after_ms, busy) => Err(self.blocked(retry_after_ms, busy)),
            _ => Ok(()),
        }
    }

    /// Whether a member other than the one at `index` would admit a call now, asked without
    /// taking anything (a retry that goes there need not wait out `index`'s hint).
    #[cfg(feature = "tokio")]
    pub(crate) fn admits_other(&self, index: usize) -> bool {
        let members = &self.shape.members;
        (0..members.len()).any(|other| other != index && members[other].refusal_now().is_none())
    }

    /// The pool's rejection, logged under its name: `pool_exhausted` (state open), or, when
    /// every member was refused for load, that reason (state closed: busy, not down; saturated
    /// if any member was).
    fn blocked(&self, retry_after_ms: u64, busy: Option<BlockedReason>) -> Blocked {
        let (state, reason) = match busy {
            Some(reason) => (State::Closed, reason),
            None => (State::Open, BlockedReason::PoolExhausted),
        };
        let blocked = Blocked::new(state, reason, retry_after_ms.max(1));
        observe::blocked(self.name(), &blocked);
        blocked
    }

    /// Every member, group by group: with `take`, the first that admits gives its permit;
    /// without, the first that would admit (or has a probe in flight) answers `Open`. Meanwhile
    /// the refusals are gathered: the earliest retry-after, and in the first group in panic,
    /// the member that tripped longest ago, admitted only if no later group admits.
    fn survey(&self, take: bool) -> Survey<'_> {
        let shape = &*self.shape;
        // The earliest retry-after of the members that end by themselves, and of those isolated
        // by hand (whose retry-after is no end): the latter only if every member is isolated.
        let (mut earliest, mut earliest_isolated) = (u64::MAX, u64::MAX);
        let mut panic: Option<usize> = None;
        // Saturated if any member was, throttled if all were; `None` once one was not busy.
        let mut busy = Some(BlockedReason::Throttled);
        let mut begin = 0;
        for &end in &*shape.ends {
            let mut ejected = 0u64;
            let mut oldest: Option<(u64, usize)> = None;
            for index in begin..end {
                let member = &shape.members[index];
                let refusal = if take {
                    match member.try_acquire_pooled() {
                        Ok(permit) => {
                            return Survey::Admitted(PoolPermit::new(member, index, Some(permit)));
                        }
                        Err(refusal) => refusal,
                    }
                } else {
                    match member.refusal_now() {
                        None => return Survey::Open,
                        Some(refusal) if !refusal.ejected => return Survey::Open,
                        Some(refusal) => refusal,
                    }
                };
                busy = match (busy, refusal.busy) {
                    (Some(_), Some(BlockedReason::Saturated)) => Some(BlockedReason::Saturated),
                    (Some(seen), Some(_)) => Some(seen),
                    _ => None,
                };
                if refusal.isolated {
                    earliest_isolated = earliest_isolated.min(refusal.retry_after_ms);
                } else {
                    earliest = earliest.min(refusal.retry_after_ms);
                }
                ejected += u64::from(refusal.ejected);
                if let Some(open_for) = refusal.open_for_ms
                    && oldest.is_none_or(|(longest, _)| open_for > longest)
                {
                    oldest = Some((open_for, index));
                }
            }
            let members = (end - begin) as u64;
            if panic.is_none()
                && let (Some(share), Some((_, index))) = (shape.panic_share, oldest)
                && ejected * 1_000_000 > u64::from(share) * members
            {
                panic = Some(index);
            }
            begin = end;
        }
        match panic {
            Some(_) if !take => Survey::Open,
            Some(index) => {
                let member = &shape.members[index];
                observe::pool_panic(self.name(), member.name());
                Survey::Admitted(PoolPermit::new(member, index, None))
            }
            None if earliest == u64::MAX => Survey::Exhausted(earliest_isolated, busy),
            None => Survey::Exhausted(earliest, busy),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every draw asks each member of a group once, its drawn member first, for groups of one
    /// to nine; and the drawn member, then the second one, are spread evenly.
    #[test]
    fn a_group_is_asked_each_member_once_from_an_even_draw() {
        for n in 1..=9 {
            let mut firsts = vec![0u32; n];
            let mut seconds = vec![0u32; n];
            let mut draw = 0x1234_5678_u32;
            for _ in 0..9000 {
                draw ^= draw << 13;
                draw ^= draw >> 17;
                draw ^= draw << 5;
                let asked: Vec<usize> = order(draw, n).collect();
                let mut sorted = asked.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n {n}, draw {draw:#x}");
                assert_eq!(asked[0], pick(draw, n));
                firsts[asked[0]] += 1;
                if n > 1 {
                    // The member asked when the drawn one refuses is any other, evenly: a
                    // refusing member's share is not left to its neighbour.
                    seconds[asked[1]] += 1;
                }
            }
            let even = 9000 / n as u32;
            for count in firsts.iter().chain(seconds.iter().filter(|_| n > 1)) {
                assert!(
                    count.abs_diff(even) < even / 5 + 50,
                    "n {n}: {firsts:?} {seconds:?}"
                );
            }
        }
    }

    #[test]
    fn each_thread_draws_its_own_sequence_and_never_zero() {
        let here: Vec<u32> = (0..4).map(|_| draw()).collect();
        let there: Vec<u32> = std::thread::spawn(|| (0..4).map(|_| draw()).collect())
            .join()
            .unwrap();
        assert!(here.iter().chain(&there).all(|&d| d != 0));
        assert_ne!(here, there, "threads start apart");
    }
}
