//! [`FleetBuilder`]: a fleet's settings, their defaults and their checks, and
//! [`Fleet::builder`], where one starts.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

use super::error::FleetError;
use super::start::Fleet;
use super::status::{self, EventHook, FleetEvent, Settings};
use crate::config::{ConfigError, Problem, duration_field, name_field};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "toolbreaker";
/// The default window in which an instance's reported failures count: 30 s.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(30);
/// The default interval of the backstop read: 1 s.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// The default limit on one Redis command: 250 ms.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(250);
/// The default time a local caller has to take the fleet's probe once it is granted: 1 s.
pub const DEFAULT_PROBE_WINDOW: Duration = Duration::from_secs(1);
/// The default expiry of an idle dependency's record in Redis: 1 day.
pub const DEFAULT_RECORD_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Builds a [`Fleet`]; start from [`Fleet::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct FleetBuilder {
    url: String,
    prefix: String,
    instance: Option<String>,
    failure_threshold: Option<u32>,
    min_instances: u32,
    window: Duration,
    sync_interval: Duration,
    command_timeout: Duration,
    probe_window: Duration,
    record_ttl: Duration,
    on_event: Option<EventHook>,
}

impl fmt::Debug for FleetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetBuilder")
            .field("prefix", &self.prefix)
            .field("instance", &self.instance)
            .field("failure_threshold", &self.failure_threshold)
            .field("min_instances", &self.min_instances)
            .field("window", &self.window)
            .field("sync_interval", &self.sync_interval)
            .field("command_timeout", &self.command_timeout)
            .field("probe_window", &self.probe_window)
            .field("record_ttl", &self.record_ttl)
            .finish_non_exhaustive()
    }
}

impl FleetBuilder {
    /// The prefix of every key and of the channel (default [`DEFAULT_PREFIX`]): fleets that share a
    /// Redis server keep apart by prefix, whatever it holds (a `:` in it is written `%3A` in the
    /// keys, see [`docs::fleet`](crate::docs::fleet)). Non-empty, no whitespace or control
    /// characters.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// This instance's name in votes and probe leases (default: the process id and a random
    /// suffix). Two live instances must not share one. Non-empty, no whitespace or control
    /// characters.
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// The fleet threshold: the sum of the instances' consecutive counted failures that trips the
    /// fleet (default: each dependency's own `failure_threshold`). At least 1.
    pub fn failure_threshold(mut self, failures: u32) -> Self {
        self.failure_threshold = Some(failures);
        self
    }

    /// How many distinct instances must have counted failures (or tripped) before the fleet
    /// opens (default 1). With more than 1, one instance whose own network is broken opens only
    /// its own breaker. At least 1.
    pub fn min_instances(mut self, instances: u32) -> Self {
        self.min_instances = instances;
        self
    }

    /// How long an instance's last report of failures counts toward the fleet's sum (default
    /// [`DEFAULT_WINDOW`]). Whole ms, at least 1 ms.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The interval of the backstop read of the fleet's epoch, and of reconnection attempts while
    /// Redis is unreachable (default [`DEFAULT_SYNC_INTERVAL`]). At least 1 ms.
    pub fn sync_interval(mut self, interval: Duration) -> Self {
        self.sync_interval = interval;
        self
    }

    /// The limit on one Redis command and on connecting (default [`DEFAULT_COMMAND_TIMEOUT`]); a
    /// command that takes longer counts as Redis unreachable. At least 1 ms.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// How long a local caller has to take the fleet's probe once this instance holds the lease
    /// (default [`DEFAULT_PROBE_WINDOW`]); an unused lease is given back after it. The lease in
    /// Redis lasts this plus the dependency's probe timeout. At least 1 ms.
    pub fn probe_window(mut self, window: Duration) -> Self {
        self.probe_window = window;
        self
    }

    /// How long a dependency's record stays in Redis once no instance uses it (default
    /// [`DEFAULT_RECORD_TTL`]), so the records of dependency names that come and go leave Redis.
    /// Every write and every read of a record sets its expiry again, and each instance reads the
    /// records of every dependency its registry holds once a third of this, so a record in use
    /// never expires; one whose every instance has stopped (or dropped the registry) is gone
    /// after it. A record that expires while in use (Redis could not be reached to keep it) is
    /// written again from the instances' states, as after a wipe. The registry's idle eviction
    /// does not apply in fleet mode (every breaker synced is kept for the registry's life); this
    /// is how a fleet forgets. Whole ms, at least three sync intervals.
    pub fn record_ttl(mut self, ttl: Duration) -> Self {
        self.record_ttl = ttl;
        self
    }

    /// Called with each [`FleetEvent`] (Redis unreachable, reachable again, a bad record), on the
    /// worker's task: keep it short. With feature `tracing` each event is also a `tracing` event.
    pub fn on_event(mut self, hook: impl Fn(&FleetEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Validate the settings and open the Redis client (no connection is made yet: the worker
    /// connects once the registry is built, and keeps trying while Redis is unreachable).
    ///
    /// # Errors
    ///
    /// - [`FleetError::Config`] naming the first invalid field;
    /// - [`FleetError::Url`] if the URL is not a Redis URL;
    /// - [`FleetError::NoRuntime`] if called outside a Tokio runtime (the worker runs on it).
    pub fn build(self) -> Result<Fleet, FleetError> {
        name_field("prefix", &self.prefix)?;
        let instance = match self.instance {
            Some(instance) => instance,
            None => default_instance(),
        };
        name_field("instance", &instance)?;
        if self.failure_threshold == Some(0) {
            return Err(ConfigError::new("fleet_failure_threshold", Problem::Zero).into());
        }
        if self.min_instances == 0 {
            return Err(ConfigError::new("min_instances", Problem::Zero).into());
        }
        let settings = Settings {
            prefix: self.prefix,
            instance,
            failure_threshold: self.failure_threshold,
            min_instances: self.min_instances,
            window_ms: duration_field("window", self.window)?,
            sync_interval_ms: duration_field("sync_interval", self.sync_interval)?,
            command_timeout_ms: duration_field("command_timeout", self.command_timeout)?,
            probe_window_ms: duration_field("probe_window", self.probe_window)?,
            record_ttl_ms: duration_field("record_ttl", self.record_ttl)?,
        };
        if settings.record_ttl_ms < settings.sync_interval_ms.saturating_mul(3) {
            return Err(ConfigError::new("record_ttl", Problem::TooShort).into());
        }
        // Pub/sub rides on the command connection: RESP3 pushes.
        let mut info: redis::ConnectionInfo =
            redis::IntoConnectionInfo::into_connection_info(self.url.as_str())
                .map_err(|e| FleetError::Url(e.to_string()))?;
        let redis_settings = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3);
        info = info.set_redis_settings(redis_settings);
        let client = redis::Client::open(info).map_err(|e| FleetError::Url(e.to_string()))?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| FleetError::NoRuntime)?;
        Ok(Fleet {
            settings: Arc::new(settings),
            client,
            runtime,
            on_event: self.on_event,
        })
    }
}

fn default_instance() -> String {
    format!("{}-{:08x}", std::process::id(), status::token())
}

impl Fleet {
    /// A builder for a fleet reached at `url` (`redis://host:port/db`, `rediss://…` is not
    /// built in). Defaults: prefix [`DEFAULT_PREFIX`], a generated instance name, each
    /// dependency's own threshold as the fleet threshold, 1 instance, window
    /// [`DEFAULT_WINDOW`], sync interval [`DEFAULT_SYNC_INTERVAL`], command timeout
    /// [`DEFAULT_COMMAND_TIMEOUT`], probe window [`DEFAULT_PROBE_WINDOW`].
    pub fn builder(url: impl Into<String>) -> FleetBuilder {
        FleetBuilder {
            url: url.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            instance: None,
            failure_threshold: None,
            min_instances: 1,
            window: DEFAULT_WINDOW,
            sync_interval: DEFAULT_SYNC_INTERVAL,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            probe_window: DEFAULT_PROBE_WINDOW,
            record_ttl: DEFAULT_RECORD_TTL,
            on_event: None,
        }
    }
}
