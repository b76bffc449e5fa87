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

use criterion::{Criterion, criterion_group};

mod admission;
mod asynchronous;
mod closed;
mod contention;
mod open;
mod outside;
mod peers;
mod pool;
mod registry;
mod sketch;

/// Short runs: the operations are nanoseconds, and eight groups of up to five must fit in minutes.
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
        asynchronous::run,
        outside::public_api,
        pool::healthy,
        pool::two_threads,
        admission::healthy,
        admission::two_threads
}

/// Criterion's run; or, with `TOOLBREAKER_OUTSIDE_LOOP="CASE N"` set, `N` calls of one case of the
/// `outside_crate` group and nothing else, for an instruction count under callgrind (see
/// `benches/README.md`).
fn main() {
    if let Ok(spec) = std::env::var("TOOLBREAKER_OUTSIDE_LOOP") {
        outside::run_fixed(&spec);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
