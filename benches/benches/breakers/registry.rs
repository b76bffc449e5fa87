//! The registry: lookup by name among 10,000 dependencies, and the cost through a kept handle.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, RwLock};

use criterion::Criterion;
use toolbreaker::{CircuitBreaker, Config, Registry};

use crate::peers::*;

const DEPENDENCIES: usize = 10_000;

/// Group 6: `Registry::get` by name (hash, lock-free table read, `Arc` clone and drop), beside the maps a
/// user would otherwise write; then one call through a handle kept from an earlier lookup.
pub fn lookup(c: &mut Criterion) {
    let mut g = c.benchmark_group("registry_10k");
    let names: Vec<String> = (0..DEPENDENCIES)
        .map(|i| format!("dependency-{i}"))
        .collect();
    let registry = Registry::new(Config::default());
    let mut plain = HashMap::new();
    for name in &names {
        plain.insert(name.clone(), registry.get(name));
    }
    let locked = RwLock::new(plain.clone());

    // Names visited in a scrambled order, so neither the table nor the cache sees a pattern.
    let order: Vec<usize> = (0..DEPENDENCIES)
        .map(|i| (i * 7_919) % DEPENDENCIES)
        .collect();
    let mut at = 0;
    let mut next = move || {
        at = (at + 1) % DEPENDENCIES;
        order[at]
    };

    // What the loop costs without any map: picking the next name.
    g.bench_function("next_name_only", |b| b.iter(|| black_box(&names[next()])));
    g.bench_function("toolbreaker_get", |b| {
        b.iter(|| black_box(registry.get(&names[next()])))
    });
    g.bench_function("toolbreaker_with", |b| {
        b.iter(|| registry.with(&names[next()], |breaker| black_box(breaker.state())))
    });
    g.bench_function("std_hashmap_get_clone", |b| {
        b.iter(|| black_box(Arc::clone(&plain[names[next()].as_str()])))
    });
    g.bench_function("rwlock_hashmap_get_clone", |b| {
        b.iter(|| black_box(Arc::clone(&locked.read().unwrap()[names[next()].as_str()])))
    });
    let handle: Arc<CircuitBreaker> = registry.get(&names[42]);
    g.bench_function("toolbreaker_call_through_handle", |b| {
        b.iter(|| call_toolbreaker(&handle, false))
    });
    g.finish();
}
