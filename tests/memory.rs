//! Memory: bytes per breaker and per registry entry, measured with a counting allocator.
//!
//! Counts the bytes requested from the allocator (not its own rounding or headers), with the
//! instrumented system allocator of `stats_alloc`. Run with `--nocapture` to see the figures.

use std::alloc::System;
use std::sync::Arc;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use toolbreaker::{CircuitBreaker, Config, Outcome, Pool, Registry};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes still allocated since `region` began.
fn live(region: &Region<'_, System>) -> usize {
    let change = region.change();
    let net = change.bytes_allocated as isize + change.bytes_reallocated
        - change.bytes_deallocated as isize;
    usize::try_from(net).expect("more freed than allocated in the region")
}

const ENTRIES: usize = 10_000;

#[test]
fn bytes_per_breaker_and_per_registry_entry() {
    // The system clock calibrates once per process; keep that out of the figures.
    drop(CircuitBreaker::new(
        Config::default(),
        toolbreaker::quanta::Clock::new(),
    ));

    let inline = size_of::<CircuitBreaker>();
    let region = Region::new(GLOBAL);
    let shared = Arc::new(CircuitBreaker::new(
        Config::default(),
        toolbreaker::quanta::Clock::new(),
    ));
    let per_arc = live(&region);
    drop(shared);

    let names: Vec<String> = (0..ENTRIES).map(|i| format!("dependency-{i}")).collect();
    let region = Region::new(GLOBAL);
    let registry = Registry::new(Config::default());
    for name in &names {
        drop(registry.get(name));
    }
    let per_entry = live(&region) / ENTRIES;
    let name_bytes = names[ENTRIES - 1].len();
    eprintln!(
        "CircuitBreaker: {inline} B inline, {per_arc} B as an Arc; registry: {per_entry} B per \
         entry at {ENTRIES} entries (names of about {name_bytes} B)"
    );
    assert_eq!(
        inline, 128,
        "one cache-padded block: the word, its settings and its clock"
    );
    assert_eq!(
        per_arc,
        256 + 168,
        "the Arc's counts take a padded block of their own; the cold part (the herald: the \
         listener and the queue that tells transitions in order; the slow paths' hook; the lock that \
         serialises reconfigurations; the cooldown's shape, the cooldown in force and the end a \
         dependency's hint set; the probe slots; the pointer to the cap on calls in flight) is a box \
         of 168 B beside it"
    );
    // 512 B before the cap on calls in flight's pointer joined the cold box (8 B).
    assert!(per_entry <= 520, "{per_entry} B per registry entry");
    drop(registry);

    // A rate rule adds its window: the stripes (one padded block per thread, at most 16) and
    // 64 shared buckets of 16 B.
    let region = Region::new(GLOBAL);
    let rated = Arc::new(
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .build()
            .expect("valid"),
    );
    let window = live(&region) - per_arc;
    let stripes = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .next_power_of_two()
        .min(16);
    eprintln!("a rate rule's window: {window} B with {stripes} stripes");
    assert!(
        window <= 128 + 128 * stripes + 64 * 16 + 128,
        "{window} B for {stripes} stripes"
    );
    drop(rated);

    // Adaptive throttling adds its cell (its probability on a line of its own, four own stripes
    // per stripe up to 32 and the shared stripes, padded; its snapshots) and, with no rate rule,
    // the window's cell that holds its pointer. Its healthy calls, and its calls shed, allocate
    // nothing.
    let region = Region::new(GLOBAL);
    let throttled = Arc::new(
        CircuitBreaker::builder()
            .adaptive_throttling(2.0, std::time::Duration::from_secs(10))
            .build()
            .expect("valid"),
    );
    let throttle = live(&region) - per_arc;
    let own = (4 * stripes).min(32);
    eprintln!("adaptive throttling: {throttle} B with {stripes} stripes, window's cell included");
    assert!(
        throttle <= 128 * (1 + own + stripes) + 512 + (window + 128),
        "{throttle} B for {stripes} stripes"
    );
    throttled
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(toolbreaker::FailureKind::Unavailable));
    let region = Region::new(GLOBAL);
    for _ in 0..1000 {
        if let Ok(permit) = throttled.try_acquire() {
            permit.record(Outcome::Success);
        }
    }
    let change = region.change();
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "throttling allocated"
    );
    drop(throttled);

    // A pool's healthy path allocates nothing: the choice (a thread-local draw, a member's
    // load), the permit and its record, and a whole `call`. (Checked here, in the one test of
    // this binary, so no other test's allocations fall in the region.)
    let registry = Registry::new(Config::default());
    let members: Vec<String> = (0..8).map(|i| format!("upstream-{i}")).collect();
    let pool = Pool::builder("search")
        .group(members)
        .build(&registry)
        .expect("valid");
    pool.try_acquire().expect("closed").record(Outcome::Success);
    let region = Region::new(GLOBAL);
    for _ in 0..1000 {
        pool.try_acquire().expect("closed").record(Outcome::Success);
        let answer = pool.call(|member| Ok::<_, ()>(member.len()), |_| Outcome::Success);
        assert_eq!(answer, Ok(10));
    }
    let change = region.change();
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "a pool's healthy path allocated"
    );
}
