//! The MCP gateway demo's moving parts: the upstream servers, the gateway in front of them (the
//! `toolbreaker-gateway` binary's code: its relay, configured from TOML text naming the
//! upstreams, served by its HTTP app), the failure schedule, the agents and the progress lines;
//! [`run`] runs the demo once and returns its [`Report`], [`serve`] keeps the gateway up with the
//! schedule looping until Ctrl-C.
//!
//! Shared by the example (`mcp_gateway.rs`) and its test (`examples/tests/gateway_mcp.rs`).

use std::error::Error;
use std::io;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use toolbreaker::mcp::MCP_PATH;
use toolbreaker::observe::TransitionEvent;
use toolbreaker::{Registry, State, TransitionReason};
use toolbreaker_gateway::config::GatewayConfig;
use toolbreaker_gateway::relay::Gateway;
use toolbreaker_gateway::serve::{self as http, HttpApp, HttpOptions};

use crate::agents::{self, Agents, CallStats, Target};
use crate::report::{Report, UpstreamReport, Window};
use crate::upstream::{Control, Mode, Reached, Upstream, UpstreamServer};

/// The error type of the demo's setup: anything, sendable across tasks.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Consecutive counted failures that trip a breaker.
pub const FAILURE_THRESHOLD: u32 = 5;
/// How long an opened breaker blocks before it lets one probe through.
pub const COOLDOWN: Duration = Duration::from_millis(500);
/// The probe's lease: how long a probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the gateway waits for an upstream's answer to one forwarded request.
pub const PER_CALL_TIMEOUT: Duration = Duration::from_millis(250);
/// The gateway's deadline for one forwarded tool call.
pub const CALL_TIME_LIMIT: Duration = Duration::from_secs(2);
/// How long an agent waits after each answer before its next call.
pub const THINK_TIME: Duration = Duration::from_millis(5);
/// With `--serve`, the schedule's cycle: its fractions are of this, again and again.
pub const SERVE_CYCLE: Duration = Duration::from_secs(20);
/// Requests an agent's client has in flight at most: it makes one call at a time.
const AGENT_IN_FLIGHT: usize = 4;
/// How long each part gets to stop at the end.
const GRACE: Duration = Duration::from_secs(2);

/// One stretch of an upstream failing, in fractions of the demo (or of the cycle, with
/// `--serve`).
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    /// The upstream that fails.
    pub upstream: Upstream,
    /// How.
    pub mode: Mode,
    /// From this fraction of the demo ...
    pub from: f64,
    /// ... to this one.
    pub to: f64,
}

/// The failure schedule: `notes` never fails.
pub const SCHEDULE: [Phase; 2] = [
    Phase {
        upstream: Upstream::Search,
        mode: Mode::Unavailable,
        from: 0.15,
        to: 0.45,
    },
    Phase {
        upstream: Upstream::Weather,
        mode: Mode::Hang,
        from: 0.30,
        to: 0.60,
    },
];

/// `upstream`'s scheduled outage in a demo (or cycle) of `length`.
pub fn outage_window(upstream: Upstream, length: Duration) -> Option<Window> {
    let ms = |fraction: f64| (length.as_secs_f64() * fraction * 1000.0).round() as u64;
    SCHEDULE
        .iter()
        .find(|phase| phase.upstream == upstream)
        .map(|phase| Window {
            mode: phase.mode,
            from_ms: ms(phase.from),
            to_ms: ms(phase.to),
        })
}

/// What the demo runs with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// How long the agents call the gateway.
    pub duration: Duration,
    /// How many agent tasks, each its own MCP client of the gateway.
    pub clients: usize,
    /// How long an agent waits after each answer.
    pub think_time: Duration,
}

/// Where the progress lines go: stdout beside the table, or stderr when stdout is the JSON
/// report's.
#[derive(Clone, Copy, Debug)]
pub struct Log {
    to_stderr: bool,
}

impl Log {
    /// To stdout, or to stderr when stdout is the JSON report's.
    pub fn new(json: bool) -> Log {
        Log { to_stderr: json }
    }

    /// Print one line.
    pub fn line(self, line: &str) {
        if self.to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// One transition a breaker told the registry's listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Logged {
    /// Milliseconds since the start of the demo.
    pub at_ms: u64,
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// Why.
    pub reason: TransitionReason,
    /// The consecutive counted failures behind it.
    pub failures: u64,
}

/// The breakers' transitions as the registry's `on_transition` listener hears them: logged per
/// upstream and printed as they happen.
pub struct Timeline {
    start: OnceLock<Instant>,
    log: Log,
    heard: [Mutex<Vec<Logged>>; Upstream::ALL.len()],
}

impl Timeline {
    fn new(log: Log) -> Timeline {
        Timeline {
            start: OnceLock::new(),
            log,
            heard: Default::default(),
        }
    }

    /// The time since the demo's start (zero before it).
    fn since_start(&self) -> Duration {
        self.start.get().map_or(Duration::ZERO, Instant::elapsed)
    }

    /// The registry's listener: transitions are rare (a few a second), so a lock is fine.
    fn hear(&self, event: &TransitionEvent<'_>) {
        let Some(upstream) = Upstream::ALL
            .into_iter()
            .find(|u| u.name() == event.dependency())
        else {
            return;
        };
        let at = self.since_start();
        let transition = event.transition();
        let logged = Logged {
            at_ms: millis(at),
            from: transition.from(),
            to: transition.to(),
            reason: transition.reason(),
            failures: transition.failures(),
        };
        self.heard[upstream.position()]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(logged);
        let why = match transition.reason() {
            TransitionReason::FailureThreshold => {
                format!("{} counted failures in a row", transition.failures())
            }
            TransitionReason::CooldownElapsed => "cooldown elapsed: one probe goes through".into(),
            TransitionReason::ProbeSucceeded => "the probe succeeded".into(),
            TransitionReason::ProbeFailed => "the probe failed".into(),
            TransitionReason::ProbeTimedOut => "the probe outlived its lease".into(),
            other => other.as_str().into(),
        };
        self.log.line(&format!(
            "[{:>6.2} s] breaker {:<8} {} -> {} ({why})",
            at.as_secs_f64(),
            upstream.name(),
            transition.from().as_str(),
            transition.to().as_str(),
        ));
    }

    /// `upstream`'s transitions, in the order they were heard.
    fn of(&self, upstream: Upstream) -> Vec<Logged> {
        self.heard[upstream.position()]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The gateway's configuration file, as the binary would read it with `--config`: the breakers'
/// `[default]` and one `[upstreams.NAME]` per server (tools listed as `NAME.TOOL`).
pub fn gateway_toml(servers: &[UpstreamServer]) -> String {
    let mut text = format!(
        "[default]\nfailure_threshold = {FAILURE_THRESHOLD}\ncooldown_ms = {}\n\
         probe_timeout_ms = {}\n",
        millis(COOLDOWN),
        millis(PROBE_TIMEOUT),
    );
    for server in servers {
        text.push_str(&format!(
            "\n[upstreams.{}]\nurl = \"{}\"\nper_call_timeout_ms = {}\n",
            server.upstream.name(),
            server.url,
            millis(PER_CALL_TIMEOUT),
        ));
    }
    text
}

/// Everything that serves: the upstream servers, the gateway's clients of them, and the gateway.
pub struct Stack {
    /// The gateway's relay; its registry holds the breakers, one per upstream.
    pub gateway: Gateway,
    /// The upstream servers, in [`Upstream::ALL`] order.
    pub servers: Vec<UpstreamServer>,
    /// The gateway's MCP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub gateway_url: String,
    /// The HTTP client every MCP client of the demo shares.
    pub http: reqwest::Client,
    timeline: Arc<Timeline>,
    gateway_stop: watch::Sender<bool>,
    gateway_task: JoinHandle<io::Result<()>>,
}

impl Stack {
    /// Start the upstreams, start the gateway's relay on them (from [`gateway_toml`]) and serve
    /// it on `port` of 127.0.0.1 (0: any free one). Transitions are logged to `log`.
    ///
    /// # Errors
    ///
    /// A listener that cannot be bound, a configuration the gateway refuses, a tool name two
    /// upstreams show, an HTTP client that cannot be built.
    pub async fn start(port: u16, log: Log) -> Result<Stack, BoxError> {
        let timeline = Arc::new(Timeline::new(log));
        let heard = Arc::clone(&timeline);
        let registry = Registry::builder()
            .metrics(true)
            .on_transition(move |event| heard.hear(event))
            .build();
        let gateway = Gateway::new("toolbreaker-mcp-gateway", registry, CALL_TIME_LIMIT);
        let http = agents::http_client()?;
        let mut servers = Vec::with_capacity(Upstream::ALL.len());
        for upstream in Upstream::ALL {
            let breaker = gateway.registry().get(upstream.name());
            servers.push(UpstreamServer::spawn(upstream, breaker).await?);
        }
        // The configuration the binary would read from its `--config` file; its breaker settings
        // are put in force as the binary's SIGHUP reload does (the servers hold their breakers).
        let config = GatewayConfig::from_toml_str(&gateway_toml(&servers))?;
        gateway.registry().reload(config.registry.clone());
        // The port first: a busy one is refused before the gateway connects to its upstreams.
        let listener = crate::listen::tcp((Ipv4Addr::LOCALHOST, port)).await?;
        gateway.start(config).await?;
        let addr = listener.local_addr()?;
        let mut options = HttpOptions::new(addr);
        options.drain = GRACE;
        let (sessions, status, scrape) = (gateway.clone(), gateway.clone(), gateway.clone());
        let app = HttpApp::new(
            &options,
            move || Ok(sessions.session()),
            Arc::new(move || status.status()),
            Some(Arc::new(move || scrape.registry().export_metrics())),
        )?;
        let (gateway_stop, mut stopping) = watch::channel(false);
        let gateway_task = tokio::spawn(http::serve(listener, app, async move {
            let _ = stopping.wait_for(|stopping| *stopping).await;
        }));
        Ok(Stack {
            gateway,
            servers,
            gateway_url: format!("http://{addr}{MCP_PATH}"),
            http,
            timeline,
            gateway_stop,
            gateway_task,
        })
    }

    /// The upstreams' controls, in [`Upstream::ALL`] order.
    pub fn controls(&self) -> Vec<(Upstream, Arc<Control>)> {
        self.servers
            .iter()
            .map(|server| (server.upstream, Arc::clone(&server.control)))
            .collect()
    }

    /// What the agents share: a target per upstream, with zeroed counters.
    fn agents(&self, think_time: Duration, deadline: Instant) -> Agents {
        Agents {
            targets: self
                .controls()
                .into_iter()
                .map(|(upstream, control)| Target {
                    upstream,
                    control,
                    stats: CallStats::default(),
                })
                .collect(),
            think_time,
            deadline,
        }
    }

    /// Where each upstream listens, for the header.
    pub fn describe_upstreams(&self) -> String {
        self.servers
            .iter()
            .map(|server| format!("{} at {}", server.upstream.name(), server.url))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Stop the gateway, its clients and the upstreams, each within [`GRACE`]; what reached each
    /// upstream, and a warning for each part that did not stop cleanly.
    pub async fn stop(self) -> (Vec<Reached>, Vec<String>) {
        let mut warnings = Vec::new();
        self.gateway_stop.send_replace(true);
        let mut task = self.gateway_task;
        match tokio::time::timeout(GRACE, &mut task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(error))) => warnings.push(format!("gateway: {error}")),
            Ok(Err(join)) => warnings.push(format!("gateway: {join}")),
            Err(_) => {
                task.abort();
                warnings.push(format!("gateway did not stop within {GRACE:?}"));
            }
        }
        // The relay's connections to the upstreams end with it.
        self.gateway.shutdown();
        let mut reached = Vec::with_capacity(self.servers.len());
        for server in self.servers {
            let (counts, stopped) = server.shutdown(GRACE).await;
            if let Err(error) = stopped {
                warnings.push(error.to_string());
            }
            reached.push(counts);
        }
        (reached, warnings)
    }
}

/// The header lines: the settings.
pub fn describe_settings(settings: &Settings) -> Vec<String> {
    vec![
        format!(
            "breakers: failure threshold {FAILURE_THRESHOLD}, cooldown {} ms, probe timeout {} s \
             (the probe: an MCP ping); per-call timeout {} ms; no retries; call deadline {} s",
            COOLDOWN.as_millis(),
            PROBE_TIMEOUT.as_secs(),
            PER_CALL_TIMEOUT.as_millis(),
            CALL_TIME_LIMIT.as_secs(),
        ),
        format!(
            "agents: {} MCP clients, think time {} ms, bad arguments on 1 notes call in {}",
            settings.clients,
            settings.think_time.as_millis(),
            agents::BAD_ARGS_ONE_IN,
        ),
    ]
}

/// The report's `settings`.
pub fn settings_json(settings: &Settings) -> serde_json::Value {
    serde_json::json!({
        "failure_threshold": FAILURE_THRESHOLD,
        "cooldown_ms": millis(COOLDOWN),
        "probe_timeout_ms": millis(PROBE_TIMEOUT),
        "per_call_timeout_ms": millis(PER_CALL_TIMEOUT),
        // The gateway forwards each call once: the agent, not the gateway, decides to call again.
        "retry": { "max_retries": 0 },
        "call_time_limit_ms": millis(CALL_TIME_LIMIT),
        "think_time_ms": millis(settings.think_time),
        "bad_args_one_in": agents::BAD_ARGS_ONE_IN,
    })
}

/// Switch the upstreams' modes on the schedule, in a demo of `length` from `start`; with
/// `cycle`, again and again, one cycle of `length` after another. Ends when `finished` is set.
async fn schedule(
    start: Instant,
    controls: Vec<(Upstream, Arc<Control>)>,
    length: Duration,
    cycle: bool,
    mut finished: watch::Receiver<bool>,
    log: Log,
) {
    let mut switches: Vec<(Duration, Upstream, Mode)> = SCHEDULE
        .iter()
        .flat_map(|phase| {
            [
                (length.mul_f64(phase.from), phase.upstream, phase.mode),
                (length.mul_f64(phase.to), phase.upstream, Mode::Healthy),
            ]
        })
        .collect();
    switches.sort_by_key(|(at, _, _)| *at);
    let mut round_start = start;
    loop {
        for &(at, upstream, mode) in &switches {
            tokio::select! {
                () = tokio::time::sleep_until(round_start + at) => {}
                _ = finished.wait_for(|finished| *finished) => return,
            }
            if let Some((_, control)) = controls.iter().find(|(u, _)| *u == upstream) {
                control.set_mode(mode);
                log.line(&format!(
                    "[{:>6.2} s] upstream {:<7} is now {}",
                    start.elapsed().as_secs_f64(),
                    upstream.name(),
                    mode.describe()
                ));
            }
        }
        if !cycle {
            return;
        }
        round_start += length;
    }
}

/// One progress line a second: calls per second, and each upstream's breaker state and what
/// reached it so far.
async fn progress(
    shared: Arc<Agents>,
    gateway: Gateway,
    start: Instant,
    mut finished: watch::Receiver<bool>,
    log: Log,
) {
    let mut last = (start, 0u64);
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = finished.wait_for(|finished| *finished) => return,
        }
        let now = Instant::now();
        let calls: u64 = shared.targets.iter().map(|t| t.stats.calls()).sum();
        let rate = (calls - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
        last = (now, calls);
        let mut line = format!(
            "[{:>6.2} s] {rate:>6.0} calls/s",
            now.duration_since(start).as_secs_f64()
        );
        for target in &shared.targets {
            let state = gateway.registry().get(target.upstream.name()).state();
            line.push_str(&format!(
                "  {} {:<9} {:>6} reached",
                target.upstream.name(),
                state.as_str(),
                target.control.reached().calls,
            ));
        }
        log.line(&line);
    }
}

/// Run the demo once: start everything, let `settings.clients` agents call the gateway for
/// `settings.duration` while the upstreams fail on the schedule, stop everything; the report.
///
/// # Errors
///
/// The setup's, or an agent that could not connect or panicked.
pub async fn run(settings: Settings, log: Log) -> Result<Report, BoxError> {
    let stack = Stack::start(0, log).await?;
    log.line(&format!(
        "mcp_gateway: {} agents for {:.1} s through the gateway at {}",
        settings.clients,
        settings.duration.as_secs_f64(),
        stack.gateway_url,
    ));
    log.line(&format!("upstreams: {}", stack.describe_upstreams()));
    for line in describe_settings(&settings) {
        log.line(&line);
    }

    // Every agent connects (and one lists the tools) before the clock starts, so the schedule's
    // fractions are of the time the agents call.
    let mut clients = Vec::with_capacity(settings.clients);
    let connecting = (0..settings.clients).map(|_| {
        let (http, url) = (stack.http.clone(), stack.gateway_url.clone());
        async move { agents::connect(http, &url, AGENT_IN_FLIGHT).await }
    });
    for client in futures_join_all(connecting).await {
        clients.push(client?);
    }
    let tools: Vec<String> = match clients.first() {
        Some(client) => client
            .peer()
            .list_all_tools()
            .await?
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect(),
        None => Vec::new(),
    };
    log.line(&format!("the gateway lists: {}", tools.join(", ")));

    let start = Instant::now();
    let _ = stack.timeline.start.set(start);
    let shared = Arc::new(stack.agents(settings.think_time, start + settings.duration));
    let finish = watch::Sender::new(false);
    let scheduler = tokio::spawn(schedule(
        start,
        stack.controls(),
        settings.duration,
        false,
        finish.subscribe(),
        log,
    ));
    let progress = tokio::spawn(progress(
        Arc::clone(&shared),
        stack.gateway.clone(),
        start,
        finish.subscribe(),
        log,
    ));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(task, client)| tokio::spawn(agents::agent(task, Arc::clone(&shared), client)))
        .collect();
    let mut failed = None;
    for task in tasks {
        if let Err(error) = task.await {
            failed.get_or_insert(error);
        }
    }
    let elapsed = start.elapsed();
    finish.send_replace(true);
    scheduler.await?;
    progress.await?;
    if let Some(error) = failed {
        return Err(error.into());
    }

    let gateway = stack.gateway.clone();
    let timeline = Arc::clone(&stack.timeline);
    let gateway_url = stack.gateway_url.clone();
    let (reached, warnings) = stack.stop().await;
    for warning in &warnings {
        eprintln!("mcp_gateway: warning: {warning}");
    }
    let registry = gateway.registry();
    let mut metrics = registry.metrics();
    let upstreams = shared
        .targets
        .iter()
        .zip(reached)
        .map(|(target, reached)| UpstreamReport {
            upstream: target.upstream,
            outage: outage_window(target.upstream, settings.duration),
            calls: target.stats.counts(),
            reached,
            metrics: metrics.remove(target.upstream.name()),
            transitions: timeline.of(target.upstream),
            final_state: registry.get(target.upstream.name()).state(),
        })
        .collect();
    // A real blocked result from the demo, as the model received it: `search`'s, if it has one.
    let blocked_example = shared
        .targets
        .iter()
        .find_map(|target| target.stats.first_blocked().cloned());
    Ok(Report {
        settings,
        elapsed,
        gateway_url,
        tools,
        upstreams,
        blocked_example,
    })
}

/// `join_all` without the futures crate: the futures, each in a task of its own, in order.
async fn futures_join_all<F, T>(futures: impl Iterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let tasks: Vec<JoinHandle<T>> = futures.map(tokio::spawn).collect();
    let mut done = Vec::with_capacity(tasks.len());
    for task in tasks {
        match task.await {
            Ok(value) => done.push(value),
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
    }
    done
}

/// Keep the gateway up on `port` (0: any free one) with the schedule looping in cycles of
/// [`SERVE_CYCLE`], and `clients` agents calling it in the background (none by default), until
/// Ctrl-C.
///
/// # Errors
///
/// The setup's, or Ctrl-C's handler that could not be installed.
pub async fn serve(
    port: u16,
    clients: usize,
    think_time: Duration,
    log: Log,
) -> Result<(), BoxError> {
    let stack = Stack::start(port, log).await?;
    log.line(&format!("upstreams: {}", stack.describe_upstreams()));
    let settings = Settings {
        duration: SERVE_CYCLE,
        clients,
        think_time,
    };
    let mut header = describe_settings(&settings);
    if clients == 0 {
        header.truncate(1);
        header.push("agents: none in the background (--clients N adds some)".to_owned());
    }
    for line in header {
        log.line(&line);
    }
    for phase in SCHEDULE {
        log.line(&format!(
            "schedule: {} {} from {:.0} s to {:.0} s of every {} s cycle",
            phase.upstream.name(),
            phase.mode.describe(),
            SERVE_CYCLE.as_secs_f64() * phase.from,
            SERVE_CYCLE.as_secs_f64() * phase.to,
            SERVE_CYCLE.as_secs(),
        ));
    }
    let mut agent_clients = Vec::with_capacity(clients);
    for _ in 0..clients {
        agent_clients
            .push(agents::connect(stack.http.clone(), &stack.gateway_url, AGENT_IN_FLIGHT).await?);
    }
    let start = Instant::now();
    let _ = stack.timeline.start.set(start);
    let finish = watch::Sender::new(false);
    let scheduler = tokio::spawn(schedule(
        start,
        stack.controls(),
        SERVE_CYCLE,
        true,
        finish.subscribe(),
        log,
    ));
    // The agents stop on Ctrl-C (their tasks are aborted); this deadline is only a bound.
    let shared = Arc::new(stack.agents(think_time, start + Duration::from_secs(365 * 24 * 3600)));
    let tasks: Vec<_> = agent_clients
        .into_iter()
        .enumerate()
        .map(|(task, client)| tokio::spawn(agents::agent(task, Arc::clone(&shared), client)))
        .collect();
    let base = stack.gateway_url.trim_end_matches(MCP_PATH);
    log.line(&format!(
        "the gateway binary's endpoints too: {base}/status (JSON), {base}/metrics (Prometheus), \
         {base}/healthz"
    ));
    log.line("the gateway, for any MCP client over Streamable HTTP (Ctrl-C stops it):");
    // The address goes to stdout on a line of its own, so a script can read it.
    println!("{}", stack.gateway_url);
    tokio::signal::ctrl_c().await?;
    log.line("stopping");
    for task in &tasks {
        task.abort();
    }
    finish.send_replace(true);
    let _ = scheduler.await;
    let (reached, warnings) = stack.stop().await;
    for warning in &warnings {
        eprintln!("mcp_gateway: warning: {warning}");
    }
    for (upstream, reached) in Upstream::ALL.iter().zip(reached) {
        log.line(&format!(
            "{}: {} calls reached it ({} while it was failing, {} while its breaker was open)",
            upstream.name(),
            reached.calls,
            reached.while_failing,
            reached.while_open,
        ));
    }
    Ok(())
}
