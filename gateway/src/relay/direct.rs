//! The relay's direct road for a 2026-07-28 client's `tools/call`: the gateway's
//! [`Shortcut`], offered each plain 2026-07-28 POST before rmcp's transport.
//!
//! It takes a request only when it can answer it exactly as the road through rmcp would:
//! a `tools/call` whose params are only `name`, `arguments` (an object) and `_meta`, whose
//! `_meta` carries the revision and the client's capabilities and asks for no progress and no
//! log messages (the answer then is the result and nothing else), whose `Mcp-Name` is its
//! name, of a tool an upstream shows whose connection has a direct road (a 2026-07-28 server
//! over HTTP: [`Upstream::direct_link`]). Everything else (another method, a retry with a
//! `requestState`, progress asked for, a tool on a 2025-11-25 or stdio upstream, an unknown
//! tool, an upstream not connected yet) goes through rmcp, unchanged.
//!
//! What it does then is what [`Core::call_tool`] does, with less in between: the breaker
//! admits the call before any byte goes upstream, the per-call timeout and the
//! classification are the same, and so are the metrics and the words a refused call gives
//! the model. The arguments go upstream, and the upstream's final answer comes back, as the
//! raw JSON they came in (with `resultType: "complete"` said outright, as the revision asks).
//! The answer is plain JSON, unless the client asked for progress and the upstream sends some
//! before its answer: then an event stream, the progress (under the client's token) first.
//!
//! [`Core::call_tool`]: super::core::Core::call_tool

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use rmcp::model::{CallToolResponse, ErrorCode};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::core::Core;
use super::session::complete;
use crate::serve::Shortcut;
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
    #[serde(borrow, rename = "_meta")]
    meta: BTreeMap<&'a str, &'a RawValue>,
}

/// A call the direct road may take.
struct Read<'a> {
    call: Call<'a>,
    /// Its `_meta` keys that go upstream as they are.
    meta: Vec<(&'a str, &'a RawValue)>,
    /// The client's capabilities.
    capabilities: &'a RawValue,
    /// The client's progress token, when it asked for progress.
    token: Option<&'a RawValue>,
}

/// The call in `body`, if the direct road may take it (see the [module](self)).
fn read<'a>(headers: &HeaderMap, body: &'a [u8]) -> Option<Read<'a>> {
    let call: Call<'a> = serde_json::from_slice(body).ok()?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if call.jsonrpc != "2.0"
        || call.method != "tools/call"
        || !is_id(call.id)
        || header("mcp-method") != Some("tools/call")
        || header("mcp-name") != Some(call.params.name)
        || call
            .params
            .arguments
            .is_some_and(|a| !a.get().starts_with('{'))
    {
        return None;
    }
    let meta = &call.params.meta;
    let version = meta.get("io.modelcontextprotocol/protocolVersion")?;
    let capabilities = *meta.get("io.modelcontextprotocol/clientCapabilities")?;
    let token = meta.get(PROGRESS_TOKEN).copied();
    if version.get() != r#""2026-07-28""#
        || !capabilities.get().starts_with('{')
        || token.is_some_and(|token| !is_id(token))
        || meta.contains_key("io.modelcontextprotocol/logLevel")
    {
        return None;
    }
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

/// Whether `value` is a JSON-RPC id (or progress token) as MCP has them: a string or an
/// integer.
fn is_id(value: &RawValue) -> bool {
    let text = value.get();
    text.starts_with('"') || text.parse::<i64>().is_ok()
}

/// The gateway's shortcut: the direct road of `core`'s tool calls.
pub(super) fn shortcut(core: Arc<Core>) -> Shortcut {
    Arc::new(move |headers, body| {
        let taken = read(headers, body)?;
        let (upstream, own) = core.resolve_tool(taken.call.params.name)?;
        let link = upstream.direct_link(&own)?;
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
        let call = async move {
            // Read again as it was read above: the same bytes, the same answer.
            let Some(taken) = read(&headers, &body) else {
                return Err(rmcp::ErrorData::internal_error(
                    "the call was not read",
                    None,
                ));
            };
            let tell = notes.map(|notes| {
                move |params: &RawValue| {
                    if let Some(note) = token.as_deref().and_then(|t| progress_for(params, t)) {
                        // The client gone, its progress goes nowhere.
                        let _ = notes.send(note);
                    }
                }
            });
            let direct = DirectCall {
                name: &own,
                arguments: taken.call.params.arguments,
                meta: &taken.meta,
                capabilities: Some(taken.capabilities),
                progress: tell.as_ref().map(|tell| tell as OnProgress<'_>),
            };
            let exposed = taken.call.params.name;
            upstream
                .call_tool_direct(&core.run(), &link, exposed, direct)
                .await
        };
        Some(Box::pin(respond(id, call, progress)))
    })
}

/// The answer to the client: plain JSON when the call's answer comes first (no progress
/// before it); an event stream as soon as a progress notification does (the progress, then
/// the answer, then the end).
async fn respond<F>(id: Box<[u8]>, call: F, progress: Option<Progress>) -> Response
where
    F: Future<Output = Result<Relayed, rmcp::ErrorData>> + Send + 'static,
{
    let Some(mut progress) = progress else {
        return plain(answer(&id, call.await));
    };
    let mut call: Pending = Box::pin(call);
    let (first, last) = tokio::select! {
        biased;
        Some(note) = progress.recv() => (note, None),
        relayed = &mut call => match progress.try_recv() {
            Ok(note) => (note, Some(relayed)),
            Err(_) => return plain(answer(&id, relayed)),
        },
    };
    let last = last.map(|relayed| event(&answer(&id, relayed).1));
    let streamed = Streamed {
        call: last.is_none().then_some(call),
        progress,
        id,
        first: Some(event(&first)),
        last,
    };
    let mut response = Response::new(Body::from_stream(futures::stream::unfold(
        streamed,
        Streamed::next,
    )));
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

/// A call on its way.
type Pending = Pin<Box<dyn Future<Output = Result<Relayed, rmcp::ErrorData>> + Send>>;

/// A call answered as an event stream: the stream drives the call (dropped with it when the
/// client goes).
struct Streamed {
    call: Option<Pending>,
    progress: Progress,
    id: Box<[u8]>,
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
                    self.last = Some(event(&answer(&self.id, relayed).1));
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

/// A JSON answer.
fn plain((status, body): (StatusCode, Vec<u8>)) -> Response {
    let mut response = Response::new(Body::from(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The JSON-RPC answer to request `id` (its JSON text), with its HTTP status.
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
        let taken = read(&headers("echo"), body.as_bytes()).unwrap();
        assert_eq!(taken.call.params.name, "echo");
        assert_eq!(taken.call.params.arguments.unwrap().get(), r#"{"a":1}"#);
        assert_eq!(taken.meta.len(), 1);
        assert_eq!(taken.meta[0].0, "traceparent");
        assert_eq!(taken.capabilities.get(), "{}");
        assert!(taken.token.is_none());
        let asks = body.replace(r#""traceparent""#, r#""progressToken":"p","traceparent""#);
        let taken = read(&headers("echo"), asks.as_bytes()).unwrap();
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
        assert!(read(&headers("echo"), body(&plain).as_bytes()).is_some());
        assert!(read(&headers("other"), body(&plain).as_bytes()).is_none());
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
                read(&headers("echo"), body(&params).as_bytes()).is_none(),
                "{params}"
            );
        }
        let float_id = body(&plain).replace("\"id\":5", "\"id\":5.5");
        assert!(read(&headers("echo"), float_id.as_bytes()).is_none());
        let escaped_name = body(&plain.replace("\"echo\"", "\"ech\\u006f\""));
        assert!(read(&headers("echo"), escaped_name.as_bytes()).is_none());
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
}
