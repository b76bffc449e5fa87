//! MCP's two eras through the gateway, end to end on real sockets with rmcp clients and
//! upstreams: a 2026-07-28 client (stateless, `server/discover`) in front of a 2025-11-25-only
//! upstream, and a 2025-11-25 client (a session) in front of a 2026-07-28-only one, each
//! through a tool call that samples, a resource subscription, cancellation and an open
//! breaker; and the gateway's own `requestState` refused when forged.
#![allow(deprecated)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{LEGACY, MODERN, Up, serve};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, ContentBlock, CreateMessageRequestParams, CreateMessageResult, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, ServerNotification, ServerResult, SubscribeRequestParams,
    SubscriptionFilter, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, NotificationContext, PeerRequestOptions, RequestContext, RoleClient,
    RoleServer, RunningService, SubscriptionContext, SubscriptionSink,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, Peer, ServerHandler, ServiceExt};
use tokio::sync::Notify;
use toolbreaker::Registry;
use toolbreaker_gateway::config::{Era, GatewayConfig, Transport, UpstreamConfig};
use toolbreaker_gateway::relay::Gateway;

/// The longest any one event is waited for.
const WAIT: Duration = Duration::from_secs(20);

/// The resource the upstream lets clients subscribe to.
const URI: &str = "mem://a";

/// What the upstream saw, shared by its sessions (or stateless requests).
#[derive(Default)]
struct Hub {
    /// A `wait` call started.
    waiting: Notify,
    /// A `wait` call was cancelled (a client's cancellation relayed).
    cancelled: Notify,
    /// Another call ended without its answer: cancelled, or its request for input failed.
    abandoned: Notify,
    /// 2025-11-25 sessions subscribed to [`URI`].
    subscribed: Mutex<Vec<Peer<RoleServer>>>,
    /// 2026-07-28 listen streams.
    streams: Mutex<Vec<SubscriptionSink>>,
    /// The log level each tool call's `_meta` asked for (2026-07-28).
    levels: Mutex<Vec<Option<rmcp::model::LoggingLevel>>>,
}

/// [`Up`]'s tools and resource in the protocol revisions `versions` only, plus `wait` (runs
/// until cancelled) and `touch` (tells the subscribers of [`URI`] that it changed), with
/// resource subscriptions in both eras. Served by clones of one value, so that what every
/// session or stateless request sees is in one [`Hub`].
#[derive(Clone)]
struct Eras {
    up: Up,
    versions: &'static [ProtocolVersion],
    hub: Arc<Hub>,
    /// Its tool listing is `private` (SEP-2549: only the client it was given to may be shown
    /// it), not `public`.
    private: bool,
}

impl Eras {
    fn new(versions: &'static [ProtocolVersion]) -> Self {
        Eras {
            up: Up { crashable: false },
            versions,
            hub: Arc::default(),
            private: false,
        }
    }
}

impl ServerHandler for Eras {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(self.versions)
    }

    async fn list_resources(
        &self,
        params: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.up.list_resources(params, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.up.read_resource(request, context).await
    }

    async fn subscribe(
        &self,
        _: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.hub.subscribed.lock().unwrap().push(context.peer);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.hub
            .streams
            .lock()
            .unwrap()
            .push(context.sink().clone());
        context.cancelled().await;
        Ok(())
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = self.up.list_tools(params, context).await?;
        let schema = listed.tools[0].input_schema.clone();
        listed
            .tools
            .push(Tool::new("wait", "runs until cancelled", schema.clone()));
        listed
            .tools
            .push(Tool::new("touch", "changes mem://a", schema));
        if self.private {
            listed.cache_scope = Some(rmcp::model::CacheScope::Private);
        }
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let cancel = context.ct.clone();
        self.hub
            .levels
            .lock()
            .unwrap()
            .push(context.meta.log_level());
        match request.name.as_ref() {
            "wait" => {
                self.hub.waiting.notify_one();
                cancel.cancelled().await;
                self.hub.cancelled.notify_one();
                Err(ErrorData::internal_error("cancelled", None))
            }
            "touch" => {
                let params = ResourceUpdatedNotificationParam::new(URI);
                let peers = self.hub.subscribed.lock().unwrap().clone();
                for peer in peers {
                    let _ = peer.notify_resource_updated(params.clone()).await;
                }
                let streams = self.hub.streams.lock().unwrap().clone();
                for sink in streams {
                    let updated = rmcp::model::ResourceUpdatedNotification::new(params.clone());
                    let _ = sink.send(updated.into()).await;
                }
                Ok(CallToolResult::success(vec![ContentBlock::text("touched")]).into())
            }
            _ => {
                let asking = request.name == "ask";
                let reporting = (context.peer.clone(), context.meta.get_progress_token());
                let answer = tokio::select! {
                    answer = self.up.call_tool(request, context) => answer,
                    () = cancel.cancelled() => Err(ErrorData::internal_error("cancelled", None)),
                };
                if answer.is_err() {
                    self.hub.abandoned.notify_one();
                }
                // `ask` reports once more when it has its sample: a 2025-11-25 upstream's
                // progress after the input it asked for.
                if let (true, Ok(rmcp::model::CallToolResponse::Complete(_))) = (asking, &answer)
                    && let (peer, Some(token)) = reporting
                {
                    let done = rmcp::model::ProgressNotificationParam::new(token, 1.0);
                    let _ = peer.notify_progress(done).await;
                }
                answer
            }
        }
    }
}

/// A gateway with one upstream, `up` at `url` (no prefix), each breaker tripping at the third
/// failure in a row; its MCP URL.
async fn gateway(url: &str) -> (Gateway, String) {
    gateway_in(url, Era::Newest).await
}

/// [`gateway`], speaking to its upstream in `era`.
async fn gateway_in(url: &str, era: Era) -> (Gateway, String) {
    let config =
        toolbreaker::Config::new(3, Duration::from_secs(60), Duration::from_secs(5)).unwrap();
    let gateway = Gateway::new("gw", Registry::new(config), Duration::from_secs(30));
    let mut upstream = common::http_upstream("up", "", url);
    upstream.era = era;
    gateway
        .start(GatewayConfig {
            upstreams: vec![upstream],
            registry: Default::default(),
        })
        .await
        .unwrap();
    let g = gateway.clone();
    let served = serve(move || g.session()).await;
    (gateway, served)
}

/// A client that answers sampling with "sampled" and records the resources updated and the
/// progress reported.
#[derive(Clone, Default)]
struct Watcher {
    updated: Arc<Notify>,
    progress: Arc<Mutex<Vec<f64>>>,
    progressed: Arc<Notify>,
}

impl ClientHandler for Watcher {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_sampling().build(),
            Implementation::new("eras-test", "0"),
        )
    }

    async fn create_message(
        &self,
        _: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(common::sampled())
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
        self.progressed.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        if params.uri == URI {
            self.updated.notify_one();
        }
    }
}

/// A 2026-07-28 client of `url`: `server/discover`, then stateless requests.
async fn modern_client(url: &str) -> (Watcher, RunningService<RoleClient, Watcher>) {
    let handler = Watcher::default();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let service = rmcp::ClientServiceExt::serve_with_lifecycle(
        handler.clone(),
        StreamableHttpClientTransport::from_uri(url.to_owned()),
        lifecycle,
    )
    .await
    .unwrap();
    (handler, service)
}

/// A 2025-11-25 client of `url`: `initialize`, a session.
async fn legacy_client(url: &str) -> (Watcher, RunningService<RoleClient, Watcher>) {
    let handler = Watcher::default();
    let service = handler
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .unwrap();
    (handler, service)
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

fn era_of(gateway: &Gateway) -> String {
    gateway.status()["upstreams"][0]["era"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {WAIT:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_samples_through_a_2025_upstream_as_input_required() {
    let eras = Eras::new(LEGACY);
    let up = serve(move || eras.clone()).await;
    let (gateway, url) = gateway(&up).await;
    assert_eq!(era_of(&gateway), "2025-11-25", "{}", gateway.status());
    let (_, client) = modern_client(&url).await;
    let info = client.peer().peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);

    let echoed =
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(
                serde_json::Map::from_iter([("text".to_owned(), "hi".into())]),
            ))
            .await
            .unwrap();
    assert_eq!(text(&echoed), "hi");

    // The upstream asks this client for a sample on its session; the client has none: it is
    // answered `input_required` with the gateway's sealed state, answers by retrying (rmcp's
    // client drives the rounds), and the waiting upstream call goes on.
    let first = client
        .peer()
        .send_request(ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("ask"),
        )))
        .await
        .unwrap();
    let ServerResult::InputRequiredResult(input) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let state = input.request_state.clone().unwrap();
    assert!(state.starts_with("tbg."), "{state}");
    assert_eq!(input.input_requests.as_ref().unwrap().len(), 1);
    let asked = client
        .call_tool(CallToolRequestParams::new("ask"))
        .await
        .unwrap();
    assert_eq!(text(&asked), "sampled", "{asked:?}");

    // The state made for the first call, forged or changed, is refused; so is a retry of
    // another tool, or of the tool with other arguments, with it.
    let forged = format!("{state}x");
    let other = serde_json::Map::from_iter([("text".to_owned(), "other".into())]);
    for (tool, state, arguments) in [
        ("ask", forged.as_str(), None),
        ("echo", state.as_str(), None),
        ("ask", "tbg.", None),
        ("ask", state.as_str(), Some(other)),
    ] {
        let mut params = CallToolRequestParams::new(tool);
        params.arguments = arguments;
        params.request_state = Some(state.to_owned());
        let refused = client
            .peer()
            .send_request(ClientRequest::CallToolRequest(CallToolRequest::new(params)))
            .await;
        let Err(rmcp::ServiceError::McpError(error)) = refused else {
            panic!("a forged requestState was taken: {refused:?}");
        };
        assert_eq!(
            error.code,
            rmcp::model::ErrorCode::INVALID_PARAMS,
            "{error:?}"
        );
    }
    // A state the gateway did not make, for a 2025-11-25 upstream (which takes none).
    let mut params = CallToolRequestParams::new("echo");
    params.request_state = Some("someone-elses".into());
    let refused = client
        .peer()
        .send_request(ClientRequest::CallToolRequest(CallToolRequest::new(params)))
        .await;
    assert!(
        matches!(&refused, Err(rmcp::ServiceError::McpError(e)) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS),
        "{refused:?}"
    );
    assert_eq!(gateway.status()["upstreams"][0]["state"], "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_2026_client_never_retries_is_cancelled_upstream_and_counts_nothing() {
    let eras = Eras::new(LEGACY);
    let hub = Arc::clone(&eras.hub);
    let up = serve(move || eras.clone()).await;
    let (gateway, url) = gateway(&up).await;
    gateway.set_input_wait(Duration::from_millis(300));
    let (_, client) = modern_client(&url).await;
    for _ in 0..4 {
        let first = client
            .peer()
            .send_request(ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("ask"),
            )))
            .await
            .unwrap();
        assert!(
            matches!(first, ServerResult::InputRequiredResult(_)),
            "{first:?}"
        );
        // No retry: at the wait's end the upstream's call is cancelled (and its request for
        // input refused).
        within(
            "the abandoned call's end upstream",
            hub.abandoned.notified(),
        )
        .await;
    }
    // Four abandoned calls, past the threshold of three: none counted.
    let status = gateway.status();
    assert_eq!(status["upstreams"][0]["state"], "closed", "{status}");
    assert_eq!(
        status["upstreams"][0]["last_failure"],
        serde_json::Value::Null
    );
    let echoed = client
        .call_tool(CallToolRequestParams::new("echo"))
        .await
        .unwrap();
    assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_samples_through_a_2026_upstream_asked_by_the_gateway() {
    let eras = Eras::new(MODERN);
    let hub = Arc::clone(&eras.hub);
    let up = serve(move || eras.clone()).await;
    let (gateway, url) = gateway(&up).await;
    assert_eq!(era_of(&gateway), "2026-07-28", "{}", gateway.status());
    let (_, client) = legacy_client(&url).await;
    let asked = client
        .call_tool(CallToolRequestParams::new("ask"))
        .await
        .unwrap();
    assert_eq!(text(&asked), "sampled", "{asked:?}");
    // `ping` is the gateway's to answer; `logging/setLevel` is kept for the session and
    // never reaches the upstream, which has none.
    client
        .peer()
        .send_request(ClientRequest::PingRequest(Default::default()))
        .await
        .unwrap();
    client
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Info,
        ))
        .await
        .unwrap();
    let echoed = client
        .call_tool(CallToolRequestParams::new("echo"))
        .await
        .unwrap();
    assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
    // The session's level went with the call, as 2026-07-28 has it.
    let levels = hub.levels.lock().unwrap().clone();
    assert_eq!(
        levels.last(),
        Some(&Some(rmcp::model::LoggingLevel::Info)),
        "{levels:?}"
    );
    assert_eq!(
        levels.first(),
        Some(&None),
        "none was set before: {levels:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_listens_to_a_resource_of_a_2025_upstream() {
    let eras = Eras::new(LEGACY);
    let up = serve(move || eras.clone()).await;
    let (_gateway, url) = gateway(&up).await;
    let (_, client) = modern_client(&url).await;
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec![URI.to_owned()]);
    let mut stream = client.peer().listen(filter).await.unwrap();
    // The listen stream is acknowledged before the gateway subscribes upstream: touch until an
    // update comes (each try waits for it on its own; a bounded number of tries).
    let mut got = None;
    for _ in 0..50 {
        client
            .call_tool(CallToolRequestParams::new("touch"))
            .await
            .unwrap();
        if let Ok(next) = tokio::time::timeout(Duration::from_millis(400), stream.next()).await {
            got = next.unwrap();
            break;
        }
    }
    let Some(ServerNotification::ResourceUpdatedNotification(updated)) = got else {
        panic!("no update on the listen stream: {got:?}");
    };
    assert_eq!(updated.params.uri, URI);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_subscribes_to_a_resource_of_a_2026_upstream() {
    let eras = Eras::new(MODERN);
    let up = serve(move || eras.clone()).await;
    let (_gateway, url) = gateway(&up).await;
    let (watcher, client) = legacy_client(&url).await;
    // Answered once the gateway's listen stream to the upstream is open with the resource.
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(URI))
        .await
        .unwrap();
    client
        .call_tool(CallToolRequestParams::new("touch"))
        .await
        .unwrap();
    within("the resource's update", watcher.updated.notified()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_upstream_in_both_eras() {
    for (client_era, upstream_era) in [("2026", LEGACY), ("2025", MODERN)] {
        let eras = Eras::new(upstream_era);
        let hub = Arc::clone(&eras.hub);
        let up = serve(move || eras.clone()).await;
        let (gateway, url) = gateway(&up).await;
        let (_, client) = if client_era == "2026" {
            modern_client(&url).await
        } else {
            legacy_client(&url).await
        };
        let call = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("wait"),
        ));
        let handle = client
            .peer()
            .send_cancellable_request(call, PeerRequestOptions::no_options())
            .await
            .unwrap();
        within("the call reaching the upstream", hub.waiting.notified()).await;
        handle
            .cancel(Some("the test cancels".into()))
            .await
            .unwrap();
        within(
            &format!("a {client_era} client's cancellation upstream"),
            hub.cancelled.notified(),
        )
        .await;
        let status = gateway.status();
        assert_eq!(
            status["upstreams"][0]["last_failure"],
            serde_json::Value::Null,
            "{status}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_answers_blocked_in_both_eras() {
    for (modern, upstream_era) in [(true, LEGACY), (false, MODERN)] {
        let eras = Eras::new(upstream_era);
        let up = serve(move || eras.clone()).await;
        let (gateway, url) = gateway(&up).await;
        let (_, client) = if modern {
            modern_client(&url).await
        } else {
            legacy_client(&url).await
        };
        for _ in 0..3 {
            let failed = client
                .call_tool(CallToolRequestParams::new("fail"))
                .await
                .unwrap();
            assert_eq!(failed.is_error, Some(true), "{failed:?}");
        }
        assert_eq!(gateway.status()["upstreams"][0]["state"], "open");
        let blocked = client
            .call_tool(CallToolRequestParams::new("echo"))
            .await
            .unwrap();
        assert_eq!(blocked.is_error, Some(true), "{blocked:?}");
        let json = blocked.structured_content.unwrap();
        assert_eq!(json["status"], "blocked", "{json}");
        assert_eq!(json["reason"], "dependency_open", "{json}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_listing_says_its_life_and_a_private_one_is_never_shown_from_the_cache() {
    for private in [false, true] {
        let mut eras = Eras::new(MODERN);
        eras.private = private;
        let up = serve(move || eras.clone()).await;
        let (gateway, url) = gateway(&up).await;
        let (_, client) = modern_client(&url).await;
        // Asked on the wire each time (rmcp's client keeps a cache of its own, by `ttlMs`).
        let list = || async {
            let answer = client
                .peer()
                .send_request(ClientRequest::ListToolsRequest(Default::default()))
                .await
                .unwrap();
            let ServerResult::ListToolsResult(listed) = answer else {
                panic!("{answer:?}");
            };
            listed
        };
        let fresh = list().await;
        assert_eq!(fresh.tools.len(), 5, "{fresh:?}");
        let scope = if private {
            rmcp::model::CacheScope::Private
        } else {
            rmcp::model::CacheScope::Public
        };
        assert_eq!(fresh.cache_scope, Some(scope));
        assert!(fresh.ttl_ms.is_some_and(|ttl| ttl <= 60_000), "{fresh:?}");

        // Open: the upstream is not asked; its last good listing is served, public, with what
        // is left of its minute; a private one was another request's, and is not shown.
        gateway.registry().get("up").force_open();
        let kept = list().await;
        if private {
            assert!(kept.tools.is_empty(), "{kept:?}");
        } else {
            assert_eq!(kept.tools.len(), 5, "{kept:?}");
            assert_eq!(kept.cache_scope, Some(scope));
            assert!(
                kept.ttl_ms.is_some_and(|ttl| ttl <= fresh.ttl_ms.unwrap()),
                "{kept:?}"
            );
        }
    }
}

/// The conformance upstream (example `conformance_upstream`, built by `cargo test` beside this
/// binary) as a stdio child speaking 2025-11-25 only.
fn legacy_stdio_upstream() -> UpstreamConfig {
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples").join("conformance_upstream"))
        .filter(|path| path.exists())
        .expect(
            "the conformance upstream is built with the tests; build it alone with \
             `cargo build -p toolbreaker-gateway --example conformance_upstream`",
        );
    UpstreamConfig {
        name: "up".into(),
        prefix: String::new(),
        transport: Transport::Stdio {
            command: example.to_string_lossy().into_owned(),
            args: vec!["--stdio".into(), "--era".into(), "2025-11-25".into()],
            env: vec![],
            cwd: None,
        },
        allow: None,
        deny: vec![],
        per_call_timeout: Duration::from_secs(10),
        max_call: toolbreaker_gateway::config::MAX_CALL,
        classifier: Default::default(),
        tools: vec![],
        era: Default::default(),
        required: false,
        redaction: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_samples_through_a_2025_stdio_upstream() {
    let config =
        toolbreaker::Config::new(3, Duration::from_secs(60), Duration::from_secs(5)).unwrap();
    let gateway = Gateway::new("gw", Registry::new(config), Duration::from_secs(30));
    gateway
        .start(GatewayConfig {
            upstreams: vec![legacy_stdio_upstream()],
            registry: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(era_of(&gateway), "2025-11-25", "{}", gateway.status());
    let g = gateway.clone();
    let url = serve(move || g.session()).await;
    let (_, client) = modern_client(&url).await;
    let arguments = serde_json::Map::from_iter([("prompt".to_owned(), "hi".into())]);
    let sampled = client
        .call_tool(CallToolRequestParams::new("test_sampling").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(text(&sampled), "LLM response: sampled", "{sampled:?}");
    gateway.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_is_spoken_to_in_the_era_its_config_names() {
    // Both eras on offer: `era = "2025-11-25"` opens a session, and a 2026 client's sample is
    // still asked of it as `input_required`.
    let both = Eras::new(common::BOTH);
    let up = serve(move || both.clone()).await;
    let (gateway, url) = gateway_in(&up, Era::Sessions).await;
    assert_eq!(era_of(&gateway), "2025-11-25", "{}", gateway.status());
    let (_, client) = modern_client(&url).await;
    let asked = client
        .call_tool(CallToolRequestParams::new("ask"))
        .await
        .unwrap();
    assert_eq!(text(&asked), "sampled", "{asked:?}");

    // `era = "2026-07-28"` before a server of sessions only: never connected in another era.
    let legacy = Eras::new(LEGACY);
    let up = serve(move || legacy.clone()).await;
    let (gateway, _) = gateway_in(&up, Era::Stateless).await;
    let status = gateway.status();
    assert_eq!(status["upstreams"][0]["connected"], false, "{status}");
    assert_eq!(
        status["upstreams"][0]["era"],
        serde_json::Value::Null,
        "{status}"
    );
    gateway.shutdown();
}

/// Serves `server` on `listener` until `stop` is cancelled (its sessions ended too).
async fn serve_until<S: ServerHandler + Clone + Send + Sync + 'static>(
    listener: tokio::net::TcpListener,
    server: S,
    stop: tokio_util::sync::CancellationToken,
) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.clone());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
            .unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_replaced_by_one_of_the_other_era_is_found_out_again() {
    for (before, after, now) in [
        (LEGACY, MODERN, "2026-07-28"),
        (MODERN, LEGACY, "2025-11-25"),
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let first = tokio_util::sync::CancellationToken::new();
        serve_until(listener, Eras::new(before), first.clone()).await;
        let (gateway, url) = gateway(&format!("http://{addr}/mcp")).await;
        let (_, client) = modern_client(&url).await;
        let echo = || CallToolRequestParams::new("echo");
        assert_ne!(client.call_tool(echo()).await.unwrap().is_error, Some(true));

        // The same address, another server, of the other era.
        first.cancel();
        // The old listener is closed once its serving task sees the cancellation: bounded.
        let mut listener = None;
        for _ in 0..10_000 {
            if let Ok(bound) = tokio::net::TcpListener::bind(addr).await {
                listener = Some(bound);
                break;
            }
            tokio::task::yield_now().await;
        }
        let listener = listener.expect("the address is free again");
        serve_until(listener, Eras::new(after), Default::default()).await;
        // The first call after finds the connection stale (a lost connection, as a restart
        // is); a call after that is served in the new era. Bounded: a few calls at most.
        let mut served = None;
        for _ in 0..5 {
            let answer = client.call_tool(echo()).await.unwrap();
            if answer.is_error != Some(true) {
                served = Some(answer);
                break;
            }
            let json = answer.structured_content.clone().unwrap_or_default();
            assert_ne!(json["error"], "invalid request", "{json}");
        }
        assert!(served.is_some(), "never served again: {}", gateway.status());
        assert_eq!(era_of(&gateway), now, "{}", gateway.status());
        gateway.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_after_a_2026_clients_answer_reaches_its_retry() {
    let eras = Eras::new(LEGACY);
    let up = serve(move || eras.clone()).await;
    let (_gateway, url) = gateway(&up).await;
    let (watcher, client) = modern_client(&url).await;
    let asked = client
        .call_tool(CallToolRequestParams::new("ask"))
        .await
        .unwrap();
    assert_eq!(text(&asked), "sampled", "{asked:?}");
    // The upstream's progress before it asked (0.5) went with the first request; its progress
    // once answered (1.0) goes with the retry, the request the client is waiting on.
    let reported = within("the progress after the answer", async {
        loop {
            let next = watcher.progressed.notified();
            if watcher.progress.lock().unwrap().contains(&1.0) {
                return watcher.progress.lock().unwrap().clone();
            }
            next.await;
        }
    })
    .await;
    assert!(reported.contains(&1.0), "{reported:?}");
}
