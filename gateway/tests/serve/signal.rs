//! The shutdown signal: SIGINT and SIGTERM each complete it.

use toolbreaker_gateway::serve::shutdown_signal;

use crate::probe::WAIT;

fn send_to_self(signal: &str) {
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[tokio::test]
async fn sigint_and_sigterm_complete_the_shutdown_signal() {
    for signal in ["-INT", "-TERM"] {
        // Installed before the signal is sent, so it is caught, not the process ended.
        let shutdown = shutdown_signal().expect("the handlers install");
        send_to_self(signal);
        tokio::time::timeout(WAIT, shutdown)
            .await
            .unwrap_or_else(|_| panic!("{signal} completes the shutdown signal"));
    }
}
