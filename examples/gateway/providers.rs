//! The three "model providers" behind the gateway's `chat` tool, served by the pool `llm`: each an
//! axum server on `127.0.0.1` (port 0) with `GET /chat` (the tool call) and `GET /health` (the
//! breaker's health check), and a [`ProviderControl`] of plain atomics, as the tools' servers
//! have (`tools.rs`), so the request path takes no lock.
//!
//! Shared by the example (`main.rs`, `pool.rs`) and the integration test
//! (`tests/examples/gateway.rs`).
//!
//! In a failing mode `/health` answers as `/chat` does: a provider that refuses calls is not
//! ready, so a health check does not close its breaker only for the next call to be refused. A
//! rate-limited provider's `/health` answers its 429 with the same `x-ratelimit-reset-requests`,
//! so a failed check keeps the breaker open until the quota resets, as a failed call would.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The providers, in the order of the pool's groups: `llm-a` and `llm-b` preferred, `llm-c` the
/// backup.
pub const PROVIDERS: [&str; 3] = ["llm-a", "llm-b", "llm-c"];

/// The pool that serves the `chat` tool.
pub const POOL: &str = "llm";

/// The header a rate-limited provider says when its quota resets in, as a Go duration (`1.4s`,
/// `350ms`), as OpenAI's API does.
pub const RESET_HEADER: &str = "x-ratelimit-reset-requests";

/// How a provider answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderMode {
    /// 200 with a small JSON completion; `/health` 200.
    Healthy,
    /// 503 Service Unavailable, to `/chat` and `/health`.
    Unavailable,
    /// 429 Too Many Requests, to `/chat` and `/health`, with [`RESET_HEADER`] saying the time
    /// left until `reset_at_ms` (ms since the control's origin: the demo's start).
    RateLimited {
        /// When the quota resets, in ms since the origin.
        reset_at_ms: u64,
    },
}

impl ProviderMode {
    /// The mode in a few words, for logs.
    pub fn describe(self) -> String {
        match self {
            ProviderMode::Healthy => "healthy".to_owned(),
            ProviderMode::Unavailable => "503 unavailable".to_owned(),
            ProviderMode::RateLimited { reset_at_ms } => format!(
                "429 rate limited, {RESET_HEADER} until {:.2} s",
                reset_at_ms as f64 / 1000.0
            ),
        }
    }

    // One word: the low 8 bits the mode, the rest the reset time, so a switch is one store.
    const fn encode(self) -> u64 {
        match self {
            ProviderMode::Healthy => 0,
            ProviderMode::Unavailable => 1,
            ProviderMode::RateLimited { reset_at_ms } => 2 | (reset_at_ms << 8),
        }
    }

    const fn decode(word: u64) -> ProviderMode {
        match word & 0xff {
            1 => ProviderMode::Unavailable,
            2 => ProviderMode::RateLimited {
                reset_at_ms: word >> 8,
            },
            _ => ProviderMode::Healthy,
        }
    }
}

/// A duration as Go writes it (`time.Duration.String`), to the millisecond: `350ms`, `1.4s`,
/// `2s`; `0s` for none.
pub fn go_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    match ms {
        0 => "0s".to_owned(),
        1..=999 => format!("{ms}ms"),
        _ => {
            let fraction = format!("{:03}", ms % 1000);
            let fraction = fraction.trim_end_matches('0');
            if fraction.is_empty() {
                format!("{}s", ms / 1000)
            } else {
                format!("{}.{fraction}s", ms / 1000)
            }
        }
    }
}

/// A provider's switchboard: its mode and what reached it. Lock-free.
#[derive(Debug)]
pub struct ProviderControl {
    origin: Instant,
    mode: AtomicU64,
    chat_hits: AtomicU64,
    health_ok: AtomicU64,
    health_refused: AtomicU64,
}

impl ProviderControl {
    /// A healthy provider whose reset times count from `origin`.
    pub fn new(origin: Instant) -> Self {
        ProviderControl {
            origin,
            mode: AtomicU64::new(0),
            chat_hits: AtomicU64::new(0),
            health_ok: AtomicU64::new(0),
            health_refused: AtomicU64::new(0),
        }
    }

    /// Switch to `mode`; requests that arrive afterwards are answered in it.
    pub fn set_mode(&self, mode: ProviderMode) {
        // Relaxed: the mode is a self-contained value; nothing else is published with it.
        self.mode.store(mode.encode(), Ordering::Relaxed);
    }

    /// The current mode.
    pub fn mode(&self) -> ProviderMode {
        ProviderMode::decode(self.mode.load(Ordering::Relaxed))
    }

    /// The requests that reached `/chat`.
    pub fn chat_hits(&self) -> u64 {
        self.chat_hits.load(Ordering::Relaxed)
    }

    /// The health checks answered 200 (the check's verdict: success).
    pub fn health_ok(&self) -> u64 {
        self.health_ok.load(Ordering::Relaxed)
    }

    /// The health checks answered 503 or 429 (the check's verdict: failure).
    pub fn health_refused(&self) -> u64 {
        self.health_refused.load(Ordering::Relaxed)
    }
}

/// One running provider.
#[derive(Debug)]
pub struct ProviderServer {
    /// Its name: the pool member's, the breaker's in the registry.
    pub name: &'static str,
    /// Where it listens (always on 127.0.0.1).
    pub addr: SocketAddr,
    /// Its mode and counters.
    pub control: Arc<ProviderControl>,
    /// A chat request.
    pub chat_url: String,
    /// Its health URL.
    pub health_url: String,
    stop: watch::Sender<bool>,
    task: JoinHandle<io::Result<()>>,
}

struct Served {
    name: &'static str,
    control: Arc<ProviderControl>,
}

impl ProviderServer {
    /// Start provider `name` on an ephemeral port of 127.0.0.1, healthy, its reset times counted
    /// from `origin`.
    ///
    /// # Errors
    ///
    /// The error of binding the listener.
    pub async fn spawn(name: &'static str, origin: Instant) -> io::Result<ProviderServer> {
        let listener = crate::listen::tcp((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let control = Arc::new(ProviderControl::new(origin));
        let served = Arc::new(Served {
            name,
            control: Arc::clone(&control),
        });
        let app = Router::new()
            .route("/chat", get(chat))
            .route("/health", get(health))
            .with_state(served);
        let (stop, mut stopping) = watch::channel(false);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopping.wait_for(|stopping| *stopping).await;
                })
                .await
        });
        Ok(ProviderServer {
            name,
            addr,
            control,
            chat_url: format!("http://{addr}/chat?prompt=summarize+the+outage"),
            health_url: format!("http://{addr}/health"),
            stop,
            task,
        })
    }

    /// Stop accepting, let in-flight requests finish and close every connection; gives up (and
    /// aborts the server) after `grace`.
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
                    self.name
                )))
            }
        }
    }
}

/// The answer in a failing mode, to `/chat` and `/health` alike; `None` when healthy.
fn refusal(served: &Served) -> Option<Response> {
    let control = &served.control;
    let mode = control.mode();
    let (status, message) = match mode {
        ProviderMode::Healthy => return None,
        ProviderMode::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        ProviderMode::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate limited"),
    };
    let body = serde_json::json!({"provider": served.name, "error": message}).to_string();
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let ProviderMode::RateLimited { reset_at_ms } = mode {
        let left = Duration::from_millis(reset_at_ms).saturating_sub(control.origin.elapsed());
        if let Ok(value) = HeaderValue::from_str(&go_duration(left)) {
            response.headers_mut().insert(RESET_HEADER, value);
        }
    }
    Some(response)
}

async fn chat(State(served): State<Arc<Served>>) -> Response {
    served.control.chat_hits.fetch_add(1, Ordering::Relaxed);
    if let Some(refused) = refusal(&served) {
        return refused;
    }
    let body = serde_json::json!({
        "provider": served.name,
        "completion": "The search API was down for a while; the breaker kept the agents off it.",
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn health(State(served): State<Arc<Served>>) -> Response {
    if let Some(refused) = refusal(&served) {
        served
            .control
            .health_refused
            .fetch_add(1, Ordering::Relaxed);
        return refused;
    }
    served.control.health_ok.fetch_add(1, Ordering::Relaxed);
    StatusCode::OK.into_response()
}
