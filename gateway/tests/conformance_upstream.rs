//! The conformance upstream (example `conformance_upstream`, its modules compiled in here) over
//! real Streamable HTTP on a loopback port, with rmcp's own client: what the gateway's upstream
//! connection sees of it, the conformance suite aside.

// The example's modules carry what only its `main` uses (stdio serving).
#![allow(dead_code)]
// Sampling is deprecated by rmcp after protocol 2025-11-25 (SEP-2577); the suite's scenarios
// and the gateway's clients use it, so the test client answers it.
#![allow(deprecated)]

#[path = "../examples/conformance_upstream/catalog.rs"]
mod catalog;
#[path = "../examples/conformance_upstream/http.rs"]
mod http;
#[path = "../examples/conformance_upstream/server.rs"]
mod server;
#[path = "../examples/conformance_upstream/sessions.rs"]
mod sessions;

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The longest a test waits for an event before failing.
const WAIT: Duration = Duration::from_secs(20);

/// A client that can sample (it answers "sampled: PROMPT") and passes on progress.
struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let config = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "conformance-upstream-test", "version": "0"}
        });
        serde_json::from_value(config).unwrap()
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&params.messages).unwrap();
        let prompt = asked[0]["content"]["text"].as_str().unwrap_or_default();
        let answer = json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("sampled: {prompt}")},
            "model": "test-model",
            "stopReason": "endTurn"
        });
        Ok(serde_json::from_value(answer).unwrap())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

/// The upstream on a loopback port; its URL, and the token that ends it.
async fn upstream() -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (router, sessions_end) = http::router(addr, None);
    let stop = sessions_end.clone();
    tokio::spawn(async move {
        let shutdown = async move { stop.cancelled().await };
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
    });
    (format!("http://{addr}/mcp"), sessions_end)
}

/// A connected client, and where its progress notifications arrive.
async fn connect(
    url: &str,
) -> (
    RunningService<RoleClient, Client>,
    mpsc::UnboundedReceiver<ProgressNotificationParam>,
) {
    let (progress, arrived) = mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = tokio::time::timeout(WAIT, Client { progress }.serve(transport))
        .await
        .expect("initialized within the wait")
        .expect("initialized");
    (client, arrived)
}

/// Calls `tool` with `params` (wire JSON: `arguments`, `_meta`); the result as wire JSON.
async fn call(client: &RunningService<RoleClient, Client>, tool: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!(tool);
    let params: CallToolRequestParams = serde_json::from_value(params).unwrap();
    let result: CallToolResult = tokio::time::timeout(WAIT, client.peer().call_tool(params))
        .await
        .expect("answered within the wait")
        .expect("a result");
    serde_json::to_value(result).unwrap()
}

#[tokio::test]
async fn lists_every_tool_of_the_scenarios_with_the_2020_12_schema_kept() {
    let (url, end) = upstream().await;
    let (client, _) = connect(&url).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for expected in [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_error_handling",
        "test_tool_with_progress",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "test_reconnection",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let tool = tools
        .iter()
        .find(|t| t.name == "json_schema_2020_12_tool")
        .unwrap();
    let schema = Value::Object((*tool.input_schema).clone());
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    client.cancel().await.unwrap();
    end.cancel();
}

#[tokio::test]
async fn reports_progress_in_order_under_one_token() {
    let (url, end) = upstream().await;
    let (client, mut arrived) = connect(&url).await;
    let params = json!({"arguments": {}, "_meta": {"progressToken": "p-1"}});
    let result = call(&client, "test_tool_with_progress", params).await;
    assert_ne!(result["isError"], true, "{result}");
    // rmcp's client sends a token of its own in place of the caller's (`Peer::send_request`
    // sets one on every request): what matters here is that all three carry the one sent.
    let mut seen = Vec::new();
    let mut tokens = Vec::new();
    while seen.len() < 3 {
        let update = tokio::time::timeout(WAIT, arrived.recv()).await;
        let update = update.expect("3 updates within the wait").expect("open");
        assert_eq!(update.total, Some(100.0));
        tokens.push(update.progress_token);
        seen.push(update.progress);
    }
    assert_eq!(seen, [0.0, 50.0, 100.0]);
    assert!(tokens.iter().all(|token| *token == tokens[0]), "{tokens:?}");
    client.cancel().await.unwrap();
    end.cancel();
}

#[tokio::test]
async fn a_sampling_request_reaches_the_caller_and_its_answer_the_result() {
    let (url, end) = upstream().await;
    let (client, _) = connect(&url).await;
    let params = json!({"arguments": {"prompt": "two words"}});
    let result = call(&client, "test_sampling", params).await;
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(
        result["content"][0]["text"],
        "LLM response: sampled: two words"
    );
    client.cancel().await.unwrap();
    end.cancel();
}

#[tokio::test]
async fn reconnection_answers_after_rmcps_client_resumes_the_closed_stream() {
    let (url, end) = upstream().await;
    let (client, _) = connect(&url).await;
    let result = call(&client, "test_reconnection", json!({"arguments": {}})).await;
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Reconnection test completed"), "{text}");
    assert!(
        text.ends_with("closed mid-call and the client resumed it."),
        "{text}"
    );
    client.cancel().await.unwrap();
    end.cancel();
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params_and_an_unknown_resource_not_found() {
    let (url, end) = upstream().await;
    let (client, _) = connect(&url).await;
    let unknown = CallToolRequestParams::new("no_such_tool");
    let error = client.peer().call_tool(unknown).await.unwrap_err();
    assert!(error.to_string().contains("tool not found"), "{error}");
    let read = rmcp::model::ReadResourceRequestParams::new("test://template/7/data");
    let contents = client.peer().read_resource(read).await.unwrap();
    let contents = serde_json::to_value(contents).unwrap();
    assert!(
        contents["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"id\":\"7\"")
    );
    let missing = rmcp::model::ReadResourceRequestParams::new("test://nothing");
    let error = client.peer().read_resource(missing).await.unwrap_err();
    assert!(error.to_string().contains("-32002") || error.to_string().contains("not found"));
    client.cancel().await.unwrap();
    end.cancel();
}
