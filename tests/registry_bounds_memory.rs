//! Memory of a bounded registry: bytes per entry at 100,000 entries, and a bounded registry's
//! memory after a churn of invented names, measured with a counting allocator.
//!
//! Counts the bytes requested from the allocator (not its own rounding or headers), with the
//! instrumented system allocator of `stats_alloc`; its own test binary, so no other test's
//! allocations are counted. Run with `--nocapture` to see the figures.

use std::alloc::System;
use std::fmt::Write as _;
use std::time::Duration;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use toolbreaker::{Config, Registry};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes still allocated since `region` began.
fn live(region: &Region<'_, System>) -> usize {
    let change = region.change();
    let net = change.bytes_allocated as isize + change.bytes_reallocated
        - change.bytes_deallocated as isize;
    usize::try_from(net).expect("more freed than allocated in the region")
}

const ENTRIES: usize = 100_000;

/// The ceiling named in `RegistryBuilder::max_dependencies`'s docs (which give the figure
/// measured here: 495 bytes per entry).
const DOCUMENTED_BYTES_PER_ENTRY: usize = 560;

/// One test, so that nothing else allocates while it counts.
#[test]
fn memory_of_a_bounded_registry() {
    bytes_per_entry_at_100_000_entries();
    a_bounded_registry_holds_its_memory_through_a_churn_of_names();
}

fn bytes_per_entry_at_100_000_entries() {
    let names: Vec<String> = (0..ENTRIES).map(|i| format!("dependency-{i}")).collect();
    let (clock, _mock) = toolbreaker::quanta::Clock::mock();
    let region = Region::new(GLOBAL);
    let registry = Registry::builder()
        .default_config(Config::default())
        .max_dependencies(ENTRIES)
        .idle_eviction(Duration::from_secs(60))
        .clock(clock)
        .build();
    for name in &names {
        drop(registry.get(name));
    }
    assert_eq!(registry.len(), ENTRIES);
    let per_entry = live(&region) / ENTRIES;
    eprintln!(
        "registry: {per_entry} B per entry at {ENTRIES} entries (names of about {} B)",
        names[ENTRIES - 1].len()
    );
    assert!(
        per_entry <= DOCUMENTED_BYTES_PER_ENTRY,
        "{per_entry} B per registry entry"
    );
    drop(registry);
}

fn a_bounded_registry_holds_its_memory_through_a_churn_of_names() {
    const BOUND: usize = 10_000;
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let region = Region::new(GLOBAL);
    let registry = Registry::builder()
        .max_dependencies(BOUND)
        .idle_eviction(Duration::from_secs(1))
        .clock(clock)
        .build();
    let mut name = String::new();
    let mut fill = |batch: usize| {
        mock.increment(Duration::from_secs(1));
        for i in 0..BOUND {
            name.clear();
            write!(name, "tool-{batch}-{i:05}").unwrap();
            drop(registry.get(&name));
        }
    };
    fill(0);
    let full = live(&region);
    for batch in 1..50 {
        fill(batch);
    }
    assert_eq!(registry.len(), BOUND);
    let after = live(&region);
    eprintln!(
        "registry bounded at {BOUND}: {} B per entry full, {} B per entry after 500,000 names",
        full / BOUND,
        after / BOUND
    );
    // Evicted entries are freed (some once the map's epochs let them go) and the table is
    // reused, not grown: what is live stays within a small multiple of one full registry.
    assert!(
        after <= 2 * full,
        "{after} B live after the churn, {full} B full"
    );
}
