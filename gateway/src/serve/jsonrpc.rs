//! JSON-RPC's own errors for a POST to `/mcp` whose body is not a message rmcp can serve, in
//! both eras of MCP (2025-11-25 sessions and 2026-07-28 stateless requests):
//!
//! - not JSON at all: `-32700` (Parse error);
//! - JSON, but not a JSON-RPC 2.0 request, notification or response (a `jsonrpc` other than
//!   `"2.0"`, no `method`, a `method` that is not a string, an `id` that is neither a string nor
//!   an integer, `result` beside `method`, a batch, empty or not: MCP has no batches): `-32600`
//!   (Invalid Request);
//! - a request of a method MCP defines whose params do not fit it (`tools/call` without a
//!   `name` or with a number for one, `resources/read` without `uri`, `prompts/get` without
//!   `name`, `tools/list` with params that are not an object…), or of any method with params
//!   that are not an object: `-32602` (Invalid params).
//!
//! Each is answered `400 Bad Request` with the JSON-RPC error as the body (`application/json`),
//! its `id` the request's when it can be read, `null` otherwise. rmcp alone answers all of them
//! `415 Unsupported Media Type` (which says the Content-Type was wrong: it still says that, for
//! a Content-Type other than `application/json`), except a known method with params it cannot
//! read, which it takes for a method of its own and answers `-32601` (Method not found).
//!
//! rmcp's own answers still come first, in its order: `Host` and `Origin` (403), `Accept`
//! (406), `Content-Type` (415), the size limit (413); a refusal here only replaces its 415 for
//! a body it could not read. The body is read here (up to that limit, as rmcp reads it) and
//! handed on as it is, not copied; what this layer reads of it is the top level of the object
//! (the params only as a span of text) and, for the methods clients call all the time
//! (`tools/call`, `tools/list`, `resources/read`, `prompts/get`, the lists, `ping`), the names
//! and the kinds of the params' keys. Only params that do not fit that quick look, or those of
//! the other methods, are read with rmcp's own types. What rmcp refuses as unreadable is
//! sorted into `-32700`, `-32600` and `-32602` after it has answered.

use std::borrow::Cow;
use std::fmt;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
// Logging and `resources/subscribe` are deprecated by the 2026 revision; 2025 clients still
// send them.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CancelTaskRequest, CompleteRequest, ConstString, DiscoverRequest, ErrorCode,
    GetPromptRequest, GetSkillRequest, GetTaskRequest, InitializeRequest, JsonRpcRequest,
    ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListSkillsRequest,
    ListToolsRequest, PingRequest, ReadResourceDirectoryRequest, ReadResourceRequest, RequestId,
    SetLevelRequest, SubscribeRequest, SubscriptionsListenRequest, UnsubscribeRequest,
    UpdateTaskRequest,
};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::hosts::AdmittedHosts;
use super::log_limit::{LOG_INTERVAL, LogLimit};
use super::shortcut::Shortcuts;
use crate::redact::shown;

/// The state of [`answer_malformed`]: rmcp's limit on a request body
/// ([`HttpOptions::max_request_bytes`](super::HttpOptions::max_request_bytes)), and what may
/// answer a readable request before rmcp ([`Shortcuts`], offered it with the admitted hosts).
#[derive(Clone)]
pub(crate) struct BodyLimit {
    pub(crate) limit: usize,
    pub(crate) hosts: AdmittedHosts,
    pub(crate) shortcuts: Shortcuts,
}

/// The middleware of `/mcp`; see the [module](self).
pub(crate) async fn answer_malformed(
    State(state): State<BodyLimit>,
    request: Request,
    next: Next,
) -> Response {
    let limit = state.limit;
    if request.method() != Method::POST || !is_json(request.headers()) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let body = match read_body(body, limit).await {
        Ok(Read::Whole(body)) => body,
        // rmcp answers 413 (after its own checks of the headers).
        Ok(Read::Over(start)) => return next.run(Request::from_parts(parts, start.into())).await,
        Err(_) => {
            let text = "Bad Request: the request body could not be read";
            return (StatusCode::BAD_REQUEST, text).into_response();
        }
    };
    let known = bad_params(&body, modern(&parts.headers));
    if known.is_none()
        && let Some(answer) = state.shortcuts.take(&state.hosts, &parts.headers, &body)
    {
        return answer.await;
    }
    let handed = match known {
        // A body rmcp cannot read: its answer is 415 unless a check of its own comes first.
        Some(_) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::empty()
        }
        None => Body::from(body.clone()),
    };
    let response = next.run(Request::from_parts(parts, handed)).await;
    // With a Content-Type of JSON (checked above as rmcp checks it), rmcp's 415 says only that
    // the body is not a message it can read.
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    let refusal = known.unwrap_or_else(|| sort_unreadable(&body));
    refusal.log();
    refusal.into_response()
}

/// Whether the request's Content-Type is JSON, as rmcp decides it.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

enum Read {
    Whole(Bytes),
    /// Over the limit: what was read of it, more than the limit.
    Over(Bytes),
}

/// The body, read up to `limit` bytes (one chunk, the usual case, is not copied).
async fn read_body(body: Body, limit: usize) -> Result<Read, axum::Error> {
    let mut chunks = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut length = 0usize;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        length = length.saturating_add(chunk.len());
        match first.take() {
            None if joined.is_empty() => first = Some(chunk),
            earlier => {
                if let Some(earlier) = earlier {
                    joined.extend_from_slice(&earlier);
                }
                joined.extend_from_slice(&chunk);
            }
        }
        if length > limit {
            return Ok(Read::Over(first.unwrap_or_else(|| joined.into())));
        }
    }
    Ok(Read::Whole(first.unwrap_or_else(|| joined.into())))
}

/// A JSON-RPC error to answer with.
#[derive(Debug)]
pub(crate) struct Refusal {
    code: ErrorCode,
    message: String,
    id: Option<RequestId>,
    /// Why, for the log (no client text).
    cause: &'static str,
}

impl Refusal {
    /// Whether it refuses a notification (a message with a `method` and no `id`, readable at
    /// its top level): JSON-RPC answers no notification, even a bad one.
    pub(crate) fn is_notification(&self) -> bool {
        self.code == ErrorCode::INVALID_PARAMS && self.id.is_none()
    }

    /// The JSON-RPC error message, as one line of JSON (no newline).
    pub(crate) fn json(&self) -> String {
        #[derive(serde::Serialize)]
        struct Answer<'a> {
            jsonrpc: &'static str,
            id: &'a Option<RequestId>,
            error: Error<'a>,
        }
        #[derive(serde::Serialize)]
        struct Error<'a> {
            code: i32,
            message: &'a str,
        }
        let answer = Answer {
            jsonrpc: "2.0",
            id: &self.id,
            error: Error {
                code: self.code.0,
                message: &self.message,
            },
        };
        serde_json::to_string(&answer).expect("strings and numbers serialize")
    }

    /// Logs it at warn (its cause and its message, capped: no client text in full), at most
    /// once per cause and interval.
    pub(crate) fn log(&self) {
        static REFUSED: LogLimit = LogLimit::new(LOG_INTERVAL);
        if let Some(suppressed) = REFUSED.admit(self.cause) {
            tracing::warn!(
                code = self.code.0,
                cause = self.cause,
                error = %shown(&self.message),
                suppressed,
                "answered a malformed JSON-RPC message (`suppressed`: how many since the last \
                 one logged)"
            );
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = self.json();
        let json = HeaderValue::from_static("application/json");
        let mut response = (StatusCode::BAD_REQUEST, body).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, json);
        response
    }
}

/// The top level of a JSON-RPC message, as this layer reads it (the rest skipped, not kept).
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    /// `null` too: rmcp's shapes go by which keys are there.
    #[serde(default, borrow)]
    id: Slot<'a>,
    #[serde(default, borrow)]
    method: Option<Text<'a>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

impl Head<'_> {
    /// Whether this is a JSON-RPC 2.0 request or notification as far as its top level goes: the
    /// version, a `method`, no `result` or `error`, and an `id` rmcp reads if there is one
    /// (`Err` for an `id` that is there but unreadable, `null` too).
    fn request_id(&self) -> Result<Option<RequestId>, ()> {
        let version = self.jsonrpc.is_some_and(|raw| raw.get() == "\"2.0\"");
        if !version || self.method.is_none() || self.result.0 || self.error.0 {
            return Err(());
        }
        match self.id {
            Slot::Absent => Ok(None),
            Slot::Present(raw) => serde_json::from_str(raw.get()).map(Some).map_err(drop),
        }
    }
}

/// A key's value if the key is there (`null` too).
#[derive(Default)]
enum Slot<'a> {
    #[default]
    Absent,
    Present(&'a RawValue),
}

impl<'de: 'a, 'a> Deserialize<'de> for Slot<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(Slot::Present)
    }
}

/// A string, borrowed from the body unless it has escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Whether a key is there, whatever its value (`null` too).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer)?;
        Ok(Present(true))
    }
}

/// The refusal of a request (with an `id`) of a method rmcp knows whose params its type for the
/// method cannot read; `None` for every other body, good or bad (rmcp reads it, or refuses it
/// as unreadable and [`sort_unreadable`] says why).
pub(crate) fn bad_params(body: &[u8], modern: bool) -> Option<Refusal> {
    let head: Head<'_> = serde_json::from_slice(body).ok()?;
    let id = head.request_id().ok()??;
    let method = head.method.as_ref()?.0.as_ref();
    if modern && REMOVED_IN_2026.contains(&method) {
        // Not a method of this request's revision, whatever its params: rmcp answers it
        // `-32601` (Method not found, HTTP 404), as the revision asks.
        return None;
    }
    let known = KNOWN.iter().find(|known| known.method == method)?;
    if known.quick.is_some_and(|quick| quick.fits(head.params)) {
        return None;
    }
    let error = (known.read)(body).err()?;
    Some(Refusal {
        code: ErrorCode::INVALID_PARAMS,
        message: format!("Invalid params of {method}: {}", shown(&error.to_string())),
        id: Some(id),
        cause: "invalid params",
    })
}

/// The methods revision 2026-07-28 removed (SEP-2575): a request of that revision naming one
/// is answered "method not found", not "invalid params".
const REMOVED_IN_2026: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Whether the request says it is of revision 2026-07-28 or later (its `MCP-Protocol-Version`
/// header, which such a request carries; dates compare as text).
fn modern(headers: &HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= "2026-07-28")
}

/// The refusal of a message over `limit` bytes (a line of stdio), whose `id` is not read.
pub(crate) fn too_long(limit: usize) -> Refusal {
    Refusal {
        code: ErrorCode::INVALID_REQUEST,
        message: format!("Invalid Request: the message is over the limit of {limit} bytes"),
        id: None,
        cause: "too long",
    }
}

/// Why rmcp could not read `body`.
pub(crate) fn sort_unreadable(body: &[u8]) -> Refusal {
    if let Err(error) = serde_json::from_slice::<IgnoredAny>(body) {
        return Refusal {
            code: ErrorCode::PARSE_ERROR,
            message: format!("Parse error: the body is not JSON ({error})"),
            id: None,
            cause: "parse error",
        };
    }
    let head = serde_json::from_slice::<Head<'_>>(body).ok();
    let request = head.as_ref().map(Head::request_id);
    let Some(Ok(id)) = request else {
        // What can be read of the id, for the answer.
        #[derive(Deserialize)]
        struct Id {
            id: Option<RequestId>,
        }
        let object = body.trim_ascii_start().starts_with(b"{");
        let id = object
            .then(|| serde_json::from_slice::<Id>(body).ok())
            .flatten()
            .and_then(|read| read.id);
        return Refusal {
            code: ErrorCode::INVALID_REQUEST,
            message: "Invalid Request: not a JSON-RPC 2.0 request, notification or response \
                      (MCP has no batches)"
                .to_owned(),
            id,
            cause: "invalid request",
        };
    };
    // A request or notification by its top level: its params are what rmcp cannot read.
    let method = head.as_ref().and_then(|head| head.method.as_ref());
    let method = method.map_or("", |method| method.0.as_ref());
    let why = KNOWN
        .iter()
        .find(|known| known.method == method)
        .and_then(|known| (known.read)(body).err())
        .map_or_else(
            || "params must be an object".to_owned(),
            |error| error.to_string(),
        );
    Refusal {
        code: ErrorCode::INVALID_PARAMS,
        message: format!("Invalid params of {}: {}", shown(method), shown(&why)),
        id,
        cause: "invalid params",
    }
}

/// A method of a client's request that rmcp reads with a type of its own.
struct Known {
    method: &'static str,
    /// Reads the whole message with rmcp's type for the method, as rmcp does (an error: rmcp
    /// would take it for a method it does not know).
    read: fn(&[u8]) -> Result<(), serde_json::Error>,
    /// Params that rmcp's type surely reads, told at a glance.
    quick: Option<Quick>,
}

fn read_as<T: DeserializeOwned>(body: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<JsonRpcRequest<T>>(body).map(drop)
}

const fn known<T: DeserializeOwned, M: ConstString>(quick: Option<Quick>) -> Known {
    Known {
        method: M::VALUE,
        read: read_as::<T>,
        quick,
    }
}

/// JSON's kinds of value, as bits.
const STRING: u8 = 1;
const OBJECT: u8 = 2;
const NULL: u8 = 4;
const OTHER: u8 = 8;

/// Params that rmcp's type for a method reads: no params or `null` (if they may be left out),
/// or an object whose keys are each there once, each one of `keys` (or any key, with
/// `any_key`) with a value of one of its kinds, `_meta` an object or `null`, and every one of
/// `required` there.
#[derive(Clone, Copy)]
struct Quick {
    optional: bool,
    required: &'static [&'static str],
    keys: &'static [(&'static str, u8)],
    any_key: bool,
}

const META: (&str, u8) = ("_meta", OBJECT | NULL);

/// The opaque state a 2026-07-28 client sends back with a call that the server asked for more
/// input (`inputResponses` beside it is left to rmcp's type).
const STATE: (&str, u8) = ("requestState", STRING | NULL);

const PAGINATED: Quick = Quick {
    optional: true,
    required: &[],
    keys: &[META, ("cursor", STRING | NULL)],
    any_key: false,
};

/// The methods of rmcp's `ClientRequest` (its `CustomRequest` aside).
#[allow(deprecated)]
static KNOWN: &[Known] = &[
    known::<CallToolRequest, rmcp::model::CallToolRequestMethod>(Some(Quick {
        optional: false,
        required: &["name"],
        keys: &[META, ("name", STRING), ("arguments", OBJECT | NULL), STATE],
        any_key: false,
    })),
    known::<ListToolsRequest, rmcp::model::ListToolsRequestMethod>(Some(PAGINATED)),
    known::<ReadResourceRequest, rmcp::model::ReadResourceRequestMethod>(Some(Quick {
        optional: false,
        required: &["uri"],
        keys: &[META, ("uri", STRING), STATE],
        any_key: false,
    })),
    known::<GetPromptRequest, rmcp::model::GetPromptRequestMethod>(Some(Quick {
        optional: false,
        required: &["name"],
        keys: &[META, ("name", STRING), ("arguments", OBJECT | NULL), STATE],
        any_key: false,
    })),
    known::<ListResourcesRequest, rmcp::model::ListResourcesRequestMethod>(Some(PAGINATED)),
    known::<ListResourceTemplatesRequest, rmcp::model::ListResourceTemplatesRequestMethod>(Some(
        PAGINATED,
    )),
    known::<ListPromptsRequest, rmcp::model::ListPromptsRequestMethod>(Some(PAGINATED)),
    known::<PingRequest, rmcp::model::PingRequestMethod>(Some(Quick {
        optional: true,
        required: &[],
        keys: &[META],
        any_key: true,
    })),
    known::<InitializeRequest, rmcp::model::InitializeResultMethod>(None),
    known::<DiscoverRequest, rmcp::model::DiscoverRequestMethod>(None),
    known::<CompleteRequest, rmcp::model::CompleteRequestMethod>(None),
    known::<SetLevelRequest, rmcp::model::SetLevelRequestMethod>(None),
    known::<SubscriptionsListenRequest, rmcp::model::SubscriptionsListenRequestMethod>(None),
    known::<SubscribeRequest, rmcp::model::SubscribeRequestMethod>(None),
    known::<UnsubscribeRequest, rmcp::model::UnsubscribeRequestMethod>(None),
    known::<GetTaskRequest, rmcp::model::GetTaskMethod>(None),
    known::<UpdateTaskRequest, rmcp::model::UpdateTaskMethod>(None),
    known::<CancelTaskRequest, rmcp::model::CancelTaskMethod>(None),
    known::<ListSkillsRequest, rmcp::model::ListSkillsRequestMethod>(Some(PAGINATED)),
    known::<GetSkillRequest, rmcp::model::GetSkillRequestMethod>(None),
    known::<ReadResourceDirectoryRequest, rmcp::model::ReadResourceDirectoryRequestMethod>(None),
];

impl Quick {
    /// Whether rmcp's type surely reads `params` (`false`: it may or may not).
    fn fits(self, params: Option<&RawValue>) -> bool {
        match params {
            None => self.optional,
            Some(params) => {
                let mut reader = serde_json::Deserializer::from_str(params.get());
                self.deserialize(&mut reader).unwrap_or(false)
            }
        }
    }

    fn kind(value: &RawValue) -> u8 {
        match value.get().trim_start().as_bytes().first() {
            Some(b'"') => STRING,
            Some(b'{') => OBJECT,
            Some(b'n') => NULL,
            _ => OTHER,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Quick {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Quick {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params")
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(self.optional)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        // Bit i: `keys[i]` seen; the last bit, any other key (with `any_key`).
        let mut seen = 0u64;
        let mut fits = true;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            if !fits {
                continue;
            }
            let Cow::Borrowed(key) = key.0 else {
                fits = false; // escapes in a key: rmcp decides
                continue;
            };
            match self.keys.iter().position(|&(name, _)| name == key) {
                Some(at) if at < 63 => {
                    let kinds = self.keys[at].1;
                    fits = seen & (1 << at) == 0 && Quick::kind(value) & kinds != 0;
                    seen |= 1 << at;
                }
                Some(_) => fits = false,
                // A key of a map that takes any (a `ping`'s params): once each is not checked
                // (a map keeps the last).
                None => fits = self.any_key,
            }
        }
        Ok(fits
            && self.required.iter().all(|required| {
                self.keys
                    .iter()
                    .position(|&(name, _)| name == *required)
                    .is_some_and(|at| seen & (1 << at) != 0)
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(body: &str) -> Option<(i32, Option<RequestId>)> {
        bad_params(body.as_bytes(), false).map(|refusal| (refusal.code.0, refusal.id))
    }

    #[test]
    fn known_methods_with_params_their_types_cannot_read_are_invalid_params() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":["a"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}"#,
        ] {
            assert_eq!(
                code_of(body),
                Some((-32602, Some(RequestId::Number(1)))),
                "{body}"
            );
        }
        let named = r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#;
        assert_eq!(
            code_of(named),
            Some((-32602, Some(RequestId::String("a".into()))))
        );
        let refusal = bad_params(named.as_bytes(), false).unwrap();
        assert!(
            refusal.message.contains("tools/call") && refusal.message.contains("name"),
            "{}",
            refusal.message
        );
    }

    #[test]
    fn a_2026_request_of_a_removed_method_is_left_to_rmcp_whatever_its_params() {
        for method in REMOVED_IN_2026 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{}}}}"#);
            assert!(bad_params(body.as_bytes(), true).is_none(), "{method}");
        }
        let mut headers = HeaderMap::new();
        assert!(!modern(&headers));
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        assert!(!modern(&headers));
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2026-07-28"),
        );
        assert!(modern(&headers));
    }

    #[test]
    fn good_params_unknown_methods_and_other_messages_pass() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"q":[1,{"x":null}]},"_meta":{"progressToken":3}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":null}}"#,
            r#" { "params" : { "arguments" : { } , "name" : "a\"b" } , "method" : "tools/call" , "id" : 1 , "jsonrpc" : "2.0" } "#,
            // Keys the quick look does not know: rmcp's type reads them (or ignores them).
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":10},"x":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"na\u006de":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}"#,
            // rmcp reads optional params it cannot read as none (serde's flattened `Option`).
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mem://a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1,"x":2}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            // Methods rmcp does not know are the handler's (method not found).
            r#"{"jsonrpc":"2.0","id":1,"method":"nosuch/method","params":{}}"#,
            // Notifications and responses: no id to answer.
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            // Not a request by its top level: rmcp refuses it, then sort_unreadable says why.
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{}}"#,
            "not json",
            "[]",
        ] {
            assert_eq!(code_of(body), None, "{body}");
        }
    }

    /// The quick look never passes params that rmcp's type for the method refuses.
    #[test]
    fn the_quick_look_passes_only_what_rmcp_reads() {
        let keys = [
            "name",
            "uri",
            "arguments",
            "cursor",
            "_meta",
            "requestState",
            "inputResponses",
            "task",
            "x",
        ];
        let values = [r#""s""#, "5", "null", "{}", r#"{"a":"b"}"#, "[]", "true"];
        let mut params = vec!["null".to_owned(), "{}".to_owned(), "[]".to_owned()];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i..] {
                for va in values {
                    for vb in values {
                        params.push(format!(r#"{{"{a}":{va},"{b}":{vb}}}"#));
                    }
                    params.push(format!(r#"{{"{a}":{va}}}"#));
                }
            }
        }
        let mut quick_passes = 0;
        for known in KNOWN.iter().filter(|known| known.quick.is_some()) {
            for params in &params {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"{}","params":{params}}}"#,
                    known.method
                );
                let raw: &RawValue = serde_json::from_str(params).unwrap();
                let raw = (params != "null").then_some(raw);
                if known.quick.unwrap().fits(raw) {
                    quick_passes += 1;
                    let read = (known.read)(body.as_bytes());
                    assert!(read.is_ok(), "{body}: {read:?}");
                }
            }
        }
        assert!(quick_passes > 100, "{quick_passes}");
    }

    fn sorted(body: &str) -> (i32, serde_json::Value) {
        let refusal = sort_unreadable(body.as_bytes());
        (refusal.code.0, serde_json::json!(refusal.id))
    }

    #[test]
    fn what_rmcp_cannot_read_is_sorted_into_parse_error_invalid_request_or_params() {
        use serde_json::json;
        for body in [
            "",
            "not json",
            r#"{"jsonrpc":"2.0","#,
            "{\"a\":\"\\x\"}",
            "{} x",
        ] {
            assert_eq!(sorted(body), (-32700, json!(null)), "{body:?}");
        }
        assert_eq!(
            sort_unreadable(b"\xff\xfe").code,
            ErrorCode::PARSE_ERROR,
            "not UTF-8"
        );
        for (body, id) in [
            (r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#, json!(2)),
            (r#"{"id":2,"method":"ping"}"#, json!(2)),
            (r#"{"jsonrpc":"2.0","id":"x"}"#, json!("x")),
            (r#"{"jsonrpc":"2.0","id":2,"method":5}"#, json!(2)),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                json!(null),
            ),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, json!(null)),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                json!(null),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"ping","error":{}}"#,
                json!(3),
            ),
            ("[]", json!(null)),
            (r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#, json!(null)),
            (r#""str""#, json!(null)),
            ("5", json!(null)),
            ("null", json!(null)),
        ] {
            assert_eq!(sorted(body), (-32600, id), "{body}");
        }
        for (body, id) in [
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"nosuch","params":[1]}"#,
                json!(4),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/x","params":5}"#,
                json!(null),
            ),
        ] {
            assert_eq!(sorted(body), (-32602, id), "{body}");
        }
    }

    #[tokio::test]
    async fn answers_are_400_with_a_json_rpc_error() {
        let refusal = sort_unreadable(br#"{"jsonrpc":"2.0","id":"x"}"#);
        let response = refusal.into_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), 4096).await;
        let body = String::from_utf8(body.unwrap().to_vec()).unwrap();
        assert!(
            body.starts_with(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"#),
            "{body}"
        );
    }

    #[test]
    fn the_content_type_is_json_as_rmcp_decides_it() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            is_json(&headers)
        };
        assert!(with("application/json"));
        assert!(with("Application/JSON; charset=utf-8"));
        assert!(!with("text/plain"));
        assert!(!with("application/json-seq"));
        assert!(!is_json(&HeaderMap::new()));
    }
}
