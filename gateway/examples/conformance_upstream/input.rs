//! Tools and prompts that need the client's input (sampling, elicitation, roots), in both eras:
//!
//! - On a 2025-11-25 session the questions go to the client in band, as server-to-client
//!   requests on the call's own stream, and the call answers once they are answered.
//! - On 2026-07-28 (SEP-2322: no server-to-client requests) the call answers an
//!   `input_required` result listing the questions (`inputRequests`), and the client retries it
//!   with `inputResponses` (and the `requestState` it was given, if any) until it completes.
//!   A question is only asked when the request's `_meta` declares the client capability it
//!   needs; otherwise the call is refused with -32021, or (for an optional question) the
//!   question is left out.
//!
//! `requestState` is a handle to state kept here ([`States`]), not the state itself: a
//! random-looking token, single use, bound to the method, name and arguments of the call that
//! got it, forgotten after [`STATE_TTL`]. A value this process did not issue (a tampered one),
//! or one already redeemed, is refused with -32602, as SEP-2322 asks of state that fails
//! verification.

// Sampling and roots are deprecated by rmcp after 2025-11-25 (SEP-2577), yet 2026-07-28 still
// asks for them in `inputRequests`, and the suite's scenarios do.
#![allow(deprecated)]

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, CreateMessageResult, ElicitResult, InputRequest, InputRequiredResult,
    InputResponses, ListRootsResult, ServerRequest,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::catalog::Asks;

/// How long an issued `requestState` can be redeemed.
pub const STATE_TTL: Duration = Duration::from_secs(600);
/// The most `requestState`s kept at once; issuing one more forgets the oldest.
const MAX_STATES: usize = 4096;

/// The client capability a question needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    Sampling,
    Elicitation,
    Roots,
}

impl Need {
    /// The capability of a request (wire JSON), by its method.
    fn of(request: &Value) -> Need {
        match request["method"].as_str() {
            Some("sampling/createMessage") => Need::Sampling,
            Some("roots/list") => Need::Roots,
            _ => Need::Elicitation,
        }
    }

    /// Whether `capabilities` declare it.
    fn declared(self, capabilities: &ClientCapabilities) -> bool {
        match self {
            Need::Sampling => capabilities.sampling.is_some(),
            Need::Elicitation => capabilities.elicitation.is_some(),
            Need::Roots => capabilities.roots.is_some(),
        }
    }

    /// Its name in `ClientCapabilities`.
    fn name(self) -> &'static str {
        match self {
            Need::Sampling => "sampling",
            Need::Elicitation => "elicitation",
            Need::Roots => "roots",
        }
    }

    /// Whether `answer` (wire JSON) is a valid answer to a request of this capability.
    fn valid_answer(self, answer: &Value) -> bool {
        let answer = answer.clone();
        match self {
            Need::Sampling => serde_json::from_value::<CreateMessageResult>(answer).is_ok(),
            Need::Elicitation => serde_json::from_value::<ElicitResult>(answer).is_ok(),
            Need::Roots => serde_json::from_value::<ListRootsResult>(answer).is_ok(),
        }
    }
}

/// What a `requestState` is bound to: the method, name and arguments of the call it was issued
/// to (the arguments compared as JSON values, whatever their keys' order).
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// `tools/call` or `prompts/get`.
    pub method: &'static str,
    /// The tool's or prompt's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Option<Value>,
}

/// What one call asks: its questions, and the call they belong to.
pub struct Call<'a> {
    /// The questions, round by round.
    pub asks: &'a Asks,
    /// What a `requestState` issued to this call is bound to.
    pub binding: Binding,
    /// The retry's `inputResponses`, if any.
    pub responses: Option<&'a InputResponses>,
    /// The retry's `requestState`, if any.
    pub state: Option<&'a str>,
}

/// What a call does next.
pub enum Step {
    /// Every round is answered: the answers, key -> wire JSON.
    Answered(Map<String, Value>),
    /// The client must answer these first (2026-07-28).
    Ask(InputRequiredResult),
    /// The call cannot be answered, for this reason (a tool's `isError` result).
    Refused(String),
}

/// A round's questions that `capabilities` allow, or the capability that refuses the call.
fn allowed<'q>(
    round: &'q [(&'static str, Value)],
    optional: bool,
    capabilities: Option<&ClientCapabilities>,
) -> Result<Vec<&'q (&'static str, Value)>, Need> {
    let mut asked = Vec::new();
    for question in round {
        let need = Need::of(&question.1);
        // Unknown capabilities (no metadata, no handshake) allow the question.
        if capabilities.is_none_or(|capabilities| need.declared(capabilities)) {
            asked.push(question);
        } else if !optional {
            return Err(need);
        }
    }
    // An optional round left with no question is refused for the first one's capability.
    if asked.is_empty()
        && let Some((_, request)) = round.first()
    {
        return Err(Need::of(request));
    }
    Ok(asked)
}

/// -32021 for a question needing `need`.
fn missing(need: Need) -> ErrorData {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({need.name(): {}})).unwrap_or_default();
    ErrorData::missing_required_client_capability(capabilities)
}

/// Asks `call`'s questions in band, round by round, on a 2025-11-25 session.
pub async fn in_band(call: &Call<'_>, context: &RequestContext<RoleServer>) -> Step {
    let capabilities = context.client_capabilities();
    let mut answers = Map::new();
    for round in &call.asks.rounds {
        let asked = match allowed(round, call.asks.optional, capabilities.as_ref()) {
            Ok(asked) => asked,
            Err(need) => {
                return Step::Refused(format!("The client does not support {}", need.name()));
            }
        };
        for (key, request) in asked {
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            let request: InputRequest = match serde_json::from_value(request.clone()) {
                Ok(request) => request,
                Err(e) => return Step::Refused(format!("Cannot build the request {key}: {e}")),
            };
            let request = match request {
                InputRequest::CreateMessage(request) => {
                    ServerRequest::CreateMessageRequest(request)
                }
                InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
                InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
                _ => return Step::Refused(format!("{key}: a request of an unknown kind")),
            };
            match context.peer.send_request(request).await {
                Ok(answer) => {
                    let answer = serde_json::to_value(answer).unwrap_or_default();
                    answers.insert((*key).to_owned(), answer);
                }
                Err(e) => return Step::Refused(format!("{method} failed: {e}")),
            }
        }
    }
    Step::Answered(answers)
}

/// The next step of `call` on 2026-07-28: the `input_required` result of its current round, or
/// its answers once every round is answered. Errors: -32602 for a `requestState` that fails
/// verification or an answer of the wrong shape, -32021 for an undeclared capability.
pub fn retried(
    call: &Call<'_>,
    context: &RequestContext<RoleServer>,
    states: &States,
) -> Result<Step, ErrorData> {
    let asks = call.asks;
    let (mut round, mut answers) = match call.state {
        Some(state) if asks.with_state => states.redeem(state, &call.binding).ok_or_else(|| {
            let data = json!({"requestState": state});
            ErrorData::invalid_params(
                "requestState failed verification: not issued for this request, expired or \
                 already used",
                Some(data),
            )
        })?,
        Some(state) => {
            let data = json!({"requestState": state});
            return Err(ErrorData::invalid_params(
                "requestState failed verification: this request issues none",
                Some(data),
            ));
        }
        None => (0, Map::new()),
    };
    // Without its state, a stateful call starts over: answers are only taken with one.
    let responses = match (asks.with_state, call.state) {
        (true, None) => None,
        _ => call.responses,
    };
    let capabilities = context.client_capabilities();
    if let Some(responses) = responses
        && let Some(questions) = asks.rounds.get(round)
    {
        let asked = allowed(questions, asks.optional, capabilities.as_ref()).map_err(missing)?;
        let all_answered = asked.iter().all(|(key, _)| responses.contains_key(*key));
        if all_answered {
            for (key, request) in &asked {
                let answer = &responses[*key];
                if !Need::of(request).valid_answer(answer) {
                    let method = request["method"].as_str().unwrap_or_default();
                    return Err(ErrorData::invalid_params(
                        format!("inputResponses.{key} is not a result of {method}"),
                        Some(json!({"key": key, "response": answer})),
                    ));
                }
                answers.insert((*key).to_owned(), answer.clone());
            }
            round += 1;
        }
        // Keys it did not ask are ignored; a round not fully answered is asked again.
    }
    let Some(questions) = asks.rounds.get(round) else {
        return Ok(Step::Answered(answers));
    };
    let asked = allowed(questions, asks.optional, capabilities.as_ref()).map_err(missing)?;
    let mut requests = BTreeMap::new();
    for (key, request) in asked {
        let request: InputRequest = serde_json::from_value(request.clone())
            .map_err(|e| ErrorData::internal_error(format!("request {key}: {e}"), None))?;
        requests.insert((*key).to_owned(), request);
    }
    let state = asks
        .with_state
        .then(|| states.issue(&call.binding, round, answers));
    Ok(Step::Ask(InputRequiredResult::new(Some(requests), state)))
}

/// One issued `requestState`: what it is bound to and the progress it stands for.
struct Pending {
    binding: Binding,
    round: usize,
    answers: Map<String, Value>,
    issued: Instant,
}

/// The `requestState`s this process issued and not yet redeemed.
pub struct States {
    /// Keys for the tokens (random per process), so they cannot be guessed.
    keys: RandomState,
    inner: Mutex<StatesInner>,
}

struct StatesInner {
    minted: u64,
    pending: HashMap<String, Pending>,
}

impl Default for States {
    fn default() -> States {
        States {
            keys: RandomState::new(),
            inner: Mutex::new(StatesInner {
                minted: 0,
                pending: HashMap::new(),
            }),
        }
    }
}

impl States {
    /// A new token standing for `round` and `answers` of the call `binding`.
    fn issue(&self, binding: &Binding, round: usize, answers: Map<String, Value>) -> String {
        let mut inner = self.inner.lock().unwrap();
        let now = Instant::now();
        inner
            .pending
            .retain(|_, pending| now.duration_since(pending.issued) < STATE_TTL);
        if inner.pending.len() >= MAX_STATES
            && let Some(oldest) = inner
                .pending
                .iter()
                .min_by_key(|(_, pending)| pending.issued)
                .map(|(token, _)| token.clone())
        {
            inner.pending.remove(&oldest);
        }
        inner.minted += 1;
        let minted = inner.minted;
        let token = format!(
            "rs1.{:016x}{:016x}",
            self.keys.hash_one((minted, 0u8)),
            self.keys.hash_one((minted, 1u8))
        );
        let pending = Pending {
            binding: binding.clone(),
            round,
            answers,
            issued: now,
        };
        inner.pending.insert(token.clone(), pending);
        token
    }

    /// The round and answers `token` stands for, if this process issued it for `binding`,
    /// within [`STATE_TTL`], and it was not redeemed before; it is redeemed now.
    fn redeem(&self, token: &str, binding: &Binding) -> Option<(usize, Map<String, Value>)> {
        let mut inner = self.inner.lock().unwrap();
        let pending = inner.pending.get(token)?;
        if pending.binding != *binding || pending.issued.elapsed() >= STATE_TTL {
            return None;
        }
        let pending = inner.pending.remove(token)?;
        Some((pending.round, pending.answers))
    }
}
