//! [`ToolGuard::call_tool`]: a call guarded by a breaker that guards more than this one tool,
//! its span naming the tool.

use core::future::Future;

use super::guard::{ErrorText, ToolGuard};
use super::result::ToolResult;
use super::run::AgentRun;
use super::spans::CallSpan;
use super::target::Target;
use crate::breaker::CircuitBreaker;
use crate::classify::Classified;

impl<X> ToolGuard<X> {
    /// [`call`](Self::call) of the tool the model calls `tool`, guarded by `breaker` when that
    /// breaker guards more than this tool (one per MCP server, say): the call's span names the
    /// tool (`gen_ai.tool.name`, `otel.name`), its `dependency` the breaker.
    pub async fn call_tool<T, E, O, Fut>(
        &self,
        run: &AgentRun,
        tool: &str,
        breaker: &CircuitBreaker,
        classify: impl Fn(&Result<T, E>) -> O,
        attempt: impl FnMut() -> Fut,
    ) -> ToolResult<T>
    where
        Fut: Future<Output = Result<T, E>>,
        O: Into<Classified>,
        X: ErrorText<E>,
    {
        let mut attempt = attempt;
        let target = Target::Breaker(breaker);
        let span = CallSpan::named(tool, target.name(), run);
        let attempt = move |_: &str, _last| attempt();
        let call = self.guarded(run, target, classify, attempt, |_| {}, &span);
        let result = span.instrument(call).await;
        span.finish(&result);
        result
    }
}
