//! An MCP gateway built on a fleet-mode registry (features `mcp` and `redis`) just works: two
//! gateways, each its own fleet instance, front one upstream MCP server. A trip at one gateway
//! blocks the other gateway's next call without sending it, one probe decides for both, and its
//! success closes both. A real redis-server on a free loopback port, a real rmcp upstream on
//! Streamable HTTP, and both gateways served on loopback ports and called by real MCP clients.

use super::common as mcp;
use super::redis_server;

use std::time::Duration;

use mcp::{Upstream, doing, wait_until};
use redis_server::RedisServer;
use rmcp::ServiceExt;
use rmcp::model::CallToolResult;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;
use toolbreaker::mcp::{GuardedClient, McpGateway};
use toolbreaker::{Config, Fleet, Registry, RetryPolicy, State, ToolGuard};

/// The fleet's cooldown: real time, since the fleet's times are the Redis server's.
const COOLDOWN: Duration = Duration::from_millis(300);
const THRESHOLD: u32 = 3;

/// A gateway instance: its fleet-mode registry, the gateway in front of `upstream`, served on a
/// loopback port, and an MCP client connected to it.
struct Gateway {
    registry: Registry,
    client: RunningService<RoleClient, ()>,
    _serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Gateway {
    async fn start(redis: &RedisServer, instance: &str, upstream: &Upstream) -> Gateway {
        let fleet = Fleet::builder(redis.url())
            .prefix("mcp")
            .instance(instance)
            .sync_interval(Duration::from_millis(100))
            .command_timeout(Duration::from_millis(500))
            .build()
            .unwrap();
        let registry = Registry::builder()
            .default_config(Config::new(THRESHOLD, COOLDOWN, Duration::from_secs(5)).unwrap())
            .fleet(fleet)
            .build();
        let to_upstream = ()
            .serve(StreamableHttpClientTransport::from_uri(
                upstream.url.clone(),
            ))
            .await
            .expect("the gateway connects to the upstream");
        // The gateway's own client to the upstream lives as long as the gateway, which owns it.
        let search = GuardedClient::builder("search", to_upstream, &registry)
            .guard(ToolGuard::new(Duration::from_secs(10), RetryPolicy::none()))
            .build()
            .unwrap();
        let gateway = McpGateway::builder().upstream(search).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{}", listener.local_addr().unwrap(), mcp::PATH);
        let serving =
            tokio::spawn(async move { gateway.serve_http(listener, std::future::pending()).await });
        let client =
            ().serve(StreamableHttpClientTransport::from_uri(url))
                .await
                .expect("a client connects to the gateway");
        let fleet = registry.fleet().unwrap();
        wait_until("the fleet agent connects", || fleet.is_connected()).await;
        Gateway {
            registry,
            client,
            _serving: serving,
        }
    }

    /// A call of the upstream's `query` through this gateway, doing `what`.
    async fn call(&self, what: &str) -> CallToolResult {
        let mut params = doing("query", what);
        params.name = "search.query".into();
        self.client
            .call_tool(params)
            .await
            .expect("the gateway answers")
    }

    fn state(&self) -> State {
        self.registry.get("search").state()
    }
}

fn status(result: &CallToolResult) -> Value {
    result
        .structured_content
        .as_ref()
        .map_or(Value::Null, |json| json["status"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_on_a_fleet_registry_shares_trips_probes_and_closes() {
    let redis = RedisServer::start();
    let upstream = Upstream::start(&["query"]).await;
    let a = Gateway::start(&redis, "gateway-a", &upstream).await;
    let b = Gateway::start(&redis, "gateway-b", &upstream).await;
    // Both breakers exist and are in the fleet's record before anything fails.
    assert_ne!(a.call("answer").await.is_error, Some(true));
    assert_ne!(b.call("answer").await.is_error, Some(true));

    // The upstream's internal errors trip gateway A, on its own count.
    for _ in 0..THRESHOLD {
        assert_eq!(status(&a.call("internal").await), "failed");
    }
    assert_eq!(a.state(), State::Open);
    // Gateway B saw no failure, and adopts the trip from the fleet.
    wait_until("gateway B adopts the trip", || b.state() == State::Open).await;
    let reached = upstream.calls();
    let blocked = b.call("answer").await;
    assert_eq!(status(&blocked), "blocked", "{blocked:?}");
    assert_eq!(blocked.is_error, Some(true));
    assert_eq!(upstream.calls(), reached, "B sent nothing to the upstream");

    // After the cooldown one probe, from either gateway, decides for both.
    wait_until("the cooldown ends", || {
        a.state() == State::HalfOpen || b.state() == State::HalfOpen
    })
    .await;
    // Calls, one at a time and alternating, until one is answered: the probe.
    let mut answered = 0;
    'calls: for _ in 0..1_000 {
        for gateway in [&a, &b] {
            let result = gateway.call("answer").await;
            if result.is_error != Some(true) {
                answered += 1;
                break 'calls;
            }
            assert_eq!(status(&result), "blocked", "{result:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(answered, 1, "a probe was answered");
    assert_eq!(
        upstream.calls(),
        reached + 1,
        "between the trip and the probe's verdict only the probe reached the upstream"
    );
    wait_until("both gateways close", || {
        a.state() == State::Closed && b.state() == State::Closed
    })
    .await;
    // Closed on both: calls through either reach the upstream again.
    let (ra, rb) = (a.call("answer").await, b.call("answer").await);
    assert_ne!(ra.is_error, Some(true));
    assert_ne!(rb.is_error, Some(true));
}
