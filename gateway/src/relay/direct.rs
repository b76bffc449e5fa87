//! The relay's direct road for a client's `tools/call`: the gateway's [`Shortcut`], offered
//! each plain 2026-07-28 POST, and each POST of a 2025-11-25 session it may serve
//! ([`LegacySession`]), before rmcp's transport.
//!
//! It takes a request only when it can answer it exactly as the road through rmcp would:
//! a `tools/call` whose params are only `name`, `arguments` (an object) and `_meta`, of a tool
//! an upstream shows whose connection has a direct road (a 2026-07-28 server over HTTP:
//! [`Upstream::direct_link`]), and
//! - from a 2026-07-28 client: whose `_meta` carries the revision and the client's
//!   capabilities and asks for no log messages, whose `Mcp-Name` is its name;
//! - from a 2025-11-25 session's client: whose `_meta` has none of MCP's own keys (the
//!   client's capabilities are its session's).
//!
//! Everything else (another method, a retry with a `requestState`, a log level, a tool on a
//! 2025-11-25 or stdio upstream, an unknown tool, an upstream not connected yet) goes through
//! rmcp, unchanged.
//!
//! What it does then is what [`Core::call_tool`] does, with less in between: the breaker
//! admits the call before any byte goes upstream, the per-call timeout and the
//! classification are the same, and so are the metrics and the words a refused call gives
//! the model. The arguments go upstream, and the upstream's final answer comes back, as the
//! raw JSON they came in: for a 2026-07-28 client with `resultType: "complete"` said outright,
//! as the revision asks; for a 2025-11-25 one without it (and a `structuredContent` that is not
//! an object moved into the content, as rmcp does for such a client). The answer is plain
//! JSON, unless the client asked for progress and the upstream sends some before its answer:
//! then an event stream, the progress (under the client's token) first.
//!
//! The call's raw JSON is read as rmcp's road reads it ([`whole`]): a value that road refuses
//! (a lone surrogate, a number beyond `f64`, nesting past serde_json's limit) leaves the call
//! to rmcp, which refuses it; never sent upstream as it is.
//!
//! A 2025-11-25 session's call ends as on rmcp's road: its client's `notifications/cancelled`
//! or the session's end cancels it (counted as rmcp's road counts a cancelled call) and its
//! answer ends with nothing in it; its client going away does not (that revision does not read
//! a closed connection as a cancellation: the call runs in a task of its own to its end). A
//! 2026-07-28 client's call ends when its request does, as that revision says.
//!
//! [`Core::call_tool`]: super::core::Core::call_tool
//! [`LegacySession`]: crate::serve::LegacySession

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use rmcp::model::{CallToolResponse, ErrorCode, ServerResult};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::core::Core;
use super::session::complete;
use crate::serve::{Cancellable, Shortcut};
use crate::upstream::{DirectCall, OnProgress, Relayed};

/// MCP's per-request `_meta` keys: the gateway sets its own for its connection.
const MCP_KEYS: &str = "io.modelcontextprotocol/";
/// The `_meta` key of a request's progress token.
const PROGRESS_TOKEN: &str = "progressToken";

/// A `tools/call` as the direct road reads it: anything else in it, and it is rmcp's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    name: &'a str,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, rename = "_meta", default)]
    meta: BTreeMap<&'a str, &'a RawValue>,
}

/// A call the direct road may take.
struct Read<'a> {
    call: Call<'a>,
    /// Its `_meta` keys that go upstream as they are.
    meta: Vec<(&'a str, &'a RawValue)>,
    /// The client's capabilities, when the call says them (a 2026-07-28 client's).
    capabilities: Option<&'a RawValue>,
    /// The client's progress token, when it asked for progress.
    token: Option<&'a RawValue>,
}

/// The call in `body`, if the direct road may take it (see the [module](self)): a 2025-11-25
/// session's (`legacy`) or a 2026-07-28 client's.
fn read<'a>(headers: &HeaderMap, body: &'a [u8], legacy: bool) -> Option<Read<'a>> {
    let call: Call<'a> = serde_json::from_slice(body).ok()?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if call.jsonrpc != "2.0"
        || call.method != "tools/call"
        || !is_id(call.id)
        || call
            .params
            .arguments
            .is_some_and(|a| !a.get().starts_with('{'))
    {
        return None;
    }
    let meta = &call.params.meta;
    let token = meta.get(PROGRESS_TOKEN).copied();
    if token.is_some_and(|token| !is_id(token)) {
        return None;
    }
    let capabilities = match legacy {
        // MCP's keys say what the session says already, or what only rmcp's road answers.
        true if meta.keys().any(|key| key.starts_with(MCP_KEYS)) => return None,
        true => None,
        false => {
            let version = meta.get("io.modelcontextprotocol/protocolVersion")?;
            let capabilities = *meta.get("io.modelcontextprotocol/clientCapabilities")?;
            if header("mcp-method") != Some("tools/call")
                || header("mcp-name") != Some(call.params.name)
                || version.get() != r#""2026-07-28""#
                || !capabilities.get().starts_with('{')
                || meta.contains_key("io.modelcontextprotocol/logLevel")
            {
                return None;
            }
            Some(capabilities)
        }
    };
    let own = meta
        .iter()
        .filter(|(key, _)| !key.starts_with(MCP_KEYS) && **key != PROGRESS_TOKEN)
        .map(|(key, value)| (*key, *value))
        .collect();
    Some(Read {
        call,
        meta: own,
        capabilities,
        token,
    })
}

/// Whether every value the call carries as raw JSON (its `arguments`, its `_meta`'s) is one
/// rmcp's road reads too: a JSON value within serde_json's nesting limit, with no lone
/// surrogate in a string and no number beyond `f64`'s range. The road reads them as text, which
/// checks none of that; a call that fails it is left to rmcp, which refuses it.
fn whole(read: &Read<'_>) -> bool {
    let reads = |value: &RawValue| serde_json::from_str::<Check>(value.get()).is_ok();
    read.call.params.arguments.is_none_or(reads) && read.call.params.meta.values().all(|v| reads(v))
}

/// Any JSON value, read as `serde_json::Value` reads it (every string decoded, every number
/// parsed, every level counted) and kept nowhere.
struct Check;

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Check, D::Error> {
        deserializer.deserialize_any(Check)
    }
}

impl<'de> serde::de::Visitor<'de> for Check {
    type Value = Check;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Check, E> {
        Ok(Check)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Check, E> {
        Ok(Check)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Check, E> {
        Ok(Check)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Check, E> {
        Ok(Check)
    }

    fn visit_str<E>(self, _: &str) -> Result<Check, E> {
        Ok(Check)
    }

    fn visit_unit<E>(self) -> Result<Check, E> {
        Ok(Check)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<Check, A::Error> {
        while items.next_element::<Check>()?.is_some() {}
        Ok(Check)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut members: A) -> Result<Check, A::Error> {
        while members.next_entry::<Check, Check>()?.is_some() {}
        Ok(Check)
    }
}

/// Whether `value` is a JSON-RPC id (or progress token) as MCP has them: a string or an
/// integer.
fn is_id(value: &RawValue) -> bool {
    let text = value.get();
    text.starts_with('"') || text.parse::<i64>().is_ok()
}

/// The gateway's shortcut: the direct road of `core`'s tool calls.
pub(super) fn shortcut(core: Arc<Core>) -> Shortcut {
    Arc::new(move |headers, body, session| {
        let legacy = session.is_some();
        let taken = read(headers, body, legacy).filter(whole)?;
        let (upstream, own) = core.resolve_tool(taken.call.params.name)?;
        let link = upstream.direct_link(&own)?;
        // A session's call can be cancelled by its client: by its id, one call at a time.
        let cancellable = match session {
            Some(session) => Some(session.cancellable(taken.call.id)?),
            None => None,
        };
        let session = session.map(Arc::clone);
        let id: Box<[u8]> = taken.call.id.get().as_bytes().into();
        let token: Option<Box<str>> = taken.token.map(|token| token.get().into());
        let (notes, progress) = match token.is_some() {
            true => {
                let (notes, progress) = mpsc::unbounded_channel();
                (Some(notes), Some(progress))
            }
            false => (None, None),
        };
        let core = Arc::clone(&core);
        let (headers, body) = (headers.clone(), body.clone());
        // On the heap at once: the call's future is large (its upstream request's, the guard
        // pipeline's), and the futures around it move it otherwise, a copy each time.
        let call: Box<dyn Future<Output = _> + Send> = Box::new(async move {
            // Read again as it was read above: the same bytes, the same answer.
            let Some(taken) = read(&headers, &body, legacy) else {
                return Some(Err(rmcp::ErrorData::internal_error(
                    "the call was not read",
                    None,
                )));
            };
            let tell = notes.map(|notes| {
                move |params: &RawValue| {
                    if let Some(note) = token.as_deref().and_then(|t| progress_for(params, t)) {
                        // The client gone, its progress goes nowhere.
                        let _ = notes.send(note);
                    }
                }
            });
            let capabilities = match &session {
                Some(session) => Some(session.capabilities()),
                None => taken.capabilities,
            };
            let direct = DirectCall {
                name: &own,
                arguments: taken.call.params.arguments,
                meta: &taken.meta,
                capabilities,
                progress: tell.as_ref().map(|tell| tell as OnProgress<'_>),
                cancel: cancellable.as_ref().map(Cancellable::token),
            };
            let exposed = taken.call.params.name;
            let relayed = upstream
                .call_tool_direct(&core.run(), &link, exposed, direct)
                .await;
            // A call its client cancelled (or whose session ended) has no answer, as on rmcp's
            // road.
            let cancelled = cancellable
                .as_ref()
                .is_some_and(|c| c.token().is_cancelled());
            (!cancelled).then_some(relayed)
        });
        let call: Pending = Pin::from(call);
        // A 2025-11-25 client's call goes on when its client goes away (that revision does not
        // read a closed connection as a cancellation); a 2026-07-28 client's ends with it.
        let call: Pending = match legacy {
            true => {
                let task = tokio::spawn(call);
                Box::pin(async move {
                    task.await.unwrap_or_else(|_| {
                        Some(Err(rmcp::ErrorData::internal_error(
                            "the call ended before its answer",
                            None,
                        )))
                    })
                })
            }
            false => call,
        };
        Some(Box::pin(respond(Answer { id, legacy }, call, progress)))
    })
}

/// How the answer to a request is written: its JSON-RPC id (its JSON text), and whether its
/// client speaks 2025-11-25.
struct Answer {
    id: Box<[u8]>,
    legacy: bool,
}

/// The answer to the client: plain JSON when the call's answer comes first (no progress
/// before it); an event stream as soon as a progress notification does (the progress, then
/// the answer, then the end). A call cancelled by its client (`None`) ends with no answer.
async fn respond<F>(answer: Answer, call: F, progress: Option<Progress>) -> Response
where
    F: Future<Output = Option<Result<Relayed, rmcp::ErrorData>>> + Send + 'static,
{
    let Some(mut progress) = progress else {
        return plain(answer.of(call.await));
    };
    let mut call: Pending = Box::pin(call);
    let (first, last) = tokio::select! {
        biased;
        Some(note) = progress.recv() => (note, None),
        relayed = &mut call => match progress.try_recv() {
            Ok(note) => (note, Some(relayed)),
            Err(_) => return plain(answer.of(relayed)),
        },
    };
    let last = last.and_then(|relayed| answer.event(relayed));
    let streamed = Streamed {
        call: last.is_none().then_some(call),
        progress,
        answer,
        first: Some(event(&first)),
        last,
    };
    events(Body::from_stream(futures::stream::unfold(
        streamed,
        Streamed::next,
    )))
}

/// An event stream of `body`.
fn events(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The progress notifications for the client, as JSON.
type Progress = mpsc::UnboundedReceiver<Bytes>;

/// A call on its way (`None`: cancelled by its client).
type Pending = Pin<Box<dyn Future<Output = Option<Result<Relayed, rmcp::ErrorData>>> + Send>>;

/// A call answered as an event stream: the stream drives the call (dropped with it when the
/// client goes).
struct Streamed {
    call: Option<Pending>,
    progress: Progress,
    answer: Answer,
    /// The event that opened the stream, not sent yet.
    first: Option<Bytes>,
    /// The answer's event, once the call has answered.
    last: Option<Bytes>,
}

impl Streamed {
    /// The next event: progress as it comes, then the answer (after any progress sent before
    /// it), then the end.
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Streamed)> {
        if let Some(first) = self.first.take() {
            return Some((Ok(first), self));
        }
        if let Some(call) = self.call.as_mut() {
            tokio::select! {
                biased;
                Some(note) = self.progress.recv() => return Some((Ok(event(&note)), self)),
                relayed = call => {
                    self.call = None;
                    self.last = self.answer.event(relayed);
                }
            }
        }
        if let Ok(note) = self.progress.try_recv() {
            return Some((Ok(event(&note)), self));
        }
        let last = self.last.take()?;
        Some((Ok(last), self))
    }
}

/// One message as an event of a stream.
fn event(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The client's progress notification for the upstream's `params`: its token in place of
/// the gateway's.
fn progress_for(params: &RawValue, token: &str) -> Option<Bytes> {
    let params: BTreeMap<&str, &RawValue> = serde_json::from_str(params.get()).ok()?;
    let mut out = Vec::with_capacity(params.len() * 32 + 96);
    out.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"#,
    );
    out.extend_from_slice(token.as_bytes());
    for (key, value) in params.iter().filter(|(key, _)| **key != PROGRESS_TOKEN) {
        out.push(b',');
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, key);
        out.push(b':');
        out.extend_from_slice(value.get().as_bytes());
    }
    out.extend_from_slice(b"}}");
    Some(Bytes::from(out))
}

/// A JSON answer; an empty event stream for a call its client cancelled (`None`: rmcp's
/// road ends the call's stream with nothing in it).
fn plain(answer: Option<(StatusCode, Vec<u8>)>) -> Response {
    let Some((status, body)) = answer else {
        return events(Body::empty());
    };
    let mut response = Response::new(Body::from(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl Answer {
    /// The JSON-RPC answer, with its HTTP status; `None` for a cancelled call.
    fn of(
        &self,
        relayed: Option<Result<Relayed, rmcp::ErrorData>>,
    ) -> Option<(StatusCode, Vec<u8>)> {
        let relayed = relayed?;
        Some(match self.legacy {
            true => legacy_answer(&self.id, relayed),
            false => answer(&self.id, relayed),
        })
    }

    /// The answer as an event; `None` for a cancelled call.
    fn event(&self, relayed: Option<Result<Relayed, rmcp::ErrorData>>) -> Option<Bytes> {
        self.of(relayed).map(|(_, json)| event(&json))
    }
}

/// The JSON-RPC answer to a 2026-07-28 request `id` (its JSON text), with its HTTP status.
fn answer(id: &[u8], relayed: Result<Relayed, rmcp::ErrorData>) -> (StatusCode, Vec<u8>) {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    let status = match relayed {
        Ok(Relayed::Raw { result, typed }) => {
            out.extend_from_slice(br#","result":"#);
            said_complete(&mut out, result.json(), typed);
            StatusCode::OK
        }
        Ok(Relayed::Response(response)) => {
            out.extend_from_slice(br#","result":"#);
            // Writing to a Vec cannot fail; rmcp's results always serialise.
            let _ = match complete(response) {
                CallToolResponse::Complete(result) => serde_json::to_writer(&mut out, &result),
                CallToolResponse::InputRequired(input) => serde_json::to_writer(&mut out, &input),
                CallToolResponse::Task(task) => serde_json::to_writer(&mut out, &task),
                _ => write!(out, "{{}}").map_err(serde_json::Error::io),
            };
            StatusCode::OK
        }
        Err(error) => {
            out.extend_from_slice(br#","error":"#);
            let _ = serde_json::to_writer(&mut out, &error);
            status_of(error.code)
        }
    };
    out.push(b'}');
    (status, out)
}

/// The HTTP status of a JSON-RPC error to a 2026-07-28 request, as rmcp's transport gives it.
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The JSON-RPC answer to a 2025-11-25 session's request `id` (its JSON text), as rmcp's
/// road writes it for such a client: no `resultType: "complete"`, a `structuredContent` that
/// is not an object moved into the content, an `input_required` result refused; HTTP 200.
fn legacy_answer(id: &[u8], relayed: Result<Relayed, rmcp::ErrorData>) -> (StatusCode, Vec<u8>) {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    let typed = match relayed {
        Ok(Relayed::Raw { result, .. }) => match legacy_raw(result.json()) {
            Some(raw) => {
                out.extend_from_slice(br#","result":"#);
                out.extend_from_slice(&raw);
                out.push(b'}');
                return (StatusCode::OK, out);
            }
            None => serde_json::from_slice(result.json())
                .map(|result| Ok(ServerResult::CallToolResult(result)))
                .unwrap_or_else(|_| {
                    Err(rmcp::ErrorData::internal_error(
                        "the upstream's result could not be read",
                        None,
                    ))
                }),
        },
        Ok(Relayed::Response(CallToolResponse::Complete(result))) => {
            Ok(ServerResult::CallToolResult(result))
        }
        Ok(Relayed::Response(CallToolResponse::InputRequired(_))) => {
            Err(rmcp::ErrorData::invalid_request(
                "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
                None,
            ))
        }
        Ok(Relayed::Response(response)) => Ok(ServerResult::from(response)),
        Err(error) => Err(error),
    };
    match typed {
        Ok(mut result) => {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            out.extend_from_slice(br#","result":"#);
            // Writing to a Vec cannot fail; rmcp's results always serialise.
            let _ = serde_json::to_writer(&mut out, &result);
        }
        Err(error) => {
            out.extend_from_slice(br#","error":"#);
            let _ = serde_json::to_writer(&mut out, &error);
        }
    }
    out.push(b'}');
    (StatusCode::OK, out)
}

/// A raw tool result (a JSON object) as a 2025-11-25 client reads it, when only its
/// `resultType: "complete"` must go: its other members as they are. `None` when its
/// `structuredContent` is not an object, or it cannot be read so (then rmcp's types do it).
fn legacy_raw(result: &[u8]) -> Option<Vec<u8>> {
    let members: BTreeMap<&str, &RawValue> = serde_json::from_slice(result).ok()?;
    if members
        .get("structuredContent")
        .is_some_and(|content| !content.get().starts_with('{'))
    {
        return None;
    }
    let mut out = Vec::with_capacity(result.len());
    out.push(b'{');
    let kept = members
        .iter()
        .filter(|(key, value)| !(**key == "resultType" && value.get() == r#""complete""#));
    for (n, (key, value)) in kept.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, key);
        out.push(b':');
        out.extend_from_slice(value.get().as_bytes());
    }
    out.push(b'}');
    Some(out)
}

/// `result` (a JSON object) into `out`, with `"resultType":"complete"` first unless it says a
/// `resultType` of its own (`typed`, as the upstream's answer was read).
fn said_complete(out: &mut Vec<u8>, result: &[u8], typed: bool) {
    let Some(rest) = result.strip_prefix(b"{").filter(|_| !typed) else {
        out.extend_from_slice(result);
        return;
    };
    out.extend_from_slice(br#"{"resultType":"complete""#);
    if !rest.trim_ascii_start().starts_with(b"}") {
        out.push(b',');
    }
    out.extend_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::RawJson;

    fn headers(name: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
        headers.insert("mcp-name", HeaderValue::from_static(name));
        headers
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"traceparent":"00-a-b-01"}"#;

    fn body(params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{{params}}}}}"#)
    }

    #[test]
    fn a_plain_call_is_read_with_its_own_meta_only() {
        let body = body(&format!(r#""name":"echo","arguments":{{"a":1}},{META}"#));
        let taken = read(&headers("echo"), body.as_bytes(), false).unwrap();
        assert_eq!(taken.call.params.name, "echo");
        assert_eq!(taken.call.params.arguments.unwrap().get(), r#"{"a":1}"#);
        assert_eq!(taken.meta.len(), 1);
        assert_eq!(taken.meta[0].0, "traceparent");
        assert_eq!(taken.capabilities.unwrap().get(), "{}");
        assert!(taken.token.is_none());
        let asks = body.replace(r#""traceparent""#, r#""progressToken":"p","traceparent""#);
        let taken = read(&headers("echo"), asks.as_bytes(), false).unwrap();
        assert_eq!(taken.token.unwrap().get(), r#""p""#);
        assert_eq!(taken.meta.len(), 1, "the gateway's own token goes upstream");
    }

    #[test]
    fn progress_reaches_the_client_under_its_own_token() {
        let params: &RawValue =
            serde_json::from_str(r#"{"progressToken":7,"progress":2,"total":5,"message":"m"}"#)
                .unwrap();
        let note = progress_for(params, r#""client-1""#).unwrap();
        let note: serde_json::Value = serde_json::from_slice(&note).unwrap();
        assert_eq!(
            note,
            serde_json::json!({"jsonrpc":"2.0","method":"notifications/progress",
                "params":{"progressToken":"client-1","progress":2,"total":5,"message":"m"}})
        );
    }

    #[test]
    fn anything_the_direct_road_cannot_answer_as_rmcp_would_is_left_to_rmcp() {
        let plain = format!(r#""name":"echo",{META}"#);
        assert!(read(&headers("echo"), body(&plain).as_bytes(), false).is_some());
        assert!(read(&headers("other"), body(&plain).as_bytes(), false).is_none());
        for params in [
            format!(r#""name":"echo","requestState":"s",{META}"#),
            format!(r#""name":"echo","arguments":[1],{META}"#),
            format!(r#""name":"echo","task":{{}},{META}"#),
            r#""name":"echo""#.to_owned(),
            plain.replace("2026-07-28", "2025-11-25"),
            plain.replace("\"traceparent\":\"00-a-b-01\"", "\"progressToken\":1.5"),
            plain.replace("\"traceparent\"", "\"io.modelcontextprotocol/logLevel\""),
            plain.replace(",\"io.modelcontextprotocol/clientCapabilities\":{}", ""),
        ] {
            assert!(
                read(&headers("echo"), body(&params).as_bytes(), false).is_none(),
                "{params}"
            );
        }
        let float_id = body(&plain).replace("\"id\":5", "\"id\":5.5");
        assert!(read(&headers("echo"), float_id.as_bytes(), false).is_none());
        let escaped_name = body(&plain.replace("\"echo\"", "\"ech\\u006f\""));
        assert!(read(&headers("echo"), escaped_name.as_bytes(), false).is_none());
    }

    #[test]
    fn a_result_says_it_is_complete() {
        for (result, said) in [
            (
                r#"{"content":[]}"#,
                r#"{"resultType":"complete","content":[]}"#,
            ),
            ("{ }", r#"{"resultType":"complete" }"#),
            (
                r#"{"resultType":"complete","content":[]}"#,
                r#"{"resultType":"complete","content":[]}"#,
            ),
        ] {
            let mut out = Vec::new();
            said_complete(&mut out, result.as_bytes(), result.contains("resultType"));
            assert_eq!(std::str::from_utf8(&out).unwrap(), said);
            let _: serde_json::Value = serde_json::from_slice(&out).unwrap();
        }
    }

    #[test]
    fn a_sessions_call_needs_no_meta_and_says_none_of_mcps_keys() {
        let none = body(r#""name":"echo","arguments":{"a":1}"#);
        let taken = read(&HeaderMap::new(), none.as_bytes(), true).unwrap();
        assert!(taken.capabilities.is_none(), "the session's");
        assert!(taken.meta.is_empty());
        let asks = body(r#""name":"echo","_meta":{"progressToken":"p","traceparent":"t"}"#);
        let taken = read(&HeaderMap::new(), asks.as_bytes(), true).unwrap();
        assert_eq!(taken.token.unwrap().get(), r#""p""#);
        assert_eq!(taken.meta.len(), 1);
        let modern = body(&format!(r#""name":"echo",{META}"#));
        assert!(read(&HeaderMap::new(), modern.as_bytes(), true).is_none());
    }

    #[test]
    fn a_sessions_result_loses_its_result_type_and_keeps_the_rest_as_it_came() {
        let raw = br#"{"resultType":"complete","content":[{"type":"text","text":"a"}],"structuredContent":{"n":1.50}}"#;
        let out = legacy_raw(raw).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"content":[{"type":"text","text":"a"}],"structuredContent":{"n":1.50}}"#
        );
        assert!(legacy_raw(br#"{"content":[],"structuredContent":[1,2]}"#).is_none());
        // A structured result that is not an object: rmcp's types move it into the content.
        let raw = br#"{"resultType":"complete","content":[],"structuredContent":[1,2]}"#;
        let result = RawJson::from(Bytes::from_static(raw));
        let (status, out) = legacy_answer(
            b"3",
            Ok(Relayed::Raw {
                result,
                typed: true,
            }),
        );
        assert_eq!(status, StatusCode::OK);
        let out: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["id"], 3);
        assert!(out["result"].get("resultType").is_none(), "{out}");
        assert!(out["result"].get("structuredContent").is_none(), "{out}");
        assert_eq!(out["result"]["content"][0]["text"], "[1,2]", "{out}");
    }

    #[test]
    fn a_call_whose_raw_json_rmcp_would_refuse_is_left_to_rmcp() {
        let deep = format!("{}1{}", "[".repeat(130), "]".repeat(130));
        let shallow = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let taken = |arguments: &str, meta: &str| {
            let body = body(&format!(
                r#""name":"echo","arguments":{arguments},"_meta":{meta}"#
            ));
            read(&HeaderMap::new(), body.as_bytes(), true)
                .filter(whole)
                .is_some()
        };
        assert!(taken(r#"{"t":"\u00e9\ud83d\ude00","n":1e300}"#, "{}"));
        assert!(taken(&format!(r#"{{"d":{shallow}}}"#), "{}"));
        for arguments in [
            r#"{"t":"\ud800"}"#,
            r#"{"t":"\udc00"}"#,
            r#"{"t":"\ud800\u0041"}"#,
            r#"{"n":1e400}"#,
            r#"{"\ud800":1}"#,
            &format!(r#"{{"d":{deep}}}"#),
        ] {
            assert!(!taken(arguments, "{}"), "{arguments}");
        }
        assert!(!taken("{}", r#"{"traceparent":"\ud800"}"#));
    }
}
