//! The agent: one task per fleet-mode registry that carries local transitions to Redis and the
//! fleet's record back into the local words. Nothing here is on a call's path: callers only set
//! flags on their breaker's tap (see `breaker::tap`), and the agent's commands wait on Redis, never
//! a caller.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use smol_str::SmolStr;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use super::keys::{self, Keys};
use super::script::{self, Record, Reply, Scripts, Shared};
use super::status::{EventHook, FleetEvent, Settings, Status, tell, token};
use crate::breaker::{CircuitBreaker, Outbox, Remote};
use crate::types::{State, TransitionReason};

/// Where a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// A script's reply: the record as it stood when the script ran.
    Reply,
    /// A message on the channel.
    Message,
}

/// The backstop's bookkeeping: the epoch read at the last look, and the messages (each one write)
/// received since.
#[derive(Debug, Default)]
struct Backstop {
    base: Option<u64>,
    received: u64,
    /// The last look found fewer messages than writes: they may have been in flight.
    behind: bool,
}

impl Backstop {
    /// A message of a write arrived.
    fn received(&mut self) {
        self.received += 1;
    }

    /// Look at the epoch now (`None`: missing or not a count). Returns whether a write was
    /// missed: fewer messages arrived than the epoch moved, at two looks in a row (messages in
    /// flight at the first are forgiven), or the epoch went back (restored from an older
    /// snapshot, or written by something else).
    fn look(&mut self, epoch: Option<u64>) -> bool {
        let Some(epoch) = epoch else {
            // Gone (or not a count) since the last look: something other than a script wrote
            // it; read every record once, so each reports what it finds.
            let was = self.base.is_some();
            *self = Backstop::default();
            return was;
        };
        let Some(base) = self.base else {
            *self = Backstop {
                base: Some(epoch),
                ..Backstop::default()
            };
            return false;
        };
        let expected = base.saturating_add(self.received);
        let missed = if epoch < base {
            true
        } else if epoch <= expected {
            // All heard (some messages counted may already have been in the last look's epoch).
            false
        } else if !self.behind {
            self.behind = true;
            return false; // look again before syncing; do not rebase
        } else {
            true
        };
        *self = Backstop {
            base: Some(epoch),
            ..Backstop::default()
        };
        missed
    }
}

/// The shortest interval between two reports of one dependency's count (a trip is sent at once).
const REPORT_INTERVAL: Duration = Duration::from_millis(5);

/// What a timer found due.
enum Due {
    Release(u64),
    Claim,
    Flush,
}

/// What [`Agent::spawn`] needs.
pub(crate) struct Start {
    pub(crate) settings: Arc<Settings>,
    pub(crate) client: redis::Client,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) on_event: Option<EventHook>,
    pub(crate) status: Arc<Status>,
    pub(crate) notify: Arc<Notify>,
    pub(crate) outbox: Arc<Outbox>,
    pub(crate) registered: UnboundedReceiver<Arc<CircuitBreaker>>,
}

/// This instance's probe lease.
#[derive(Clone, Copy, Debug)]
struct Mine {
    /// The fleet generation of the lease.
    generation: u64,
    /// The local generation of the slot granted, if one was.
    granted: Option<u32>,
    /// When the lease was claimed.
    sent: Instant,
    /// When an unused grant is given back.
    window_end: Instant,
    /// When the lease in Redis ends.
    lease_end: Instant,
}

/// What a dependency has to tell the fleet.
#[derive(Debug, Default)]
struct Pending {
    /// Its closed count changed, or its local trip began or ended: report the count.
    report: bool,
    /// A verdict of this instance's fleet probe: closed (`true`) or open.
    verdict: Option<(u64, bool)>,
    /// A change by hand, and its id (unique per agent, so a resend is recognised).
    manual: Option<(Shared, u64)>,
    /// Read the record and apply it whatever its generation: a local probe reported outside the
    /// fleet's lease, so the local state may have left the fleet's.
    resync: bool,
}

/// One dependency as the agent sees it.
struct Dep {
    breaker: Arc<CircuitBreaker>,
    name: SmolStr,
    keys: Keys,
    /// Whether a record has been read since the agent (re)connected.
    synced: bool,
    /// The last record applied.
    known: Option<Record>,
    /// The problem of a bad record, while it lasts.
    bad: Option<String>,
    /// The epoch of the last reply applied (see `apply`).
    reply_epoch: u64,
    /// The breaker is open because of its own trip (not adopted): it votes.
    local_trip: bool,
    mine: Option<Mine>,
    /// When another instance's lease ends.
    elsewhere: Option<Instant>,
    /// A local call is waiting for the fleet's probe.
    want: bool,
    /// Not before: the next claim.
    claim_at: Option<Instant>,
    /// When the last report of a count was sent, and when a held-back one is due.
    last_report: Option<Instant>,
    report_at: Option<Instant>,
    pending: Pending,
}

pub(crate) struct Agent {
    settings: Arc<Settings>,
    manager: ConnectionManager,
    scripts: Arc<Scripts>,
    deps: HashMap<SmolStr, Dep>,
    on_event: Option<EventHook>,
    status: Arc<Status>,
    notify: Arc<Notify>,
    outbox: Arc<Outbox>,
    registered: UnboundedReceiver<Arc<CircuitBreaker>>,
    pushes: UnboundedReceiver<redis::PushInfo>,
    connected: bool,
    /// An outage was announced and not yet ended.
    outage: bool,
    /// This agent's name in probe leases and changes by hand: the instance's name and a random
    /// token, so two agents given the same instance name by mistake never share a lease.
    holder: String,
    /// The backstop's count of writes (see `Backstop`).
    backstop: Backstop,
    /// Message problems already told.
    told_messages: Vec<String>,
    /// The last id given to a change by hand.
    manual_seq: u64,
    /// The incarnation read by the last backstop read.
    incarnation: Option<String>,
}

/// A command's failure that means Redis is unreachable (as opposed to a bad record).
struct Unreachable;

impl Agent {
    pub(crate) fn spawn(start: Start) -> tokio::task::AbortHandle {
        let runtime = start.runtime.clone();
        runtime.spawn(Agent::run(start)).abort_handle()
    }

    async fn run(start: Start) {
        let timeout = Duration::from_millis(start.settings.command_timeout_ms);
        let (push_tx, pushes) = tokio::sync::mpsc::unbounded_channel();
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(timeout))
            .set_connection_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(timeout)
            .set_push_sender(push_tx)
            .set_automatic_resubscription();
        let manager = match ConnectionManager::new_lazy_with_config(start.client, config) {
            Ok(manager) => manager,
            Err(error) => {
                // Only a configuration the URL check let through: every breaker stays local.
                tell(
                    start.on_event.as_ref(),
                    &FleetEvent::Unreachable {
                        error: error.to_string(),
                    },
                );
                return;
            }
        };
        let holder = format!("{}#{:08x}", start.settings.instance, token());
        let mut agent = Agent {
            settings: start.settings,
            manager,
            scripts: Arc::new(Scripts::new()),
            deps: HashMap::new(),
            on_event: start.on_event,
            status: start.status,
            notify: start.notify,
            outbox: start.outbox,
            registered: start.registered,
            pushes,
            connected: false,
            outage: false,
            holder,
            backstop: Backstop::default(),
            told_messages: Vec::new(),
            manual_seq: 0,
            incarnation: None,
        };
        agent.reconnect().await;
        agent.main_loop().await;
    }

    async fn main_loop(&mut self) {
        let interval = Duration::from_millis(self.settings.sync_interval_ms);
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                breaker = self.registered.recv() => match breaker {
                    Some(breaker) => self.add(breaker).await,
                    None => return,
                },
                Some(push) = self.pushes.recv() => self.push(push).await,
                () = self.notify.notified() => self.drain_outbox().await,
                () = sleep_until(deadline) => self.timers().await,
                _ = tick.tick() => self.tick().await,
            }
        }
    }

    /// Take and send what every breaker's tap told.
    async fn drain_outbox(&mut self) {
        for name in self.outbox.take() {
            self.local(&name);
            self.flush(&name).await;
        }
    }

    fn event(&self, event: FleetEvent) {
        tell(self.on_event.as_ref(), &event);
    }

    // Connection.

    /// Mark Redis unreachable: every breaker works locally; told once per outage.
    fn lost(&mut self, error: &str) {
        if self.connected || !self.outage {
            self.status.outages.fetch_add(1, Ordering::Relaxed);
            self.event(FleetEvent::Unreachable {
                error: error.to_owned(),
            });
            self.outage = true;
        }
        self.connected = false;
        self.status.connected.store(false, Ordering::Release);
        for dep in self.deps.values_mut() {
            dep.synced = false;
            if let Some(tap) = dep.breaker.tap() {
                tap.set_governed(false);
                tap.set_elsewhere_until(0);
            }
            dep.elsewhere = None;
        }
    }

    /// Try to reach Redis; on success sync every dependency and send what is pending.
    async fn reconnect(&mut self) {
        let channel = keys::channel(&self.settings.prefix);
        self.status.commands.fetch_add(1, Ordering::Relaxed);
        let subscribed = self.manager.subscribe(&channel).await;
        if let Err(error) = subscribed {
            self.lost(&error.to_string());
            return;
        }
        self.connected = true;
        let names: Vec<SmolStr> = self.deps.keys().cloned().collect();
        for name in &names {
            if self.sync(name, true).await.is_err() {
                return;
            }
        }
        if !self.connected {
            return;
        }
        // Told connected once every dependency known is synced with the fleet.
        self.status.connected.store(true, Ordering::Release);
        if self.outage {
            self.outage = false;
            self.event(FleetEvent::Reconnected);
        }
        for name in &names {
            self.flush(name).await;
        }
    }

    async fn tick(&mut self) {
        if !self.connected {
            self.reconnect().await;
            return;
        }
        // The backstop: the epoch counts every write of any record, and every write publishes
        // one message; fewer messages than writes since the last look means one was missed. A
        // missing or changed incarnation means the keys were wiped.
        self.status.commands.fetch_add(1, Ordering::Relaxed);
        let read: Result<(Option<String>, Option<String>), _> = redis::cmd("MGET")
            .arg(keys::epoch_key(&self.settings.prefix))
            .arg(keys::incarnation_key(&self.settings.prefix))
            .query_async(&mut self.manager)
            .await;
        let (epoch, incarnation) = match read {
            Err(error) if is_unreachable(&error) => {
                self.lost(&error.to_string());
                return;
            }
            // Not text: a foreign value (the scripts report it as a bad record).
            Err(_) => (None, None),
            Ok(read) => read,
        };
        let wiped = match (&incarnation, &self.incarnation) {
            (None, _) => true,
            (Some(now), Some(known)) => now != known,
            (Some(_), None) => false,
        };
        self.incarnation = incarnation;
        let missed = self
            .backstop
            .look(epoch.as_deref().and_then(|e| e.parse().ok()));
        let names: Vec<SmolStr> = if wiped || missed {
            self.deps.keys().cloned().collect()
        } else {
            // Bad records are read again each tick, quietly, until they are readable.
            self.deps
                .iter()
                .filter(|(_, dep)| dep.bad.is_some() || !dep.synced)
                .map(|(name, _)| name.clone())
                .collect()
        };
        for name in &names {
            // After a wipe every record is rebuilt from the instances (forced: the record
            // read back is this instance's own, or another's rebuilt one).
            if self.sync(name, wiped).await.is_err() {
                return;
            }
        }
        if wiped {
            for name in &names {
                self.flush(name).await;
            }
        }
    }

    // Breakers.

    async fn add(&mut self, breaker: Arc<CircuitBreaker>) {
        let name = SmolStr::new(breaker.name());
        if self.deps.contains_key(&name) {
            return;
        }
        let dep = Dep {
            keys: Keys::new(&self.settings.prefix, &name),
            name: name.clone(),
            breaker,
            synced: false,
            known: None,
            bad: None,
            reply_epoch: 0,
            local_trip: false,
            mine: None,
            elsewhere: None,
            want: false,
            claim_at: None,
            last_report: None,
            report_at: None,
            pending: Pending::default(),
        };
        self.deps.insert(name.clone(), dep);
        if self.connected {
            let _ = self.sync(&name, true).await;
        }
        self.local(&name);
        self.flush(&name).await;
    }

    /// Take what a breaker's tap told since the last turn.
    fn local(&mut self, name: &str) {
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        let Some(tap) = dep.breaker.tap() else {
            return;
        };
        let drained = tap.drain();
        if drained.counted {
            dep.pending.report = true;
        }
        if drained.wanted {
            dep.want = true;
        }
        for transition in &drained.transitions {
            match transition.reason() {
                TransitionReason::FailureThreshold
                | TransitionReason::FailureRate
                | TransitionReason::SlowCallRate => {
                    dep.local_trip = true;
                    dep.pending.report = true;
                }
                TransitionReason::ProbeSucceeded | TransitionReason::ProbeFailed => {
                    let closed = transition.reason() == TransitionReason::ProbeSucceeded;
                    match dep.mine {
                        Some(mine) if mine.granted.is_some() => {
                            dep.pending.verdict = Some((mine.generation, closed));
                        }
                        // A probe of this instance's own (its local trip, Redis unreachable, or a
                        // lease that ran out before the verdict): the fleet's record decides.
                        _ => {
                            dep.local_trip = !closed;
                            dep.pending.report = true;
                            dep.pending.resync = true;
                        }
                    }
                }
                TransitionReason::Manual => {
                    let state = if transition.to() == State::Closed {
                        Shared::Closed
                    } else {
                        Shared::Isolated
                    };
                    self.manual_seq += 1;
                    dep.pending.manual = Some((state, self.manual_seq));
                    dep.local_trip = false;
                }
                TransitionReason::CooldownElapsed
                | TransitionReason::ProbeTimedOut
                | TransitionReason::Fleet => {}
            }
        }
        if drained.reset {
            self.manual_seq += 1;
            dep.pending.manual = Some((Shared::Closed, self.manual_seq));
            dep.local_trip = false;
        }
    }

    /// Send what a dependency has pending, if Redis is reachable.
    async fn flush(&mut self, name: &str) {
        let scripts = Arc::clone(&self.scripts);
        if !self.connected {
            return;
        }
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        if dep.bad.is_some() {
            return;
        }
        if !dep.synced && self.sync(name, true).await.is_err() {
            return;
        }
        if self.deps.get(name).is_some_and(|d| d.pending.resync) {
            if self.sync(name, true).await.is_err() {
                return;
            }
            if let Some(dep) = self.deps.get_mut(name) {
                dep.pending.resync = false;
            }
        }
        let settings = Arc::clone(&self.settings);
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        let known_generation = dep.known.as_ref().map_or(0, |r| r.generation);
        if let Some((state, id)) = dep.pending.manual {
            let mut invocation = script::invocation(&scripts.manual, &dep.keys, &dep.name);
            invocation
                .arg(state.as_str())
                .arg(known_generation)
                .arg(format!("{}:{id}", self.holder));
            let Ok(reply) = self.invoke(invocation).await else {
                return;
            };
            // The count is read afresh when reported, so a report still pending stays pending:
            // a failure counted after the change (or before: the count says which) is sent next.
            let dep = self.deps.get_mut(name).expect("present");
            dep.pending.manual = None;
            dep.pending.verdict = None;
            self.applied(name, reply, true);
        }
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        if let Some((generation, closed)) = dep.pending.verdict {
            let mut invocation = script::invocation(&scripts.verdict, &dep.keys, &dep.name);
            invocation.arg(&self.holder).arg(generation).arg(if closed {
                "closed"
            } else {
                "open"
            });
            let Ok(reply) = self.invoke(invocation).await else {
                return;
            };
            let dep = self.deps.get_mut(name).expect("present");
            dep.pending.verdict = None;
            dep.mine = None;
            if let Some(tap) = dep.breaker.tap() {
                tap.revoke();
            }
            self.applied(name, reply, true);
        }
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        // A count that changes again within `REPORT_INTERVAL` of the last report waits for the
        // interval's end (a timer): a flapping dependency costs at most one report per
        // interval. A trip is sent at once.
        let now = Instant::now();
        if dep.pending.report
            && dep.breaker.closed_failures().is_some()
            && dep.last_report.is_some_and(|at| now < at + REPORT_INTERVAL)
        {
            let at = dep.last_report.map(|at| at + REPORT_INTERVAL);
            self.deps.get_mut(name).expect("present").report_at = at;
        } else if dep.pending.report {
            let count = dep.breaker.closed_failures();
            let fleet_closed = dep
                .known
                .as_ref()
                .is_some_and(|r| r.state == Shared::Closed);
            if fleet_closed && (count.is_some() || dep.local_trip) {
                let config = dep.breaker.config();
                // A breaker with only a rate rule counts no consecutive failures the fleet could
                // add up: its shared threshold is out of reach, and its trips are shared as trips.
                let own = config.failure_threshold().unwrap_or(u32::MAX);
                let threshold = settings.failure_threshold.unwrap_or(own);
                let count = count.unwrap_or(u64::from(own));
                let mut invocation = script::invocation(&scripts.report, &dep.keys, &dep.name);
                invocation
                    .arg(&settings.instance)
                    .arg(known_generation)
                    .arg(count)
                    .arg(u8::from(dep.local_trip))
                    .arg(threshold)
                    .arg(settings.min_instances)
                    .arg(settings.window_ms);
                let Ok(reply) = self.invoke(invocation).await else {
                    return;
                };
                let dep = self.deps.get_mut(name).expect("present");
                dep.pending.report = false;
                dep.last_report = Some(now);
                dep.report_at = None;
                self.applied(name, reply, false);
            } else {
                self.deps.get_mut(name).expect("present").pending.report = false;
            }
        }
        self.maybe_claim(name).await;
    }

    /// Claim the fleet's probe if a local call wants it and it may be claimed now.
    async fn maybe_claim(&mut self, name: &str) {
        let scripts = Arc::clone(&self.scripts);
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        let open = dep.known.as_ref().is_some_and(|r| r.state == Shared::Open);
        let now = Instant::now();
        if !self.connected
            || !dep.want
            || !open
            || dep.mine.is_some()
            || dep.bad.is_some()
            || dep.claim_at.is_some_and(|at| at > now)
            || dep.elsewhere.is_some_and(|until| until > now)
        {
            return;
        }
        let config = dep.breaker.config();
        let cooldown_ms =
            u64::try_from(dep.breaker.cooldown_in_force().as_millis()).unwrap_or(u64::MAX);
        let probe_ms = u64::try_from(config.probe_timeout().as_millis()).unwrap_or(u64::MAX);
        let lease_ms = probe_ms.saturating_add(self.settings.probe_window_ms);
        let mut invocation = script::invocation(&scripts.claim, &dep.keys, &dep.name);
        invocation.arg(&self.holder).arg(cooldown_ms).arg(lease_ms);
        let Ok(reply) = self.invoke(invocation).await else {
            return;
        };
        let window = Duration::from_millis(self.settings.probe_window_ms);
        let dep = self.deps.get_mut(name).expect("present");
        dep.want = false;
        match &reply {
            Reply::Won(record) => {
                let already = dep.mine.is_some_and(|m| m.generation == record.generation);
                if !already {
                    let sent = Instant::now();
                    let granted = dep.breaker.take_fleet_probe(self.settings.probe_window_ms);
                    // The slot freed for the fleet's probe is a change made from the fleet.
                    self.status.adopted.fetch_add(1, Ordering::Relaxed);
                    // The word left the open state meanwhile (closed or isolated by hand): the
                    // lease is given back at once, by the timer.
                    dep.mine = Some(Mine {
                        generation: record.generation,
                        granted,
                        sent,
                        window_end: sent + window,
                        lease_end: sent + Duration::from_millis(lease_ms),
                    });
                    self.status.claims_won.fetch_add(1, Ordering::Relaxed);
                }
                dep.claim_at = None;
            }
            Reply::Held(record) => {
                // Still wanted. While the lease's end is known, the record applied below sets it
                // as the time another instance probes, and its release or verdict, when heard,
                // clears it: the claim is made again then, not at the lease's end. With no end
                // known, not again before a probe window, or blocked calls would ask at every
                // turn.
                dep.claim_at = (record.lease_until_ms <= record.now_ms)
                    .then(|| Instant::now() + Duration::from_millis(self.settings.probe_window_ms));
                dep.want = true;
            }
            Reply::Wait(_, ms) => {
                dep.claim_at = Some(Instant::now() + Duration::from_millis(*ms));
                // The call that wanted it will ask again; keep wanting so the timer claims.
                dep.want = true;
            }
            _ => {}
        }
        self.applied(name, reply, false);
    }

    /// Read a dependency's record, creating it from the local state if it is missing.
    async fn sync(&mut self, name: &str, force: bool) -> Result<(), ()> {
        let scripts = Arc::clone(&self.scripts);
        let Some(dep) = self.deps.get(name) else {
            return Ok(());
        };
        let (word_state, isolated, elapsed) = dep.breaker.local_record();
        let (state, elapsed) = match word_state {
            State::Closed => (Shared::Closed, 0),
            _ if isolated => (Shared::Isolated, 0),
            _ => (Shared::Open, elapsed),
        };
        let known_generation = dep.known.as_ref().map_or(0, |r| r.generation);
        let mut invocation = script::invocation(&scripts.sync, &dep.keys, &dep.name);
        invocation
            .arg(state.as_str())
            .arg(elapsed)
            .arg(known_generation);
        let reply = self.invoke(invocation).await.map_err(|_| ())?;
        self.applied(name, reply, force);
        Ok(())
    }

    /// Run a script. `Err` when Redis is unreachable (the agent is then local).
    async fn invoke(
        &mut self,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<Reply, Unreachable> {
        self.status.commands.fetch_add(1, Ordering::Relaxed);
        let answer: Result<redis::Value, redis::RedisError> =
            invocation.invoke_async(&mut self.manager).await;
        match answer {
            Ok(value) => Ok(script::parse_reply(&value)),
            Err(error) if is_unreachable(&error) => {
                self.lost(&error.to_string());
                Err(Unreachable)
            }
            // The server ran the script and it failed (a foreign value under one of our keys).
            Err(error) => Ok(Reply::Bad(error.to_string())),
        }
    }

    /// Apply a script's reply to its dependency.
    fn applied(&mut self, name: &str, reply: Reply, force: bool) {
        match reply {
            Reply::Bad(problem) => self.bad(name, problem),
            Reply::Missing => {
                if let Some(dep) = self.deps.get_mut(name) {
                    dep.synced = false;
                }
            }
            Reply::Wrote(record)
            | Reply::Same(record)
            | Reply::Stale(record)
            | Reply::Won(record)
            | Reply::Held(record)
            | Reply::Wait(record, _) => self.apply(name, record, force, Source::Reply),
        }
    }

    fn bad(&mut self, name: &str, problem: String) {
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        if let Some(tap) = dep.breaker.tap() {
            tap.set_governed(false);
            tap.revoke();
        }
        dep.mine = None;
        dep.elsewhere = None;
        if dep.bad.as_deref() != Some(problem.as_str()) {
            let first = dep.bad.is_none();
            dep.bad = Some(problem.clone());
            if first {
                self.status.bad_records.fetch_add(1, Ordering::Relaxed);
                let event = FleetEvent::BadRecord {
                    dependency: name.to_owned(),
                    problem,
                };
                self.event(event);
            }
        }
    }

    /// Apply a record to its dependency's breaker. `force`: apply the state even if the
    /// generation is the one already known (after a reconnection or a wipe).
    fn apply(&mut self, name: &str, record: Record, force: bool, source: Source) {
        let holder = self.holder.clone();
        let connected = self.connected;
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        // A reply is the record as it stood when the script ran: always applied. A message may
        // have been published before a reply already applied (it waited in the channel while the
        // agent awaited the reply): one older than the last reply is dropped. Only replies set
        // the mark, so a forged message cannot raise it, and a server whose epoch went back
        // (restored from an older snapshot) resets it with its next reply.
        match source {
            Source::Message if record.epoch < dep.reply_epoch => return,
            Source::Message => {}
            Source::Reply => dep.reply_epoch = record.epoch,
        }
        // The word's generation before the tap's news is taken: an adoption lands only if no
        // local change came after it (see `CircuitBreaker::adopt_in`).
        let mut generation = dep.breaker.generation();
        self.local(name);
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        // A change by hand not yet sent decides the state once it is: the record is not adopted
        // over it (that would undo the change locally until the change lands).
        let new = dep.pending.manual.is_none()
            && (force
                || !dep.synced
                || dep
                    .known
                    .as_ref()
                    .is_none_or(|k| k.generation != record.generation));
        let newer_generation = dep
            .known
            .as_ref()
            .is_some_and(|k| k.generation != record.generation);
        dep.synced = true;
        dep.bad = None;
        let breaker = Arc::clone(&dep.breaker);
        let local_now = breaker.now_ms();
        let to_local = |server_ms: u64| -> u64 {
            if server_ms <= record.now_ms {
                local_now.saturating_sub(record.now_ms - server_ms)
            } else {
                local_now.saturating_add(server_ms - record.now_ms)
            }
        };
        let mut adopted = false;
        let mut refused = false;
        let mut adopt = |remote: Remote| -> bool {
            match breaker.adopt_in(remote, generation) {
                Ok((after, transition)) => {
                    generation = after;
                    adopted |= transition.is_some();
                    transition.is_some()
                }
                Err(()) => {
                    refused = true;
                    false
                }
            }
        };
        let tap = breaker.tap();
        match record.state {
            Shared::Closed | Shared::Isolated => {
                dep.mine = None;
                dep.elsewhere = None;
                dep.want = false;
                dep.claim_at = None;
                if let Some(tap) = tap {
                    tap.revoke();
                    tap.set_elsewhere_until(0);
                }
                // An instance's own trip is not undone by a closed record it already knew (or
                // one rebuilt after a wipe): it is sent as a vote. A close the fleet made after
                // (a new generation heard in order) does undo it.
                let own_trip_stands = record.state == Shared::Closed
                    && dep.local_trip
                    && (force || !newer_generation);
                if new && !own_trip_stands {
                    dep.local_trip = false;
                    let remote = if record.state == Shared::Closed {
                        Remote::Closed
                    } else {
                        Remote::Isolated
                    };
                    adopt(remote);
                }
            }
            Shared::Open => {
                let ours = record.holder.as_deref() == Some(holder.as_str())
                    && dep.mine.is_some_and(|m| m.generation == record.generation);
                if new && !ours {
                    dep.local_trip = false;
                    let remote = Remote::Open {
                        // An opening later than the server's own clock (a foreign value, or the
                        // server's clock stepped back) counts from now: never kept open longer.
                        opened_at_ms: to_local(record.at_ms.min(record.now_ms)),
                    };
                    adopt(remote);
                }
                match &record.holder {
                    _ if ours => {}
                    Some(_) if record.lease_until_ms > record.now_ms => {
                        let remaining = record.lease_until_ms - record.now_ms;
                        dep.elsewhere = Some(Instant::now() + Duration::from_millis(remaining));
                        dep.mine = None;
                        if let Some(tap) = tap {
                            tap.revoke();
                            tap.set_elsewhere_until(to_local(record.lease_until_ms));
                        }
                    }
                    _ => {
                        dep.elsewhere = None;
                        if let Some(tap) = tap {
                            tap.set_elsewhere_until(0);
                        }
                        if dep.mine.is_some_and(|m| m.generation != record.generation) {
                            dep.mine = None;
                            if let Some(tap) = tap {
                                tap.revoke();
                            }
                        }
                        if record.lease_until_ms > 0 && record.holder.is_none() {
                            // A lease ran out with no verdict: open from its end.
                            let remote = Remote::Open {
                                opened_at_ms: to_local(record.lease_until_ms),
                            };
                            adopt(remote);
                        }
                    }
                }
            }
        }
        if let Some(tap) = tap {
            tap.set_governed(connected && record.state == Shared::Open);
        }
        if refused {
            // A local change raced the adoption: once the tap's news is sent, read again.
            dep.pending.resync = true;
        }
        if adopted {
            self.status.adopted.fetch_add(1, Ordering::Relaxed);
        }
        dep.known = Some(record);
    }

    // Messages and timers.

    async fn push(&mut self, push: redis::PushInfo) {
        match push.kind {
            redis::PushKind::Disconnection => {
                self.lost("the connection to Redis closed");
            }
            redis::PushKind::Message => {
                let payload = push.data.get(1).and_then(|value| match value {
                    redis::Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
                    redis::Value::SimpleString(text) => Some(text.clone()),
                    _ => None,
                });
                self.status.messages.fetch_add(1, Ordering::Relaxed);
                // What this instance did before the message arrived goes first, judged against
                // the fleet state it knew when it did it (a change by hand made before a trip
                // elsewhere was heard is stale, not applied over the trip).
                self.drain_outbox().await;
                match payload.as_deref().map(script::parse_message) {
                    Some(Ok((dependency, record))) => {
                        self.backstop.received();
                        if self.deps.contains_key(dependency.as_str()) {
                            self.apply(&dependency, record, false, Source::Message);
                            self.maybe_claim(&dependency).await;
                        }
                    }
                    Some(Err(problem)) => self.bad_message(problem),
                    None => self.bad_message("a message that is not text".to_owned()),
                }
            }
            _ => {}
        }
    }

    fn bad_message(&mut self, problem: String) {
        // Told once per kind of problem (the text up to its first digit or quote).
        let kind: String = problem
            .chars()
            .take_while(|c| !c.is_ascii_digit() && *c != '"')
            .collect();
        if !self.told_messages.contains(&kind) && self.told_messages.len() < 64 {
            self.told_messages.push(kind);
            self.event(FleetEvent::BadMessage { problem });
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.deps
            .values()
            .flat_map(|dep| {
                let mine = dep.mine.map(|m| {
                    if m.granted.is_none() {
                        m.sent
                    } else if m.granted.is_some_and(|g| dep.breaker.fleet_probe_unused(g)) {
                        m.window_end
                    } else {
                        m.lease_end
                    }
                });
                [
                    mine,
                    dep.elsewhere,
                    dep.claim_at.filter(|_| dep.want),
                    dep.report_at,
                ]
            })
            .flatten()
            .min()
    }

    async fn timers(&mut self) {
        let now = Instant::now();
        let mut due = Vec::new();
        for (name, dep) in &mut self.deps {
            if let Some(mine) = dep.mine {
                let unused = mine
                    .granted
                    .is_none_or(|g| dep.breaker.fleet_probe_unused(g));
                if unused && (mine.window_end <= now || mine.granted.is_none()) {
                    // No local caller took the probe: give the lease back.
                    if let Some(tap) = dep.breaker.tap() {
                        tap.revoke();
                    }
                    due.push((name.clone(), Due::Release(mine.generation)));
                    dep.mine = None;
                } else if mine.lease_end <= now {
                    if let Some(tap) = dep.breaker.tap() {
                        tap.revoke();
                    }
                    dep.mine = None;
                }
            }
            if let Some(until) = dep.elsewhere
                && until <= now
            {
                // The other instance's lease ran out with no verdict heard: open from its end.
                dep.elsewhere = None;
                if let Some(tap) = dep.breaker.tap() {
                    tap.set_elsewhere_until(0);
                }
                let local_end = dep.breaker.now_ms();
                if dep
                    .breaker
                    .adopt(Remote::Open {
                        opened_at_ms: local_end,
                    })
                    .1
                    .is_some()
                {
                    self.status.adopted.fetch_add(1, Ordering::Relaxed);
                }
                let cooldown = dep.breaker.cooldown_in_force();
                dep.claim_at = Some(now + cooldown);
            }
            if dep.want && dep.claim_at.is_some_and(|at| at <= now) {
                dep.claim_at = None;
                due.push((name.clone(), Due::Claim));
            }
            if dep.report_at.is_some_and(|at| at <= now) {
                dep.report_at = None;
                due.push((name.clone(), Due::Flush));
            }
        }
        for (name, due) in due {
            match due {
                Due::Release(generation) => self.release(&name, generation).await,
                Due::Claim => self.maybe_claim(&name).await,
                Due::Flush => self.flush(&name).await,
            }
        }
    }

    async fn release(&mut self, name: &str, generation: u64) {
        let scripts = Arc::clone(&self.scripts);
        if !self.connected {
            return;
        }
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        let mut invocation = script::invocation(&scripts.release, &dep.keys, &dep.name);
        invocation.arg(&self.holder).arg(generation);
        if let Ok(reply) = self.invoke(invocation).await {
            self.applied(name, reply, false);
        }
    }
}

/// However the agent ends (its registry dropped, or a panic in it), every breaker it governed is
/// let go: the fleet no longer decides who probes, so no dependency waits on an agent that is gone.
impl Drop for Agent {
    fn drop(&mut self) {
        self.status.connected.store(false, Ordering::Release);
        for dep in self.deps.values() {
            if let Some(tap) = dep.breaker.tap() {
                tap.set_governed(false);
                tap.set_elsewhere_until(0);
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => core::future::pending().await,
    }
}

/// Whether a command's error means the fleet cannot be used now (no connection, a timeout, a
/// refused login or permission, a server loading, read-only, out of memory or busy): every
/// breaker goes local. The rest (`ERR`, `WRONGTYPE`: a script that failed on a value under one of
/// the crate's keys; a reply of the wrong shape) is a problem of that dependency's record.
fn is_unreachable(error: &redis::RedisError) -> bool {
    use redis::ErrorKind;
    const UNAVAILABLE: &[&str] = &[
        "LOADING",
        "TRYAGAIN",
        "CLUSTERDOWN",
        "MASTERDOWN",
        "READONLY",
        "NOPERM",
        "NOAUTH",
        "WRONGPASS",
        "BUSY",
        "MOVED",
        "ASK",
        "CROSSSLOT",
        "MISCONF",
        "OOM",
    ];
    error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || matches!(
            error.kind(),
            ErrorKind::Io
                | ErrorKind::Client
                | ErrorKind::AuthenticationFailed
                | ErrorKind::InvalidClientConfig
        )
        || error.code().is_some_and(|code| UNAVAILABLE.contains(&code))
}
