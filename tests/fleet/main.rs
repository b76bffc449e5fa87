//! One test binary for fleet mode (feature `redis`) against real redis-servers that the tests
//! start on free loopback ports: the shared breakers, adversity, misconfiguration, keys that
//! cannot collide, a partitioned instance, idle records' expiry. The helpers are compiled once,
//! here, for every file.
//!
//! `fleet::child_instance` is run by name (`--exact --ignored`) as a child process of the tests in
//! `fleet.rs`, from this same binary.

mod fleet;
mod fleet_adversarial;
mod fleet_config;
mod fleet_health;
mod fleet_hints;
mod fleet_keys;
mod fleet_partition;
mod fleet_ttl;
#[path = "../common/redis.rs"]
mod redis_server;
#[path = "../common/sched.rs"]
mod sched;
