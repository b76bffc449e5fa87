//! An agent gateway whose tools fail and recover: every tool call goes through the guard pipeline
//! (`ToolGuard`), with one circuit breaker per dependency.
//!
//! ```text
//! cargo run --release --example gateway                      # 10 s, 64 agent tasks, a table
//! cargo run --release --example gateway -- --duration 4 --json
//! cargo run --release --example gateway -- --config examples/gateway/breakers.toml --log toolbreaker=info
//! cargo run --release --example gateway -- --fleet 3            # three gateway processes, one Redis
//! cargo run --release --example gateway -- --fleet 3 --independent
//! ```
//!
//! Four tool servers run in this process on real sockets (axum, `127.0.0.1`, ephemeral ports;
//! nothing else is contacted), and many concurrent agent tasks call them over HTTP (reqwest).
//! Each task runs one agent run after another: an [`AgentRun`] (`agent-{task}-{n}`) with a
//! deadline and a tool-call budget, whose steps each call a tool picked at random through
//! `ToolGuard::call_observed` — run guard, the dependency's breaker from a [`Registry`],
//! per-call timeout, classification by the crate's HTTP rules, bounded retry — until the call is
//! answered `stopped`; then the task starts the next run. Part-way through the demo the servers
//! start failing, each in its own way, and recover later. The schedule is in fractions of
//! `--duration`, so a short demo still goes through every phase:
//!
//! | tool | behaviour |
//! |---|---|
//! | `search` | healthy; from 6 % **degrading**: 503 on a growing share of requests, spread evenly (20 %, 40 %, 55 %, then 65 % from 12 %); **503** from 20 % to 55 % of the demo; healthy again |
//! | `weather` | healthy; **hangs** (never answers) from 35 % to 65 %, so attempts time out |
//! | `quotes` | healthy; from 50 % to 75 % a partial outage: one request in three is answered **429 with `Retry-After: 1`**, the others as usual, so it never fails two in a row |
//! | `files` | always up, but answers **400** to invalid arguments, which the agent sends on 1 call in 8 |
//! | `chat` | the pool `llm` of three model providers, in groups `[llm-a, llm-b]` then `[llm-c]` (below) |
//!
//! The `chat` tool is served by three "model providers", each an axum server of its own with
//! `/chat` and `/health` (`providers.rs`), through the registry's pool `llm`
//! (`ToolGuard::call_pool`: each attempt to the member the pool chooses, a retry to another):
//!
//! | provider | group | behaviour |
//! |---|---|---|
//! | `llm-a` | preferred | healthy; from 25 % to 60 % **429 with `x-ratelimit-reset-requests`** saying the time left until 60 % (a Go duration, `3.5s`), to `/chat` and `/health` alike |
//! | `llm-b` | preferred | healthy; **503** from 40 % to 70 %, to `/chat` and `/health` alike |
//! | `llm-c` | backup | always healthy |
//!
//! A provider that refuses calls is not ready: its `/health` answers as its `/chat` does, so a
//! health check never closes a breaker only for the next call to be refused, and a rate-limited
//! provider's check says when its quota resets too. Each member's breaker has a health check,
//! `HealthCheck::http_get` of its `/health`, run in the background when its open period ends
//! (`CircuitBreaker::start_health_check`). See `pool.rs`.
//!
//! What to look for in the output:
//!
//! - admission control refuses calls for load, never for health, and never sends them:
//!   `weather`'s breaker lets at most 8 calls be in flight at once, so when it hangs only 8 agent
//!   tasks wait out the per-call timeout; the calls past the cap are answered `saturated` at once
//!   (its table: their answer took a fraction of a millisecond, against the 250 ms an attempt
//!   waits), and the agents go on with the other tools; `search`'s breaker throttles adaptively
//!   (`k` 1.5, over 100 ms): while its 503s grow past half of its calls, it sheds a share of them
//!   (`throttled`, never sent) before its breaker trips, mostly at the outage's 503s (or in the 65 %
//!   step, if answers come back out of order enough to make 5 failures in a row) (its table: shed before the breaker first tripped, and their share of the calls asked
//!   since it began to degrade). Neither counts as a failure nor moves the breaker; the other tools' tables have no
//!   such rows (no cap, no throttle);
//! - `search`'s and `weather`'s breakers trip after 5 counted failures in a row (every attempt
//!   counts, retries included); `quotes`' by its failure-rate rule, once 30 % of its last 20
//!   judged calls failed (judged from the 10th): a third of its calls fail, but never 5 in a row,
//!   so the consecutive rule, in force for `quotes` too, never trips it (its table says so:
//!   `transitions by reason: failure_threshold 0, failure_rate N`, and every `closed -> open` of
//!   its transitions is `(failure_rate)`). From then on each breaker blocks its calls without
//!   sending them: almost every call attempted during an outage is never sent;
//! - retries do not recreate the outage's load: before each retry the breaker is asked again, and
//!   a retry the opened breaker refuses ends the call `blocked` (`retries_refused`); a 429's retry
//!   waits at least its `Retry-After`;
//! - 500 ms (the cooldown) after each trip or failed probe, exactly one probe goes through
//!   (after `quotes`' trips, 1 s to 1.1 s: its 429s' `Retry-After: 1`, spread upward);
//!   while the dependency is still failing the probe reopens the breaker, and once it has
//!   recovered the probe closes it. During `quotes`' partial outage the probe succeeds two times
//!   in three and closes the breaker; its window starts empty, and about 10 calls later the rate
//!   rule trips it again, so it spends most of the outage open all the same;
//! - one outage never blocks another tool: the other breakers stay closed;
//! - `files` never trips, however many 400s in a row it answers, and never retries one: a bad
//!   argument is the caller's fault (`ignored`), not a sign that the dependency is unhealthy;
//! - every run ends on its own guard: its tool-call budget (blocked calls draw nothing from it)
//!   or its deadline (the last run of each task is cut short by the demo's end);
//! - per dependency, `sent + blocked = attempted + retries + retries_refused`;
//! - a blocked call is answered with a structured result the model can act on, with the call's
//!   attempts and time spent; one taken from the demo is printed at the end, and so is a
//!   `stopped` one;
//! - the pool's traffic (its table's calls served, by phase): `llm-a` and `llm-b` share it while
//!   healthy and `llm-c` serves none; while `llm-a` is rate limited `llm-b` takes all of it; from
//!   40 % to 60 %, both out, `llm-c` serves nearly all of it and no call is blocked
//!   (`pool_exhausted` 0); then it moves back, to `llm-a` first;
//! - `llm-a` trips on its first 429s and stays open until its quota resets, not for its 500 ms
//!   cooldown: its longest open period (3.5 s to 3.9 s in a 10 s demo) follows its largest hint,
//!   spread upward by up to 10 %; `llm-b`'s 503s carry no hint, so it is open for one cooldown at
//!   a time, each ended by a health check, failed (reopened) until the 503s stop;
//! - every probe of a member is its health check, never an agent's call ("calls spent as
//!   probes: 0"): the check closes `llm-a` as soon as its quota resets and `llm-b` within a
//!   cooldown of its recovery, and traffic moves back with no call spent finding out.
//!
//! Settings (built in; `--config FILE` replaces the first six, the breakers' own, and the pool):
//!
//! | setting | value | why |
//! |---|---|---|
//! | failure threshold | 5 consecutive counted failures | at this load a 503 outage trips within a millisecond, a hang within one per-call timeout |
//! | `weather`'s cap, besides | at most 8 calls in flight (`max_in_flight`) | a hang holds every call that reaches it for a per-call timeout: past 8, a call is answered `saturated` at once rather than joining them |
//! | `search`'s adaptive throttling, besides | `k` 2.0 over a 250 ms window | sheds calls once fewer than 1 in 2 succeed over the window: from the 55 % step of its degradation; short, to follow steps of a few hundred ms |
//! | `quotes`' failure-rate rule, besides | 30 % of the last 20 judged calls, judged from 10 | one failure in three puts 3 or 4 failures in any 10 calls and 6 or 7 in any 20: at least 30 %, so it trips about 10 calls into the outage, or into a close; a healthy `quotes` fails none |
//! | cooldown | 500 ms | several probes fit in each outage, even in a 4 s demo (`search` is down 1.4 s of it) |
//! | probe timeout | 2 s | the probe's lease; longer than the per-call timeout, so a probe always reports |
//! | per-call timeout | 250 ms | how long an attempt on the hanging `weather` waits before it counts as a timeout |
//! | retry policy | 2 retries, first delay 50 ms, doubling, jitter | only timeouts, connect errors, 5xx and 429 are retried, never a 400; a 429's retry waits at least its `Retry-After` |
//! | run deadline | 2 s (or the demo's end, if sooner) | no run waits on tools forever |
//! | run tool-call budget | 40 attempts, retries included | a run that keeps calling is stopped, however its calls end |
//! | think time | 1 ms after each call | an agent run does something between tool calls; it also keeps the blocked calls from spinning |
//! | pool `llm` | `[llm-a, llm-b]` then `[llm-c]`; no panic | the backup serves only when neither preferred member admits; each member's breaker has the settings above (`[default]`) and a health check |
//!
//! A 429's `Retry-After` keeps its breaker open until the hint's end when that is later than the
//! cooldown's (capped at 10 minutes, spread upward by up to 10 %); the last hint is reported so
//! you can compare the two.
//!
//! Options: `--duration SECS` (default 10), `--concurrency N` agent tasks (default 64), `--json`
//! (print one JSON object and nothing else on stdout; the progress lines go to stderr),
//! `--config FILE`, `--log DIRECTIVE`, `--fleet N` with `--independent` or `--redis URL` (see
//! *Fleet mode* below), `--help`.
//!
//! `--config FILE` starts the registry from a TOML file of breaker settings instead of the
//! built-in ones (`breakers.toml`, next to this file, holds the built-in ones, commented); a file
//! that is not valid is refused at start with an error naming the dependency and field, and so is
//! one with a section for a dependency that is none of the four tools and three providers
//! (`unknown dependency section [dependencies."serch"]; did you mean "search"?`). The file's
//! `[pools.llm]` sets the pool's groups (a file without it gets the built-in one; a member that is
//! none of the providers, or another pool, is refused). On unix, SIGHUP reloads the file
//! (`Registry::reload`): each breaker keeps its state and takes the new settings, and one line per
//! change goes to stderr (`reloaded FILE: search: failure_threshold 5 -> 3`), or `no change`; a
//! file refused for either reason is reported and the settings in force are kept. See
//! `settings.rs`.
//!
//! `--log DIRECTIVE` (`info`, `toolbreaker=debug`, ...: tracing-subscriber's `EnvFilter` syntax)
//! prints the crate's `tracing` events to stderr: transitions at `info` (`warn` when opening),
//! blocked calls and counted failures at `debug`. Without it nothing is logged. A bare word
//! that is neither a level nor the crate's target (`--log notalevel`, which `EnvFilter` would
//! read as a target nothing has, printing nothing) is a usage error (`logging.rs`).
//!
//! The report shows, next to the gateway's own counters, each breaker's (`Registry::metrics`), and
//! sums them up in one line per dependency: whether the service failed (counted failures, by
//! kind), whether the breaker opened (transitions by reason), and whether the agents kept calling
//! it after it opened (calls blocked, never sent). A dependency with a cap or a throttle has rows
//! of its own (`--json`: `concurrency_limit`, `saturated`, `saturated_at_once`,
//! `saturated_answer_ms` `{mean, max}`, `throttled`, `throttled_before_trip`,
//! `outage_attempted_before_trip` and `shed_before_trip_share`, under every dependency, zero or
//! `null` where there is none; `settings.breakers` gives each breaker's `max_in_flight`,
//! `adaptive_concurrency` and `adaptive_throttling`). The pool's table (`--json`: under `pools.llm`)
//! gives its calls (ok, failed, blocked, `pool_exhausted`, stopped, retries moved to another
//! member) and per member: calls served and share, failures by kind, trips, blocked, its longest
//! open period next to its cooldown and its largest hint, its health checks (success/failure, as
//! the provider answered them), its transitions, the health checks' included (heard by the
//! registry's `on_transition` listener), and the calls each member served in each phase.
//!
//! # Fleet mode: `--fleet N`
//!
//! `--fleet N` (up to 16) runs N gateway instances (calling the four tools; the `chat` pool and
//! `search`'s degradation before its outage are the single gateway's), each a separate process (this executable,
//! started again with a hidden `--instance-of`), against one set of tool servers going through the
//! schedule above; the agent tasks (`--concurrency`, 64 by default) are split among them. Each
//! instance's registry is in fleet mode (`Fleet::builder(url).prefix(..).instance("gw-1")`, the
//! fleet's defaults otherwise): a trip on one instance opens the dependency on all, after the
//! cooldown one instance in the fleet gets the probe (the others are blocked, `probe_in_flight`),
//! and its verdict closes or reopens the dependency everywhere, while each call is still admitted
//! by a local atomic load. The gateway starts `redis-server` on a free loopback port, with no
//! persistence, and stops it at the end (if it is not installed, the error says how:
//! `apt-get install -y redis-server`); `--redis URL` uses a running server instead, under a key
//! prefix of the run's own that is deleted at the end. `--fleet N --independent` runs the same
//! instances with registries of their own and no Redis, for comparison.
//!
//! It prints one line a second with the requests each server had, then, for each failing
//! dependency, a column per instance and one for the fleet:
//!
//! - the requests that reached the failing server, counted by the server per instance (each
//!   instance's requests carry its number in a header), next to the calls asked of the breaker
//!   during the outage;
//! - the probes, and the probes per cooldown: the dependency's probes, from every instance, are
//!   grouped into cooldowns (the probes sent within one cooldown of the first), so the fleet's
//!   figure is 1.00 when one instance probes for the fleet, and about N for N instances probing on
//!   their own;
//! - the trips: each instance's own (`failure_threshold`; `failure_rate` on `quotes`) and those
//!   adopted from the fleet (`fleet`). At this load an instance often reaches its own threshold in
//!   the millisecond or so before the fleet's open reaches it; most often on the hanging
//!   `weather`, where every instance has calls in flight when the hang begins and they time out
//!   together 250 ms later, so that there the fleet saves little but the probes;
//! - the propagation: how long after the first trip (or close) of an outbreak, on any instance,
//!   each other instance adopted it, p50 and p99; and the same over every dependency at the end.
//!
//! With `--json` these figures, with each instance's own counters and the transitions it heard,
//! are under `fleet` (see `figures.rs` for how each is worked out, `fleet.rs` for the processes).
//! `--config FILE` is read by every instance at start; in fleet mode SIGINT, SIGTERM and SIGHUP
//! stop the gateway, which stops its instances and its redis-server first.

mod figures;
mod flags;
mod fleet;
mod listen;
mod logging;
mod pool;
mod providers;
mod report;
mod settings;
mod tools;

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use toolbreaker::{
    AgentRun, CircuitBreaker, HealthCheck, Registry, RegistryConfig, RetryPolicy, ToolResult,
};

use pool::{Chat, PoolReport, PoolStats};
use providers::{POOL, PROVIDERS, ProviderServer};
use report::{DependencyStats, RunStats, Window};
use tools::{Mode, Tool, ToolServer, call_tool};

const PER_CALL_TIMEOUT: Duration = Duration::from_millis(250);
const MAX_RETRIES: u32 = 2;
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(50);
const RUN_TIME_LIMIT: Duration = Duration::from_secs(2);
const RUN_TOOL_CALL_BUDGET: u32 = 40;
const THINK_TIME: Duration = Duration::from_millis(1);
/// One call to `files` in this many carries invalid arguments.
const INVALID_ARGS_ONE_IN: u64 = 8;

const DEFAULT_DURATION_SECS: f64 = 10.0;
const MAX_DURATION_SECS: f64 = 3600.0;
const DEFAULT_CONCURRENCY: usize = 64;
const MAX_CONCURRENCY: usize = 1000;

/// One stretch of a server failing, in fractions of the run.
struct Phase {
    tool: Tool,
    mode: Mode,
    from: f64,
    to: f64,
}

/// `search`'s degradation before its outage, in a single gateway's demo (not in fleet mode, whose
/// figures compare the requests the outages had: the degradation's successes would drown them): a
/// growing share of 503s, spread evenly, so its adaptive throttling sheds calls once more than
/// half fail, while its consecutive rule needs the answers to come back far out of order to see 5
/// in a row at 65 % (the server answers at most two 503s in a row, then a success): it trips at
/// the outage's 503s from 20 %, or now and then late in the 65 % step.
const DEGRADATION: [Phase; 4] = [
    degrading(20, 0.06, 0.08),
    degrading(40, 0.08, 0.10),
    degrading(55, 0.10, 0.12),
    degrading(65, 0.12, 0.20),
];

const fn degrading(percent: u8, from: f64, to: f64) -> Phase {
    Phase {
        tool: Tool::Search,
        mode: Mode::PartlyUnavailable { percent },
        from,
        to,
    }
}

/// The phases of the run: [`SCHEDULE`], after [`DEGRADATION`] when `degrading`.
fn phases(degrading: bool) -> impl Iterator<Item = &'static Phase> {
    DEGRADATION
        .iter()
        .filter(move |_| degrading)
        .chain(SCHEDULE.iter())
}

const SCHEDULE: [Phase; 3] = [
    Phase {
        tool: Tool::Search,
        mode: Mode::Unavailable,
        from: 0.20,
        to: 0.55,
    },
    Phase {
        tool: Tool::Weather,
        mode: Mode::Hang,
        from: 0.35,
        to: 0.65,
    },
    // A partial outage: never two failures in a row, so only `quotes`' failure-rate rule
    // (`settings::built_in`) trips its breaker.
    Phase {
        tool: Tool::Quotes,
        mode: Mode::PartlyRateLimited {
            one_in: 3,
            retry_after_secs: 1,
        },
        from: 0.50,
        to: 0.75,
    },
];

const USAGE: &str = "\
usage: gateway [--duration SECS] [--concurrency N] [--json] [--config FILE] [--log DIRECTIVE]
               [--fleet N [--independent | --redis URL]]

  --duration SECS    how long the agents call the tools (default 10; up to 3600)
  --concurrency N    how many agent tasks call the tools at once, each running one agent run
                     after another (default 64; up to 1000); with --fleet, split across the
                     instances
  --json             print one JSON object with every counter, and nothing else, on stdout
  --fleet N          run N gateway instances (up to 16) as separate processes against the same
                     tool servers, their breakers shared through Redis; report, per instance and
                     for the fleet, the attempts sent to each failing dependency during its
                     outage, the probes per cooldown and how fast a trip or a close reached the
                     other instances (with --json: under `fleet`)
  --independent      with --fleet: the same run with each instance's breakers on their own, no
                     Redis, for comparison
  --redis URL        with --fleet: the Redis server to share through (default: start
                     redis-server on a free loopback port, and stop it at the end)
  --config FILE      the breakers' settings, from a TOML file (examples/gateway/breakers.toml
                     holds the built-in ones); on unix, SIGHUP reloads it and prints what changed
                     to stderr
  --log DIRECTIVE    print the breakers' tracing events to stderr, filtered by DIRECTIVE
                     (`info`: transitions; `toolbreaker=debug`: also blocked calls and failures;
                     another target takes a level: `hyper=debug`)
  -h, --help         print this help";

#[derive(Debug, PartialEq)]
struct Args {
    duration: Duration,
    concurrency: usize,
    json: bool,
    config: Option<PathBuf>,
    log: Option<String>,
    /// `--fleet N`: how many instances.
    fleet: Option<usize>,
    /// `--independent`: the fleet's instances without Redis.
    independent: bool,
    /// `--redis URL`: the fleet's Redis server.
    redis: Option<String>,
    /// `--instance-of SPEC` (not in the usage): this process is one instance of a fleet, started
    /// by the gateway with `--fleet`; SPEC says which and where (see `fleet.rs`).
    instance_of: Option<String>,
}

#[derive(Debug, PartialEq)]
enum Command {
    Run(Args),
    Help,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut parsed = Args {
        duration: Duration::from_secs_f64(DEFAULT_DURATION_SECS),
        concurrency: DEFAULT_CONCURRENCY,
        json: false,
        config: None,
        log: None,
        fleet: None,
        independent: false,
        redis: None,
        instance_of: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = flags::split(arg);
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value ({what})"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--json" if inline.is_none() => parsed.json = true,
            "--json" => return Err("--json takes no value".to_owned()),
            "--duration" => {
                let text = value("seconds")?;
                parsed.duration = flags::seconds("--duration", &text, MAX_DURATION_SECS)?;
            }
            "--concurrency" => {
                let text = value("a number of agent tasks")?;
                parsed.concurrency =
                    flags::whole_number("--concurrency", &text, 1, MAX_CONCURRENCY)?;
            }
            "--config" => parsed.config = Some(PathBuf::from(value("a TOML file")?)),
            "--fleet" => {
                let text = value("a number of gateway instances")?;
                parsed.fleet = Some(flags::whole_number(
                    "--fleet",
                    &text,
                    1,
                    fleet::MAX_INSTANCES,
                )?);
            }
            "--independent" if inline.is_none() => parsed.independent = true,
            "--independent" => return Err("--independent takes no value".to_owned()),
            "--redis" => {
                parsed.redis = Some(value("a Redis URL, such as redis://127.0.0.1:6379/")?)
            }
            "--instance-of" => parsed.instance_of = Some(value("an instance's settings")?),
            "--log" => {
                let directive = value("a filter directive, such as `info`")?;
                // Checked here, so a typo is a usage error before anything starts.
                logging::filter("--log", &directive)?;
                parsed.log = Some(directive);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    match parsed.fleet {
        None if parsed.independent => return Err("--independent needs --fleet N".to_owned()),
        None if parsed.redis.is_some() => return Err("--redis needs --fleet N".to_owned()),
        Some(_) if parsed.independent && parsed.redis.is_some() => {
            return Err("--independent shares nothing: it takes no --redis".to_owned());
        }
        Some(instances) if parsed.concurrency < instances => {
            return Err(format!(
                "--concurrency {} is fewer agent tasks than --fleet {instances} has instances",
                parsed.concurrency
            ));
        }
        Some(_) if parsed.instance_of.is_some() => {
            return Err("--instance-of is one instance of a fleet: it takes no --fleet".to_owned());
        }
        _ => {}
    }
    Ok(Command::Run(parsed))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(args)) => args,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("gateway: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Some(directive) = &args.log {
        log_to_stderr(directive);
    }
    let outcome = match (&args.instance_of, args.fleet) {
        (Some(spec), _) => {
            let spec = spec.clone();
            fleet::instance(args, &spec).await
        }
        (None, Some(instances)) => fleet::run(args, instances).await,
        (None, None) => run(args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("gateway: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Print the crate's `tracing` events (and spans' fields) to stderr, filtered by `directive`,
/// already checked by `parse_args`.
fn log_to_stderr(directive: &str) {
    let filter = logging::filter("--log", directive).unwrap_or_default();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// What every agent task shares.
struct Shared {
    client: reqwest::Client,
    guard: tools::Guard,
    dependencies: Vec<Dependency>,
    /// The `chat` tool's pool (`None` in fleet mode: the fleet's instances call the four tools).
    chat: Option<Chat>,
    runs: RunStats,
    start: Instant,
    deadline: Instant,
}

/// One tool as the agent sees it: where to call it, how its server is doing (for the counters
/// only), and its counters.
struct Dependency {
    tool: Tool,
    control: Arc<tools::Control>,
    valid_url: String,
    invalid_url: String,
    stats: DependencyStats,
}

/// Where the progress lines and events go: stdout for the table, stderr with `--json`, or
/// nowhere (an instance of a fleet: the gateway that started it reports).
#[derive(Clone, Copy)]
struct Log {
    to_stderr: bool,
    quiet: bool,
}

impl Log {
    /// Nothing is printed.
    const QUIET: Log = Log {
        to_stderr: true,
        quiet: true,
    };

    /// To stdout, or to stderr when stdout is the JSON report's.
    fn new(json: bool) -> Log {
        Log {
            to_stderr: json,
            quiet: false,
        }
    }

    fn line(self, line: &str) {
        if self.quiet {
            return;
        }
        if self.to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let log = Log::new(args.json);
    // A bad file is refused before anything starts: the error names the dependency and field.
    let config = settings::initial(args.config.as_deref())?;
    // The pool's members' transitions, the health checks' included, are heard by the listener
    // (the stats are set once the demo's start is known, before any call).
    let pool_stats: Arc<OnceLock<Arc<PoolStats>>> = Arc::default();
    let heard = Arc::clone(&pool_stats);
    let registry = Arc::new(
        Registry::builder()
            .config(config.clone())
            .metrics(true)
            .on_transition(move |event| {
                if let Some(stats) = heard.get() {
                    stats.heard(event);
                }
            })
            .build(),
    );
    // Installed before the demo starts, so that from now on a SIGHUP reloads the file rather than
    // ending the process.
    #[cfg(unix)]
    let hangups = match &args.config {
        Some(path) => Some((path.clone(), settings::hangups()?)),
        None => None,
    };

    let mut servers = Vec::with_capacity(Tool::ALL.len());
    for tool in Tool::ALL {
        servers.push(ToolServer::spawn(tool).await?);
    }
    let start = Instant::now();
    let mut providers = Vec::with_capacity(PROVIDERS.len());
    for name in PROVIDERS {
        providers.push(ProviderServer::spawn(name, start).await?);
    }
    // Each member's breaker probes with a GET of its provider's /health, in the background.
    let health_client = tools::client()?;
    for provider in &providers {
        registry
            .get(provider.name)
            .start_health_check(HealthCheck::http_get(
                health_client.clone(),
                provider.health_url.parse()?,
            ))?;
    }
    let stats = Arc::new(PoolStats::new(start, args.duration));
    let _ = pool_stats.set(Arc::clone(&stats));
    let shared = Arc::new(Shared {
        client: tools::client()?,
        guard: tools::guard(PER_CALL_TIMEOUT, retry_policy()),
        dependencies: servers
            .iter()
            .map(|server| Dependency {
                tool: server.tool,
                control: Arc::clone(&server.control),
                valid_url: server.valid_url.clone(),
                invalid_url: server.invalid_url.clone(),
                stats: DependencyStats::new(server.tool),
            })
            .collect(),
        chat: Some(Chat {
            registry: Arc::clone(&registry),
            urls: providers.iter().map(|p| p.chat_url.clone()).collect(),
            controls: providers.iter().map(|p| Arc::clone(&p.control)).collect(),
            stats,
        }),
        runs: RunStats::default(),
        start,
        deadline: start + args.duration,
    });
    let listening: Vec<String> = servers
        .iter()
        .map(|server| format!("{} at {}", server.tool.name(), server.addr))
        .chain(
            providers
                .iter()
                .map(|provider| format!("{} at {}", provider.name, provider.addr)),
        )
        .collect();
    log.line(&format!(
        "gateway: {} agent tasks for {:.1} s; tools: {}",
        args.concurrency,
        args.duration.as_secs_f64(),
        listening.join(", "),
    ));
    print_settings(log, &config, args.config.as_deref());

    let finish = watch::Sender::new(false);
    #[cfg(unix)]
    let reloader = hangups.map(|(path, hangups)| {
        tokio::spawn(settings::reload_on_hangup(
            Arc::clone(&registry),
            path,
            hangups,
            start,
            finish.subscribe(),
        ))
    });
    let elapsed = drive(
        &shared,
        &registry,
        args.concurrency,
        args.duration,
        &finish,
        log,
    )
    .await?;
    #[cfg(unix)]
    if let Some(reloader) = reloader {
        reloader.await?;
    }

    let mut hits = Vec::with_capacity(servers.len());
    for server in servers {
        hits.push(server.control.hits());
        if let Err(error) = server.shutdown(Duration::from_secs(2)).await {
            eprintln!("gateway: warning: {error}");
        }
    }
    for provider in providers {
        if let Err(error) = provider.shutdown(Duration::from_secs(2)).await {
            eprintln!("gateway: warning: {error}");
        }
    }
    let pool_report = shared.chat.as_ref().and_then(|chat| {
        let pool = registry.pool(POOL)?;
        Some(PoolReport::new(
            chat,
            &pool,
            args.duration,
            &registry.metrics(),
        ))
    });

    let snapshots = snapshots(&shared, &registry, args.duration, Some(&hits));
    let calls = shared.runs.calls();
    let calls_per_second = calls as f64 / elapsed.as_secs_f64();
    // Real results from the demo, as the model received them: the first blocked call (preferably
    // the `search` outage's first) and the first stopped one.
    let blocked_example = shared
        .dependencies
        .iter()
        .find_map(|d| Some((d.tool, d.stats.first_blocked()?)));
    let stopped_example = shared.runs.first_stopped();
    let as_value = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();

    if args.json {
        let dependencies: serde_json::Map<String, serde_json::Value> = snapshots
            .iter()
            .zip(&shared.dependencies)
            .map(|(snapshot, d)| (d.tool.name().to_owned(), snapshot.json()))
            .collect();
        let report = serde_json::json!({
            "duration_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            "concurrency": args.concurrency,
            "calls": calls,
            "calls_per_second": calls_per_second.round(),
            "calls_stopped": shared.runs.calls_stopped(),
            "runs": shared.runs.json(),
            "settings": settings_json(&config, args.config.as_deref()),
            "dependencies": dependencies,
            "pools": { POOL: pool_report.as_ref().map(PoolReport::json) },
            "blocked_example": blocked_example.and_then(|(_, text)| as_value(text)),
            "stopped_example": stopped_example.and_then(as_value),
        });
        println!("{report}");
    } else {
        println!();
        println!(
            "{calls} tool calls in {:.2} s by {} agent tasks: {calls_per_second:.0} calls/s",
            elapsed.as_secs_f64(),
            args.concurrency
        );
        println!("{}", shared.runs.table());
        for snapshot in &snapshots {
            println!();
            print!("{}", snapshot.table());
        }
        if let Some(pool_report) = &pool_report {
            println!();
            print!("{}", pool_report.table());
        }
        println!();
        match blocked_example {
            Some((tool, text)) => {
                println!(
                    "A blocked call to {}, as the model receives it:",
                    tool.name()
                );
                println!("{text}");
            }
            None => println!("No call was blocked in this demo."),
        }
        if let Some(text) = stopped_example {
            println!();
            println!("A stopped call, as the model receives it:");
            println!("{text}");
        }
    }
    Ok(())
}

/// The header lines after the first: the breakers' settings (each dependency's own, if the file
/// has any), the pipeline's and the agent runs'.
fn print_settings(log: Log, config: &RegistryConfig, path: Option<&Path>) {
    log.line(&format!(
        "breakers: {}{}; per-call timeout {} ms; {MAX_RETRIES} retries from {} ms, with jitter",
        settings::describe(config.default_config()),
        match path {
            Some(path) => format!(" (from {})", path.display()),
            None => String::new(),
        },
        PER_CALL_TIMEOUT.as_millis(),
        RETRY_FIRST_DELAY.as_millis(),
    ));
    for (name, own) in config.dependencies() {
        log.line(&format!("  {name}: {}", settings::describe(own)));
    }
    let registry = Registry::builder().config(config.clone()).build();
    if let Some(pool) = registry.pool(POOL) {
        let groups: Vec<String> = pool
            .groups()
            .map(|group| {
                let names: Vec<&str> = group.iter().map(|member| member.name()).collect();
                format!("[{}]", names.join(", "))
            })
            .collect();
        log.line(&format!(
            "pool {POOL} (tool chat): {}; each member's breaker probes with GET /health",
            groups.join(" then ")
        ));
    }
    log.line(&format!(
        "agent runs: deadline {} ms, tool-call budget {RUN_TOOL_CALL_BUDGET} attempts; \
         think time {} ms",
        RUN_TIME_LIMIT.as_millis(),
        THINK_TIME.as_millis(),
    ));
}

/// The report's `settings`: the breakers' at the start, the pipeline's and the agent runs'.
fn settings_json(config: &RegistryConfig, path: Option<&Path>) -> serde_json::Value {
    serde_json::json!({
        "failure_threshold": config.default_config().failure_threshold(),
        "cooldown_ms": config.default_config().cooldown().as_millis() as u64,
        "probe_timeout_ms": config.default_config().probe_timeout().as_millis() as u64,
        "config_file": path.map(|path| path.display().to_string()),
        "breakers": breakers_json(config),
        "pools": pools_json(config),
        "per_call_timeout_ms": PER_CALL_TIMEOUT.as_millis() as u64,
        "retry": {
            "max_retries": MAX_RETRIES,
            "first_delay_ms": RETRY_FIRST_DELAY.as_millis() as u64,
            "jitter": true,
        },
        "run_deadline_ms": RUN_TIME_LIMIT.as_millis() as u64,
        "run_tool_call_budget": RUN_TOOL_CALL_BUDGET,
        "think_time_ms": THINK_TIME.as_millis() as u64,
    })
}

/// Run `concurrency` agent tasks from `shared.start` until `shared.deadline`, with the
/// scheduled mode switches on the dependencies' controls and, unless `log` is quiet, a progress
/// line a second. `finish` is set once the agents are done, which ends the schedule, the progress
/// line and whatever else the caller gave a receiver of it. Returns the time the agents took.
async fn drive(
    shared: &Arc<Shared>,
    registry: &Registry,
    concurrency: usize,
    duration: Duration,
    finish: &watch::Sender<bool>,
    log: Log,
) -> Result<Duration, tokio::task::JoinError> {
    let controls = shared
        .dependencies
        .iter()
        .map(|d| (d.tool, Arc::clone(&d.control)))
        .collect();
    // `search` degrades before its outage in a single gateway's demo (the one with the pool),
    // not in fleet mode.
    let degrading = shared.chat.is_some();
    let scheduler = tokio::spawn(schedule(
        shared.start,
        controls,
        duration,
        degrading,
        finish.subscribe(),
        log,
    ));
    let providers = shared.chat.as_ref().map(|chat| {
        tokio::spawn(pool::schedule(
            shared.start,
            chat.controls.clone(),
            duration,
            finish.subscribe(),
            log,
        ))
    });
    let progress = (!log.quiet).then(|| {
        tokio::spawn(progress(
            Arc::clone(shared),
            registry_handles(registry),
            finish.subscribe(),
            log,
        ))
    });
    let agents: Vec<_> = (0..concurrency)
        .map(|task| {
            // Each task looks its breakers up once and keeps the handles: no lookup per call.
            tokio::spawn(agent(task, Arc::clone(shared), registry_handles(registry)))
        })
        .collect();
    for agent in agents {
        agent.await?;
    }
    let elapsed = shared.start.elapsed();
    finish.send_replace(true);
    scheduler.await?;
    if let Some(providers) = providers {
        providers.await?;
    }
    if let Some(progress) = progress {
        progress.await?;
    }
    Ok(elapsed)
}

/// Each dependency's counters at the end, with its breaker's and, where the servers ran in this
/// process, the requests that reached each (`hits`, in `Tool::ALL` order).
fn snapshots(
    shared: &Shared,
    registry: &Registry,
    duration: Duration,
    hits: Option<&[u64]>,
) -> Vec<report::Snapshot> {
    let mut metrics = registry.metrics();
    shared
        .dependencies
        .iter()
        .enumerate()
        .map(|(i, dependency)| {
            dependency.stats.snapshot(
                outage_window(dependency.tool, duration, shared.chat.is_some()),
                hits.and_then(|hits| hits.get(i).copied()),
                registry.get(dependency.tool.name()).config(),
                metrics.remove(dependency.tool.name()),
            )
        })
        .collect()
}

/// The demo's retry policy: capped exponential backoff with jitter (the pipeline's default cap).
fn retry_policy() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(MAX_RETRIES)
        .min_delay(RETRY_FIRST_DELAY)
        .jitter(true)
}

/// Each tool's and provider's breaker settings at the start, as JSON keyed by name.
fn breakers_json(config: &RegistryConfig) -> serde_json::Value {
    settings::dependencies()
        .map(|name| (name.to_owned(), settings::json(config.config_for(name))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Each pool's groups at the start, as JSON keyed by pool name.
fn pools_json(config: &RegistryConfig) -> serde_json::Value {
    let registry = Registry::builder().config(config.clone()).build();
    config
        .pools()
        .filter_map(|name| {
            let pool = registry.pool(name)?;
            let groups: Vec<Vec<&str>> = pool
                .groups()
                .map(|group| group.iter().map(|member| member.name()).collect())
                .collect();
            Some((name.to_owned(), serde_json::json!({ "groups": groups })))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn registry_handles(registry: &Registry) -> Vec<Arc<CircuitBreaker>> {
    Tool::ALL
        .iter()
        .map(|tool| registry.get(tool.name()))
        .collect()
}

/// The scheduled outage of `tool`, in ms since the start, with its degradation before it when
/// `degrading` ([`DEGRADATION`]).
fn outage_window(tool: Tool, duration: Duration, degrading: bool) -> Option<Window> {
    let ms = |fraction: f64| (duration.as_secs_f64() * fraction * 1000.0).round() as u64;
    let outage = SCHEDULE.iter().find(|phase| phase.tool == tool)?;
    let degrading_from = phases(degrading)
        .filter(|phase| phase.tool == tool && phase.from < outage.from)
        .map(|phase| phase.from)
        .reduce(f64::min);
    Some(Window {
        mode: outage.mode,
        from_ms: ms(outage.from),
        to_ms: ms(outage.to),
        degrading_from_ms: degrading_from.map(ms),
    })
}

/// Switch the servers' modes (`controls`) at the scheduled times after `start`, until the run is
/// over; with `search`'s degradation first when `degrading` ([`phases`]).
async fn schedule(
    start: Instant,
    controls: Vec<(Tool, Arc<tools::Control>)>,
    duration: Duration,
    degrading: bool,
    mut finished: watch::Receiver<bool>,
    log: Log,
) {
    let mut switches: Vec<(Duration, Tool, Mode)> = phases(degrading)
        .flat_map(|phase| {
            [
                (duration.mul_f64(phase.from), phase.tool, phase.mode),
                (duration.mul_f64(phase.to), phase.tool, Mode::Healthy),
            ]
        })
        .collect();
    // A phase that ends as the next of the same tool begins hands over without a healthy moment.
    let starts: Vec<(Duration, Tool)> = switches
        .iter()
        .filter(|(_, _, mode)| mode.is_failing())
        .map(|(at, tool, _)| (*at, *tool))
        .collect();
    switches.retain(|(at, tool, mode)| mode.is_failing() || !starts.contains(&(*at, *tool)));
    switches.sort_by_key(|(at, _, _)| *at);
    for (at, tool, mode) in switches {
        tokio::select! {
            () = tokio::time::sleep_until(start + at) => {}
            _ = finished.wait_for(|finished| *finished) => return,
        }
        if let Some((_, control)) = controls.iter().find(|(t, _)| *t == tool) {
            control.set_mode(mode);
            log.line(&format!(
                "[{:>6.2} s] {} server is now {}",
                start.elapsed().as_secs_f64(),
                tool.name(),
                mode.describe()
            ));
        }
    }
}

/// One progress line a second: elapsed time, calls per second, runs started so far, each
/// breaker's state.
async fn progress(
    shared: Arc<Shared>,
    breakers: Vec<Arc<CircuitBreaker>>,
    mut finished: watch::Receiver<bool>,
    log: Log,
) {
    let mut last = (shared.start, 0);
    let mut tick = tokio::time::interval_at(
        shared.start + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = finished.wait_for(|finished| *finished) => return,
        }
        let now = Instant::now();
        let calls = shared.runs.calls();
        let rate = (calls - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
        last = (now, calls);
        let mut line = format!(
            "[{:>6.2} s] {rate:>8.0} calls/s {:>7} runs ",
            now.duration_since(shared.start).as_secs_f64(),
            shared.runs.runs_started(),
        );
        for (dependency, breaker) in shared.dependencies.iter().zip(&breakers) {
            line.push_str(&format!(
                "  {} {:<9}",
                dependency.tool.name(),
                breaker.state().as_str()
            ));
        }
        if let Some(chat) = &shared.chat {
            for name in PROVIDERS {
                let state = chat.registry.get(name).state();
                line.push_str(&format!("  {name} {:<9}", state.as_str()));
            }
        }
        log.line(line.trim_end());
    }
}

/// One agent task: one agent run after another until the demo's end. Each step of a run calls a
/// tool through the pipeline; blocked and failed calls are answered at once, and the run moves on
/// to its next step as a model would, until a call is answered `stopped`.
async fn agent(task: usize, shared: Arc<Shared>, breakers: Vec<Arc<CircuitBreaker>>) {
    let mut rng = fastrand::Rng::with_seed(task as u64);
    let mut n = 0;
    while Instant::now() < shared.deadline {
        n += 1;
        // A run's deadline is its own time limit, or the demo's end if that comes first.
        let own = Instant::now() + RUN_TIME_LIMIT;
        let cut_short = own >= shared.deadline;
        let run = AgentRun::with_deadline(
            format!("agent-{task}-{n}"),
            own.min(shared.deadline),
            RUN_TOOL_CALL_BUDGET,
        );
        shared.runs.run_started();
        loop {
            // The tools, and `chat` after them when the pool is in this process.
            let tools = shared.dependencies.len() + usize::from(shared.chat.is_some());
            let index = rng.usize(..tools);
            if let Some(chat) = shared
                .chat
                .as_ref()
                .filter(|_| index == shared.dependencies.len())
            {
                // The pool in force, looked up per call: a reload may have changed its groups.
                let Some(pool) = chat.registry.pool(POOL) else {
                    continue;
                };
                let result =
                    pool::call_chat(chat, &pool, &shared.guard, &run, &shared.client).await;
                shared.runs.call(&result, cut_short);
                if matches!(result, ToolResult::Stopped { .. }) {
                    break;
                }
                tokio::time::sleep(THINK_TIME).await;
                continue;
            }
            let dependency = &shared.dependencies[index];
            let valid = dependency.tool != Tool::Files || rng.u64(..INVALID_ARGS_ONE_IN) != 0;
            let url = if valid {
                &dependency.valid_url
            } else {
                &dependency.invalid_url
            };
            let in_outage = dependency.control.mode().is_failing();
            let mut observed = 0;
            let asked = Instant::now();
            let result = call_tool(
                &shared.guard,
                &run,
                &breakers[index],
                &shared.client,
                url,
                |attempt| {
                    observed += 1;
                    dependency.stats.attempt(attempt, shared.start);
                },
            )
            .await;
            dependency
                .stats
                .call(&result, in_outage, observed, asked.elapsed());
            shared.runs.call(&result, cut_short);
            if matches!(result, ToolResult::Stopped { .. }) {
                break;
            }
            tokio::time::sleep(THINK_TIME).await;
        }
    }
}
