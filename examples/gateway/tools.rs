//! The four tool servers of the gateway demo, and the client side of one guarded tool call.
//!
//! Shared by the example (`main.rs`) and the integration test (`tests/examples/gateway.rs`).
//!
//! Each server is an axum app on `127.0.0.1`, port 0 (the system picks a free one), with a
//! [`Control`]: its current [`Mode`] and a count of the requests that reached it, both plain
//! atomics, so the request path takes no lock. Whoever holds the control switches the mode: in the
//! example a scheduler by elapsed time, in the test the test itself.
//!
//! [`call_tool`] is the agent side: one tool call through the guard pipeline
//! (`ToolGuard::call_observed`: run deadline and budget, the dependency's breaker, per-call timeout,
//! classification, bounded retry). Each attempt is [`fetch`]: one HTTP request, classified with the
//! crate's HTTP rules inside the attempt, so that a failure's [`ToolError`] carries its
//! [`Outcome`], a 429's `Retry-After` hint included, and its status. The dependency is the
//! breaker's: a result names the breaker it came through, never a name passed beside it.
//!
//! What the model reads of a failure: by default the pipeline shows only its kind and HTTP
//! status ([`Classified`] gives the status). A [`ToolError`]'s words are written for the model
//! (the status and its reason, the `Retry-After` hint, never the URL or a transport error's
//! text), so the gateway's [`Guard`] shows them ([`guard`]: `ToolGuard::error_text`).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use toolbreaker::classify;
use toolbreaker::classify::reqwest::{classify_reqwest, classify_reqwest_error};
use toolbreaker::{
    AgentRun, CircuitBreaker, Classify, FailureKind, Outcome, RetryPolicy, ToolGuard, ToolResult,
    agent::Attempt,
};

/// The tools the agent can call; each is its own dependency with its own server and breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    /// A web search API.
    Search,
    /// A weather API.
    Weather,
    /// A stock quotes API.
    Quotes,
    /// A file store. Always up, but it answers 400 to invalid arguments.
    Files,
}

impl Tool {
    /// Every tool, in display order.
    pub const ALL: [Tool; 4] = [Tool::Search, Tool::Weather, Tool::Quotes, Tool::Files];

    /// The dependency's name: the breaker's key in the registry and the server's path.
    pub const fn name(self) -> &'static str {
        match self {
            Tool::Search => "search",
            Tool::Weather => "weather",
            Tool::Quotes => "quotes",
            Tool::Files => "files",
        }
    }

    /// The query string of a call with valid arguments.
    const fn valid_query(self) -> &'static str {
        match self {
            Tool::Search => "q=circuit+breaker+pattern",
            Tool::Weather => "city=Lisbon",
            Tool::Quotes => "symbol=ACME",
            Tool::Files => "path=notes%2Fplan.md",
        }
    }

    /// The query string of a call with invalid arguments. Only `files` checks its arguments; the
    /// others answer it like a valid one.
    const fn invalid_query(self) -> &'static str {
        match self {
            Tool::Files => "path=..%2F..%2Fetc%2Fpasswd",
            other => other.valid_query(),
        }
    }
}

/// How a tool server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 200 with a small JSON body (or 400 to invalid arguments, for `files`).
    Healthy,
    /// 503 Service Unavailable.
    Unavailable,
    /// Never answers (until the server shuts down): the caller's per-call timeout must fire.
    Hang,
    /// 429 Too Many Requests with `Retry-After: retry_after_secs`.
    RateLimited {
        /// The `Retry-After` header's delay-seconds.
        retry_after_secs: u32,
    },
    /// A degradation: `percent` % of the requests are answered 503 Service Unavailable, the
    /// others as when healthy. Deterministic and spread evenly, as [`Mode::PartlyRateLimited`]:
    /// the `n`-th request numbered while failing (from 0) is refused when `(n + 1) × percent / 100`
    /// passes a whole number that `n × percent / 100` did not, so at 75 % the refusals come three
    /// in a row, then one success; a run of 5 needs more than 80 %.
    PartlyUnavailable {
        /// The share of requests refused, in percent (100: every one, as [`Mode::Unavailable`]).
        percent: u8,
    },
    /// A partial outage: one request in `one_in` is answered 429 Too Many Requests with
    /// `Retry-After: retry_after_secs`, the others as when healthy. Deterministic: the server
    /// numbers the requests that reach it while failing ([`Control::failing_hits`]), and answers
    /// 429 to the `one_in`-th, the 2 × `one_in`-th, and so on; so with `one_in` above 1 it never
    /// fails two requests in a row, and a breaker's consecutive rule never sees a run of them.
    PartlyRateLimited {
        /// One request in this many is refused (1: every one, as [`Mode::RateLimited`]).
        one_in: u16,
        /// The `Retry-After` header's delay-seconds.
        retry_after_secs: u32,
    },
}

impl Mode {
    /// Whether the dependency is unhealthy in this mode.
    pub const fn is_failing(self) -> bool {
        !matches!(self, Mode::Healthy)
    }

    /// The mode in a few words, for logs.
    pub fn describe(self) -> String {
        match self {
            Mode::Healthy => "healthy".to_owned(),
            Mode::Unavailable => "503 unavailable".to_owned(),
            Mode::PartlyUnavailable { percent } => format!("503 on {percent} % of requests"),
            Mode::Hang => "hanging (never answers)".to_owned(),
            Mode::RateLimited { retry_after_secs } => {
                format!("429 rate limited, Retry-After: {retry_after_secs}")
            }
            Mode::PartlyRateLimited {
                one_in,
                retry_after_secs,
            } => {
                format!(
                    "429 rate limited on 1 request in {one_in}, Retry-After: {retry_after_secs}"
                )
            }
        }
    }

    // One word holds the mode and its parameters, so a switch is a single store and a reader
    // never sees one mode with another's parameters: the low 8 bits are the mode, the next 32 the
    // `Retry-After` seconds, the next 16 the share of a partial outage (`one_in`); a
    // degradation's percentage is in the next 8 bits after the mode.
    const fn encode(self) -> u64 {
        match self {
            Mode::Healthy => 0,
            Mode::Unavailable => 1,
            Mode::Hang => 2,
            Mode::RateLimited { retry_after_secs } => 3 | ((retry_after_secs as u64) << 8),
            Mode::PartlyRateLimited {
                one_in,
                retry_after_secs,
            } => 4 | ((retry_after_secs as u64) << 8) | ((one_in as u64) << 40),
            Mode::PartlyUnavailable { percent } => 5 | ((percent as u64) << 8),
        }
    }

    const fn decode(word: u64) -> Mode {
        match word & 0xff {
            1 => Mode::Unavailable,
            2 => Mode::Hang,
            3 => Mode::RateLimited {
                retry_after_secs: (word >> 8) as u32,
            },
            4 => Mode::PartlyRateLimited {
                one_in: (word >> 40) as u16,
                retry_after_secs: (word >> 8) as u32,
            },
            5 => Mode::PartlyUnavailable {
                percent: (word >> 8) as u8,
            },
            _ => Mode::Healthy,
        }
    }
}

/// The most callers a server tells apart (see [`CALLER_HEADER`]).
pub const MAX_CALLERS: usize = 16;

/// The request header in which a caller says which of the gateway's instances it is (`1` to
/// [`MAX_CALLERS`]), so that a server counts the requests it had while failing per instance. A
/// request without it is counted as no instance's.
pub const CALLER_HEADER: &str = "x-gateway-instance";

/// A server's switchboard: its mode and how many requests reached it. Lock-free.
#[derive(Debug, Default)]
pub struct Control {
    mode: AtomicU64,
    hits: AtomicU64,
    failing_hits: AtomicU64,
    /// The requests that arrived while failing, by caller: index 0 for none, then instance 1 to
    /// [`MAX_CALLERS`].
    failing_hits_from: [AtomicU64; MAX_CALLERS + 1],
}

impl Control {
    /// Switch the server to `mode`; requests that arrive afterwards are answered in it.
    pub fn set_mode(&self, mode: Mode) {
        // Relaxed: the mode is a self-contained value; nothing else is published with it.
        self.mode.store(mode.encode(), Ordering::Relaxed);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        Mode::decode(self.mode.load(Ordering::Relaxed))
    }

    /// How many requests have reached the server's handler.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// How many of them arrived while the server was in a failing mode.
    pub fn failing_hits(&self) -> u64 {
        self.failing_hits.load(Ordering::Relaxed)
    }

    /// How many of those came from instance `caller` (1 to [`MAX_CALLERS`]; 0: from no
    /// instance, or one the server could not tell).
    pub fn failing_hits_from(&self, caller: usize) -> u64 {
        self.failing_hits_from
            .get(caller)
            .map_or(0, |hits| hits.load(Ordering::Relaxed))
    }
}

/// The instance a request says it comes from ([`CALLER_HEADER`]), or 0.
fn caller(headers: &HeaderMap) -> usize {
    headers
        .get(CALLER_HEADER)
        .and_then(|value| value.to_str().ok()?.parse().ok())
        .filter(|caller| (1..=MAX_CALLERS).contains(caller))
        .unwrap_or(0)
}

struct ServerState {
    tool: Tool,
    control: Arc<Control>,
    /// Becomes `true` when the server shuts down; releases the hanging handlers.
    stopping: watch::Receiver<bool>,
}

/// One running tool server.
#[derive(Debug)]
pub struct ToolServer {
    /// Which tool this server is.
    pub tool: Tool,
    /// Where it listens (always on 127.0.0.1).
    pub addr: SocketAddr,
    /// Its mode and hit counter.
    pub control: Arc<Control>,
    /// A request with valid arguments.
    pub valid_url: String,
    /// A request with invalid arguments (`files` answers it 400; the others treat it as valid).
    pub invalid_url: String,
    stop: watch::Sender<bool>,
    task: JoinHandle<io::Result<()>>,
}

impl ToolServer {
    /// Start `tool`'s server on an ephemeral port of 127.0.0.1, healthy.
    ///
    /// # Errors
    ///
    /// The error of binding the listener.
    pub async fn spawn(tool: Tool) -> io::Result<ToolServer> {
        let listener = crate::listen::tcp((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        // Small requests and answers: send them at once.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let control = Arc::new(Control::default());
        let (stop, stopping) = watch::channel(false);
        let state = Arc::new(ServerState {
            tool,
            control: Arc::clone(&control),
            stopping: stopping.clone(),
        });
        let app = Router::new()
            .route(&format!("/{}", tool.name()), get(handle))
            .with_state(state);
        let mut signal = stopping;
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = signal.wait_for(|stopping| *stopping).await;
                })
                .await
        });
        let (valid_url, invalid_url) = urls(tool, addr);
        Ok(ToolServer {
            tool,
            addr,
            control,
            valid_url,
            invalid_url,
            stop,
            task,
        })
    }

    /// Stop accepting, release hanging handlers, let in-flight requests finish and close every
    /// connection. Gives up (and aborts the server) after `grace`.
    ///
    /// # Errors
    ///
    /// The server's own error, or a note that it did not stop within `grace`.
    pub async fn shutdown(self, grace: Duration) -> io::Result<()> {
        self.stop.send_replace(true);
        let mut task = self.task;
        match tokio::time::timeout(grace, &mut task).await {
            Ok(Ok(served)) => served,
            Ok(Err(join)) => Err(io::Error::other(join)),
            Err(_) => {
                task.abort();
                Err(io::Error::other(format!(
                    "{} server did not stop within {grace:?}",
                    self.tool.name()
                )))
            }
        }
    }
}

/// The URLs of a call to `tool`'s server at `addr`: with valid arguments, and with invalid ones
/// (`files` answers those 400; the others treat them as valid).
pub fn urls(tool: Tool, addr: SocketAddr) -> (String, String) {
    let base = format!("http://{addr}/{}", tool.name());
    (
        format!("{base}?{}", tool.valid_query()),
        format!("{base}?{}", tool.invalid_query()),
    )
}

async fn handle(
    State(server): State<Arc<ServerState>>,
    Query(args): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    server.control.hits.fetch_add(1, Ordering::Relaxed);
    let tool = server.tool.name();
    let mode = server.control.mode();
    // This request's number among those that arrived while failing, from 0.
    let mut failing_number = 0;
    if mode.is_failing() {
        failing_number = server.control.failing_hits.fetch_add(1, Ordering::Relaxed);
        server.control.failing_hits_from[caller(&headers)].fetch_add(1, Ordering::Relaxed);
    }
    match mode {
        Mode::Healthy => {}
        Mode::Unavailable => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                tool,
                "temporarily unavailable",
            );
        }
        Mode::Hang => {
            // Never answer: the caller's timeout has to fire. Only a shutdown releases the handler,
            // so that the server can close its connections and the process can exit.
            let mut stopping = server.stopping.clone();
            tokio::select! {
                () = std::future::pending::<()>() => {}
                _ = stopping.wait_for(|stopping| *stopping) => {}
            }
            return error(StatusCode::SERVICE_UNAVAILABLE, tool, "shutting down");
        }
        Mode::PartlyUnavailable { percent } => {
            let percent = u64::from(percent.min(100));
            if (failing_number + 1) * percent / 100 > failing_number * percent / 100 {
                return error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    tool,
                    "temporarily unavailable",
                );
            }
        }
        Mode::RateLimited { retry_after_secs } => return rate_limited(tool, retry_after_secs),
        Mode::PartlyRateLimited {
            one_in,
            retry_after_secs,
        } => {
            let one_in = u64::from(one_in.max(1));
            if failing_number % one_in == one_in - 1 {
                return rate_limited(tool, retry_after_secs);
            }
        }
    }
    let body = match server.tool {
        Tool::Search => serde_json::json!({
            "results": [
                {"title": "Circuit breaker pattern", "snippet": "Stop calling a failing dependency."},
                {"title": "Retry storms", "snippet": "Why immediate retries make outages worse."},
            ]
        }),
        Tool::Weather => {
            serde_json::json!({"city": args.get("city"), "sky": "clear", "temp_c": 21})
        }
        Tool::Quotes => serde_json::json!({"symbol": args.get("symbol"), "price": 101.25}),
        Tool::Files => match args.get("path") {
            Some(path) if !path.is_empty() && !path.contains("..") => {
                serde_json::json!({"path": path, "content": "1. ship the breaker\n2. write the docs\n"})
            }
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    tool,
                    "invalid argument `path`: must be a non-empty relative path without `..`",
                );
            }
        },
    };
    json(StatusCode::OK, body.to_string())
}

/// 429 Too Many Requests with `Retry-After: retry_after_secs`.
fn rate_limited(tool: &str, retry_after_secs: u32) -> Response {
    let mut response = error(StatusCode::TOO_MANY_REQUESTS, tool, "rate limited");
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, retry_after_secs.into());
    response
}

fn error(status: StatusCode, tool: &str, message: &str) -> Response {
    json(
        status,
        serde_json::json!({"tool": tool, "error": message}).to_string(),
    )
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Why one attempt did not give a usable answer: the outcome the crate's HTTP rules gave it (a
/// 429 carries its `Retry-After` hint here, so it reaches the pipeline's retry policy), and what
/// happened.
///
/// Its `Display` is what the model reads in a `failed` result: the status or the kind of
/// transport failure, never the URL, its query or the transport error's own text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// How the attempt is classified: a counted failure, or `Ignored` (a 400 for bad arguments).
    pub outcome: Outcome,
    /// What happened.
    pub cause: Cause,
}

/// What went wrong in one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The dependency answered with this status, which is not a success.
    Status(u16),
    /// The dependency answered with this (successful) status, but its body broke off.
    Body(u16),
    /// No answer: the request failed before one came (connect, transport timeout, a bad request).
    Transport,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cause {
            Cause::Status(status) => {
                write!(f, "HTTP {status}")?;
                if let Some(reason) = StatusCode::from_u16(status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                {
                    write!(f, " {reason}")?;
                }
                if let Some(hint) = self.outcome.retry_after() {
                    write!(f, " (Retry-After: {} s)", hint.as_secs())?;
                }
                Ok(())
            }
            Cause::Body(status) => write!(f, "HTTP {status}, but the response body broke off"),
            Cause::Transport => f.write_str(match self.outcome {
                Outcome::Failure(FailureKind::Timeout) => "the request timed out",
                Outcome::Failure(FailureKind::Connect) => "could not connect",
                Outcome::Ignored => "the request could not be made",
                _ => "the request failed in transport",
            }),
        }
    }
}

impl std::error::Error for ToolError {}

/// The pipeline's classification of an attempt: [`fetch`] has already classified it, and kept the
/// status it answered with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Classified;

impl Classify<String, ToolError> for Classified {
    fn classify(&self, result: &Result<String, ToolError>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err(error) => error.outcome,
        }
    }

    fn http_status(&self, result: &Result<String, ToolError>) -> Option<u16> {
        match result.as_ref().err()?.cause {
            Cause::Status(status) | Cause::Body(status) => Some(status),
            Cause::Transport => None,
        }
    }
}

/// The gateway's guard: it shows the model a [`ToolError`]'s words, which hold nothing secret.
pub type Guard = ToolGuard<fn(&ToolError) -> Option<String>>;

/// A [`Guard`]: attempts under `per_call_timeout`, retried by `retry`.
pub fn guard(per_call_timeout: Duration, retry: RetryPolicy) -> Guard {
    ToolGuard::new(per_call_timeout, retry).error_text(|error: &ToolError| Some(error.to_string()))
}

/// One attempt: send `GET url` with `client`, read the body, and classify the exchange with the
/// crate's HTTP rules ([`classify_reqwest`]). `Ok` is the body of a successful answer; anything
/// else is a [`ToolError`] carrying its outcome.
///
/// No timeout here: the pipeline runs each attempt under its per-call timeout and drops it when
/// that runs out.
///
/// # Errors
///
/// A [`ToolError`] for every answer that is not a success (a 503, a 429, a 400) and for every
/// transport failure.
pub async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, ToolError> {
    let sent = client.get(url).send().await;
    let outcome = classify_reqwest(&sent);
    let response = match sent {
        Ok(response) => response,
        Err(_) => {
            return Err(ToolError {
                outcome,
                cause: Cause::Transport,
            });
        }
    };
    let status = response.status().as_u16();
    // Read every body, failures included, so the connection can be reused.
    let body = response.bytes().await;
    match (outcome, body) {
        (Outcome::Success, Ok(body)) => Ok(String::from_utf8_lossy(&body).into_owned()),
        // A success whose body broke off is the dependency's failure after all.
        (Outcome::Success, Err(broken)) => Err(ToolError {
            outcome: match classify_reqwest_error(&broken) {
                failure @ Outcome::Failure(_) => failure,
                _ => Outcome::Failure(FailureKind::Other),
            },
            cause: Cause::Body(status),
        }),
        (outcome, _) => Err(ToolError {
            outcome,
            cause: Cause::Status(status),
        }),
    }
}

/// One tool call through the guard pipeline: `guard` and `run` decide whether and how often
/// [`fetch`] runs against `url`, `breaker` is the tool's breaker (whose name the result carries),
/// and `observe` sees every attempt that reached the dependency (its probe flag, outcome and
/// transition) as it ends.
pub async fn call_tool(
    guard: &Guard,
    run: &AgentRun,
    breaker: &CircuitBreaker,
    client: &reqwest::Client,
    url: &str,
    observe: impl FnMut(&Attempt),
) -> ToolResult<String> {
    guard
        .call_observed(
            run,
            breaker,
            classify::with(&Classified),
            || fetch(client, url),
            observe,
        )
        .await
}

/// The HTTP client the agent shares across all its calls: plain HTTP, no proxy (every tool is on
/// 127.0.0.1), and no timeout of its own (the pipeline's per-call timeout governs).
///
/// # Errors
///
/// reqwest's, if the client cannot be built.
pub fn client() -> reqwest::Result<reqwest::Client> {
    client_builder().build()
}

/// [`client`] for instance `instance` of a fleet (1 to [`MAX_CALLERS`]): every request says so in
/// [`CALLER_HEADER`].
///
/// # Errors
///
/// reqwest's, if the client cannot be built.
pub fn instance_client(instance: usize) -> reqwest::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(CALLER_HEADER, reqwest::header::HeaderValue::from(instance));
    client_builder().default_headers(headers).build()
}

fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(30))
}
