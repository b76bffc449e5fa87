//! The overheads, in rounds: a block of calls by each of the three callers, back to back, the
//! order changing every round, in fresh processes of this benchmark, summed up against the
//! targets (guarded at most [`OVER_TIMEOUT_NS`] over the timeout-wrapped bare call, at most
//! [`OVER_BARE_NS`] over the bare call).

use std::time::Duration;

use crate::{Bench, Caller, Flavor};

/// Rounds per process and runtime.
pub const ROUNDS: usize = 4_001;
/// Calls in each block of a round: about a tenth of a millisecond, so a round of three blocks is
/// shorter than a time slice and most rounds run without the thread being switched out.
pub const BLOCK: u64 = 8;
/// Calls each caller makes, unrecorded, before the rounds.
const WARM_UP_CALLS: u64 = 1_000;
/// Fresh processes that make the rounds, one after the other (`MCP_REPEATS` to change it).
pub const PROCESSES: usize = 5;
/// The target: guarded − timeout-wrapped bare, ns a call, at most.
pub const OVER_TIMEOUT_NS: f64 = 300.0;
/// The target: guarded − bare, ns a call, at most.
pub const OVER_BARE_NS: f64 = 1_000.0;

/// The six orders of the three callers (bare 0, timeout 1, guarded 2): round `r` takes
/// `ORDERS[r % 6]`, so each caller goes first, second and third equally often, after each other.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
    [0, 2, 1],
    [2, 0, 1],
    [1, 0, 2],
];

/// The median of `v` (sorted in place); the mean of the middle two for an even count.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `v`'s median (sorted in place) with a distribution-free 95 % confidence interval: the order
/// statistics at ranks n/2 ± 0.98·√n.
fn median_ci(v: &mut [f64]) -> [f64; 3] {
    let m = median(v);
    let n = v.len() as f64;
    let half = 0.98 * n.sqrt();
    let lo = (n / 2.0 - half).floor().max(0.0) as usize;
    let hi = ((n / 2.0 + half).ceil() as usize).min(v.len() - 1);
    [m, v[lo], v[hi]]
}

/// [`ROUNDS`] rounds of a block of [`BLOCK`] calls by each caller, in the round's order of
/// [`ORDERS`], all in one task; each block's time per call, in µs, as [bare, timeout, guarded].
async fn rounds(callers: [&Caller; 3]) -> Vec<[f64; 3]> {
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / BLOCK as f64;
    for caller in callers {
        caller.calls(WARM_UP_CALLS).await;
    }
    let mut rounds = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let mut times = [0.0; 3];
        for i in ORDERS[round % ORDERS.len()] {
            times[i] = per_call(callers[i].calls(BLOCK).await);
        }
        rounds.push(times);
    }
    rounds
}

/// One process's rounds of one runtime, summed up.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// Medians of the blocks' time per call, µs: bare, timeout-wrapped, guarded.
    times: [f64; 3],
    /// Guarded − timeout, ns a call: the median of the rounds' differences and its 95 % interval.
    over_timeout: [f64; 3],
    /// Guarded − bare, likewise.
    over_bare: [f64; 3],
    /// Timeout − bare, likewise: what the timer costs.
    timer: [f64; 3],
    /// Medians of the rounds' ratios: guarded / timeout, guarded / bare.
    ratios: [f64; 2],
}

impl Summary {
    fn of(rounds: &[[f64; 3]]) -> Summary {
        let column = |f: &dyn Fn(&[f64; 3]) -> f64| rounds.iter().map(f).collect::<Vec<f64>>();
        Summary {
            times: [0, 1, 2].map(|i| median(&mut column(&|r| r[i]))),
            over_timeout: median_ci(&mut column(&|r| (r[2] - r[1]) * 1e3)),
            over_bare: median_ci(&mut column(&|r| (r[2] - r[0]) * 1e3)),
            timer: median_ci(&mut column(&|r| (r[1] - r[0]) * 1e3)),
            ratios: [
                median(&mut column(&|r| r[2] / r[1])),
                median(&mut column(&|r| r[2] / r[0])),
            ],
        }
    }

    /// Every figure in one list, in the order of [`line`](Self::line).
    fn figures(&self) -> Vec<f64> {
        let mut v = self.times.to_vec();
        v.extend(self.over_timeout);
        v.extend(self.over_bare);
        v.extend(self.timer);
        v.extend(self.ratios);
        v
    }

    /// As one line of `MCP_ROUNDS`' output: `rounds FLAVOR` and the [`figures`](Self::figures).
    fn line(&self, flavor: Flavor) -> String {
        let figures: Vec<String> = self.figures().iter().map(f64::to_string).collect();
        format!("rounds {} {}", flavor.name(), figures.join(" "))
    }

    /// Back from [`line`](Self::line).
    fn parse(line: &str) -> Option<(String, Summary)> {
        let mut words = line.strip_prefix("rounds ")?.split(' ');
        let flavor = words.next()?.to_owned();
        let v: Vec<f64> = words.map(str::parse).collect::<Result<_, _>>().ok()?;
        let v: [f64; 14] = v.try_into().ok()?;
        Some((
            flavor,
            Summary {
                times: [v[0], v[1], v[2]],
                over_timeout: [v[3], v[4], v[5]],
                over_bare: [v[6], v[7], v[8]],
                timer: [v[9], v[10], v[11]],
                ratios: [v[12], v[13]],
            },
        ))
    }
}

/// The rounds of [`rounds`], made as this flavor makes its calls.
fn measured(bench: &Bench) -> Summary {
    let callers = [&bench.bare, &bench.timeout, &bench.guarded];
    let rounds = match bench.flavor {
        Flavor::CurrentThread => bench.runtime.block_on(rounds(callers)),
        Flavor::MultiThread => {
            let callers = callers.map(Caller::clone);
            let task = bench.runtime.spawn(async move {
                let [bare, timeout, guarded] = &callers;
                rounds([bare, timeout, guarded]).await
            });
            bench.runtime.block_on(task).expect("the calling task")
        }
    };
    bench.check();
    Summary::of(&rounds)
}

/// `MCP_ROUNDS=FLAVOR,…`: the rounds of each runtime named, one line each
/// ([`Summary::line`]).
pub fn rounds_only(spec: &str) {
    for name in spec.split(',') {
        let flavor = Flavor::parse(name).unwrap_or_else(|| {
            panic!("MCP_ROUNDS names current_thread or multi_thread, not {name:?}")
        });
        let bench = Bench::new(flavor);
        println!("{}", measured(&bench).line(flavor));
    }
}

/// [`PROCESSES`] fresh processes of this benchmark (`MCP_REPEATS` to change it), one after the
/// other, each making the rounds of every runtime in `flavors`; each process's figures, then, per
/// runtime, their medians against the targets, printed.
///
/// A process of its own each time: the differences are steady within a process but move by tens
/// of nanoseconds between processes (where the allocator put each connection's buffers), so a
/// figure from one process is one sample.
pub fn repeats(flavors: &[Flavor]) {
    let processes: usize = std::env::var("MCP_REPEATS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(PROCESSES);
    let names: Vec<&str> = flavors.iter().map(|f| f.name()).collect();
    let exe = std::env::current_exe().expect("this benchmark's executable");
    let mut all: Vec<(String, Summary)> = Vec::new();
    for process in 1..=processes {
        let out = std::process::Command::new(&exe)
            .env("MCP_ROUNDS", names.join(","))
            .env_remove("MCP_CALLS")
            .output()
            .expect("a process of this benchmark");
        assert!(
            out.status.success(),
            "the rounds' process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (flavor, s) in String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(Summary::parse)
        {
            let [t, t_lo, t_hi] = s.over_timeout;
            let [b, b_lo, b_hi] = s.over_bare;
            let [timer, ..] = s.timer;
            println!(
                "mcp_call_tool rounds, {flavor}, process {process} of {processes}: {ROUNDS} \
                 rounds of {BLOCK}-call blocks: bare {:.3}, timeout {:.3}, guarded {:.3} µs a \
                 call (medians of the blocks); guarded - timeout {t:.0} ns (95 % interval \
                 {t_lo:.0} to {t_hi:.0}), guarded - bare {b:.0} ns ({b_lo:.0} to {b_hi:.0}), \
                 timeout - bare {timer:.0} ns (medians of the rounds); ratios guarded/timeout \
                 {:.4}, guarded/bare {:.4}",
                s.times[0], s.times[1], s.times[2], s.ratios[0], s.ratios[1],
            );
            all.push((flavor, s));
        }
    }
    for name in names {
        let of: Vec<Summary> = all
            .iter()
            .filter(|(flavor, _)| flavor == name)
            .map(|(_, s)| *s)
            .collect();
        if of.is_empty() {
            continue;
        }
        let each = |f: &dyn Fn(&Summary) -> f64| {
            let mut v: Vec<f64> = of.iter().map(f).collect();
            let m = median(&mut v);
            (m, v[0], v[v.len() - 1])
        };
        let [bare, timeout, guarded] = [0, 1, 2].map(|i| each(&|s| s.times[i]));
        let over_timeout = each(&|s| s.over_timeout[0]);
        let over_bare = each(&|s| s.over_bare[0]);
        let timer = each(&|s| s.timer[0]);
        let [ratio_timeout, ratio_bare] = [0, 1].map(|i| each(&|s| s.ratios[i]));
        let verdict = |x: f64, target: f64| if x <= target { "met" } else { "missed" };
        let range = |(m, lo, hi): (f64, f64, f64), digits: usize| {
            format!("{m:.digits$} ({lo:.digits$} to {hi:.digits$})")
        };
        println!(
            "mcp_call_tool rounds, {name}, median of {} processes (min to max): bare {} µs, \
             timeout {} µs, guarded {} µs; guarded - timeout {} ns, target at most \
             {OVER_TIMEOUT_NS:.0}: {}; guarded - bare {} ns, target at most \
             {OVER_BARE_NS:.0}: {}; timeout - bare {} ns; ratios guarded/timeout {}, \
             guarded/bare {}",
            of.len(),
            range(bare, 3),
            range(timeout, 3),
            range(guarded, 3),
            range(over_timeout, 0),
            verdict(over_timeout.0, OVER_TIMEOUT_NS),
            range(over_bare, 0),
            verdict(over_bare.0, OVER_BARE_NS),
            range(timer, 0),
            range(ratio_timeout, 4),
            range(ratio_bare, 4),
        );
    }
}
