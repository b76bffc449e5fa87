//! [`McpClassifier`]: what an MCP tool call's result says about the server's health.

use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ErrorCode};

use crate::classify::http::{classify_status, parse_retry_after};
use crate::classify::{Classify, FailureKind, Outcome};

/// JSON-RPC's internal error (JSON-RPC 2.0 §5.1): the server failed to handle a valid request.
const INTERNAL_ERROR: i32 = ErrorCode::INTERNAL_ERROR.0;
/// The TypeScript MCP SDK's `ErrorCode.ConnectionClosed`, in JSON-RPC's server-error range.
const CONNECTION_CLOSED: i32 = -32000;
/// The TypeScript MCP SDK's `ErrorCode.RequestTimeout`, in JSON-RPC's server-error range.
const REQUEST_TIMEOUT: i32 = -32001;

/// The classification of an MCP `tools/call`: from `Result<CallToolResult, ServiceError>` (what
/// rmcp's `Peer::call_tool` returns) to an [`Outcome`].
///
/// Only what says the *server* is unhealthy counts. An answer with `isError: true` is the tool's
/// own word (the server is up, it ran the tool, the tool said no), so by default it is
/// [`Ignored`](Outcome::Ignored): agent runtimes that counted those parked healthy servers.
///
/// | result | outcome by default |
/// |---|---|
/// | a `CallToolResult` without `isError: true` | `Success` |
/// | a `CallToolResult` with `isError: true` (the tool answered) | `Ignored` ([`tool_error`](Self::tool_error) changes it) |
/// | transport closed (`ServiceError::TransportClosed`) | `Failure(Connect)` |
/// | transport failed to send or receive (`TransportSend`): refused, reset, broken stream | `Failure(Connect)` |
/// | … an HTTP status from a Streamable HTTP server: 408 / 504, 429 (with its `Retry-After`), other 5xx | `Failure(Timeout)`, `Failure(RateLimited)`, `Failure(Unavailable)` |
/// | … an answer that is not MCP (not JSON-RPC, a wrong content type, a broken event stream, over rmcp's size limit) | `Failure(Other)` |
/// | … an HTTP 401 / 403 (the transport's auth challenge), 404 or any other 4xx | `Ignored` |
/// | the request timed out (`ServiceError::Timeout`, rmcp's own request timeout) | `Failure(Timeout)` |
/// | an answer of the wrong shape (`UnexpectedResponse`) | `Failure(Other)` |
/// | JSON-RPC error `-32603` internal error | `Failure(Unavailable)` |
/// | JSON-RPC error `-32000` connection closed, `-32001` request timeout | `Failure(Unavailable)`, `Failure(Timeout)` |
/// | JSON-RPC error `-32602` invalid params (rmcp's answer to an unknown tool too), `-32601` method not found, `-32600` invalid request, and every other code | `Ignored` ([`code`](Self::code) changes any) |
/// | cancelled, a lagging subscription, too many input rounds | `Ignored` |
///
/// `-32603` is JSON-RPC 2.0's own "internal error" (§5.1). JSON-RPC leaves `-32000` to `-32099`
/// to implementations; `-32000` and `-32001` are what the TypeScript MCP SDK sends for a closed
/// connection and a request timeout, so they count; the range's other codes (MCP's `-32002`
/// resource not found among them) say nothing about health and do not. The HTTP statuses follow
/// [`classify_status`]. A call the caller cancelled, or cut short at its run's deadline, is not
/// classified at all: nothing is recorded.
///
/// # Examples
///
/// ```
/// use rmcp::{ServiceError, model::{CallToolResult, ContentBlock, ErrorData}};
/// use toolbreaker::{Classify, FailureKind, Outcome, mcp::McpClassifier};
///
/// let classify = McpClassifier::new();
/// let answered = Ok(CallToolResult::error(vec![ContentBlock::text("no such city")]));
/// assert_eq!(classify.classify(&answered), Outcome::Ignored);
/// let closed = Err(ServiceError::TransportClosed);
/// assert_eq!(classify.classify(&closed), Outcome::Failure(FailureKind::Connect));
/// let bad_args = Err(ServiceError::McpError(ErrorData::invalid_params("`q` is required", None)));
/// assert_eq!(classify.classify(&bad_args), Outcome::Ignored);
///
/// // A tool whose error text relays its own upstream's 503: its `isError` answers count.
/// let relays = McpClassifier::new().tool_error(Outcome::Failure(FailureKind::Unavailable));
/// assert_eq!(relays.classify(&answered), Outcome::Failure(FailureKind::Unavailable));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpClassifier {
    tool_error: Outcome,
    codes: Vec<(i32, Outcome)>,
}

impl Default for McpClassifier {
    fn default() -> Self {
        McpClassifier::new()
    }
}

impl McpClassifier {
    /// The table above, with no overrides.
    pub fn new() -> Self {
        McpClassifier {
            tool_error: Outcome::Ignored,
            codes: Vec::new(),
        }
    }

    /// What an answer with `isError: true` counts as (`Ignored` by default): for a tool whose
    /// error answers relay an outage of what it calls, `Outcome::Failure(FailureKind::Unavailable)`.
    pub fn tool_error(mut self, outcome: Outcome) -> Self {
        self.tool_error = outcome;
        self
    }

    /// What a JSON-RPC error with `code` counts as, in place of the table's; the last override
    /// given for a code wins.
    pub fn code(mut self, code: i32, outcome: Outcome) -> Self {
        self.codes.retain(|(c, _)| *c != code);
        self.codes.push((code, outcome));
        self
    }

    /// The outcome of an answer.
    pub fn answer(&self, result: &CallToolResult) -> Outcome {
        if result.is_error == Some(true) {
            self.tool_error
        } else {
            Outcome::Success
        }
    }

    /// The HTTP status `error` carries: the status a Streamable HTTP transport's request
    /// failed with (a 503 in front of the server, a 429), `None` for any other error. What
    /// [`Classify::http_status`] reports for an `Err`, for a caller whose answer type is not
    /// [`CallToolResult`].
    pub fn error_status(&self, error: &ServiceError) -> Option<u16> {
        match transport_answer(error) {
            Some(Answered::Status(status)) => Some(status.status),
            _ => None,
        }
    }

    /// The outcome of an error.
    pub fn error(&self, error: &ServiceError) -> Outcome {
        match error {
            ServiceError::McpError(data) => {
                let code = data.code.0;
                if let Some((_, outcome)) = self.codes.iter().find(|(c, _)| *c == code) {
                    return *outcome;
                }
                match code {
                    INTERNAL_ERROR | CONNECTION_CLOSED => {
                        Outcome::Failure(FailureKind::Unavailable)
                    }
                    REQUEST_TIMEOUT => Outcome::Failure(FailureKind::Timeout),
                    _ => Outcome::Ignored,
                }
            }
            ServiceError::TransportSend(_) => {
                if error.auth_challenge().is_some() {
                    return Outcome::Ignored;
                }
                match transport_answer(error) {
                    Some(Answered::Status(status)) => status.outcome(),
                    // The server answered, but not in MCP: it is up and broken.
                    Some(Answered::NotMcp) => Outcome::Failure(FailureKind::Other),
                    None => Outcome::Failure(FailureKind::Connect),
                }
            }
            ServiceError::TransportClosed => Outcome::Failure(FailureKind::Connect),
            ServiceError::Timeout { .. } => Outcome::Failure(FailureKind::Timeout),
            ServiceError::UnexpectedResponse => Outcome::Failure(FailureKind::Other),
            // Cancelled, a lagging subscription, too many input rounds, and whatever later
            // versions of rmcp add: none says the server is unhealthy.
            _ => Outcome::Ignored,
        }
    }
}

impl Classify<CallToolResult, ServiceError> for McpClassifier {
    fn classify(&self, result: &Result<CallToolResult, ServiceError>) -> Outcome {
        match result {
            Ok(answer) => self.answer(answer),
            Err(error) => self.error(error),
        }
    }

    /// The HTTP status a Streamable HTTP transport failed with, if it did.
    fn http_status(&self, result: &Result<CallToolResult, ServiceError>) -> Option<u16> {
        result
            .as_ref()
            .err()
            .and_then(|error| self.error_status(error))
    }
}

/// The HTTP status a Streamable HTTP transport failed with, and its raw `Retry-After`.
struct TransportStatus<'a> {
    status: u16,
    retry_after: Option<&'a str>,
}

impl TransportStatus<'_> {
    /// By [`classify_status`], a 429 with its `Retry-After` hint.
    fn outcome(&self) -> Outcome {
        let Ok(status) = http::StatusCode::from_u16(self.status) else {
            // Not a status code at all: a broken transport, whatever it claims.
            return Outcome::Failure(FailureKind::Connect);
        };
        match classify_status(status) {
            Outcome::Failure(FailureKind::RateLimited { .. }) => {
                Outcome::Failure(FailureKind::RateLimited {
                    retry_after: self
                        .retry_after
                        .and_then(|v| parse_retry_after(v, crate::time::wall_now())),
                })
            }
            // A 2xx or 3xx that still failed the transport: its body was not MCP.
            Outcome::Success => Outcome::Failure(FailureKind::Other),
            other => other,
        }
    }
}

type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;
type HttpStatusError = rmcp::transport::streamable_http_client::HttpStatusError;

/// What a Streamable HTTP server answered, when a transport error says it answered at all.
enum Answered<'a> {
    /// An HTTP status that is not 2xx.
    Status(TransportStatus<'a>),
    /// A body that is not MCP: not JSON-RPC, an unexpected content type, a broken event
    /// stream, an answer over rmcp's size limit.
    NotMcp,
}

/// What the server answered, found somewhere in a transport error's chain: rmcp's status error
/// (429 and 5xx), a `reqwest` status or decoding error, or rmcp's own words for an answer it
/// could not take ("unexpected server response", which starts `HTTP NNN` for any other status
/// of a POST: how rmcp's reqwest client reports a 404, say). `None`: nothing says the server
/// answered (refused, reset, closed).
fn transport_answer(error: &ServiceError) -> Option<Answered<'_>> {
    let ServiceError::TransportSend(error) = error else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(found) = answer_of(current) {
            return Some(found);
        }
        source = current.source();
    }
    None
}

fn answer_of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<Answered<'a>> {
    let from_status = |s: &'a HttpStatusError| {
        Answered::Status(TransportStatus {
            status: s.status,
            retry_after: s.retry_after.as_deref(),
        })
    };
    let from_reqwest = |e: &reqwest::Error| match e.status() {
        Some(s) => Some(Answered::Status(TransportStatus {
            status: s.as_u16(),
            retry_after: None,
        })),
        None if e.is_decode() => Some(Answered::NotMcp),
        None => None,
    };
    if let Some(status) = error.downcast_ref::<HttpStatusError>() {
        return Some(from_status(status));
    }
    if let Some(e) = error.downcast_ref::<reqwest::Error>() {
        return from_reqwest(e);
    }
    match error.downcast_ref::<HttpError>()? {
        HttpError::HttpStatus(status) => Some(from_status(status)),
        HttpError::Client(e) => from_reqwest(e),
        HttpError::UnexpectedServerResponse(text) => {
            let status = text
                .strip_prefix("HTTP ")
                .and_then(|t| t.get(..3))
                .and_then(|code| code.parse().ok())
                .filter(|s| (100..=999).contains(s));
            Some(match status {
                Some(status) => Answered::Status(TransportStatus {
                    status,
                    retry_after: None,
                }),
                None => Answered::NotMcp,
            })
        }
        HttpError::UnexpectedContentType(_)
        | HttpError::ResponseBodyTooLarge { .. }
        | HttpError::Sse(_) => Some(Answered::NotMcp),
        _ => None,
    }
}

/// A borrowed classifier classifies as the classifier does (a client keeps one per route).
impl Classify<CallToolResult, ServiceError> for &McpClassifier {
    fn classify(&self, result: &Result<CallToolResult, ServiceError>) -> Outcome {
        (**self).classify(result)
    }

    fn http_status(&self, result: &Result<CallToolResult, ServiceError>) -> Option<u16> {
        (**self).http_status(result)
    }
}
