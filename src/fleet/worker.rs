//! The worker: one task per fleet-mode registry that carries local transitions to Redis and the
//! fleet's record back into the local words. Nothing here is on a call's path: callers only set
//! flags on their breaker's tap (see `tap`), and the worker's commands wait on Redis, never
//! a caller.
//!
//! The task's state and loop are here; `connection` keeps the link to Redis (losing it,
//! reconnecting, the backstop read), `send` carries local news to the scripts, `receive` applies
//! records (through the pure `reconcile`) and runs the timers.

// The worker's other files, children of this module (they see its private state), kept beside
// it in the folder.
#[path = "connection.rs"]
mod connection;
#[path = "receive.rs"]
mod receive;
#[path = "send.rs"]
mod send;

use crate::sync::Ordering;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use smol_str::SmolStr;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::time::tokio_now;

use super::backstop::Backstop;
use super::flush::{self, FlushFacts, Step};
use super::keys::{self, Keys};
use super::millis::{LocalMs, ServerMs};
use super::reconcile::{
    self, Adoption, Again, ClaimAnswer, ClaimFacts, Elsewhere, Known, Lease, LeaseFacts,
    LeaseTimer, News, Report, ReportFacts, Source,
};
use super::script::{self, Record, Reply, Scripts, Shared};
use super::status::{EventHook, FleetEvent, Link, Settings, Status, tell, token};
use super::tap::{Outbox, take_fleet_probe, tap_of};
use crate::breaker::CircuitBreaker;
use crate::state::decide::Remote;
use crate::types::{State, TransitionReason};

/// The shortest interval between two reports of one dependency's count (a trip is sent at once).
const REPORT_INTERVAL: Duration = Duration::from_millis(5);

/// What a timer found due.
enum Due {
    Release(u64),
    Claim,
    Flush,
}

/// What [`Worker::spawn`] needs.
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
    /// A change by hand, and its id (unique per worker, so a resend is recognised).
    manual: Option<(Shared, u64)>,
    /// Read the record and apply it whatever its generation: a local probe reported outside the
    /// fleet's lease, so the local state may have left the fleet's.
    resync: bool,
}

/// One dependency as the worker sees it.
struct Dep {
    breaker: Arc<CircuitBreaker>,
    name: SmolStr,
    keys: Keys,
    /// Whether a record has been read since the worker (re)connected.
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
    /// The start (server time) of the last open period whose cooldown's end a claim was
    /// scheduled for (see `reconcile::claim_at_cooldown_end`).
    claim_scheduled: Option<ServerMs>,
    /// When the last report of a count was sent, and when a held-back one is due.
    last_report: Option<Instant>,
    report_at: Option<Instant>,
    pending: Pending,
}

pub(crate) struct Worker {
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
    /// Redis refused this instance (a configuration error): it is not asked again.
    refused: bool,
    /// This worker's name in probe leases and changes by hand: the instance's name and a random
    /// token, so two workers given the same instance name by mistake never share a lease.
    holder: String,
    /// The backstop's count of writes (see `Backstop`).
    backstop: Backstop,
    /// Message problems already told.
    told_messages: Vec<String>,
    /// The last id given to a change by hand.
    manual_seq: u64,
    /// The incarnation read by the last backstop read.
    incarnation: Option<String>,
    /// When every record was last read to keep it from expiring.
    refreshed: Instant,
}

/// A command's failure that means Redis is unreachable (as opposed to a bad record).
struct Unreachable;

impl Worker {
    pub(crate) fn spawn(start: Start) -> tokio::task::AbortHandle {
        let runtime = start.runtime.clone();
        runtime.spawn(Worker::run(start)).abort_handle()
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
                let error = super::redact(&error.to_string());
                start.status.link.send_replace(Link::Refused(error.clone()));
                tell(start.on_event.as_ref(), &FleetEvent::Refused { error });
                return;
            }
        };
        let holder = format!("{}#{:08x}", start.settings.instance, token());
        let mut worker = Worker {
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
            refused: false,
            holder,
            backstop: Backstop::default(),
            told_messages: Vec::new(),
            manual_seq: 0,
            incarnation: None,
            refreshed: tokio_now(),
        };
        worker.reconnect().await;
        worker.main_loop().await;
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
}

/// However the worker ends (its registry dropped, or a panic in it), every breaker it governed is
/// let go: the fleet no longer decides who probes, so no dependency waits on a worker that is gone.
impl Drop for Worker {
    fn drop(&mut self) {
        self.status.connected.store(false, Ordering::Release);
        for dep in self.deps.values() {
            if let Some(tap) = tap_of(&dep.breaker) {
                tap.set_governed(false);
                tap.clear_elsewhere();
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
