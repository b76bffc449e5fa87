//! The relay end to end on real sockets: an rmcp upstream over Streamable HTTP, the gateway's
//! sessions served by rmcp's Streamable HTTP service, an rmcp client.
#![allow(deprecated)]

mod common;

use std::time::Duration;

use common::{Up, client, http_upstream, serve, serve_on};
use rmcp::model::{CallToolRequestParams, Tool};
use toolbreaker::Registry;
use toolbreaker_gateway::config::{GatewayConfig, UpstreamConfig};
use toolbreaker_gateway::relay::Gateway;

async fn gateway(upstreams: Vec<UpstreamConfig>) -> (Gateway, String) {
    // Trips at the third failure in a row, and probes again after 200 ms.
    let config =
        toolbreaker::Config::new(3, Duration::from_millis(200), Duration::from_secs(5)).unwrap();
    let gateway = Gateway::new("gw", Registry::new(config), Duration::from_secs(30));
    gateway
        .start(GatewayConfig {
            upstreams,
            registry: Default::default(),
        })
        .await
        .unwrap();
    let g = gateway.clone();
    let url = serve(move || g.session()).await;
    (gateway, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_under_the_prefix_and_calls_relay_progress_and_sampling() {
    let up = serve(|| Up { crashable: false }).await;
    let (_gateway, url) = gateway(vec![http_upstream("up", "up.", &up)]).await;
    let (handler, service) = client(&url).await;
    let tools = service.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["up.ask", "up.echo", "up.fail"]);

    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hello".into());
    let echoed = service
        .call_tool(CallToolRequestParams::new("up.echo").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(echoed.content[0].as_text().unwrap().text, "hello");

    let asked = service
        .call_tool(CallToolRequestParams::new("up.ask"))
        .await
        .unwrap();
    assert_eq!(
        asked.content[0].as_text().unwrap().text,
        "sampled",
        "{asked:?}"
    );
    let on = handler.sampled_on.lock().unwrap().clone();
    assert!(
        matches!(
            on.as_slice(),
            [Some(rmcp::service::InboundStreamOrigin::OutboundRequest(_))]
        ),
        "the sampling request came on the stream of the call it belongs to: {on:?}"
    );
    // The upstream speaks 2026-07-28 (found by discovery): it asks for the sample as
    // `input_required`, the gateway asks this 2025-11-25 client on the call's stream and calls
    // again with the answer; the upstream reports progress in each of the two rounds.
    let progress = handler.progress_of(2).await;
    assert_eq!(
        progress.len(),
        2,
        "the upstream's progress reached the client: {progress:?}"
    );

    let unknown = service
        .call_tool(CallToolRequestParams::new("up.nothing"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
}

fn names(tools: &[Tool]) -> Vec<String> {
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_down_at_start_leaves_the_others_listed_and_its_tools_are_announced_when_it_comes()
 {
    let up = serve(|| Up { crashable: false }).await;
    let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let late_addr = free.local_addr().unwrap();
    drop(free);
    let late_url = format!("http://{late_addr}/mcp");
    let (gateway, url) = gateway(vec![
        http_upstream("up", "up.", &up),
        http_upstream("late", "late.", &late_url),
    ])
    .await;
    let (handler, service) = client(&url).await;
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["up.ask", "up.echo", "up.fail"]
    );
    let status = gateway.status();
    assert_eq!(status["upstreams"][1]["tools"], 0, "{status}");
    assert_eq!(
        status["upstreams"][1]["last_failure"], "connect",
        "{status}"
    );

    let listener = tokio::net::TcpListener::bind(late_addr).await.unwrap();
    serve_on(listener, || Up { crashable: false }).await;
    tokio::time::timeout(Duration::from_secs(30), handler.tools_changed.notified())
        .await
        .expect("the client is told when the late upstream's tools become known");
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        [
            "late.ask",
            "late.echo",
            "late.fail",
            "up.ask",
            "up.echo",
            "up.fail"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_upstream_is_not_asked_its_listing_is_the_last_good_one_and_a_blocked_read_carries_the_tool_result()
 {
    let up = serve(|| Up { crashable: false }).await;
    let (gateway, url) = gateway(vec![http_upstream("up", "", &up)]).await;
    let (_handler, service) = client(&url).await;
    let resources = service.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 1);
    gateway.registry().get("up").force_open();

    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["ask", "echo", "fail"],
        "the last good listing"
    );
    let blocked = service
        .call_tool(CallToolRequestParams::new("echo"))
        .await
        .unwrap();
    assert_eq!(blocked.is_error, Some(true));
    assert_eq!(
        blocked.structured_content.as_ref().unwrap()["status"],
        "blocked",
        "{blocked:?}"
    );

    let read = service
        .read_resource(rmcp::model::ReadResourceRequestParams::new("mem://a"))
        .await
        .unwrap_err();
    let rmcp::service::ServiceError::McpError(error) = read else {
        panic!("{read:?}")
    };
    let data = error.data.expect("the ToolResult JSON");
    assert_eq!(
        (data["status"].as_str(), data["dependency"].as_str()),
        (Some("blocked"), Some("up")),
        "{data}"
    );
    assert_eq!(data["reason"], "isolated", "forced open by hand");

    gateway.registry().get("up").force_closed();
    let read = service
        .read_resource(rmcp::model::ReadResourceRequestParams::new("mem://a"))
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_upstreams_showing_one_name_is_an_error_at_start_naming_both() {
    let (a, b) = (
        serve(|| Up { crashable: false }).await,
        serve(|| Up { crashable: false }).await,
    );
    let gateway = Gateway::new("gw", Registry::builder().build(), Duration::from_secs(30));
    let err = gateway
        .start(GatewayConfig {
            upstreams: vec![http_upstream("a", "", &a), http_upstream("b", "", &b)],
            registry: Default::default(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.upstreams, ("a".to_owned(), "b".to_owned()));
    assert!(
        err.to_string().contains("`a`") && err.to_string().contains("`b`"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_config_hides_is_neither_listed_nor_callable() {
    let up = serve(|| Up { crashable: false }).await;
    let mut config = http_upstream("up", "up.", &up);
    config.deny = vec!["ask".into()];
    let (_gateway, url) = gateway(vec![config]).await;
    let (_handler, service) = client(&url).await;
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["up.echo", "up.fail"]
    );
    let hidden = service
        .call_tool(CallToolRequestParams::new("up.ask"))
        .await;
    assert!(
        matches!(hidden, Err(rmcp::service::ServiceError::McpError(ref e)) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS),
        "{hidden:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_adds_and_removes_upstreams_while_a_client_stays_connected_and_breakers_keep_their_state()
 {
    let (a, b) = (
        serve(|| Up { crashable: false }).await,
        serve(|| Up { crashable: false }).await,
    );
    let (gateway, url) = gateway(vec![http_upstream("a", "a.", &a)]).await;
    let (handler, service) = client(&url).await;
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["a.ask", "a.echo", "a.fail"]
    );
    gateway.registry().get("a").force_open();

    let reloaded = gateway
        .reload(GatewayConfig {
            upstreams: vec![http_upstream("a", "a.", &a), http_upstream("b", "b.", &b)],
            registry: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(reloaded.added, ["b"]);
    assert!(
        reloaded.removed.is_empty() && reloaded.changed.is_empty(),
        "{reloaded:?}"
    );
    tokio::time::timeout(Duration::from_secs(30), handler.tools_changed.notified())
        .await
        .expect("the connected client is told");
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["a.ask", "a.echo", "a.fail", "b.ask", "b.echo", "b.fail"]
    );
    assert_eq!(
        gateway.registry().get("a").state(),
        toolbreaker::State::Open,
        "a kept its state"
    );

    // A collision is refused, and nothing changes.
    let clash = gateway
        .reload(GatewayConfig {
            upstreams: vec![http_upstream("a", "", &a), http_upstream("b", "", &b)],
            registry: Default::default(),
        })
        .await
        .unwrap_err();
    assert_eq!(clash.upstreams, ("a".to_owned(), "b".to_owned()));
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["a.ask", "a.echo", "a.fail", "b.ask", "b.echo", "b.fail"]
    );

    let reloaded = gateway
        .reload(GatewayConfig {
            upstreams: vec![http_upstream("b", "b.", &b)],
            registry: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(reloaded.removed, ["a"]);
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["b.ask", "b.echo", "b.fail"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_upstream_is_probed_with_mcp_ping_when_its_cooldown_ends_and_closes_without_a_client_call()
 {
    let up = serve(|| Up { crashable: false }).await;
    let (gateway, url) = gateway(vec![http_upstream("up", "up.", &up)]).await;
    let (_handler, service) = client(&url).await;
    for _ in 0..3 {
        let failed = service
            .call_tool(CallToolRequestParams::new("up.fail"))
            .await
            .unwrap();
        assert_eq!(
            failed.structured_content.as_ref().unwrap()["status"],
            "failed",
            "{failed:?}"
        );
    }
    let breaker = gateway.registry().get("up");
    assert_eq!(
        breaker.state(),
        toolbreaker::State::Open,
        "three internal errors in a row trip it"
    );
    // No client calls from here on: the health check (MCP ping) is the probe.
    let closed = async {
        while breaker.state() != toolbreaker::State::Closed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), closed)
        .await
        .expect("the ping probe closes it after the 200 ms cooldown");
}

/// An upstream that lists its tools two to a page.
#[derive(Clone)]
struct Paged;

impl rmcp::ServerHandler for Paged {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = std::sync::Arc::new(serde_json::Map::from_iter([(
            "type".to_owned(),
            "object".into(),
        )]));
        let page: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let tools = (page * 2..page * 2 + 2)
            .map(|i| Tool::new(format!("t{i}"), "a tool", schema.clone()))
            .collect();
        let mut result = rmcp::model::ListToolsResult::with_all_items(tools);
        result.next_cursor = (page < 2).then(|| (page + 1).to_string());
        Ok(result)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_lists_in_pages_is_listed_whole() {
    let paged = serve(|| Paged).await;
    let (_gateway, url) = gateway(vec![http_upstream("p", "p.", &paged)]).await;
    let (_handler, service) = client(&url).await;
    assert_eq!(
        names(&service.list_all_tools().await.unwrap()),
        ["p.t0", "p.t1", "p.t2", "p.t3", "p.t4", "p.t5"]
    );
}
