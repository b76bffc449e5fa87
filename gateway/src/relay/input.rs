//! A 2026-07-28 client's tool call in front of a 2025-11-25 upstream that asks for input.
//!
//! The upstream sends `sampling/createMessage`, `elicitation/create` or `roots/list` during the
//! call and waits for the answer on its session. The client has no session to be asked on: it
//! is answered an `input_required` result whose `inputRequests` are those requests and whose
//! `requestState` names the call, which goes on waiting upstream. The client's retry (the same
//! tool, with `inputResponses` and that `requestState`) answers the upstream's requests, and
//! the call goes on from where it was: one call upstream, one permit, one outcome.
//!
//! - The `requestState` is the gateway's own: sealed with a key made at start (HMAC, rmcp's
//!   [`RequestStateCodec`]), bound to the tool's name and arguments, and prefixed `tbg.` so
//!   that a state an upstream made passes through untouched. A state that does not open
//!   (forged, changed, another process's, expired) is refused with `-32602`, and so is a retry
//!   of another tool, or of the tool with other arguments.
//! - A call whose client does not come back within the wait ([`Inputs::new`]) is cancelled
//!   upstream (`notifications/cancelled`); its permit goes back unrecorded, as any cancelled
//!   call's: it counts nothing. So does a call whose client went away while it ran.
//! - A retry that leaves an input unanswered is answered `input_required` again with that
//!   input; an answer that is not the result its request asks for is refused with `-32602`,
//!   and the call waits on.
//!
//! Sampling and roots are deprecated by the protocol's next version (SEP-2577), not by the
//! versions the gateway speaks: it relays them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientResult, CreateMessageResult, ElicitResult,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, ListRootsResult,
    ProgressToken, RequestStateCodec, SealOptions, ServerRequest,
};
use rmcp::service::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::redact::shown;
use crate::upstream::{Ask, Asks, ProgressTo};

/// What marks a `requestState` as the gateway's own.
const PREFIX: &str = "tbg.";

/// How many requests an upstream may have outstanding during one call.
const ASKS: usize = 16;

/// The call running upstream: its answer, or the client's refusal.
pub(super) type Call = AbortOnDropHandle<Result<CallToolResponse, ErrorData>>;

/// The calls waiting for their 2026-07-28 client's answers.
#[derive(Debug)]
pub(super) struct Inputs {
    codec: RequestStateCodec,
    /// Milliseconds a call waits for its client's retry.
    wait_ms: AtomicU64,
    next: AtomicU64,
    parked: Mutex<HashMap<u64, Parked>>,
}

/// A call waiting for its client's retry.
#[derive(Debug)]
struct Parked {
    call: Call,
    asks: mpsc::Receiver<Ask>,
    pending: Vec<Pending>,
    next_key: u64,
    /// What the client declared it can do: an input it cannot give is refused upstream.
    capabilities: ClientCapabilities,
    /// Where the call's progress goes: the stream of the client's latest request for it.
    progress_to: ProgressTo,
}

/// One of the upstream's requests, shown to the client under `key`.
#[derive(Debug)]
struct Pending {
    key: String,
    request: InputRequest,
    answer: tokio::sync::oneshot::Sender<Result<ClientResult, ErrorData>>,
}

/// What the gateway's `requestState` carries: the waiting call's number.
#[derive(Serialize, Deserialize)]
struct State {
    call: u64,
}

impl Inputs {
    /// No call waiting; a call waits at most `wait` for its client's retry.
    pub(super) fn new(wait: Duration) -> Self {
        let mut key = [0u8; 32];
        // A state the gateway makes must not be forgeable, and without the system's random
        // source no key that cannot be guessed can be made: stopping here is right (a working
        // system always has one).
        getrandom::fill(&mut key).expect("the system's random source for the requestState key");
        let codec = RequestStateCodec::try_new(key.to_vec())
            .expect("32 random bytes are a key of the length the codec asks");
        Inputs {
            codec,
            wait_ms: AtomicU64::new(millis(wait)),
            next: AtomicU64::new(0),
            parked: Mutex::default(),
        }
    }

    /// A call parked from now on waits at most `wait` for its client's retry.
    pub(super) fn set_wait(&self, wait: Duration) {
        // Relaxed: a setting read on its own when a call parks.
        self.wait_ms.store(millis(wait), Ordering::Relaxed);
    }

    fn wait(&self) -> Duration {
        Duration::from_millis(self.wait_ms.load(Ordering::Relaxed))
    }

    /// Whether `state` is one the gateway made (it may still not open).
    pub(super) fn owns(state: &str) -> bool {
        state.starts_with(PREFIX)
    }

    /// A fresh call's channel for the upstream's requests (into the call's origin), and its
    /// receiving end for [`drive`](Self::drive).
    pub(super) fn channel() -> (Asks, mpsc::Receiver<Ask>) {
        mpsc::channel(ASKS)
    }

    /// Drives `call` until it answers, or until the upstream asks for input, which parks it
    /// and answers the client `input_required`. `cancel` is the client's request: when it
    /// ends, so does the call.
    pub(super) async fn drive(
        self: &Arc<Self>,
        tool: &str,
        call: Call,
        asks: mpsc::Receiver<Ask>,
        capabilities: ClientCapabilities,
        progress_to: ProgressTo,
        cancel: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let parked = Parked {
            call,
            asks,
            pending: Vec::new(),
            next_key: 0,
            capabilities,
            progress_to,
        };
        self.run(tool, parked, cancel).await
    }

    /// The client's retry with `state` and `answers`, on the stream `here` (its peer and
    /// progress token, where the call's progress goes from now): the waiting call is given the
    /// answers and driven on.
    ///
    /// # Errors
    ///
    /// `-32602` (invalid params) for a state that does not open or names no waiting call (it
    /// ended: answered, expired, cancelled), and for an answer that is not the result its
    /// request asks for (the call waits on).
    pub(super) async fn resume(
        self: &Arc<Self>,
        tool: &str,
        state: &str,
        answers: Option<InputResponses>,
        here: (Peer<RoleServer>, Option<ProgressToken>),
        cancel: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = self.open(tool, state)?;
        let Some(mut parked) = self.parked().remove(&call) else {
            return Err(ErrorData::invalid_params(
                "requestState names no waiting call: it was answered, cancelled, or waited too long; call the tool again",
                None,
            ));
        };
        let mut answers = answers.unwrap_or_default();
        // Every answer is checked before any is given, so a bad one loses nothing.
        let mut results = Vec::new();
        for pending in &parked.pending {
            if let Some(answer) = answers.remove(&pending.key) {
                match result_of(&pending.request, answer) {
                    Ok(result) => results.push((pending.key.clone(), result)),
                    Err(error) => {
                        self.parked().insert(call, parked);
                        return Err(error);
                    }
                }
            }
        }
        for (key, result) in results {
            if let Some(at) = parked.pending.iter().position(|p| p.key == key) {
                let pending = parked.pending.swap_remove(at);
                let _ = pending.answer.send(Ok(result));
            }
        }
        parked.pending.sort_by(|a, b| a.key.cmp(&b.key));
        // The call's progress from now on goes to this retry's stream, with its token.
        *parked
            .progress_to
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = here;
        self.run(tool, parked, cancel).await
    }

    /// Runs the call until it answers, or parks it when it waits for input.
    async fn run(
        self: &Arc<Self>,
        tool: &str,
        mut parked: Parked,
        cancel: &CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut open = true;
        loop {
            if !parked.pending.is_empty() {
                // What else the upstream asked at the same time goes out with it.
                while let Ok(ask) = parked.asks.try_recv() {
                    parked.take(ask);
                }
                return Ok(CallToolResponse::InputRequired(self.park(tool, parked)));
            }
            tokio::select! {
                answer = &mut parked.call => {
                    return answer.unwrap_or_else(|_| {
                        Err(ErrorData::internal_error("the call was lost", None))
                    });
                }
                ask = parked.asks.recv(), if open => match ask {
                    Some(ask) => parked.take(ask),
                    // The call's origin is gone: it is answering.
                    None => open = false,
                },
                () = cancel.cancelled() => {
                    return Err(ErrorData::internal_error("cancelled by the client", None));
                }
            }
        }
    }

    /// Keeps `parked` until its client's retry (or the wait's end), and the `input_required`
    /// result that asks the client.
    fn park(self: &Arc<Self>, tool: &str, parked: Parked) -> InputRequiredResult {
        // Relaxed: the number only has to be unique, which the read-modify-write gives.
        let call = self.next.fetch_add(1, Ordering::Relaxed);
        let requests: InputRequests = parked
            .pending
            .iter()
            .map(|p| (p.key.clone(), p.request.clone()))
            .collect();
        let wait = self.wait();
        let state = self.seal(tool, call, wait);
        self.parked().insert(call, parked);
        let inputs = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(inputs) = inputs.upgrade() {
                let expired = inputs.parked().remove(&call);
                if let Some(expired) = expired {
                    expired.cancel().await;
                    tracing::info!(
                        wait_ms = millis(wait),
                        "a call waiting for its client's input was cancelled: no retry came"
                    );
                }
            }
        });
        InputRequiredResult::new(Some(requests), Some(state))
    }

    fn seal(&self, tool: &str, call: u64, wait: Duration) -> String {
        let options = SealOptions::new()
            .associated_data(tool.as_bytes())
            .ttl(wait);
        let sealed = self
            .codec
            .seal_json_with(&State { call }, &options)
            // A struct of one integer always serialises.
            .unwrap_or_default();
        format!("{PREFIX}{sealed}")
    }

    fn open(&self, tool: &str, state: &str) -> Result<u64, ErrorData> {
        state
            .strip_prefix(PREFIX)
            .and_then(|sealed| {
                self.codec
                    .open_json_with::<State>(sealed, tool.as_bytes())
                    .ok()
            })
            .map(|state| state.call)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    "requestState was not made by this gateway for this tool with these arguments, was changed, or has expired; call the tool again without it",
                    None,
                )
            })
    }

    fn parked(&self) -> MutexGuard<'_, HashMap<u64, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Parked {
    /// Ends the call: cancelled upstream first (`notifications/cancelled`, sent as its future
    /// is dropped), then the upstream's requests still waiting are refused.
    async fn cancel(self) {
        let Parked { call, pending, .. } = self;
        call.abort();
        let _ = call.await;
        drop(pending);
    }

    /// One of the upstream's requests, to ask the client; one that has no `input_required`
    /// form is refused to the upstream.
    fn take(&mut self, ask: Ask) {
        let declared = &self.capabilities;
        let builder = ClientCapabilities::builder();
        let (request, missing) = match ask.request {
            ServerRequest::CreateMessageRequest(r) => (
                InputRequest::CreateMessage(r),
                declared
                    .sampling
                    .is_none()
                    .then(|| builder.enable_sampling().build()),
            ),
            ServerRequest::ElicitRequest(r) => (
                InputRequest::Elicitation(r),
                declared
                    .elicitation
                    .is_none()
                    .then(|| builder.enable_elicitation().build()),
            ),
            ServerRequest::ListRootsRequest(r) => (
                InputRequest::ListRoots(r),
                declared
                    .roots
                    .is_none()
                    .then(|| builder.enable_roots().build()),
            ),
            other => {
                let _ = ask.answer.send(Err(not_an_input(&other)));
                return;
            }
        };
        if let Some(required) = missing {
            // The client did not declare it can answer this: it is never asked.
            let refusal = ErrorData::missing_required_client_capability(required);
            let _ = ask.answer.send(Err(refusal));
            return;
        }
        let key = format!("input-{}", self.next_key);
        self.next_key += 1;
        self.pending.push(Pending {
            key,
            request,
            answer: ask.answer,
        });
    }
}

/// The client's `answer` as the result `request` asks for.
fn result_of(request: &InputRequest, answer: serde_json::Value) -> Result<ClientResult, ErrorData> {
    let parsed = match request {
        InputRequest::CreateMessage(_) => serde_json::from_value::<CreateMessageResult>(answer)
            .map(|r| ClientResult::CreateMessageResult(Box::new(r))),
        InputRequest::Elicitation(_) => {
            serde_json::from_value::<ElicitResult>(answer).map(ClientResult::ElicitResult)
        }
        InputRequest::ListRoots(_) => {
            serde_json::from_value::<ListRootsResult>(answer).map(ClientResult::ListRootsResult)
        }
        _ => {
            return Err(ErrorData::invalid_params(
                "an input of a kind the gateway does not know",
                None,
            ));
        }
    };
    parsed.map_err(|error| {
        ErrorData::invalid_params(
            format!(
                "an inputResponses entry is not the result its request asks for: {}",
                shown(&error.to_string())
            ),
            None,
        )
    })
}

fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}

/// The refusal of an upstream's request that has no `input_required` form.
fn not_an_input(request: &ServerRequest) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!(
            "{} cannot reach a 2026-07-28 client during a call",
            match request {
                ServerRequest::PingRequest(_) => "ping",
                _ => "a request of this kind",
            }
        ),
        None,
    )
}
