//! `toolbreaker-gateway`: see `--help`, and the commented `gateway.toml` beside this package.

/// jemalloc: glibc's allocator took about a fifth of the gateway's CPU under load (its
/// `malloc_consolidate` and chunk lists); jemalloc's per-thread caches cost less CPU a call, for
/// less resident memory than mimalloc's (benches/README.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    toolbreaker_gateway::run::main()
}
