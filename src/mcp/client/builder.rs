//! [`GuardedClientBuilder`]: a [`GuardedClient`]'s guard, classification and breakers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};

use crate::agent::{RetryPolicy, ToolGuard};
use crate::config::{ConfigError, Problem, duration_field, name_field};
use crate::mcp::classify::McpClassifier;
use crate::mcp::client::{Connection, ErrorWords, GuardedClient, Inner, Route, rejection_words};
use crate::registry::Registry;

/// Builds a [`GuardedClient`]; from [`GuardedClient::builder`] (or
/// [`GuardedClient::builder_caller_keeps_alive`]).
#[derive(Debug)]
#[must_use]
pub struct GuardedClientBuilder<'r> {
    server: String,
    peer: Peer<RoleClient>,
    connection: Option<Connection>,
    registry: &'r Registry,
    guard: ToolGuard,
    words: ErrorWords,
    classifier: McpClassifier,
    tool_breakers: Vec<String>,
    tool_classifiers: Vec<(String, McpClassifier)>,
}

/// The default guard: attempts of at most 10 s, no retries (a tool call may have effects; see
/// [`GuardedClientBuilder::guard`]).
const DEFAULT_PER_CALL_TIMEOUT: Duration = Duration::from_secs(10);

impl<'r> GuardedClientBuilder<'r> {
    /// A builder with the defaults: for `peer`, and the service it belongs to if the client is
    /// to own it.
    pub(super) fn new(
        server: String,
        peer: Peer<RoleClient>,
        connection: Option<Connection>,
        registry: &'r Registry,
    ) -> Self {
        GuardedClientBuilder {
            server,
            peer,
            connection,
            registry,
            guard: ToolGuard::new(DEFAULT_PER_CALL_TIMEOUT, RetryPolicy::none()),
            words: rejection_words,
            classifier: McpClassifier::new(),
            tool_breakers: Vec::new(),
            tool_classifiers: Vec::new(),
        }
    }

    /// The pipeline's per-call timeout and retry policy (default: 10 s, no retries). The words
    /// shown for an error stay this builder's ([`error_text`](Self::error_text)).
    ///
    /// Retries are off by default because a tool call may have effects and a failed attempt may
    /// still have run: a timeout, an internal error or a connection cut mid-answer all come after
    /// the server had the request, and a retry runs the tool again. Give a [`RetryPolicy`] to a
    /// server whose tools are safe to repeat (read-only, or idempotent: MCP's `readOnlyHint` and
    /// `idempotentHint` annotations say so, as hints).
    pub fn guard(mut self, guard: ToolGuard) -> Self {
        self.guard = guard;
        self
    }

    /// What the model reads of an error besides its kind: [`rejection_words`] by default;
    /// `|_| None` shows nothing but the kind and status.
    pub fn error_text(mut self, words: ErrorWords) -> Self {
        self.words = words;
        self
    }

    /// The server's classification (default: [`McpClassifier::new`]), for every tool without
    /// one of its own.
    pub fn classifier(mut self, classifier: McpClassifier) -> Self {
        self.classifier = classifier;
        self
    }

    /// `tool` gets a breaker of its own: the registry's breaker named `server.tool`, so one
    /// tool's outage leaves the server's other tools open to calls.
    pub fn tool_breaker(mut self, tool: impl Into<String>) -> Self {
        self.tool_breakers.push(tool.into());
        self
    }

    /// `tool`'s own classification, in place of the server's: for a tool whose `isError`
    /// answers relay its own upstream's outage, say.
    pub fn tool_classifier(mut self, tool: impl Into<String>, classifier: McpClassifier) -> Self {
        self.tool_classifiers.push((tool.into(), classifier));
        self
    }

    /// The client.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming `server` ([`Problem::Empty`]) when the server's name is empty or
    /// holds a `.`, whitespace or a control character (a gateway names tools `server.tool`), or
    /// `per_call_timeout` when the guard's is zero or too long.
    pub fn build(self) -> Result<GuardedClient, ConfigError> {
        // A gateway names tools `server.tool`: the name holds no `.` either.
        name_field("server", &self.server)?;
        if self.server.contains('.') {
            return Err(ConfigError::new("server", Problem::Empty));
        }
        duration_field("per_call_timeout", self.guard.per_call_timeout())?;
        let server_route = Route {
            breaker: self.registry.get(&self.server),
            classifier: self.classifier,
        };
        let mut tools: HashMap<String, Route> = HashMap::new();
        for tool in self.tool_breakers {
            let breaker = self.registry.get(&format!("{}.{tool}", self.server));
            tools.insert(
                tool,
                Route {
                    breaker,
                    classifier: server_route.classifier.clone(),
                },
            );
        }
        for (tool, classifier) in self.tool_classifiers {
            tools
                .entry(tool)
                .or_insert_with(|| server_route.clone())
                .classifier = classifier;
        }
        Ok(GuardedClient {
            inner: Arc::new(Inner {
                server: self.server,
                peer: self.peer,
                _connection: self.connection,
                server_route,
                tools,
                guard: self.guard.error_text(self.words),
            }),
        })
    }
}
