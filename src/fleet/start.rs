//! [`Fleet`], a fleet ready to be installed, and what starting it makes: the worker spawned, and
//! the [`FleetLink`] a registry in fleet mode holds.

use core::fmt;
use std::sync::Arc;

use super::handle::FleetHandle;
use super::status::{EventHook, Settings, Status};
use super::tap::Outbox;
use super::worker;
use crate::breaker::CircuitBreaker;

/// A fleet's settings and Redis client, ready to be given to
/// [`RegistryBuilder::fleet`](crate::registry::RegistryBuilder::fleet); start from
/// [`Fleet::builder`]. A clone shares the instance name: give each registry a fleet of its own.
#[derive(Clone)]
pub struct Fleet {
    pub(super) settings: Arc<Settings>,
    pub(super) client: redis::Client,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) on_event: Option<EventHook>,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// Start the worker: what a registry built with this fleet holds.
    pub(crate) fn start(self) -> FleetLink {
        let status = Arc::new(Status::default());
        let notify = Arc::new(tokio::sync::Notify::new());
        let wake = Arc::clone(&notify);
        let outbox = Arc::new(Outbox::new(move || wake.notify_one()));
        let (register, registered) = tokio::sync::mpsc::unbounded_channel();
        let handle = FleetHandle {
            settings: Arc::clone(&self.settings),
            status: Arc::clone(&status),
        };
        let task = worker::Worker::spawn(worker::Start {
            settings: self.settings,
            client: self.client,
            runtime: self.runtime,
            on_event: self.on_event,
            status,
            notify,
            outbox: Arc::clone(&outbox),
            registered,
        });
        FleetLink {
            handle,
            outbox,
            register,
            task,
        }
    }
}

/// What a registry in fleet mode holds: the worker's inbox and its handle. Dropping it stops the
/// worker.
#[derive(Debug)]
pub(crate) struct FleetLink {
    pub(super) handle: FleetHandle,
    pub(super) outbox: Arc<Outbox>,
    pub(super) register: tokio::sync::mpsc::UnboundedSender<Arc<CircuitBreaker>>,
    task: tokio::task::AbortHandle,
}

impl FleetLink {
    pub(crate) fn handle(&self) -> &FleetHandle {
        &self.handle
    }
}

impl Drop for FleetLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}
