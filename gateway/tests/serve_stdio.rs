//! `serve_stdio` on a real process's stdin and stdout, pipes as an MCP client starts a stdio
//! server: the client closing stdin ends the process, and so does SIGTERM while stdin is still
//! open (nothing is left reading stdin to hold the runtime's shutdown).
//!
//! This binary is its own child: started with `TOOLBREAKER_GATEWAY_STDIO_CHILD` set it serves
//! the tests' handler with [`serve_stdio`] until stdin closes or SIGINT/SIGTERM, drops its
//! runtime (as the binary's `main` returning does) and exits 0. Otherwise it runs the scenarios
//! below, printing `test NAME ... ok` for each, and exits non-zero if one failed.

#[path = "serve/probe.rs"]
mod probe;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::process::Stdio;

use probe::{Probe, WAIT, call, text_of};
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use toolbreaker_gateway::serve::{serve_stdio, shutdown_signal};

const CHILD: &str = "TOOLBREAKER_GATEWAY_STDIO_CHILD";

fn main() {
    if std::env::var_os(CHILD).is_some() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let served = runtime.block_on(async {
            let shutdown = shutdown_signal().expect("the handlers install");
            serve_stdio(Probe::new().0, shutdown).await
        });
        // A read of stdin parked in the blocking pool would hold this drop.
        drop(runtime);
        std::process::exit(if served.is_ok() { 0 } else { 1 });
    }
    type Scenario = fn() -> Pin<Box<dyn Future<Output = ()>>>;
    let scenarios: [(&str, Scenario); 2] = [
        ("a_client_closing_stdin_ends_the_process", || {
            Box::pin(a_client_closing_stdin_ends_the_process())
        }),
        ("sigterm_ends_the_process_with_stdin_open", || {
            Box::pin(sigterm_ends_the_process_with_stdin_open())
        }),
    ];
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = 0;
    for (name, scenario) in scenarios {
        if !filters.is_empty() && !filters.iter().any(|filter| name.contains(filter.as_str())) {
            continue;
        }
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(scenario())));
        println!(
            "test {name} ... {}",
            if outcome.is_ok() { "ok" } else { "FAILED" }
        );
        failed += usize::from(outcome.is_err());
    }
    if failed > 0 {
        std::process::exit(1);
    }
}

/// This binary as a child serving on its piped stdin and stdout, and an rmcp client of it.
async fn child() -> (tokio::process::Child, RunningService<RoleClient, ()>) {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the child starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let client = tokio::time::timeout(WAIT, ().serve((stdout, stdin)))
        .await
        .expect("the handshake ends within the wait")
        .expect("the handshake succeeds");
    let result = client.peer().call_tool(call("echo")).await.unwrap();
    assert_eq!(text_of(&result), "echo: ");
    (child, client)
}

/// Waits for `child` to exit; asserts it exited 0.
async fn exits_cleanly(mut child: tokio::process::Child) {
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the child exits within the wait")
        .unwrap();
    assert!(status.success(), "{status}");
}

async fn a_client_closing_stdin_ends_the_process() {
    let (child, client) = child().await;
    client.cancel().await.unwrap();
    exits_cleanly(child).await;
}

async fn sigterm_ends_the_process_with_stdin_open() {
    let (child, client) = child().await;
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    exits_cleanly(child).await;
    drop(client);
}
