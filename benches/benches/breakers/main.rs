//! Per-call cost of toolbreaker beside the Rust breakers a gateway would otherwise pick —
//! `failsafe` 1.3 (its consecutive-failures policy, and its default policy) and `recloser` 1.4 —
//! and a no-breaker baseline, on the same trivial operation, in one criterion run. This package
//! is another crate than toolbreaker, so every figure includes inlining across the crate boundary,
//! as in a user's crate.
//!
//! ```sh
//! cargo bench -p toolbreaker-benches                                  # everything
//! cargo bench -p toolbreaker-benches --bench breakers -- closed       # the groups it matches
//! ```
//!
//! What each group measures, and the figures of one run, are in `benches/README.md`.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

mod asynchronous;
mod closed;
mod contention;
mod open;
mod peers;
mod registry;
mod sketch;

/// Short runs: the operations are nanoseconds, and seven groups of five must fit in minutes.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets =
        closed::healthy,
        closed::two_threads,
        closed::failures_to_clear,
        open::rejection,
        contention::half_open,
        registry::lookup,
        asynchronous::run
}
criterion_main!(benches);
