//! The upstream's `ServerHandler`, for both MCP eras:
//!
//! - 2025-11-25 (and earlier): one handler per session (`initialize`), whose logging level and
//!   `resources/subscribe` subscriptions are the session's; sampling, elicitation and roots go
//!   to the client in band.
//! - 2026-07-28: stateless, one handler per request, which carries its protocol version,
//!   client capabilities and log level in `_meta`; `server/discover`; questions for the client
//!   as `input_required` results (SEP-2322, [`input`]); `subscriptions/listen` streams instead
//!   of `resources/subscribe`; `resultType` and cache hints on results (rmcp adds the hints).
//!
//! Every handler of the process shares the tool call count, the HTTP sessions, the issued
//! `requestState`s and the change announcements the listen streams relay.
//!
//! Logging, sampling, roots and `resources/subscribe` are deprecated by rmcp for protocol
//! versions after 2025-11-25 (SEP-2577); the suite's 2025-11-25 scenarios use them, so this
//! module does on purpose.
#![allow(deprecated)]

#[path = "input.rs"]
mod input;

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResourceUpdatedNotificationParam, ServerConfig, SetLevelRequestMethod, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::catalog::{self, error, text};
use super::sessions::{Closed, RECONNECTION_TOOL, Sessions};
use input::{Binding, Call, States, Step};

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
/// Change announcements a slow listen stream may fall behind by before it skips some.
const CHANGES: usize = 64;

/// The protocol eras the upstream serves (`--era`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Era {
    /// 2025-11-25 and the versions before it (`initialize`, sessions); 2026-07-28 requests
    /// are refused as an unsupported protocol version.
    #[value(name = "2025-11-25")]
    Sessions,
    /// 2026-07-28 only (stateless); `initialize` is refused, having no version to agree on.
    #[value(name = "2026-07-28")]
    Stateless,
    /// Both.
    #[default]
    #[value(name = "both")]
    Both,
}

impl Era {
    /// The protocol versions it supports.
    pub fn versions(self) -> Cow<'static, [ProtocolVersion]> {
        const STATELESS: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];
        match self {
            Era::Sessions => {
                Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
            }
            Era::Stateless => Cow::Borrowed(STATELESS),
            Era::Both => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }
}

/// A change announced to the `subscriptions/listen` streams.
#[derive(Clone, Debug)]
enum Change {
    Tools,
    Prompts,
    Resource(String),
}

/// What every handler of the process shares.
pub struct Shared {
    /// Tool calls so far, across sessions and requests.
    calls: AtomicU64,
    /// The process ends at the call after this many (`--crash-after-calls`).
    crash_after: Option<u64>,
    /// The HTTP sessions, for `test_reconnection`; `None` on stdio.
    sessions: Option<Arc<Sessions>>,
    /// The eras served.
    era: Era,
    /// The `requestState`s issued (2026-07-28).
    states: States,
    /// Announcements for the listen streams (2026-07-28).
    changes: broadcast::Sender<Change>,
}

impl Shared {
    /// Shared state for a process serving `era` that ends at the call after `crash_after`
    /// calls, if given.
    pub fn new(crash_after: Option<u64>, sessions: Option<Arc<Sessions>>, era: Era) -> Arc<Shared> {
        Arc::new(Shared {
            calls: AtomicU64::new(0),
            crash_after,
            sessions,
            era,
            states: States::default(),
            changes: broadcast::channel(CHANGES).0,
        })
    }
}

/// Whether the request of `context` is on 2026-07-28 or later (stateless).
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The conformance upstream: a handler for one session (2025-11-25) or request (2026-07-28).
#[derive(Clone)]
pub struct Upstream {
    shared: Arc<Shared>,
    /// The level `logging/setLevel` set; `None`: every message is sent.
    level: Arc<Mutex<Option<usize>>>,
    /// The URIs this session subscribed to.
    subscriptions: Arc<Mutex<HashSet<String>>>,
}

impl Upstream {
    /// A handler for a new session or stateless request.
    pub fn new(shared: Arc<Shared>) -> Upstream {
        Upstream {
            shared,
            level: Arc::default(),
            subscriptions: Arc::default(),
        }
    }

    /// Sends a log message at `level` unless it is filtered out: by the session's level
    /// (2025-11-25), or, on 2026-07-28, unless the request's `_meta` asks for this level or a
    /// lower one (no `logLevel`, no messages).
    async fn log(&self, context: &RequestContext<RoleServer>, level: &str, text: &str) {
        let rank = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        let least = if stateless(context) {
            let asked = context.meta.log_level().map(serde_json::to_value);
            let asked = asked.and_then(Result::ok);
            match asked.and_then(|asked| LEVELS.iter().position(|l| asked == *l)) {
                Some(least) => Some(least),
                None => return,
            }
        } else {
            *self.level.lock().unwrap()
        };
        if least.is_some_and(|least| rank < least) {
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

    /// `test_long_operation`: runs `duration` in all, reporting progress (1, 2, ... with no
    /// total) every `every` when the call carries a progress token (never when `every` is 0).
    async fn long_operation(
        &self,
        context: &RequestContext<RoleServer>,
        duration: Duration,
        every: Duration,
    ) -> Value {
        let end = tokio::time::Instant::now() + duration;
        let token = context.meta.get_progress_token();
        let mut step = 0_u32;
        match token {
            Some(token) if !every.is_zero() => loop {
                tokio::time::sleep_until((tokio::time::Instant::now() + every).min(end)).await;
                if tokio::time::Instant::now() >= end {
                    break;
                }
                step += 1;
                let mut update = ProgressNotificationParam::new(token.clone(), f64::from(step));
                update.message = Some(format!("still working ({step})"));
                let _ = context.peer.notify_progress(update).await;
            },
            _ => tokio::time::sleep_until(end).await,
        }
        text(&format!(
            "Long operation completed after {} ms",
            duration.as_millis()
        ))
    }

    /// `test_progress_and_logs`: progress 1 to `count` of `count`, each followed by an info log
    /// message (as the log level allows), with no pause between them.
    async fn progress_and_logs(&self, context: &RequestContext<RoleServer>, count: u32) -> Value {
        let token = context.meta.get_progress_token();
        for step in 1..=count {
            if let Some(token) = token.clone() {
                let mut update = ProgressNotificationParam::new(token, f64::from(step));
                update.total = Some(f64::from(count));
                let _ = context.peer.notify_progress(update).await;
            }
            self.log(context, "info", &format!("step {step} of {count}"))
                .await;
        }
        text(&format!("Reported {count} steps"))
    }

    /// `test_reconnection`: closes the call's own event stream, waits (up to [`RESUME_WAIT`])
    /// until the client resumes it, then answers on the resumed stream. Over stdio, or with no
    /// stream to close (no session: 2026-07-28), it just answers.
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

    /// Announces `change`: to every listen stream that asked for it (2026-07-28), and on a
    /// session to its own client (a resource update only if it subscribed to the resource).
    async fn announce(&self, change: Change, context: &RequestContext<RoleServer>) -> Value {
        let listening = self.shared.changes.send(change.clone()).unwrap_or(0);
        let mut told_session = false;
        if !stateless(context) {
            let sent = match &change {
                Change::Tools => Some(context.peer.notify_tool_list_changed().await),
                Change::Prompts => Some(context.peer.notify_prompt_list_changed().await),
                Change::Resource(uri) if self.subscriptions.lock().unwrap().contains(uri) => {
                    let update = ResourceUpdatedNotificationParam::new(uri.clone());
                    Some(context.peer.notify_resource_updated(update).await)
                }
                Change::Resource(_) => None,
            };
            told_session = sent.is_some_and(|sent| sent.is_ok());
        }
        text(&format!(
            "Announced {change:?} to {listening} listen stream(s){}",
            if told_session {
                " and to this session"
            } else {
                ""
            }
        ))
    }

    /// The next step of a call that asks the client (`asks`): in band on a session, by
    /// `input_required` results on 2026-07-28.
    async fn ask(
        &self,
        call: Call<'_>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Step, ErrorData> {
        if stateless(context) {
            input::retried(&call, context, &self.shared.states)
        } else {
            Ok(input::in_band(&call, context).await)
        }
    }

    /// The result of tool `name` that asks nothing, as wire JSON; `None` if there is no such
    /// tool.
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
            "test_tool_with_logging" | "test_logging_tool" => self.with_logging(context).await,
            "test_error_handling" => error("This tool intentionally returns an error for testing"),
            "test_tool_with_progress" => self.with_progress(context).await,
            "test_long_operation" => {
                let ms = |key: &str, default: u64| {
                    Duration::from_millis(argument(key).parse().unwrap_or(default))
                };
                let (duration, every) = (ms("duration_ms", 1000), ms("every_ms", 0));
                self.long_operation(context, duration, every).await
            }
            "test_progress_and_logs" => {
                let count = argument("count").parse().unwrap_or(5).min(1000);
                self.progress_and_logs(context, count).await
            }
            "test_trigger_tool_change" => self.announce(Change::Tools, context).await,
            "test_trigger_prompt_change" => self.announce(Change::Prompts, context).await,
            "test_trigger_resource_update" => {
                let uri = argument("uri");
                let uri = if uri.is_empty() {
                    "test://watched-resource".to_owned()
                } else {
                    uri
                };
                self.announce(Change::Resource(uri), context).await
            }
            "test_custom_header" => text(&format!("Region: {}", argument("region"))),
            "json_schema_2020_12_tool" => text(&format!("Received: {}", argument("name"))),
            RECONNECTION_TOOL => self.reconnection(context).await,
            _ => return None,
        };
        Some(result)
    }
}

/// A wire JSON value as one of rmcp's types.
fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A wire JSON result (an object) as one of rmcp's result types, marked
/// `resultType: "complete"`: required on 2026-07-28, and dropped by rmcp for older versions.
fn complete_result<T: DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Some(object) = value.as_object_mut() {
        object
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
    }
    from_json(value)
}

/// The string (or number, as its text) argument `key` of `arguments` (empty when absent or
/// of another type).
fn string_argument(arguments: Option<&rmcp::model::JsonObject>, key: &str) -> String {
    match arguments.and_then(|arguments| arguments.get(key)) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => String::new(),
    }
}

/// What a `requestState` issued to a call of `method` is bound to.
fn binding(
    method: &'static str,
    name: &str,
    arguments: Option<&rmcp::model::JsonObject>,
) -> Binding {
    Binding {
        method,
        name: name.to_owned(),
        arguments: arguments.map(|arguments| Value::Object(arguments.clone())),
    }
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

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.shared.era.versions()
    }

    /// The tool `name` as listed, which rmcp's HTTP service checks `Mcp-Param-*` headers
    /// against (SEP-2243).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tools = catalog::tools();
        let tool = tools.as_array()?.iter().find(|tool| tool["name"] == name)?;
        serde_json::from_value(tool.clone()).ok()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        complete_result(json!({"tools": catalog::tools()}))
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
        if let Some(asks) = catalog::tool_asks(&request.name, argument) {
            let call = Call {
                asks: &asks,
                binding: binding("tools/call", &request.name, arguments),
                responses: request.input_responses.as_ref(),
                state: request.request_state.as_deref(),
            };
            let result = match self.ask(call, &context).await? {
                Step::Ask(asking) => return Ok(asking.into()),
                Step::Answered(answers) => catalog::tool_answered(&request.name, &answers),
                Step::Refused(why) => error(&why),
            };
            return Ok(complete_result::<CallToolResult>(result)?.into());
        }
        let Some(result) = self.run_tool(&request.name, argument, &context).await else {
            let message = format!("tool not found: {}", request.name);
            return Err(ErrorData::invalid_params(message, None));
        };
        Ok(complete_result::<CallToolResult>(result)?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        complete_result(json!({"resources": catalog::resources()}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        complete_result(json!({"resourceTemplates": catalog::resource_templates()}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(contents) = catalog::read(&request.uri) else {
            // rmcp answers -32602 instead on 2026-07-28 (SEP-2164).
            let data = Some(json!({"uri": request.uri}));
            return Err(ErrorData::resource_not_found("resource not found", data));
        };
        Ok(complete_result::<ReadResourceResult>(json!({"contents": contents}))?.into())
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

    /// `subscriptions/listen` (2026-07-28): the list changes asked for, and updates of the
    /// resources asked for that exist (rmcp narrows it further to the capabilities).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = requested.clone();
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.retain(|uri| catalog::read(uri).is_some());
        }
        Some(accepted)
    }

    /// Relays the announced changes to the stream until the client ends it; rmcp's sink drops
    /// those its filter did not accept.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.changes.subscribe();
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            let sink = context.sink();
            let _ = match change {
                Ok(Change::Tools) => sink.notify_tool_list_changed().await,
                Ok(Change::Prompts) => sink.notify_prompt_list_changed().await,
                Ok(Change::Resource(uri)) => sink.notify_resource_updated(uri).await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        complete_result(json!({"prompts": catalog::prompts()}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = request.arguments.as_ref();
        if let Some(asks) = catalog::prompt_asks(&request.name) {
            let call = Call {
                asks: &asks,
                binding: binding("prompts/get", &request.name, arguments),
                responses: request.input_responses.as_ref(),
                state: request.request_state.as_deref(),
            };
            let messages = match self.ask(call, &context).await? {
                Step::Ask(asking) => return Ok(asking.into()),
                Step::Answered(answers) => catalog::prompt_answered(&request.name, &answers),
                Step::Refused(why) => return Err(ErrorData::invalid_request(why, None)),
            };
            return Ok(complete_result::<GetPromptResult>(json!({"messages": messages}))?.into());
        }
        let argument = |key: &str| string_argument(arguments, key);
        let Some(messages) = catalog::prompt(&request.name, argument) else {
            let message = format!("prompt not found: {}", request.name);
            return Err(ErrorData::invalid_params(message, None));
        };
        Ok(complete_result::<GetPromptResult>(json!({"messages": messages}))?.into())
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
        complete_result(json!({"completion": {"values": values, "total": total, "hasMore": false}}))
    }

    /// `logging/setLevel`, a session's; 2026-07-28 has no such method (a request asks for its
    /// level in `_meta`).
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if stateless(&context) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        let wire = serde_json::to_value(request.level).unwrap_or_default();
        let rank = LEVELS.iter().position(|level| wire == *level);
        *self.level.lock().unwrap() = rank;
        Ok(())
    }
}
