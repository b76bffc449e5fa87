//! The MCP health check: a `ping` of an MCP server ([`HealthCheck::mcp_ping`]).

use rmcp::model::{ClientRequest, PingRequest, ServerResult};
use rmcp::{Peer, RoleClient};

use super::classify::McpClassifier;
use crate::breaker::HealthCheck;
use crate::classify::{FailureKind, Outcome};

impl HealthCheck {
    /// An MCP `ping` through `peer`, for
    /// [`Builder::probe_with`](crate::breaker::Builder::probe_with) (feature `mcp`): an empty
    /// answer is a success; an error is classified as a tool call's is
    /// ([`McpClassifier`]: a closed transport, an internal error or a timeout is a failure); any
    /// other answer is a failure (`Other`), the server being up and broken.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use toolbreaker::{CircuitBreaker, breaker::HealthCheck};
    ///
    /// # async fn run(service: rmcp::service::RunningService<rmcp::RoleClient, ()>) -> Result<(), toolbreaker::ConfigError> {
    /// let breaker = CircuitBreaker::builder()
    ///     .name("files")
    ///     .probe_with(HealthCheck::mcp_ping(service.peer().clone()))
    ///     .build_arc()?;
    /// # Ok(()) }
    /// ```
    pub fn mcp_ping(peer: Peer<RoleClient>) -> Self {
        HealthCheck::new(move || {
            let peer = peer.clone();
            async move {
                let ping = ClientRequest::PingRequest(PingRequest::default());
                match peer.send_request(ping).await {
                    Ok(ServerResult::EmptyResult(_)) => Outcome::Success,
                    Ok(_) => Outcome::Failure(FailureKind::Other),
                    Err(error) => McpClassifier::default().error(&error),
                }
            }
        })
    }
}
