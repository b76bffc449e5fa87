//! The gateway binary as people run it, each test a real process on real sockets, with rmcp
//! clients and upstreams:
//!
//! - fleet mode: two gateways and one real `redis-server` (`fleet`);
//! - `--stdio`, stdout holding only MCP (`stdio`);
//! - `--mcp-config`, Claude Desktop's `mcpServers` file (`mcp_config`);
//! - graceful shutdown on SIGTERM, a stdio upstream's process ended with it (`shutdown`);
//! - `--log-format json` (`logs`);
//! - the start: signals during it, the port bound first, a host name to listen on, `/readyz`
//!   (`start`);
//! - HTTPS with `--tls-cert` and `--tls-key` (`tls`).
//!
//! Its own `main` (no libtest): the binary is also the stdio upstream the gateway starts as a
//! child (with `TOOLBREAKER_TEST_STDIO_UPSTREAM` set). `redis-server` must be on `PATH`.
#![allow(deprecated)]

mod check;
#[path = "../common/mod.rs"]
mod common;
mod fleet;
mod logs;
mod mcp;
mod mcp_config;
mod process;
mod secrets;
mod shutdown;
mod start;
mod stdio;
mod tls;
mod upstream;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;

use process::Outcome;

type Test = fn() -> Pin<Box<dyn Future<Output = Outcome> + Send>>;

const TESTS: [(&str, Test); 19] = [
    (
        "fleet::a_trip_through_one_gateway_blocks_the_next_call_through_the_other",
        || Box::pin(fleet::a_trip_through_one_gateway_blocks_the_next_call_through_the_other()),
    ),
    (
        "stdio::stdio_serves_a_client_and_stdout_carries_only_mcp",
        || Box::pin(stdio::stdio_serves_a_client_and_stdout_carries_only_mcp()),
    ),
    ("mcp_config::an_mcp_servers_file_is_served", || {
        Box::pin(mcp_config::an_mcp_servers_file_is_served())
    }),
    (
        "shutdown::sigterm_ends_the_http_gateway_with_code_0_and_its_stdio_child",
        || Box::pin(shutdown::sigterm_ends_the_http_gateway_with_code_0_and_its_stdio_child()),
    ),
    (
        "shutdown::sigterm_ends_the_stdio_gateway_with_code_0_and_its_stdio_child",
        || Box::pin(shutdown::sigterm_ends_the_stdio_gateway_with_code_0_and_its_stdio_child()),
    ),
    ("logs::every_stderr_line_is_a_json_object", || {
        Box::pin(logs::every_stderr_line_is_a_json_object())
    }),
    (
        "logs::a_warning_a_client_repeats_is_logged_once_per_interval",
        || Box::pin(logs::a_warning_a_client_repeats_is_logged_once_per_interval()),
    ),
    ("logs::a_gateway_that_cannot_start_says_why_in_json", || {
        Box::pin(logs::a_gateway_that_cannot_start_says_why_in_json())
    }),
    (
        "start::a_stop_signal_during_start_ends_the_gateway_and_its_child",
        || Box::pin(start::a_stop_signal_during_start_ends_the_gateway_and_its_child()),
    ),
    (
        "start::a_hangup_during_start_is_a_reload_once_started",
        || Box::pin(start::a_hangup_during_start_is_a_reload_once_started()),
    ),
    (
        "start::a_busy_port_is_reported_before_any_upstream_starts",
        || Box::pin(start::a_busy_port_is_reported_before_any_upstream_starts()),
    ),
    ("start::a_host_name_is_a_listen_address", || {
        Box::pin(start::a_host_name_is_a_listen_address())
    }),
    ("start::readyz_follows_the_required_upstreams", || {
        Box::pin(start::readyz_follows_the_required_upstreams())
    }),
    ("tls::the_gateway_serves_https_with_its_certificate", || {
        Box::pin(tls::the_gateway_serves_https_with_its_certificate())
    }),
    ("tls::a_bad_tls_file_is_named_with_its_flag", || {
        Box::pin(tls::a_bad_tls_file_is_named_with_its_flag())
    }),
    (
        "secrets::a_key_from_the_environment_never_reaches_stderr_or_status",
        || Box::pin(secrets::a_key_from_the_environment_never_reaches_stderr_or_status()),
    ),
    (
        "check::check_prints_the_resolved_config_redacted_and_warns_of_unknown_tool_names",
        || {
            Box::pin(
                check::check_prints_the_resolved_config_redacted_and_warns_of_unknown_tool_names(),
            )
        },
    ),
    ("check::check_refuses_a_bad_file_with_exit_code_1", || {
        Box::pin(check::check_refuses_a_bad_file_with_exit_code_1())
    }),
    (
        "check::a_reload_that_changes_only_breaker_keys_names_them",
        || Box::pin(check::a_reload_that_changes_only_breaker_keys_names_them()),
    ),
];

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    if std::env::var_os(upstream::STDIO_UPSTREAM).is_some() {
        runtime.block_on(upstream::serve_stdio());
        return ExitCode::SUCCESS;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in &TESTS {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut failed = 0;
    for (name, test) in &TESTS {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        match runtime.block_on(async { tokio::spawn(test()).await }) {
            Ok(Ok(())) => println!("test {name} ... ok"),
            Ok(Err(why)) => {
                failed += 1;
                println!("test {name} ... FAILED\n{why}");
            }
            Err(panic) => {
                failed += 1;
                println!("test {name} ... FAILED (panicked: {panic})");
            }
        }
    }
    println!("binary: {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
