//! Fleet mode (`--fleet N`): N gateway instances, each a separate process, against the same tool
//! servers, with their breakers shared through Redis (or, with `--independent`, each on its own).
//!
//! The gateway started with `--fleet N` is the *parent*: it starts a redis-server (unless
//! `--redis URL` names one), runs the four tool servers and their failure schedule, and starts N
//! copies of its own executable with `--instance-of SPEC` (SPEC: a JSON object with the
//! instance's name, the key prefix and the tool servers' ports; the Redis URL, which may hold a
//! password, goes in the child's environment, never in its arguments, where `ps` shows it). Each
//! *instance* builds its registry (a fleet registry, or a plain one), connects, and writes
//! `ready` on stdout; once every instance is ready, the parent writes `go START` to each one's
//! stdin, START being a wall-clock time a little ahead (µs since the Unix epoch), so that every
//! instance and the schedule start at the same moment. Each instance then runs its share of the
//! agent tasks until the end of the demo and writes its report, one JSON object, on stdout; its
//! stderr is the parent's. The parent works out the fleet's figures from the reports
//! (`figures.rs`) and prints them.
//!
//! An instance knows the failure schedule, not the servers' modes: it switches local copies of
//! the servers' controls at the same times, which says whether a call started during an outage.
//!
//! The parent stops what it started however it ends: the instances (killed if still running)
//! and the redis-server it started. With `--redis URL` it deletes the keys of its own prefix
//! (one per run, so runs never share a record) at the end.

use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;
use tokio::time::Instant;
use toolbreaker::fleet::redact;
use toolbreaker::{Fleet, Registry, State, TransitionReason};

use crate::figures::{self, DependencyInput, Heard};
use crate::report::{DependencyStats, RunStats};
use crate::tools::{self, Tool, ToolServer};
use crate::{Args, Dependency, Log, Shared};

/// The most instances `--fleet` runs: as many as a tool server tells apart.
pub const MAX_INSTANCES: usize = tools::MAX_CALLERS;
/// How long an instance may take from its start to `ready` (a process start, a Redis connection).
const READY_LIMIT: Duration = Duration::from_secs(30);
/// How far ahead of `go` the common start is: time for every instance to read it.
const START_LEAD: Duration = Duration::from_millis(100);
/// How long after the end of the demo an instance may take to write its report and exit.
const REPORT_GRACE: Duration = Duration::from_secs(30);
/// How long a started redis-server may take to answer PING.
const REDIS_START_LIMIT: Duration = Duration::from_secs(10);

/// The environment variable through which the parent gives an instance the Redis URL: a URL may
/// hold a password, and a process's arguments are readable by every user of the machine (`ps`),
/// its environment only by its own user.
const REDIS_URL_VAR: &str = "TOOLBREAKER_GATEWAY_REDIS_URL";

/// What the parent tells an instance: `--instance-of SPEC`, and the Redis URL in
/// [`REDIS_URL_VAR`], never in the arguments.
#[derive(Debug)]
struct Spec {
    /// Its number in the fleet, from 1: what its requests say in `tools::CALLER_HEADER`.
    number: usize,
    name: String,
    redis: Option<String>,
    prefix: String,
    ports: Vec<(Tool, u16)>,
}

impl Spec {
    fn json(&self) -> String {
        let ports: serde_json::Map<String, Value> = self
            .ports
            .iter()
            .map(|(tool, port)| (tool.name().to_owned(), json!(port)))
            .collect();
        json!({
            "number": self.number,
            "name": self.name,
            "prefix": self.prefix,
            "ports": ports,
        })
        .to_string()
    }

    fn parse(text: &str) -> Result<Spec, String> {
        let bad = |what: &str| format!("--instance-of: {what} in `{text}`");
        let value: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        let string = |key: &str| value[key].as_str().map(str::to_owned);
        let ports = Tool::ALL
            .iter()
            .map(|tool| {
                let port = value["ports"][tool.name()]
                    .as_u64()
                    .and_then(|port| u16::try_from(port).ok())
                    .ok_or_else(|| bad(&format!("no port for {}", tool.name())))?;
                Ok((*tool, port))
            })
            .collect::<Result<_, String>>()?;
        Ok(Spec {
            number: value["number"]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=MAX_INSTANCES).contains(n))
                .ok_or_else(|| bad("no number from 1 to 16"))?,
            name: string("name").ok_or_else(|| bad("no name"))?,
            redis: std::env::var(REDIS_URL_VAR).ok(),
            prefix: string("prefix").ok_or_else(|| bad("no prefix"))?,
            ports,
        })
    }
}

fn unix_us_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
        })
}

/// The monotonic instant of a wall-clock time (µs since the Unix epoch).
fn instant_at(unix_us: u64) -> Instant {
    let (now_unix, now) = (unix_us_now(), Instant::now());
    if unix_us >= now_unix {
        now + Duration::from_micros(unix_us - now_unix)
    } else {
        now.checked_sub(Duration::from_micros(now_unix - unix_us))
            .unwrap_or(now)
    }
}

/// µs from `start` to `at` (negative: before it).
fn micros_since(start: Instant, at: Instant) -> i64 {
    if at >= start {
        i64::try_from(at.duration_since(start).as_micros()).unwrap_or(i64::MAX)
    } else {
        -i64::try_from(start.duration_since(at).as_micros()).unwrap_or(i64::MAX)
    }
}

// The instance.

/// What an instance's listener heard: dependency, from, to, reason, when.
type HeardLog = Arc<Mutex<Vec<(String, State, State, TransitionReason, Instant)>>>;

/// Run one instance of a fleet, as its parent asked (`spec`), and write its report on stdout.
pub async fn instance(args: Args, spec: &str) -> Result<(), Box<dyn Error>> {
    let spec = Spec::parse(spec)?;
    let config = crate::settings::initial(args.config.as_deref())?;
    let heard: HeardLog = Arc::default();
    let log = Arc::clone(&heard);
    let mut builder = Registry::builder()
        .config(config)
        .metrics(true)
        .on_transition(move |event| {
            let t = event.transition();
            let at = Instant::now();
            log.lock().unwrap_or_else(|e| e.into_inner()).push((
                event.dependency().to_owned(),
                t.from(),
                t.to(),
                t.reason(),
                at,
            ));
        });
    if let Some(url) = &spec.redis {
        let fleet = Fleet::builder(url.as_str())
            .prefix(spec.prefix.as_str())
            .instance(spec.name.as_str())
            .build()?;
        builder = builder.fleet(fleet);
    }
    let registry = Arc::new(builder.build());
    // Every breaker exists before the start, so the fleet worker has read each one's record.
    let _ = crate::registry_handles(&registry);
    if let Some(fleet) = registry.fleet() {
        // A refused login fails the start at once; an unreachable server after the limit.
        fleet
            .connected(READY_LIMIT)
            .await
            .map_err(|error| format!("{}: {error}", spec.name))?;
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
    }
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await??;
    let start_unix_us: u64 = line
        .trim()
        .strip_prefix("go ")
        .and_then(|us| us.parse().ok())
        .ok_or_else(|| {
            format!(
                "{}: expected `go START` on stdin, got `{}`",
                spec.name,
                line.trim()
            )
        })?;
    let start = instant_at(start_unix_us);

    let dependencies = spec
        .ports
        .iter()
        .map(|&(tool, port)| {
            let (valid_url, invalid_url) =
                tools::urls(tool, SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
            Dependency {
                tool,
                // The schedule switches this copy at the times it switches the real server.
                control: Arc::new(tools::Control::default()),
                valid_url,
                invalid_url,
                stats: DependencyStats::new(tool),
            }
        })
        .collect();
    let shared = Arc::new(Shared {
        client: tools::instance_client(spec.number)?,
        guard: tools::guard(crate::PER_CALL_TIMEOUT, crate::retry_policy()),
        dependencies,
        chat: None,
        runs: RunStats::default(),
        start,
        deadline: start + args.duration,
    });
    tokio::time::sleep_until(start).await;
    let finish = watch::Sender::new(false);
    let elapsed = crate::drive(
        &shared,
        &registry,
        args.concurrency,
        args.duration,
        &finish,
        Log::QUIET,
    )
    .await?;

    let snapshots = crate::snapshots(&shared, &registry, args.duration, None);
    let dependencies: serde_json::Map<String, Value> = snapshots
        .iter()
        .zip(&shared.dependencies)
        .map(|(snapshot, d)| {
            let mut entry = snapshot.json();
            entry["probe_starts_us"] = json!(d.stats.probe_starts_us());
            (d.tool.name().to_owned(), entry)
        })
        .collect();
    let heard: Vec<Value> = heard
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(dependency, from, to, reason, at)| {
            Heard {
                instance: 0,
                dependency: dependency.clone(),
                at_us: micros_since(start, *at),
                from: from.as_str().to_owned(),
                to: to.as_str().to_owned(),
                reason: reason.as_str().to_owned(),
            }
            .json()
        })
        .collect();
    let redis = registry.fleet().map(|fleet| {
        let stats = fleet.stats();
        json!({
            "connected": fleet.is_connected(),
            "commands": stats.commands,
            "messages": stats.messages,
            "adopted": stats.adopted,
            "outages": stats.outages,
            "bad_records": stats.bad_records,
            "probes_claimed": stats.probes_claimed,
        })
    });
    let calls = shared.runs.calls();
    let report = json!({
        "instance": spec.name,
        "pid": std::process::id(),
        "concurrency": args.concurrency,
        "duration_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        "calls": calls,
        "calls_per_second": (calls as f64 / elapsed.as_secs_f64()).round(),
        "calls_stopped": shared.runs.calls_stopped(),
        "runs": shared.runs.json(),
        "redis": redis,
        "dependencies": dependencies,
        "heard": heard,
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{report}")?;
    out.flush()?;
    Ok(())
}

// The parent.

/// The Redis server the fleet shares: one this process started (stopped when dropped), or one
/// given with `--redis`.
struct Redis {
    url: String,
    server: Option<Child>,
}

impl Redis {
    /// Start `redis-server` on a free loopback port, with no persistence, and wait for its PING.
    fn start() -> Result<Redis, String> {
        let any_port = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let port = TcpListener::bind(any_port)
            .map_err(|e| crate::listen::named(any_port, e))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free loopback port for redis-server: {e}"))?
            .port();
        let server = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start redis-server ({e}): --fleet shares the breakers through Redis; \
                     install it (Debian, Ubuntu: `apt-get install -y redis-server`), pass \
                     --redis URL, or run --fleet N --independent"
                )
            })?;
        let mut redis = Redis {
            url: format!("redis://127.0.0.1:{port}/"),
            server: Some(server),
        };
        let deadline = std::time::Instant::now() + REDIS_START_LIMIT;
        loop {
            match redis.ping() {
                Ok(()) => return Ok(redis),
                Err(error) => {
                    if let Some(status) = redis.server.as_mut().and_then(|s| s.try_wait().ok()?) {
                        return Err(format!("redis-server exited ({status}) before answering"));
                    }
                    if std::time::Instant::now() >= deadline {
                        return Err(format!(
                            "redis-server did not answer on port {port} within \
                             {REDIS_START_LIMIT:?}: {error}"
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    /// The server at `url`, if it is a Redis URL and the server answers PING. Neither message
    /// shows the URL's password.
    fn external(url: &str) -> Result<Redis, String> {
        let shown = redact(url);
        if let Err(e) = redis::Client::open(url) {
            return Err(format!(
                "--redis {shown}: not a Redis URL ({}); expected redis://[user:password@]host[:port][/db]",
                redact(&e.to_string())
            ));
        }
        let redis = Redis {
            url: url.to_owned(),
            server: None,
        };
        redis
            .ping()
            .map_err(|e| format!("--redis {shown}: no answer to PING: {}", redact(&e)))?;
        Ok(redis)
    }

    fn connection(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url.as_str())?.get_connection_with_timeout(Duration::from_secs(1))
    }

    fn ping(&self) -> Result<(), String> {
        let mut connection = self.connection().map_err(|e| e.to_string())?;
        redis::cmd("PING")
            .query::<String>(&mut connection)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Delete the keys under `prefix` (on a server this process did not start: its own dies with
    /// them).
    fn clean(&self, prefix: &str) -> redis::RedisResult<()> {
        if self.server.is_some() {
            return Ok(());
        }
        let mut connection = self.connection()?;
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{prefix}:*"))
                .arg("COUNT")
                .arg(100)
                .query(&mut connection)?;
            if !keys.is_empty() {
                redis::cmd("DEL").arg(&keys).query::<u64>(&mut connection)?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// One instance, as the parent holds it.
struct Instance {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// The lines it writes on stdout.
    lines: UnboundedReceiver<String>,
}

impl Instance {
    /// Its exit status, if it has exited, for an error message.
    fn status(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => format!(" ({status})"),
            _ => String::new(),
        }
    }
}

/// The instances; any still running when this is dropped is killed.
#[derive(Default)]
struct Instances(Vec<Instance>);

impl Drop for Instances {
    fn drop(&mut self) {
        for instance in &mut self.0 {
            if matches!(instance.child.try_wait(), Ok(None)) {
                let _ = instance.child.kill();
                let _ = instance.child.wait();
            }
        }
    }
}

/// Instance `i`'s share of `total` agent tasks among `instances`.
fn share(total: usize, instances: usize, i: usize) -> usize {
    total / instances + usize::from(i < total % instances)
}

/// Run the fleet demo: `instances` gateway processes, the tool servers and the schedule here.
///
/// Stopped by SIGINT, SIGTERM or SIGHUP, it stops what it started before it exits (a process
/// killed outright cannot: its instances then end at the end of the demo, and a redis-server it
/// started is left running).
pub async fn run(args: Args, instances: usize) -> Result<(), Box<dyn Error>> {
    tokio::select! {
        outcome = run_fleet(args, instances) => outcome,
        signal = stop_signal() => Err(format!("stopped by {signal}").into()),
    }
}

/// The first of SIGINT, SIGTERM and SIGHUP (Ctrl-C elsewhere).
#[cfg(unix)]
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
        _ = hangup.recv() => "SIGHUP",
    }
}

/// The first Ctrl-C.
#[cfg(not(unix))]
async fn stop_signal() -> &'static str {
    match tokio::signal::ctrl_c().await {
        Ok(()) => "Ctrl-C",
        Err(_) => std::future::pending().await,
    }
}

async fn run_fleet(args: Args, instances: usize) -> Result<(), Box<dyn Error>> {
    let log = Log::new(args.json);
    // A bad file is refused here, before anything starts; each instance reads it again.
    let config = crate::settings::initial(args.config.as_deref())?;
    let redis = match (&args.redis, args.independent) {
        (_, true) => None,
        (Some(url), false) => Some(Redis::external(url)?),
        (None, false) => Some(Redis::start()?),
    };
    let prefix = format!("gateway-{}-{}", std::process::id(), unix_us_now() / 1000);
    let mut servers = Vec::with_capacity(Tool::ALL.len());
    for tool in Tool::ALL {
        servers.push(ToolServer::spawn(tool).await?);
    }

    let exe = std::env::current_exe()?;
    let mut fleet = Instances::default();
    for i in 0..instances {
        let name = format!("gw-{}", i + 1);
        let spec = Spec {
            number: i + 1,
            name: name.clone(),
            redis: redis.as_ref().map(|redis| redis.url.clone()),
            prefix: prefix.clone(),
            ports: servers.iter().map(|s| (s.tool, s.addr.port())).collect(),
        };
        let mut command = Command::new(&exe);
        command
            .arg("--instance-of")
            .arg(spec.json())
            .arg("--duration")
            .arg(args.duration.as_secs_f64().to_string())
            .arg("--concurrency")
            .arg(share(args.concurrency, instances, i).to_string());
        match &spec.redis {
            Some(url) => command.env(REDIS_URL_VAR, url),
            None => command.env_remove(REDIS_URL_VAR),
        };
        if let Some(path) = &args.config {
            command.arg("--config").arg(path);
        }
        if let Some(directive) = &args.log {
            command.arg("--log").arg(directive);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start instance {name}: {e}"))?;
        let stdout = child.stdout.take().ok_or("the instance's stdout")?;
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        fleet.0.push(Instance {
            name,
            stdin: child.stdin.take(),
            child,
            lines,
        });
    }
    for instance in &mut fleet.0 {
        match tokio::time::timeout(READY_LIMIT, instance.lines.recv()).await {
            Ok(Some(line)) if line == "ready" => {}
            Ok(Some(line)) => {
                return Err(
                    format!("instance {}: `{line}` instead of `ready`", instance.name).into(),
                );
            }
            Ok(None) => {
                let status = instance.status();
                return Err(format!(
                    "instance {} ended before it was ready{status}",
                    instance.name
                )
                .into());
            }
            Err(_) => {
                return Err(format!(
                    "instance {} was not ready within {READY_LIMIT:?}",
                    instance.name
                )
                .into());
            }
        }
    }

    let listening: Vec<String> = servers
        .iter()
        .map(|server| format!("{} at {}", server.tool.name(), server.addr))
        .collect();
    let pids: Vec<String> = fleet
        .0
        .iter()
        .map(|i| format!("{} (pid {})", i.name, i.child.id()))
        .collect();
    log.line(&format!(
        "gateway fleet: {}, separate processes: {}; {} in all for {:.1} s; tools: {}",
        crate::figures::counted(instances as u64, "instance"),
        pids.join(", "),
        crate::figures::counted(args.concurrency as u64, "agent task"),
        args.duration.as_secs_f64(),
        listening.join(", "),
    ));
    match &redis {
        Some(redis) => log.line(&format!(
            "shared: every instance's breakers through Redis at {} (key prefix {prefix})",
            redact(&redis.url)
        )),
        None => log.line("independent: each instance's breakers on their own, nothing shared"),
    }
    crate::print_settings(log, &config, args.config.as_deref());

    // The common start, a little ahead of now so that every instance has read it by then.
    let start_unix_us = unix_us_now() + u64::try_from(START_LEAD.as_micros()).unwrap_or(0);
    let start = instant_at(start_unix_us);
    for instance in &mut fleet.0 {
        let stdin = instance.stdin.as_mut().ok_or("the instance's stdin")?;
        writeln!(stdin, "go {start_unix_us}")?;
        stdin.flush()?;
    }
    let finish = watch::Sender::new(false);
    let controls: Vec<(Tool, Arc<tools::Control>)> = servers
        .iter()
        .map(|s| (s.tool, Arc::clone(&s.control)))
        .collect();
    // The schedule without `search`'s degradation, as each instance's copy runs it.
    let scheduler = tokio::spawn(crate::schedule(
        start,
        controls.clone(),
        args.duration,
        false,
        finish.subscribe(),
        log,
    ));
    let progress = tokio::spawn(progress(start, controls, finish.subscribe(), log));
    tokio::time::sleep_until(start + args.duration).await;
    finish.send_replace(true);
    scheduler.await?;
    progress.await?;

    let mut reports = Vec::with_capacity(instances);
    let limit = start + args.duration + REPORT_GRACE;
    for instance in &mut fleet.0 {
        let report = loop {
            match tokio::time::timeout_at(limit, instance.lines.recv()).await {
                Ok(Some(line)) if line.starts_with('{') => {
                    break serde_json::from_str::<Value>(&line)?;
                }
                Ok(Some(line)) => eprintln!("gateway: {}: {line}", instance.name),
                Ok(None) => {
                    let status = instance.status();
                    return Err(format!(
                        "instance {} ended without a report{status}",
                        instance.name
                    )
                    .into());
                }
                Err(_) => {
                    return Err(format!(
                        "instance {} wrote no report within {REPORT_GRACE:?} of the end",
                        instance.name
                    )
                    .into());
                }
            }
        };
        reports.push(report);
    }
    for instance in &mut fleet.0 {
        let status = loop {
            if let Some(status) = instance.child.try_wait()? {
                break status;
            }
            if Instant::now() >= limit {
                return Err(format!("instance {} did not exit", instance.name).into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        if !status.success() {
            return Err(format!("instance {} failed ({status})", instance.name).into());
        }
    }
    let elapsed = start.elapsed();

    let mut inputs = Vec::with_capacity(servers.len());
    for server in servers {
        let cooldown = config.config_for(server.tool.name()).cooldown();
        inputs.push(DependencyInput {
            name: server.tool.name().to_owned(),
            cooldown_us: u64::try_from(cooldown.as_micros()).unwrap_or(u64::MAX),
            outage: crate::outage_window(server.tool, args.duration, false).map(
                |w| json!({"mode": w.mode.describe(), "from_ms": w.from_ms, "to_ms": w.to_ms}),
            ),
            server_hits: server.control.hits(),
            server_failing_hits: server.control.failing_hits(),
            server_failing_hits_from: (1..=instances)
                .map(|number| server.control.failing_hits_from(number))
                .collect(),
        });
        if let Err(error) = server.shutdown(Duration::from_secs(2)).await {
            eprintln!("gateway: warning: {error}");
        }
    }
    let mut figures = figures::fleet(&reports, &inputs, redis.is_some());
    figures["redis"] = json!(redis.as_ref().map(|redis| redis.url.clone()));
    figures["prefix"] = json!(redis.as_ref().map(|_| prefix.clone()));
    if let Some(redis) = &redis
        && let Err(error) = redis.clean(&prefix)
    {
        eprintln!("gateway: warning: the keys under {prefix}: were not deleted: {error}");
    }
    drop(redis);

    let order: Vec<&str> = Tool::ALL.iter().map(|tool| tool.name()).collect();
    if args.json {
        let report = json!({
            "duration_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            "instances": instances,
            "concurrency": args.concurrency,
            "settings": crate::settings_json(&config, args.config.as_deref()),
            "fleet": figures,
        });
        println!("{report}");
    } else {
        println!();
        print!("{}", figures::table(&figures, &order));
        println!();
        println!(
            "In short ({}):",
            if figures["shared"] == true {
                "the fleet's breakers shared through Redis"
            } else {
                "each instance's breakers on their own"
            }
        );
        for line in figures::summary(&figures, &order) {
            println!("  {line}");
        }
    }
    Ok(())
}

/// One line a second: the requests each tool server had in the last second, from every
/// instance.
async fn progress(
    start: Instant,
    controls: Vec<(Tool, Arc<tools::Control>)>,
    mut finished: watch::Receiver<bool>,
    log: Log,
) {
    let mut last: Vec<u64> = controls.iter().map(|(_, c)| c.hits()).collect();
    let mut at = start;
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = finished.wait_for(|finished| *finished) => return,
        }
        let now = Instant::now();
        let seconds = now.duration_since(at).as_secs_f64();
        at = now;
        let mut line = format!(
            "[{:>6.2} s] requests/s at the servers:",
            now.duration_since(start).as_secs_f64()
        );
        for ((tool, control), last) in controls.iter().zip(&mut last) {
            let hits = control.hits();
            line.push_str(&format!(
                "  {} {:>6.0}",
                tool.name(),
                (hits - *last) as f64 / seconds
            ));
            *last = hits;
        }
        log.line(&line);
    }
}
