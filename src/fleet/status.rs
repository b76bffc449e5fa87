//! What the fleet's files share: its settings, its counters, its events.

use crate::sync::{AtomicBool, RelaxedU64};
use core::fmt;
use std::sync::Arc;

/// The operator's event hook.
pub(crate) type EventHook = Arc<dyn Fn(&FleetEvent) + Send + Sync>;

/// The fleet's settings, validated.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) prefix: String,
    pub(crate) instance: String,
    pub(crate) failure_threshold: Option<u32>,
    pub(crate) min_instances: u32,
    pub(crate) window_ms: u64,
    pub(crate) sync_interval_ms: u64,
    pub(crate) command_timeout_ms: u64,
    pub(crate) probe_window_ms: u64,
    pub(crate) record_ttl_ms: u64,
}

/// The worker's counters, shared with its handle. The counts are statistics, added and read
/// relaxed; `connected` is stored with release and read with acquire, so a caller that reads
/// `true` also sees the syncs the worker made before telling it.
#[derive(Debug)]
pub(crate) struct Status {
    pub(crate) connected: AtomicBool,
    /// The link's state, for [`FleetHandle::connected`](super::FleetHandle::connected).
    pub(crate) link: tokio::sync::watch::Sender<Link>,
    pub(crate) commands: RelaxedU64,
    pub(crate) messages: RelaxedU64,
    pub(crate) adopted: RelaxedU64,
    pub(crate) outages: RelaxedU64,
    pub(crate) bad_records: RelaxedU64,
    pub(crate) claims_won: RelaxedU64,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            connected: AtomicBool::new(false),
            link: tokio::sync::watch::Sender::new(Link::Connecting),
            commands: RelaxedU64::new(0),
            messages: RelaxedU64::new(0),
            adopted: RelaxedU64::new(0),
            outages: RelaxedU64::new(0),
            bad_records: RelaxedU64::new(0),
            claims_won: RelaxedU64::new(0),
        }
    }
}

/// Where the worker's link to Redis stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Link {
    /// Not connected yet, and nothing failed.
    Connecting,
    /// Connected and every dependency known synced.
    Connected,
    /// Unreachable; the last error (redacted).
    Lost(String),
    /// Refused: a configuration error (redacted); the worker no longer tries.
    Refused(String),
}

/// Something the fleet worker tells the operator ([`FleetBuilder::on_event`](crate::fleet::FleetBuilder::on_event)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FleetEvent {
    /// Redis could not be reached (the first failure of an outage; told once): every breaker
    /// works as a local breaker until [`Reconnected`](Self::Reconnected).
    Unreachable {
        /// The error of the command that failed.
        error: String,
    },
    /// Redis is reachable again: the worker has synced every dependency with the fleet.
    Reconnected,
    /// Redis refused this instance: its login (`WRONGPASS`, `NOAUTH`: a wrong or missing
    /// password or user) or a command the fleet needs (`NOPERM`: the user's ACL). A
    /// configuration error, told once at error level: every breaker works as a local breaker
    /// and the worker does not try again (fix the URL or the ACL and build the registry again).
    /// [`FleetHandle::connected`](super::FleetHandle::connected) returns it as
    /// [`FleetError::Refused`](super::FleetError::Refused).
    Refused {
        /// The server's answer.
        error: String,
    },
    /// A dependency's record (or its probe lease) holds something this build does not read: a
    /// foreign value, a truncated record, another format version. That dependency works as a
    /// local breaker until the record is readable again. Told once per bad spell.
    BadRecord {
        /// The dependency.
        dependency: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A message on the fleet's channel this build does not read (told once per kind of problem).
    BadMessage {
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for FleetEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetEvent::Unreachable { error } => {
                write!(
                    f,
                    "fleet: Redis unreachable, breakers work locally: {error}"
                )
            }
            FleetEvent::Reconnected => f.write_str("fleet: Redis reachable again, breakers synced"),
            FleetEvent::Refused { error } => write!(
                f,
                "fleet: Redis refused this instance (a configuration error: check the URL's user and password and the user's ACL); breakers work locally and Redis is not tried again: {error}"
            ),
            FleetEvent::BadRecord {
                dependency,
                problem,
            } => write!(
                f,
                "fleet: the record of dependency {dependency:?} is unreadable, it works locally: {problem}"
            ),
            FleetEvent::BadMessage { problem } => {
                write!(f, "fleet: a message was ignored: {problem}")
            }
        }
    }
}

/// A random number, new at each call (a per-process seed hashed by `foldhash`'s randomly seeded
/// hasher): the default instance name's suffix, and each worker's lease token.
pub(crate) fn token() -> u32 {
    use core::hash::BuildHasher;
    foldhash::fast::RandomState::default().hash_one(std::process::id()) as u32
}

/// Tell `event` to the hook and (feature `tracing`) to the trace.
pub(crate) fn tell(hook: Option<&EventHook>, event: &FleetEvent) {
    #[cfg(feature = "tracing")]
    match event {
        FleetEvent::Reconnected => tracing::info!(target: "toolbreaker::fleet", "{event}"),
        FleetEvent::Refused { .. } => tracing::error!(target: "toolbreaker::fleet", "{event}"),
        _ => tracing::warn!(target: "toolbreaker::fleet", "{event}"),
    }
    if let Some(hook) = hook {
        hook(event);
    }
}
