//! Breaker control by hand over real HTTP: `POST /admin/breakers/{breaker}/{action}` on a
//! gateway in front of a real upstream, with rmcp clients and reqwest.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::Up;
use reqwest::StatusCode;
use rmcp::model::{CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use tokio::sync::oneshot;
use toolbreaker::Registry;
use toolbreaker_gateway::config::GatewayConfig;
use toolbreaker_gateway::relay::Gateway;
use toolbreaker_gateway::serve::{BearerToken, BreakerControl, HttpApp, HttpOptions, serve};

const TOKEN: &str = "admin-t0ken";
const WAIT: Duration = Duration::from_secs(10);

/// [`Up`], counting the tool calls that reach it.
#[derive(Clone)]
struct Counting {
    up: Up,
    calls: Arc<AtomicUsize>,
}

impl ServerHandler for Counting {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        self.up.get_info()
    }

    async fn list_tools(
        &self,
        params: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.up.list_tools(params, context).await
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.up.call_tool(params, context).await
    }
}

/// A gateway in front of one counting upstream `up` (its tool `ask` with a breaker of its
/// own), served with breaker control; `token`: whether it requires the bearer token.
struct Stack {
    base: String,
    calls: Arc<AtomicUsize>,
    http: reqwest::Client,
    token: bool,
    _stop: oneshot::Sender<()>,
    _gateway: Gateway,
}

impl Stack {
    async fn start(token: bool) -> Stack {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let upstream = common::serve(move || Counting {
            up: Up { crashable: false },
            calls: counted.clone(),
        })
        .await;
        let config = GatewayConfig::from_toml_str(&format!(
            "[upstreams.up]\nurl = \"{upstream}\"\n[upstreams.up.tools.ask]\nfailure_threshold = 5\n"
        ))
        .unwrap();
        let gateway = Gateway::new("gw", Registry::builder().build(), Duration::from_secs(30));
        gateway.start(config).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut options = HttpOptions::new(addr);
        if token {
            options.auth_token = BearerToken::new(TOKEN);
        }
        options.breakers = Some(BreakerControl::of_gateway(gateway.clone()));
        let (sessions, status) = (gateway.clone(), gateway.clone());
        let app = HttpApp::new(
            &options,
            move || Ok(sessions.session()),
            Arc::new(move || status.status()),
            None,
        )
        .unwrap()
        .with_shortcut(gateway.shortcut());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(serve(listener, app, async move {
            let _ = stopped.await;
        }));
        Stack {
            base: format!("http://{addr}"),
            calls,
            http: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            token,
            _stop: stop,
            _gateway: gateway,
        }
    }

    fn with_token(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if self.token {
            request.bearer_auth(TOKEN)
        } else {
            request
        }
    }

    /// `POST /admin/breakers/{breaker}/{action}`: its status and JSON body.
    async fn admin(&self, breaker: &str, action: &str) -> (StatusCode, serde_json::Value) {
        let url = format!("{}/admin/breakers/{breaker}/{action}", self.base);
        let response = self.with_token(self.http.post(url)).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or_default())
    }

    async fn status(&self) -> serde_json::Value {
        let url = format!("{}/status", self.base);
        let response = self.with_token(self.http.get(url)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.unwrap()
    }

    async fn client(&self) -> RunningService<RoleClient, ()> {
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", self.base));
        if self.token {
            config = config.auth_header(TOKEN);
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        tokio::time::timeout(WAIT, ().serve(transport))
            .await
            .expect("the handshake ends within the wait")
            .expect("the handshake succeeds")
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str) -> CallToolResult {
    let params = CallToolRequestParams::new(tool).with_arguments(
        serde_json::json!({"text": "hi"})
            .as_object()
            .unwrap()
            .clone(),
    );
    tokio::time::timeout(WAIT, client.peer().call_tool(params))
        .await
        .expect("the call is answered within the wait")
        .expect("the call is answered")
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test]
async fn an_upstream_isolated_by_hand_is_blocked_at_once_until_reset() {
    let stack = Stack::start(true).await;
    let client = stack.client().await;
    assert_eq!(text_of(&call(&client, "up.echo").await), "hi");
    assert_eq!(stack.calls(), 1);

    let (status, answer) = stack.admin("up", "isolate").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["state"], "open", "{answer}");
    assert_eq!(answer["changed"], true, "{answer}");
    let blocked = call(&client, "up.echo").await;
    assert_eq!(blocked.is_error, Some(true), "{blocked:?}");
    assert_eq!(
        stack.calls(),
        1,
        "a blocked call never reaches the upstream"
    );
    let status = stack.status().await;
    assert_eq!(status["forced"][0]["breaker"], "up", "{status}");
    assert_eq!(status["forced"][0]["by"], "token", "{status}");
    assert_eq!(status["upstreams"][0]["forced"], "isolated", "{status}");
    assert_eq!(status["upstreams"][0]["state"], "open", "{status}");

    let (status, answer) = stack.admin("up", "reset").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["state"], "closed", "{answer}");
    assert_eq!(text_of(&call(&client, "up.echo").await), "hi");
    assert_eq!(stack.calls(), 2);
    let status = stack.status().await;
    assert_eq!(status["forced"], serde_json::json!([]), "{status}");
    assert!(status["upstreams"][0].get("forced").is_none(), "{status}");
}

#[tokio::test]
async fn a_tool_with_its_own_breaker_is_isolated_alone() {
    let stack = Stack::start(true).await;
    let client = stack.client().await;
    let (status, answer) = stack.admin("up.ask", "open").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["action"], "isolate", "open is isolation: {answer}");
    let blocked = call(&client, "up.ask").await;
    assert_eq!(blocked.is_error, Some(true), "{blocked:?}");
    assert_eq!(stack.calls(), 0);
    // The upstream's other tools are on its own breaker, still closed.
    assert_eq!(text_of(&call(&client, "up.echo").await), "hi");
    assert_eq!(stack.calls(), 1);
    let (status, _) = stack.admin("up.ask", "close").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stack.status().await["forced"], serde_json::json!([]));
}

#[tokio::test]
async fn breaker_control_requires_the_token_and_names_what_it_does_not_know() {
    let stack = Stack::start(true).await;
    let url = format!("{}/admin/breakers/up/isolate", stack.base);
    let anonymous = stack.http.post(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let wrong = stack
        .http
        .post(&url)
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(stack.status().await["upstreams"][0]["state"], "closed");

    let (status, answer) = stack.admin("nosuch", "isolate").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains("`nosuch`") && error.contains("up, up.ask"),
        "{error}"
    );
    let (status, answer) = stack.admin("up", "explode").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("`explode`"),
        "{answer}"
    );
    // A browser's request (with Origin) is refused even with the token.
    let browser = stack
        .http
        .post(&url)
        .bearer_auth(TOKEN)
        .header("origin", "http://localhost:3000")
        .send()
        .await
        .unwrap();
    assert_eq!(browser.status(), StatusCode::FORBIDDEN);
    assert_eq!(stack.status().await["upstreams"][0]["state"], "closed");
}

#[tokio::test]
async fn without_a_token_loopback_may_control_breakers() {
    let stack = Stack::start(false).await;
    let (status, answer) = stack.admin("up", "isolate").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(stack.status().await["forced"][0]["by"], "loopback");
    let (status, _) = stack.admin("up", "reset").await;
    assert_eq!(status, StatusCode::OK);
}
