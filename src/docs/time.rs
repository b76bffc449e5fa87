//! How breakers read time.
//!
//! Breakers read a [`quanta::Clock`], re-exported as [`toolbreaker::quanta`](crate::quanta) so tests
//! use the same version: `quanta::Clock::mock()` gives a clock to advance by hand, and nothing in
//! this crate sleeps.
//!
//! A mock starts at zero, and `quanta`'s `Mock::decrement` subtracts without a check: stepping
//! a mock back past zero panics with "attempt to subtract with overflow" in a debug build (a
//! test's), inside `quanta`, and in a release build wraps to near `u64::MAX`, which a breaker
//! reads as the far future (its time saturates there, as after a century of uptime), so every
//! cooldown is over. A test that steps the clock back advances the mock past the step first:
//!
//! ```
//! use std::time::Duration;
//! use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
//!
//! let (clock, mock) = toolbreaker::quanta::Clock::mock();
//! mock.increment(Duration::from_secs(2 * 3_600)); // room to step back an hour
//! let breaker = CircuitBreaker::builder().failure_threshold(1).clock(clock).build()?;
//! breaker.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Timeout));
//! mock.decrement(Duration::from_secs(3_600));
//! assert_eq!(breaker.state(), State::Open, "a clock that steps back never ends a cooldown");
//! # Ok::<(), toolbreaker::ConfigError>(())
//! ```
//!
//! (A raw reading below the breaker's start reads as behind, and one above it as ahead: a
//! wrapped reading and one from a clock set centuries ahead are the same number, and the second
//! is the one the crate's fuzzing checks, time saturating at the end of its range.)
