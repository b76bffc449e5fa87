//! The direct relay of a `tools/call` to a 2026-07-28 upstream over Streamable HTTP: one POST
//! per call, on the link's pooled HTTP client, its body written from the client's request as
//! raw JSON (the arguments never parsed), its answer's `result` handed back as the raw JSON it
//! came in. No rmcp worker, channel or task stands between the call and the socket.
//!
//! What goes upstream is what rmcp's client would send on the link: the same headers (the
//! config's, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), the same `_meta` (the client's
//! own keys; MCP's per-request keys the gateway's, the client's capabilities), a progress
//! token of the gateway's own, whose notifications put the call's timeout back. What comes
//! back is read as rmcp's client reads it, into the same errors (a status, a JSON-RPC error,
//! a body that is not MCP), so that the classification, `/status` and the model's words are
//! the same on either road.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use futures::{FutureExt as _, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use rmcp::model::{ClientCapabilities, Implementation, ProtocolVersion};
use rmcp::service::{RoleClient, ServiceError};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};
use rmcp::transport::{DynamicTransportError, StreamableHttpClientTransport};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::client_time::ClientTime;

/// The most a JSON answer (or one event of a stream) may hold, as rmcp's client allows.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The most of an error answer's body kept for its words, as rmcp's client keeps.
const MAX_ERROR_BYTES: usize = 64 * 1024;
/// How long the rest of an answered event stream is read for, so that its connection goes
/// back to the pool ([`finish`]); a server that keeps it open longer loses the connection.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A link's direct road to its upstream (a 2026-07-28 server over HTTP).
#[derive(Debug)]
pub struct Direct {
    http: reqwest::Client,
    url: reqwest::Url,
    /// The config's headers, `Accept`, `Content-Type` and `MCP-Protocol-Version`.
    headers: HeaderMap,
    /// The link's revision, as the JSON string of `_meta`'s `protocolVersion`.
    era: String,
    /// The gateway's `clientInfo`, as JSON.
    client_info: String,
    /// The gateway's own capabilities, as JSON: for a client that declares none.
    capabilities: String,
    /// The next request id (and progress token).
    next: AtomicU64,
}

/// What is told of each progress notification about a call: its `params` as sent.
pub type OnProgress<'a> = &'a (dyn Fn(&RawValue) + Send + Sync);

/// One tool call as it goes upstream.
pub struct DirectCall<'a> {
    /// The tool's name on the upstream.
    pub name: &'a str,
    /// The client's `arguments`, as it sent them.
    pub arguments: Option<&'a RawValue>,
    /// The client's own `_meta` keys (MCP's per-request keys taken out), as it sent them.
    pub meta: &'a [(&'a str, &'a RawValue)],
    /// The client's `clientCapabilities`, as it sent them.
    pub capabilities: Option<&'a RawValue>,
    /// Told each progress notification about the call (the client asked for progress).
    pub progress: Option<OnProgress<'a>>,
    /// The client's cancellation of the call (a 2025-11-25 session's `notifications/cancelled`),
    /// if it can send one: the call then ends as on rmcp's road.
    pub cancel: Option<&'a tokio_util::sync::CancellationToken>,
}

/// What the upstream answered.
#[derive(Debug)]
pub enum Answered {
    /// A `result`: the text it is in and where in it.
    Result(RawJson),
    /// A JSON-RPC error.
    Error(rmcp::ErrorData),
}

/// A span of JSON text: a value inside the body or event it came in, not copied out.
#[derive(Debug, Clone)]
pub struct RawJson {
    text: Bytes,
    range: Range<usize>,
}

impl From<Bytes> for RawJson {
    /// All of `text`, one JSON value.
    fn from(text: Bytes) -> RawJson {
        let range = 0..text.len();
        RawJson { text, range }
    }
}

impl RawJson {
    /// The value's JSON text.
    pub fn json(&self) -> &[u8] {
        &self.text[self.range.clone()]
    }

    /// `value`, a slice of `text`, kept without a copy.
    fn within(text: &Bytes, value: &RawValue) -> RawJson {
        let start = value.get().as_ptr() as usize - text.as_ptr() as usize;
        RawJson {
            text: text.clone(),
            range: start..start + value.get().len(),
        }
    }
}

/// One JSON-RPC message from the upstream, its parts as text.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The progress token of a `notifications/progress`.
#[derive(Deserialize)]
struct Progress<'a> {
    #[serde(borrow, rename = "progressToken")]
    token: &'a RawValue,
}

/// Whether `value` can be sent as a header value as it is (SEP-2243: no Base64 needed).
pub fn plain_header_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let edge = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    let printable = bytes.iter().all(|b| (0x20..0x7f).contains(b));
    printable && !bytes.is_empty() && !edge(bytes.first()) && !edge(bytes.last()) && !sentinel
}

impl Direct {
    /// The direct road of a link to `url` in revision `era`, on `http`, with the config's
    /// `headers`; `None` for a revision with sessions (its requests need rmcp's session).
    pub fn new(
        http: reqwest::Client,
        url: &str,
        custom: &HashMap<HeaderName, HeaderValue>,
        era: &ProtocolVersion,
        info: &Implementation,
        capabilities: &ClientCapabilities,
    ) -> Option<Direct> {
        if era.has_initialize() {
            return None;
        }
        let url = reqwest::Url::parse(url).ok()?;
        let mut headers = HeaderMap::new();
        for (name, value) in custom {
            headers.insert(name.clone(), value.clone());
        }
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_str(era.as_str()).ok()?,
        );
        headers.insert(
            HeaderName::from_static("mcp-method"),
            HeaderValue::from_static("tools/call"),
        );
        Some(Direct {
            http,
            url,
            headers,
            era: serde_json::to_string(era.as_str()).ok()?,
            client_info: serde_json::to_string(info).ok()?,
            capabilities: serde_json::to_string(capabilities).ok()?,
            next: AtomicU64::new(1),
        })
    }

    /// The request's body: `tools/call` with `call`'s name, arguments and `_meta`, id `id`.
    fn body(&self, id: u64, call: &DirectCall<'_>) -> Vec<u8> {
        let arguments = call.arguments.map_or(0, |a| a.get().len());
        let mut out = Vec::with_capacity(320 + arguments + self.client_info.len());
        // Writing to a Vec cannot fail; a name always serialises.
        let _ = write!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"#
        );
        let _ = serde_json::to_writer(&mut out, call.name);
        if let Some(arguments) = call.arguments {
            out.extend_from_slice(br#","arguments":"#);
            out.extend_from_slice(arguments.get().as_bytes());
        }
        out.extend_from_slice(br#","_meta":{"#);
        for (key, value) in call.meta {
            let _ = serde_json::to_writer(&mut out, key);
            out.push(b':');
            out.extend_from_slice(value.get().as_bytes());
            out.push(b',');
        }
        let capabilities = call.capabilities.map_or(&*self.capabilities, |c| c.get());
        let _ = write!(
            out,
            r#""io.modelcontextprotocol/protocolVersion":{},"io.modelcontextprotocol/clientInfo":{},"io.modelcontextprotocol/clientCapabilities":{},"progressToken":{id}}}}}}}"#,
            self.era, self.client_info, capabilities
        );
        out
    }

    /// Sends `call` and waits for its answer; each progress notification about it is told to
    /// `time` (it puts the call's timeout back) and to `call.progress`.
    ///
    /// # Errors
    ///
    /// As rmcp's client on the link would fail: `TransportSend` with the HTTP client's error,
    /// the status (with its `Retry-After`), or a body that is not MCP; `McpError` for a
    /// JSON-RPC error sent with a status that is not 2xx; `UnexpectedResponse` for an answer
    /// to another request, or no answer in an event stream that ended.
    pub async fn call(
        &self,
        call: &DirectCall<'_>,
        time: &ClientTime,
    ) -> Result<Answered, ServiceError> {
        // Relaxed: the number only has to be unique, which the read-modify-write gives.
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let name =
            HeaderValue::from_str(call.name).map_err(|_| ServiceError::UnexpectedResponse)?;
        let response = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header("mcp-name", name)
            .body(self.body(id, call))
            .send()
            .await
            .map_err(|e| sent(StreamableHttpError::Client(e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(refused(response).await);
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Err(not_mcp(format!(
                "HTTP {status} with no answer to a request"
            )));
        }
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_ascii_lowercase());
        match kind.as_deref() {
            Some("application/json") => {
                let body = bounded(response, MAX_ANSWER_BYTES).await?;
                let message = serde_json::from_slice::<Message<'_>>(&body)
                    .map_err(|e| not_mcp(format!("the answer is not JSON-RPC: {e}")))?;
                answer_of(&body, &message, id).ok_or(ServiceError::UnexpectedResponse)?
            }
            Some("text/event-stream") => {
                let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
                while let Some(event) = events.next().await {
                    let event = event.map_err(|e| not_mcp(format!("the event stream: {e}")))?;
                    let Some(data) = event.data.filter(|d| !d.is_empty()) else {
                        continue;
                    };
                    if data.len() > MAX_ANSWER_BYTES {
                        return Err(not_mcp("an event over the size limit".to_owned()));
                    }
                    let data = Bytes::from(data);
                    let Ok(message) = serde_json::from_slice::<Message<'_>>(&data) else {
                        return Err(not_mcp("an event that is not JSON-RPC".to_owned()));
                    };
                    if let Some(answer) = answer_of(&data, &message, id) {
                        finish(events);
                        return answer;
                    }
                    about(&message, id, time, call.progress)?;
                }
                Err(not_mcp(
                    "the event stream ended before the answer".to_owned(),
                ))
            }
            other => Err(sent(StreamableHttpError::UnexpectedContentType(
                other.map(str::to_owned),
            ))),
        }
    }
}

/// Reads what is left of an answered event stream (its end, as a rule), so that its
/// connection goes back to the pool rather than closed for a body not read: here when it is
/// here already, else in a task of its own, for at most [`FINISH_WAIT`].
fn finish<S>(mut events: S)
where
    S: futures::Stream + Unpin + Send + 'static,
{
    if let Some(None) = events.next().now_or_never() {
        return;
    }
    tokio::spawn(async move {
        let rest = async { while events.next().await.is_some() {} };
        let _ = tokio::time::timeout(FINISH_WAIT, rest).await;
    });
}

/// The answer `message` gives to request `id`, if it is one: `None` when it is not an answer
/// (a notification); `Err(UnexpectedResponse)` for another request's, or neither a result
/// nor an error.
fn answer_of(
    text: &Bytes,
    message: &Message<'_>,
    id: u64,
) -> Option<Result<Answered, ServiceError>> {
    if message.method.is_some() {
        return None;
    }
    let ours = message
        .id
        .is_some_and(|got| got.get().parse::<u64>() == Ok(id));
    Some(match (message.result, message.error) {
        _ if !ours => Err(ServiceError::UnexpectedResponse),
        (Some(result), None) => Ok(Answered::Result(RawJson::within(text, result))),
        (None, Some(error)) => serde_json::from_str(error.get())
            .map(Answered::Error)
            .map_err(|_| ServiceError::UnexpectedResponse),
        _ => Err(ServiceError::UnexpectedResponse),
    })
}

/// A notification or request in the answer's stream: progress about the call puts its
/// timeout back; a request to the gateway (a 2026-07-28 server asks with `input_required`,
/// never on the stream) fails the call; anything else is not the call's.
fn about(
    message: &Message<'_>,
    id: u64,
    time: &ClientTime,
    tell: Option<OnProgress<'_>>,
) -> Result<(), ServiceError> {
    if message.id.is_some() {
        return Err(ServiceError::UnexpectedResponse);
    }
    if message.method.as_deref() == Some("notifications/progress")
        && let Some(params) = message.params
        && let Ok(progress) = serde_json::from_str::<Progress<'_>>(params.get())
        && progress.token.get().parse::<u64>() == Ok(id)
    {
        time.progressed();
        if let Some(tell) = tell {
            tell(params);
        }
    } else {
        tracing::debug!(method = ?message.method.as_deref().map(crate::redact::shown), "a notification in a tool call's answer stream, not about it: dropped");
    }
    Ok(())
}

/// The body of `response`, up to `limit` bytes.
async fn bounded(response: reqwest::Response, limit: usize) -> Result<Bytes, ServiceError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(not_mcp(format!("an answer over {limit} bytes")));
    }
    let mut chunks = response.bytes_stream();
    let Some(first) = chunks.next().await else {
        return Ok(Bytes::new());
    };
    let first = first.map_err(|e| sent(StreamableHttpError::Client(e)))?;
    let Some(second) = chunks.next().await else {
        return Ok(first);
    };
    let mut whole = first.to_vec();
    let mut next = Some(second);
    while let Some(chunk) = next {
        let chunk = chunk.map_err(|e| sent(StreamableHttpError::Client(e)))?;
        if whole.len() + chunk.len() > limit {
            return Err(not_mcp(format!("an answer over {limit} bytes")));
        }
        whole.extend_from_slice(&chunk);
        next = chunks.next().await;
    }
    Ok(Bytes::from(whole))
}

/// The error of an answer whose status is not 2xx, as rmcp's client makes it: a challenge
/// (401, 403 with `WWW-Authenticate`), a JSON-RPC error in a JSON body, the status with its
/// `Retry-After` (429, 5xx), or the status and the start of its body in words.
async fn refused(response: reqwest::Response) -> ServiceError {
    let status = response.status();
    let headers = response.headers();
    let challenge = headers
        .get(header::WWW_AUTHENTICATE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    match (status, challenge) {
        (StatusCode::UNAUTHORIZED, Some(challenge)) => {
            return sent(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                challenge,
            )));
        }
        (StatusCode::FORBIDDEN, Some(challenge)) => {
            return sent(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(challenge, None),
            ));
        }
        _ => {}
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        });
    // 429 and 5xx: the status, with its `Retry-After` (at most 128 bytes of text).
    let retry_after = headers
        .get(header::RETRY_AFTER)
        .filter(|v| v.len() <= 128)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let with_status =
        (status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()).then(|| {
            let retry_after = retry_after.clone();
            move || {
                sent(StreamableHttpError::HttpStatus(HttpStatusError::new(
                    status.as_u16(),
                    retry_after,
                )))
            }
        });
    let access = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
    if let Some(error) = with_status.clone()
        && (!json || status == StatusCode::TOO_MANY_REQUESTS)
    {
        return error();
    }
    let limit = if json && !access {
        MAX_ANSWER_BYTES
    } else {
        MAX_ERROR_BYTES
    };
    let body = match bounded(response, limit).await {
        Ok(body) => body,
        Err(error) => return with_status.map_or(error, |status| status()),
    };
    if json
        && !access
        && let Ok(message) = serde_json::from_slice::<Message<'_>>(&body)
        && let Some(error) = message.error
        && let Ok(error) = serde_json::from_str::<rmcp::ErrorData>(error.get())
    {
        return ServiceError::McpError(error);
    }
    if let Some(error) = with_status {
        return error();
    }
    let shown = &body[..body.len().min(MAX_ERROR_BYTES)];
    not_mcp(format!("HTTP {status}: {}", String::from_utf8_lossy(shown)))
}

/// An answer that is not MCP, in `words`, as rmcp's client reports one.
fn not_mcp(words: String) -> ServiceError {
    sent(StreamableHttpError::UnexpectedServerResponse(words.into()))
}

/// `error` as the transport error rmcp's client on the link would give.
fn sent(error: StreamableHttpError<reqwest::Error>) -> ServiceError {
    ServiceError::TransportSend(DynamicTransportError::new::<
        StreamableHttpClientTransport<reqwest::Client>,
        RoleClient,
    >(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream of nothing that ends once `end` resolves, and says so on `ended`.
    fn ends_when(
        end: tokio::sync::oneshot::Receiver<()>,
        ended: tokio::sync::oneshot::Sender<()>,
    ) -> impl futures::Stream<Item = ()> + Unpin + Send + 'static {
        Box::pin(futures::stream::unfold(
            Some((end, ended)),
            |state| async move {
                let (end, ended) = state?;
                let _ = end.await;
                let _ = ended.send(());
                None
            },
        ))
    }

    #[tokio::test]
    async fn an_answered_streams_end_is_read_at_once_when_here_and_later_else() {
        // Its end is here: read before `finish` returns.
        let (release, end) = tokio::sync::oneshot::channel();
        let (ended, mut told) = tokio::sync::oneshot::channel();
        release.send(()).unwrap();
        finish(ends_when(end, ended));
        assert_eq!(told.try_recv(), Ok(()));
        // Its end comes later: read when it comes (the connection then goes back to the pool).
        let (release, end) = tokio::sync::oneshot::channel();
        let (ended, mut told) = tokio::sync::oneshot::channel();
        finish(ends_when(end, ended));
        assert!(told.try_recv().is_err(), "not ended yet");
        release.send(()).unwrap();
        let read = tokio::time::timeout(std::time::Duration::from_secs(20), told).await;
        assert_eq!(read.ok(), Some(Ok(())));
    }

    fn direct() -> Direct {
        let mut custom = HashMap::new();
        custom.insert(
            HeaderName::from_static("x-team"),
            HeaderValue::from_static("blue"),
        );
        Direct::new(
            reqwest::Client::new(),
            "http://127.0.0.1:1/mcp",
            &custom,
            &ProtocolVersion::V_2026_07_28,
            &Implementation::new("toolbreaker-gateway", "0"),
            &ClientCapabilities::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_revision_with_sessions_has_no_direct_road() {
        let none = Direct::new(
            reqwest::Client::new(),
            "http://127.0.0.1:1/mcp",
            &HashMap::new(),
            &ProtocolVersion::V_2025_06_18,
            &Implementation::new("g", "0"),
            &ClientCapabilities::default(),
        );
        assert!(none.is_none());
    }

    #[test]
    fn the_body_carries_the_arguments_as_sent_and_the_gateways_meta() {
        let direct = direct();
        let arguments: &RawValue =
            serde_json::from_str(r#"{"text": "a \"b\"", "n": 1.50}"#).unwrap();
        let trace: &RawValue = serde_json::from_str(r#""00-abc-01""#).unwrap();
        let caps: &RawValue = serde_json::from_str(r#"{"sampling":{}}"#).unwrap();
        let call = DirectCall {
            name: "echo\"x",
            arguments: Some(arguments),
            meta: &[("traceparent", trace)],
            capabilities: Some(caps),
            progress: None,
            cancel: None,
        };
        let body = direct.body(7, &call);
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.contains(r#""arguments":{"text": "a \"b\"", "n": 1.50}"#),
            "{text}"
        );
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["id"], 7);
        assert_eq!(value["method"], "tools/call");
        assert_eq!(value["params"]["name"], "echo\"x");
        let meta = &value["params"]["_meta"];
        assert_eq!(meta["traceparent"], "00-abc-01");
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "toolbreaker-gateway"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({"sampling": {}})
        );
        let bare = direct.body(
            8,
            &DirectCall {
                name: "t",
                arguments: None,
                meta: &[],
                capabilities: None,
                progress: None,
                cancel: None,
            },
        );
        let value: serde_json::Value = serde_json::from_slice(&bare).unwrap();
        assert!(value["params"].get("arguments").is_none());
        assert_eq!(
            value["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({})
        );
    }

    #[test]
    fn an_answer_is_its_own_requests_and_its_result_is_not_copied() {
        let text = Bytes::from_static(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#);
        let message: Message<'_> = serde_json::from_slice(&text).unwrap();
        match answer_of(&text, &message, 3) {
            Some(Ok(Answered::Result(raw))) => assert_eq!(raw.json(), br#"{"content":[]}"#),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            answer_of(&text, &message, 4),
            Some(Err(ServiceError::UnexpectedResponse))
        ));
        let error = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}"#,
        );
        let message: Message<'_> = serde_json::from_slice(&error).unwrap();
        match answer_of(&error, &message, 3) {
            Some(Ok(Answered::Error(error))) => assert_eq!(error.code.0, -32602),
            other => panic!("{other:?}"),
        }
        let note = Bytes::from_static(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}"#,
        );
        let message: Message<'_> = serde_json::from_slice(&note).unwrap();
        assert!(answer_of(&note, &message, 3).is_none());
        let time = ClientTime::default();
        let told = std::sync::atomic::AtomicUsize::new(0);
        let tell = |params: &RawValue| {
            assert!(params.get().contains(r#""progress":1"#));
            told.fetch_add(1, Ordering::Relaxed);
        };
        about(&message, 3, &time, Some(&tell)).unwrap();
        about(&message, 4, &time, Some(&tell)).unwrap();
        assert_eq!(
            told.load(Ordering::Relaxed),
            1,
            "only the call's own progress"
        );
        let asks = Bytes::from_static(br#"{"jsonrpc":"2.0","id":9,"method":"roots/list"}"#);
        let message: Message<'_> = serde_json::from_slice(&asks).unwrap();
        assert!(about(&message, 3, &time, None).is_err());
    }

    #[test]
    fn a_header_value_is_plain_unless_it_needs_base64() {
        assert!(plain_header_value("echo"));
        assert!(plain_header_value("a b"));
        assert!(!plain_header_value(""));
        assert!(!plain_header_value(" a"));
        assert!(!plain_header_value("a\t"));
        assert!(!plain_header_value("é"));
        assert!(!plain_header_value("=?base64?YQ==?="));
    }
}
