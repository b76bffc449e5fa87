//! The upstream's `ServerHandler`: one per MCP session (its logging level and subscriptions are
//! the session's), sharing the process-wide tool call count and the HTTP sessions.
//!
//! Logging, sampling and `resources/subscribe` are deprecated by rmcp for protocol versions
//! after 2025-11-25 (SEP-2577); the suite speaks 2025-06-18 and 2025-11-25, where they are part
//! of MCP, so this module uses them on purpose.
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CreateMessageRequestParams, ElicitRequestParams, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Request, ServerConfig, ServerRequest,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::catalog::{self, error, text};
use super::sessions::{Closed, RECONNECTION_TOOL, Sessions};

/// The longest `test_reconnection` waits for the client to resume its stream before answering.
const RESUME_WAIT: Duration = Duration::from_secs(10);
/// The pause between a tool's log messages and progress notifications, as the suite asks.
const STEP: Duration = Duration::from_millis(50);
/// Logging levels from least to most severe: a level lets through itself and those after it.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// What every session of the process shares.
pub struct Shared {
    /// Tool calls so far, across sessions.
    calls: AtomicU64,
    /// The process ends at the call after this many (`--crash-after-calls`).
    crash_after: Option<u64>,
    /// The HTTP sessions, for `test_reconnection`; `None` on stdio.
    sessions: Option<Arc<Sessions>>,
}

impl Shared {
    /// Shared state for a process that ends at the call after `crash_after` calls, if given.
    pub fn new(crash_after: Option<u64>, sessions: Option<Arc<Sessions>>) -> Arc<Shared> {
        Arc::new(Shared {
            calls: AtomicU64::new(0),
            crash_after,
            sessions,
        })
    }
}

/// The conformance upstream: a handler for one MCP session.
#[derive(Clone)]
pub struct Upstream {
    shared: Arc<Shared>,
    /// The level `logging/setLevel` set; `None`: every message is sent.
    level: Arc<Mutex<Option<usize>>>,
    /// The URIs this session subscribed to.
    subscriptions: Arc<Mutex<HashSet<String>>>,
}

impl Upstream {
    /// A handler for a new session.
    pub fn new(shared: Arc<Shared>) -> Upstream {
        Upstream {
            shared,
            level: Arc::default(),
            subscriptions: Arc::default(),
        }
    }

    /// Sends a log message at `level` unless the session's level filters it out.
    async fn log(&self, context: &RequestContext<RoleServer>, level: &str, text: &str) {
        let rank = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        if self.level.lock().unwrap().is_some_and(|least| rank < least) {
            return;
        }
        let level: LoggingLevel = from_json(json!(level)).expect("a known level");
        let mut message = LoggingMessageNotificationParam::new(level, json!(text));
        message.logger = Some("conformance-upstream".into());
        let _ = context.peer.notify_logging_message(message).await;
    }

    /// `test_tool_with_logging`: three info messages, [`STEP`] apart.
    async fn with_logging(&self, context: &RequestContext<RoleServer>) -> Value {
        self.log(context, "info", "Tool execution started").await;
        tokio::time::sleep(STEP).await;
        self.log(context, "info", "Tool processing data").await;
        tokio::time::sleep(STEP).await;
        self.log(context, "info", "Tool execution completed").await;
        text("Logging test completed: sent 3 log messages")
    }

    /// `test_tool_with_progress`: progress 0, 50 and 100 of 100, [`STEP`] apart, when the call
    /// carries a progress token.
    async fn with_progress(&self, context: &RequestContext<RoleServer>) -> Value {
        let token = context.meta.get_progress_token();
        for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if step > 0 {
                tokio::time::sleep(STEP).await;
            }
            if let Some(token) = token.clone() {
                let mut update = ProgressNotificationParam::new(token, progress);
                update.total = Some(100.0);
                update.message = Some(format!("step {}", step + 1));
                let _ = context.peer.notify_progress(update).await;
            }
        }
        text("Progress test completed: reported 0, 50 and 100 of 100")
    }

    /// `test_sampling`: asks the client to sample `prompt`; answers what it said.
    async fn sampling(&self, prompt: &str, context: &RequestContext<RoleServer>) -> Value {
        let capable = context
            .peer
            .peer_info()
            .map(|info| info.capabilities.sampling.is_some());
        if capable == Some(false) {
            return error("The client does not support sampling");
        }
        let params: CreateMessageRequestParams = match from_json(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": 100
        })) {
            Ok(params) => params,
            Err(e) => return error(&format!("Cannot build the sampling request: {e}")),
        };
        match context.peer.create_message(params).await {
            Ok(answer) => {
                let answer = serde_json::to_value(answer).unwrap_or_default();
                text(&format!("LLM response: {}", first_text(&answer["content"])))
            }
            Err(e) => error(&format!("Sampling failed: {e}")),
        }
    }

    /// Asks the client for `schema`'s fields (`elicitation/create`); its answer as wire JSON.
    async fn elicit(
        &self,
        message: &str,
        schema: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, String> {
        let capable = context
            .peer
            .peer_info()
            .map(|i| i.capabilities.elicitation.is_some());
        if capable == Some(false) {
            return Err("The client does not support elicitation".into());
        }
        let params: ElicitRequestParams =
            from_json(json!({"message": message, "requestedSchema": schema}))
                .map_err(|e| format!("Cannot build the elicitation request: {e}"))?;
        let request = ServerRequest::ElicitRequest(Request::new(params));
        let answer = context.peer.send_request(request).await;
        let answer = answer.map_err(|e| format!("Elicitation failed: {e}"))?;
        Ok(serde_json::to_value(answer).unwrap_or_default())
    }

    /// `test_reconnection`: closes the call's own event stream, waits (up to [`RESUME_WAIT`])
    /// until the client resumes it, then answers on the resumed stream. Over stdio, or with no
    /// stream to close, it just answers.
    async fn reconnection(&self, context: &RequestContext<RoleServer>) -> Value {
        let session = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .map(|id| -> rmcp::transport::streamable_http_server::SessionId { id.into() });
        let mut how = "No event stream was closed (stdio, or no session).";
        if let (Some(sessions), Some(session)) = (&self.shared.sessions, session)
            && let Closed::Resumed(resumed) =
                sessions.close_stream(&session, &context.id, STEP * 2).await
        {
            let waited = tokio::time::timeout(RESUME_WAIT, resumed.notified()).await;
            sessions.forget(&session);
            how = match waited {
                Ok(()) => "The event stream was closed mid-call and the client resumed it.",
                Err(_) => "The event stream was closed mid-call; the client did not resume it.",
            };
        }
        text(&format!(
            "Reconnection test completed successfully. If you received this, the client \
             properly reconnected after stream closure. {how}"
        ))
    }

    /// The result of tool `name`, as wire JSON; `None` if there is no such tool.
    async fn run_tool(
        &self,
        name: &str,
        argument: impl Fn(&str) -> String,
        context: &RequestContext<RoleServer>,
    ) -> Option<Value> {
        let result = match name {
            "test_simple_text" => text("This is a simple text response for testing."),
            "test_image_content" => json!({"content": [catalog::image()]}),
            "test_audio_content" => json!({"content": [
                {"type": "audio", "data": catalog::WAV, "mimeType": "audio/wav"}
            ]}),
            "test_embedded_resource" => json!({"content": [catalog::embedded_resource()]}),
            "test_multiple_content_types" => json!({"content": catalog::mixed_content()}),
            "test_tool_with_logging" => self.with_logging(context).await,
            "test_error_handling" => error("This tool intentionally returns an error for testing"),
            "test_tool_with_progress" => self.with_progress(context).await,
            "test_sampling" => self.sampling(&argument("prompt"), context).await,
            "test_elicitation" => {
                let schema = catalog::user_schema();
                match self.elicit(&argument("message"), schema, context).await {
                    Ok(answer) => text(&format!("User response: {}", answer_summary(&answer))),
                    Err(e) => error(&e),
                }
            }
            "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
                let (message, schema) = if name.ends_with("defaults") {
                    ("Please review the defaults", catalog::defaults_schema())
                } else {
                    ("Please choose among the options", catalog::enums_schema())
                };
                match self.elicit(message, schema, context).await {
                    Ok(answer) => text(&format!(
                        "Elicitation completed: {}",
                        answer_summary(&answer)
                    )),
                    Err(e) => error(&e),
                }
            }
            "json_schema_2020_12_tool" => text(&format!("Received: {}", argument("name"))),
            RECONNECTION_TOOL => self.reconnection(context).await,
            _ => return None,
        };
        Some(result)
    }
}

/// The first text in a sampling answer's `content` (one block, or a list of them).
fn first_text(content: &Value) -> String {
    let blocks = content
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![content.clone()]);
    let text = blocks.iter().find_map(|block| block["text"].as_str());
    text.unwrap_or_default().to_owned()
}

/// `action=..., content={...}` of an elicitation answer.
fn answer_summary(answer: &Value) -> String {
    let action = answer["action"].as_str().unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    format!("action={action}, content={content}")
}

/// A wire JSON value as one of rmcp's types.
fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// The string argument `key` of `arguments` (empty when absent or not a string).
fn string_argument(arguments: Option<&rmcp::model::JsonObject>, key: &str) -> String {
    let value = arguments.and_then(|arguments| arguments.get(key));
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        let capabilities = from_json(json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {}
        }))
        .expect("valid capabilities");
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "toolbreaker-conformance-upstream",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        from_json(json!({"tools": catalog::tools()}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = self.shared.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.shared.crash_after.is_some_and(|calls| call > calls) {
            eprintln!("conformance upstream: crashing at tool call {call} (--crash-after-calls)");
            std::process::exit(3);
        }
        let arguments = request.arguments.as_ref();
        let argument = |key: &str| string_argument(arguments, key);
        let Some(result) = self.run_tool(&request.name, argument, &context).await else {
            let message = format!("tool not found: {}", request.name);
            return Err(ErrorData::invalid_params(message, None));
        };
        Ok(from_json::<CallToolResult>(result)?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        from_json(json!({"resources": catalog::resources()}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from_json(json!({"resourceTemplates": catalog::resource_templates()}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(contents) = catalog::read(&request.uri) else {
            let data = Some(json!({"uri": request.uri}));
            return Err(ErrorData::resource_not_found("resource not found", data));
        };
        Ok(from_json::<ReadResourceResult>(json!({"contents": contents}))?.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.lock().unwrap().insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.lock().unwrap().remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from_json(json!({"prompts": catalog::prompts()}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = request.arguments.as_ref();
        let argument = |key: &str| string_argument(arguments, key);
        let Some(messages) = catalog::prompt(&request.name, argument) else {
            let message = format!("prompt not found: {}", request.name);
            return Err(ErrorData::invalid_params(message, None));
        };
        Ok(from_json::<GetPromptResult>(json!({"messages": messages}))?.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let wire = serde_json::to_value(&request).unwrap_or_default();
        let of = wire["ref"]["name"].as_str().or(wire["ref"]["uri"].as_str());
        let name = wire["argument"]["name"].as_str().unwrap_or_default();
        let typed = wire["argument"]["value"].as_str().unwrap_or_default();
        let values: Vec<&str> = catalog::completions(of.unwrap_or_default(), name)
            .iter()
            .copied()
            .filter(|value| value.starts_with(typed))
            .collect();
        let total = values.len();
        from_json(json!({"completion": {"values": values, "total": total, "hasMore": false}}))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let wire = serde_json::to_value(request.level).unwrap_or_default();
        let rank = LEVELS.iter().position(|level| wire == *level);
        *self.level.lock().unwrap() = rank;
        Ok(())
    }
}
