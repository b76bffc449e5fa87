//! The fleet report (`--fleet N`): its figures, worked out from the instances' own reports, and
//! its table.
//!
//! Pure functions on the instances' JSON, so the integration test
//! (`tests/examples/gateway_fleet.rs`) checks them on reports it writes itself; `fleet.rs` runs the
//! instances and calls [`fleet`].
//!
//! Every time here is in µs since the demo's start, which every instance shares: the gateway gives
//! its instances one wall-clock start, and each converts it to its own monotonic clock once, so
//! an event at 1,000 µs on one instance and one at 1,300 µs on another happened 300 µs apart (to
//! within a reading of the system clock).
//!
//! - **Sent during the outage**: the requests (first attempts, retries and probes) that reached
//!   a dependency's server while it was failing, counted by the server itself per instance (each
//!   instance's requests say which it is in a header); the fleet's is their sum. Next to it, the
//!   calls each instance asked of the breaker during the outage, by the instance's own reading of
//!   the schedule (a call starting within a few ms of a switch may land on either side).
//! - **Probes per cooldown**: a breaker probes at most once per cooldown (the next probe waits a
//!   whole cooldown after the last one failed), so the dependency's probes, from every instance,
//!   are grouped into *cooldowns*: a cooldown holds the probes sent within one cooldown's length of
//!   its first. The fleet's figure is all its probes over the cooldowns: 1 when one instance probes
//!   for the whole fleet, about N when N instances each probe on their own. An instance's figure
//!   is its own probes over the same cooldowns: its share.
//! - **Propagation**: a trip is the change of a breaker from closed to open. The trips of one
//!   dependency, on every instance, are grouped into *outbreaks*: the trips within one cooldown of
//!   the first. The first trip of an outbreak is its origin (an instance's own, or, when the
//!   instances' summed failures tripped the fleet, the adoption on the instance whose report did
//!   it); each other instance that adopted the trip from the fleet (reason `fleet`) took its time
//!   since the origin. Closes (a probe's success, to closed everywhere) are grouped and measured
//!   the same way. p50 and p99 are nearest-rank percentiles of those delays.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

/// A dependency as the fleet report sees it.
#[derive(Clone, Debug)]
pub struct DependencyInput {
    /// Its name: the key of its entry in each instance's `dependencies`.
    pub name: String,
    /// Its breakers' cooldown, in µs.
    pub cooldown_us: u64,
    /// Its scheduled outage (`{"mode", "from_ms", "to_ms"}`), if it has one.
    pub outage: Option<Value>,
    /// The requests that reached its server.
    pub server_hits: u64,
    /// Those that reached it while it was failing.
    pub server_failing_hits: u64,
    /// Those, from each instance, in fleet order.
    pub server_failing_hits_from: Vec<u64>,
}

/// One transition an instance heard (its registry's `on_transition` listener).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heard {
    /// The instance, by its index in the fleet.
    pub instance: usize,
    /// The dependency.
    pub dependency: String,
    /// When, in µs since the start (negative: before it).
    pub at_us: i64,
    /// `State::as_str` of the state before.
    pub from: String,
    /// `State::as_str` of the state after.
    pub to: String,
    /// `TransitionReason::as_str`.
    pub reason: String,
}

impl Heard {
    /// One entry of an instance's `heard` list, as [`json`](Heard::json) writes it.
    pub fn parse(instance: usize, value: &Value) -> Option<Heard> {
        Some(Heard {
            instance,
            dependency: value["dependency"].as_str()?.to_owned(),
            at_us: value["at_us"].as_i64()?,
            from: value["from"].as_str()?.to_owned(),
            to: value["to"].as_str()?.to_owned(),
            reason: value["reason"].as_str()?.to_owned(),
        })
    }

    /// The entry of an instance's `heard` list.
    pub fn json(&self) -> Value {
        json!({
            "dependency": self.dependency,
            "at_us": self.at_us,
            "from": self.from,
            "to": self.to,
            "reason": self.reason,
        })
    }

    /// Adopted from the fleet, not this instance's own.
    pub fn adopted(&self) -> bool {
        self.reason == "fleet"
    }

    /// Closed to open.
    pub fn is_trip(&self) -> bool {
        self.from == "closed" && self.to == "open"
    }

    /// Open or half-open to closed.
    pub fn is_close(&self) -> bool {
        self.from != "closed" && self.to == "closed"
    }
}

/// How many cooldowns `starts` (probe send times from every instance, µs, in any order) fall
/// into: each cooldown holds the probes sent less than `cooldown_us` after its first.
pub fn cooldowns(starts: &[u64], cooldown_us: u64) -> u64 {
    let mut sorted = starts.to_vec();
    sorted.sort_unstable();
    let mut count = 0;
    let mut first: Option<u64> = None;
    for at in sorted {
        if first.is_none_or(|first| at >= first.saturating_add(cooldown_us)) {
            first = Some(at);
            count += 1;
        }
    }
    count
}

/// The propagation delays of `events` (`(instance, at_us, adopted)`: one dependency's trips, or
/// its closes, on every instance), grouped into outbreaks of `window_us` (see the module docs):
/// `(instance, delay_us)` for each instance that adopted an outbreak after its origin, in the
/// order of the outbreaks.
pub fn propagation(events: &[(usize, i64, bool)], window_us: i64) -> Vec<(usize, i64)> {
    let mut sorted = events.to_vec();
    sorted.sort_by_key(|&(instance, at, _)| (at, instance));
    let mut delays = Vec::new();
    let mut origin: Option<(usize, i64)> = None;
    let mut seen: Vec<usize> = Vec::new();
    for (instance, at, adopted) in sorted {
        match origin {
            Some((_, first)) if at < first.saturating_add(window_us) => {
                if seen.contains(&instance) {
                    continue; // one change per instance per outbreak
                }
                seen.push(instance);
                if adopted {
                    delays.push((instance, at - first));
                }
            }
            _ => {
                origin = Some((instance, at));
                seen.clear();
                seen.push(instance);
            }
        }
    }
    delays
}

/// The nearest-rank `p`-th percentile (0 < p ≤ 100) of `sorted`, ascending.
pub fn percentile(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// `{"count", "p50_ms", "p99_ms", "max_ms"}` of some delays in µs (null figures when there are
/// none).
pub fn spread(delays_us: &[i64]) -> Value {
    let mut sorted = delays_us.to_vec();
    sorted.sort_unstable();
    let ms = |us: Option<i64>| us.map(|us| us as f64 / 1000.0);
    json!({
        "count": sorted.len(),
        "p50_ms": ms(percentile(&sorted, 50.0)),
        "p99_ms": ms(percentile(&sorted, 99.0)),
        "max_ms": ms(sorted.last().copied()),
    })
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// `n` and `noun`, plural unless `n` is 1: "1 agent task", "2 agent tasks".
pub(crate) fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn ratio(part: u64, whole: u64) -> Value {
    if whole == 0 {
        Value::Null
    } else {
        json!((part as f64 / whole as f64 * 100.0).round() / 100.0)
    }
}

/// The report's `fleet` object, from the instances' reports (in fleet order) and what the
/// gateway knows of each dependency. `shared`: the instances' breakers shared through Redis
/// (otherwise there is no propagation to measure).
pub fn fleet(reports: &[Value], dependencies: &[DependencyInput], shared: bool) -> Value {
    let heard: Vec<Heard> = reports
        .iter()
        .enumerate()
        .flat_map(|(i, report)| {
            report["heard"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(move |entry| Heard::parse(i, entry))
        })
        .collect();
    let mut instances: Vec<Map<String, Value>> = reports
        .iter()
        .map(|report| {
            let mut entry = Map::new();
            for key in [
                "instance",
                "pid",
                "concurrency",
                "duration_ms",
                "calls",
                "calls_per_second",
                "calls_stopped",
                "runs",
                "redis",
                "heard",
            ] {
                entry.insert(key.to_owned(), report[key].clone());
            }
            entry.insert("dependencies".to_owned(), Value::Object(Map::new()));
            entry
        })
        .collect();
    let mut fleet_dependencies = Map::new();
    // Every dependency's delays, `(instance, µs)`: of trips, and of closes.
    let mut pooled_trips: Vec<(usize, i64)> = Vec::new();
    let mut pooled_closes: Vec<(usize, i64)> = Vec::new();
    for dependency in dependencies {
        let name = dependency.name.as_str();
        let own = |report: &Value| report["dependencies"][name].clone();
        let during = |report: &Value, key: &str| count(&own(report)["outage"][key]);
        let sent: Vec<u64> = (0..reports.len())
            .map(|i| {
                dependency
                    .server_failing_hits_from
                    .get(i)
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let attempted: Vec<u64> = reports.iter().map(|r| during(r, "attempted")).collect();
        let probes: Vec<u64> = reports.iter().map(|r| count(&own(r)["probes"])).collect();
        let starts: Vec<u64> = reports
            .iter()
            .flat_map(|r| {
                own(r)["probe_starts_us"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .collect::<Vec<_>>()
            })
            .collect();
        let cooldowns = cooldowns(&starts, dependency.cooldown_us);
        let window = i64::try_from(dependency.cooldown_us).unwrap_or(i64::MAX);
        let of = |keep: fn(&Heard) -> bool| -> Vec<(usize, i64, bool)> {
            heard
                .iter()
                .filter(|h| h.dependency == name && keep(h))
                .map(|h| (h.instance, h.at_us, h.adopted()))
                .collect()
        };
        let trips = of(Heard::is_trip);
        let (trip_delays, close_delays) = if shared {
            (
                propagation(&trips, window),
                propagation(&of(Heard::is_close), window),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let propagation_of = |instance: Option<usize>| {
            propagation_json(shared, &trip_delays, &close_delays, instance)
        };
        let trips_of = |instance: Option<usize>, adopted: bool| {
            trips
                .iter()
                .filter(|(i, _, a)| *a == adopted && instance.is_none_or(|instance| *i == instance))
                .count()
        };
        for (i, entry) in instances.iter_mut().enumerate() {
            let mut figures = match own(&reports[i]) {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            figures.insert("attempted_during_outage".to_owned(), json!(attempted[i]));
            figures.insert("sent_during_outage".to_owned(), json!(sent[i]));
            figures.insert(
                "probes_per_cooldown".to_owned(),
                ratio(probes[i], cooldowns),
            );
            figures.insert(
                "trips".to_owned(),
                json!({"own": trips_of(Some(i), false), "adopted": trips_of(Some(i), true)}),
            );
            figures.insert("propagation_ms".to_owned(), propagation_of(Some(i)));
            if let Some(Value::Object(map)) = entry.get_mut("dependencies") {
                map.insert(name.to_owned(), Value::Object(figures));
            }
        }
        let probes_total: u64 = probes.iter().sum();
        fleet_dependencies.insert(
            name.to_owned(),
            json!({
                "outage": dependency.outage.clone(),
                "cooldown_ms": dependency.cooldown_us / 1000,
                "attempted_during_outage": attempted.iter().sum::<u64>(),
                "sent_during_outage": sent.iter().sum::<u64>(),
                "server_hits": dependency.server_hits,
                "server_hits_during_outage": dependency.server_failing_hits,
                "probes": probes_total,
                "cooldowns": cooldowns,
                "probes_per_cooldown": ratio(probes_total, cooldowns),
                "trips": {"own": trips_of(None, false), "adopted": trips_of(None, true)},
                "propagation_ms": propagation_of(None),
            }),
        );
        pooled_trips.extend(trip_delays);
        pooled_closes.extend(close_delays);
    }
    for (i, entry) in instances.iter_mut().enumerate() {
        entry.insert(
            "propagation_ms".to_owned(),
            propagation_json(shared, &pooled_trips, &pooled_closes, Some(i)),
        );
    }
    json!({
        "mode": if shared { "fleet" } else { "independent" },
        "shared": shared,
        "instances": reports.len(),
        "propagation_ms": propagation_json(shared, &pooled_trips, &pooled_closes, None),
        "per_instance": instances.into_iter().map(Value::Object).collect::<Vec<_>>(),
        "dependencies": fleet_dependencies,
    })
}

/// `{"trip", "close", "all"}`: the [`spread`] of the delays of trips, of closes, and of both, to
/// `instance` (or to any); null when nothing is shared.
fn propagation_json(
    shared: bool,
    trips: &[(usize, i64)],
    closes: &[(usize, i64)],
    instance: Option<usize>,
) -> Value {
    if !shared {
        return Value::Null;
    }
    let of = |delays: &[(usize, i64)]| -> Vec<i64> {
        delays
            .iter()
            .filter(|(i, _)| instance.is_none_or(|instance| *i == instance))
            .map(|(_, delay)| *delay)
            .collect()
    };
    let (trips, closes) = (of(trips), of(closes));
    let all: Vec<i64> = trips.iter().chain(&closes).copied().collect();
    json!({
        "trip": spread(&trips),
        "close": spread(&closes),
        "all": spread(&all),
    })
}

/// The fleet report as a table: one line per instance, then, for the dependencies named in
/// `order`, one block per failing dependency with a column per instance and one for the fleet,
/// and one line per dependency that never failed.
pub fn table(fleet: &Value, order: &[&str]) -> String {
    let mut out = String::new();
    let shared = fleet["shared"].as_bool().unwrap_or(false);
    let instances = fleet["per_instance"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for instance in &instances {
        let redis = &instance["redis"];
        let shared_line = if redis.is_object() {
            format!(
                "; Redis: {}, {}, {}, {}{}",
                plural(count(&redis["commands"]), "command", "commands"),
                plural(count(&redis["messages"]), "message", "messages"),
                plural(
                    count(&redis["adopted"]),
                    "change adopted",
                    "changes adopted"
                ),
                plural(
                    count(&redis["probes_claimed"]),
                    "probe lease won",
                    "probe leases won"
                ),
                if redis["connected"].as_bool() == Some(false) {
                    " (not connected at the end)"
                } else {
                    ""
                },
            )
        } else {
            "; breakers of its own".to_owned()
        };
        let _ = writeln!(
            out,
            "{} (pid {}): {}, {}{shared_line}",
            instance["instance"].as_str().unwrap_or("?"),
            instance["pid"],
            counted(count(&instance["concurrency"]), "agent task"),
            counted(count(&instance["calls"]), "tool call"),
        );
    }
    let width = 13;
    let names: Vec<&str> = instances
        .iter()
        .map(|i| i["instance"].as_str().unwrap_or("?"))
        .collect();
    let mut quiet = Vec::new();
    for &name in order {
        let dependency = &fleet["dependencies"][name];
        let outage = &dependency["outage"];
        if !outage.is_object() {
            quiet.push((name, dependency));
            continue;
        }
        let _ = writeln!(
            out,
            "\n{name}  (outage: {} from {:.2} s to {:.2} s; cooldown {} ms)",
            outage["mode"].as_str().unwrap_or("?"),
            count(&outage["from_ms"]) as f64 / 1000.0,
            count(&outage["to_ms"]) as f64 / 1000.0,
            count(&dependency["cooldown_ms"]),
        );
        let mut header = format!("  {:<44}", "");
        for name in names.iter().copied().chain(["fleet"]) {
            let _ = write!(header, "{name:>width$}");
        }
        let _ = writeln!(out, "{}", header.trim_end());
        let mut row = |label: &str, cell: &dyn Fn(&Value) -> String, fleet_cell: String| {
            let mut line = format!("  {label:<44}");
            for instance in &instances {
                let _ = write!(line, "{:>width$}", cell(&instance["dependencies"][name]));
            }
            let _ = write!(line, "{fleet_cell:>width$}");
            let _ = writeln!(out, "{line}");
        };
        let number = |key: &'static str| move |v: &Value| count(&v[key]).to_string();
        row(
            "calls attempted during the outage",
            &number("attempted_during_outage"),
            count(&dependency["attempted_during_outage"]).to_string(),
        );
        row(
            "requests that reached the failing server",
            &number("sent_during_outage"),
            count(&dependency["sent_during_outage"]).to_string(),
        );
        row(
            "probes",
            &number("probes"),
            count(&dependency["probes"]).to_string(),
        );
        let per_cooldown = |v: &Value| match v["probes_per_cooldown"].as_f64() {
            Some(x) => format!("{x:.2}"),
            None => "-".to_owned(),
        };
        row(
            &format!(
                "probes per cooldown ({})",
                plural(count(&dependency["cooldowns"]), "cooldown", "cooldowns")
            ),
            &per_cooldown,
            per_cooldown(dependency),
        );
        let trips = |v: &Value| {
            format!(
                "{} + {}",
                count(&v["trips"]["own"]),
                count(&v["trips"]["adopted"])
            )
        };
        row(
            "trips: own + adopted from the fleet",
            &trips,
            trips(dependency),
        );
        for (kind, label) in [
            ("trip", "a trip reached it after, ms p50 / p99"),
            ("close", "a close reached it after, ms p50 / p99"),
        ] {
            let cell = |v: &Value| {
                let spread = &v["propagation_ms"][kind];
                match (spread["p50_ms"].as_f64(), spread["p99_ms"].as_f64()) {
                    (Some(p50), Some(p99)) => format!("{p50:.2} / {p99:.2}"),
                    _ => "-".to_owned(),
                }
            };
            if shared {
                row(label, &cell, cell(dependency));
            }
        }
    }
    for (name, dependency) in quiet {
        let trips = count(&dependency["trips"]["own"]) + count(&dependency["trips"]["adopted"]);
        let _ = writeln!(
            out,
            "\n{name}  (no outage): {} trips on any instance",
            trips
        );
    }
    out
}

/// One line per failing dependency named in `order`: the fleet's figures, for the end of the
/// table output.
pub fn summary(fleet: &Value, order: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    for &name in order {
        let dependency = &fleet["dependencies"][name];
        if !dependency["outage"].is_object() {
            continue;
        }
        let mut line = format!(
            "{name}: {} requests reached it during its outage; {} probes per cooldown",
            count(&dependency["sent_during_outage"]),
            match dependency["probes_per_cooldown"].as_f64() {
                Some(x) => format!("{x:.2}"),
                None => "-".to_owned(),
            },
        );
        let trip = &dependency["propagation_ms"]["trip"];
        if let (Some(p50), Some(p99)) = (trip["p50_ms"].as_f64(), trip["p99_ms"].as_f64()) {
            let _ = write!(
                line,
                "; a trip reached the other instances in {p50:.2} ms (p50), {p99:.2} ms (p99)"
            );
        }
        lines.push(line);
    }
    let all = &fleet["propagation_ms"];
    for (kind, what) in [("trip", "a trip"), ("close", "a close")] {
        let spread = &all[kind];
        if let (Some(p50), Some(p99)) = (spread["p50_ms"].as_f64(), spread["p99_ms"].as_f64()) {
            lines.push(format!(
                "every dependency: {what} reached another instance in {p50:.2} ms (p50), \
                 {p99:.2} ms (p99), over {} adoptions",
                count(&spread["count"])
            ));
        }
    }
    lines
}
