//! `toolbreaker-gateway`: see `--help`, and the commented `gateway.toml` beside this package.

fn main() -> std::process::ExitCode {
    toolbreaker_gateway::run::main()
}
