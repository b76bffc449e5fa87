//! What a registry's fleet worker shows: [`FleetHandle`] and its counters.

use crate::sync::Ordering;
use core::time::Duration;
use std::sync::Arc;

use super::error::FleetError;
use super::status::{Link, Settings, Status};

/// A view of a registry's fleet worker: [`Registry::fleet`](crate::Registry::fleet).
#[derive(Clone, Debug)]
pub struct FleetHandle {
    pub(super) settings: Arc<Settings>,
    pub(super) status: Arc<Status>,
}

impl FleetHandle {
    /// This instance's name in the fleet.
    pub fn instance(&self) -> &str {
        &self.settings.instance
    }

    /// Whether the worker reaches Redis: `true` once it has connected and synced every dependency
    /// the registry had then with the fleet, `false` from the first command that fails until it
    /// has reconnected and synced again. While it is `false` every breaker of the registry works
    /// as a local breaker.
    pub fn is_connected(&self) -> bool {
        // Acquire: pairs with the worker's Release store, so a caller that reads `true` also sees
        // the sync the worker finished before it set the flag (docs::atomics).
        self.status.connected.load(Ordering::Acquire)
    }

    /// Wait until the worker has connected and synced (as [`is_connected`](Self::is_connected)
    /// reads `true`), for at most `timeout`: a way to start serving only once the fleet is
    /// reachable, or to fail a start whose Redis settings are wrong. Returns at once if it is
    /// connected now or was refused before.
    ///
    /// # Errors
    ///
    /// - [`FleetError::Refused`] if Redis refused this instance (a wrong or missing password or
    ///   user, a command the user's ACL denies): a configuration error, also told as
    ///   [`FleetEvent::Refused`](super::FleetEvent::Refused); the worker does not try again;
    /// - [`FleetError::Timeout`] if `timeout` passed first, with the last error met (Redis
    ///   unreachable, a connection refused, no answer), if any. The worker goes on trying.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use toolbreaker::{Fleet, FleetError, Registry};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let fleet = Fleet::builder("redis://:wrong@127.0.0.1:6379/").build()?;
    /// let registry = Registry::builder().fleet(fleet).build();
    /// match registry.fleet().unwrap().connected(Duration::from_secs(5)).await {
    ///     Ok(()) => {}
    ///     Err(FleetError::Refused(error)) => return Err(error.into()), // fix the settings
    ///     Err(error) => eprintln!("starting with local breakers: {error}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn connected(&self, timeout: Duration) -> Result<(), FleetError> {
        let mut link = self.status.link.subscribe();
        let settled = link.wait_for(|l| matches!(l, Link::Connected | Link::Refused(_)));
        match tokio::time::timeout(timeout, settled).await {
            Ok(Ok(link)) => match &*link {
                Link::Refused(error) => Err(FleetError::Refused(error.clone())),
                _ => Ok(()),
            },
            // The sender lives in `Status`, which this handle holds: never dropped before it.
            Ok(Err(_)) | Err(_) => {
                let last = match &*self.status.link.borrow() {
                    Link::Lost(error) => Some(error.clone()),
                    _ => None,
                };
                Err(FleetError::Timeout {
                    waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                    last,
                })
            }
        }
    }

    /// The worker's counters since it started.
    pub fn stats(&self) -> FleetStats {
        let s = &self.status;
        FleetStats {
            commands: s.commands.load(Ordering::Relaxed),
            messages: s.messages.load(Ordering::Relaxed),
            adopted: s.adopted.load(Ordering::Relaxed),
            outages: s.outages.load(Ordering::Relaxed),
            bad_records: s.bad_records.load(Ordering::Relaxed),
            probes_claimed: s.claims_won.load(Ordering::Relaxed),
        }
    }
}

/// A fleet worker's counters ([`FleetHandle::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetStats {
    /// Redis commands sent (scripts, the backstop read, reconnection pings).
    pub commands: u64,
    /// Messages received from other instances (and this one's own, echoed).
    pub messages: u64,
    /// Local breaker changes made from the fleet (adopted states, and probe slots freed for the
    /// fleet's probe).
    pub adopted: u64,
    /// Times Redis became unreachable.
    pub outages: u64,
    /// Bad records met (each dependency counted once per bad spell).
    pub bad_records: u64,
    /// Probe leases this instance won.
    pub probes_claimed: u64,
}
