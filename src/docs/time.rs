//! How breakers read time.
//!
//! Breakers read a [`quanta::Clock`], re-exported as [`toolbreaker::quanta`](crate::quanta) so tests
//! use the same version: `quanta::Clock::mock()` gives a clock to advance by hand, and nothing in
//! this crate sleeps.
