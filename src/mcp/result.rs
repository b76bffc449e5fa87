//! What the model reads of a guarded MCP call: a [`ToolResult`] as a `CallToolResult`.

use rmcp::model::{CallToolResult, ContentBlock};

use crate::agent::ToolResult;

/// The `CallToolResult` the model receives for a guarded call.
///
/// An answer (`ToolResult::Ok`) is the server's own `CallToolResult`, passed on unchanged,
/// `isError` answers included. Every other result, one the breaker blocked, the run stopped or
/// the call failed, becomes a result the model can act on:
///
/// - `isError: true`;
/// - one text content: the model-facing `message` (what happened, what to do instead, and when
///   the tool may be tried again);
/// - `structuredContent`: the same [`ToolResult`] as JSON (`status`, `dependency`, `reason`,
///   `retry_after_ms`, `message`, and the pipeline's `attempts` and `elapsed_ms`).
///
/// No error's text is in either unless the guard was told to show it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use rmcp::model::CallToolResult;
/// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, ToolResult};
///
/// let (clock, _mock) = toolbreaker::quanta::Clock::mock();
/// let search = CircuitBreaker::builder().name("search").failure_threshold(1)
///     .cooldown(Duration::from_millis(1840)).clock(clock).build()?;
/// search.try_acquire().unwrap().record(Outcome::Failure(FailureKind::Connect));
/// let blocked = ToolResult::<CallToolResult>::blocked(search.name(), search.try_acquire().unwrap_err());
///
/// let seen = CallToolResult::from(blocked);
/// assert_eq!(seen.is_error, Some(true));
/// assert_eq!(seen.content.len(), 1);
/// let text = seen.content[0].as_text().unwrap().text.as_str();
/// assert!(text.starts_with("search is temporarily unavailable; do not call it again now."));
/// let json = seen.structured_content.unwrap();
/// assert_eq!(json["status"], "blocked");
/// assert_eq!(json["dependency"], "search");
/// assert_eq!(json["reason"], "dependency_open");
/// assert_eq!(json["retry_after_ms"], 1840);
/// assert_eq!(json["message"], text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl From<ToolResult<CallToolResult>> for CallToolResult {
    fn from(result: ToolResult<CallToolResult>) -> Self {
        let message = match &result {
            ToolResult::Ok { .. } => {
                let ToolResult::Ok { value, .. } = result else {
                    unreachable!()
                };
                return value;
            }
            ToolResult::Blocked { message, .. }
            | ToolResult::Failed { message, .. }
            | ToolResult::Stopped { message, .. } => message.clone(),
        };
        // Serialising a result that is not `Ok` never serialises the answer type; the JSON is
        // strings and numbers only, which cannot fail.
        let json = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
        let mut seen = CallToolResult::error(vec![ContentBlock::text(message)]);
        seen.structured_content = Some(json);
        seen
    }
}
