//! The worker's link to Redis: losing it, reconnecting, and the backstop read.

use super::*;
use crate::fleet::redact;

impl Worker {
    // Connection.

    /// A command failed: Redis unreachable, or refused (a configuration error). `Err` in
    /// either case.
    pub(super) fn failed(&mut self, error: &redis::RedisError) {
        let text = self.describe(error);
        if is_refusal(error) {
            self.refused(text);
        } else {
            self.lost(&text);
        }
    }

    /// What an error says, for an event: a timeout says so (redis-rs tells a connection that
    /// never answers as the socket's `Resource temporarily unavailable`), and every URL's
    /// password is redacted.
    pub(super) fn describe(&self, error: &redis::RedisError) -> String {
        let io = std::error::Error::source(error)
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        let timed_out = error.is_timeout()
            || matches!(
                io,
                Some(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
            );
        if timed_out {
            format!(
                "no answer within the command timeout ({} ms): {}",
                self.settings.command_timeout_ms,
                redact(&error.to_string())
            )
        } else {
            redact(&error.to_string())
        }
    }

    /// Redis refused this instance: told once, at error level; every breaker works locally and
    /// the worker does not try again.
    pub(super) fn refused(&mut self, error: String) {
        // Local mode first, then the link's state, then the event: a caller that heard the
        // event, or read the link, finds every breaker already working locally.
        self.local_mode();
        self.status.link.send_replace(Link::Refused(error.clone()));
        if !self.refused {
            self.refused = true;
            self.status.outages.fetch_add(1, Ordering::Relaxed);
            self.event(FleetEvent::Refused { error });
        }
        self.outage = true;
    }

    /// Mark Redis unreachable: every breaker works locally; told once per outage.
    pub(super) fn lost(&mut self, error: &str) {
        if self.refused {
            return self.local_mode();
        }
        // Local mode first, then the link's state, then the event: a caller that heard the
        // event, or read the link, finds every breaker already working locally.
        let was_connected = self.connected;
        self.local_mode();
        self.status.link.send_replace(Link::Lost(error.to_owned()));
        if was_connected || !self.outage {
            self.status.outages.fetch_add(1, Ordering::Relaxed);
            self.event(FleetEvent::Unreachable {
                error: error.to_owned(),
            });
            self.outage = true;
        }
    }

    /// Every breaker works as a local breaker. The taps first, then the flag callers read
    /// (`FleetHandle::connected`): a caller that reads the link as down finds no probe slot still
    /// held back for the fleet's choice.
    fn local_mode(&mut self) {
        self.connected = false;
        for dep in self.deps.values_mut() {
            dep.synced = false;
            if let Some(tap) = tap_of(&dep.breaker) {
                tap.set_governed(false);
                tap.clear_elsewhere();
            }
            dep.elsewhere = None;
        }
        // Release: pairs with the Acquire load of `connected`, so a caller that reads `false`
        // also sees every tap's `governed` cleared above.
        self.status.connected.store(false, Ordering::Release);
    }

    /// Try to reach Redis; on success sync every dependency and send what is pending.
    pub(super) async fn reconnect(&mut self) {
        let channel = keys::channel(&self.settings.prefix);
        self.status.commands.fetch_add(1, Ordering::Relaxed);
        let subscribed = self.manager.subscribe(&channel).await;
        if let Err(error) = subscribed {
            self.failed(&error);
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
        self.status.link.send_replace(Link::Connected);
        if self.outage {
            self.outage = false;
            self.event(FleetEvent::Reconnected);
        }
        for name in &names {
            self.flush(name).await;
        }
    }

    pub(super) async fn tick(&mut self) {
        if !self.connected {
            // A refusal is a configuration error: asking again would be refused again.
            if !self.refused {
                self.reconnect().await;
            }
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
                self.failed(&error);
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
        // Every record read once a third of its expiry, so a record in use never expires.
        let refresh =
            self.refreshed.elapsed() >= Duration::from_millis(self.settings.record_ttl_ms / 3);
        if refresh {
            self.refreshed = tokio_now();
        }
        let names: Vec<SmolStr> = if wiped || missed || refresh {
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
}

/// Whether a command's error is a refusal of this instance: its login (a wrong or missing
/// password or user) or its permission to run a command (the user's ACL). A configuration
/// error, not an outage: see [`FleetEvent::Refused`].
pub(super) fn is_refusal(error: &redis::RedisError) -> bool {
    use redis::ErrorKind;
    const REFUSALS: &[&str] = &["NOPERM", "NOAUTH", "WRONGPASS"];
    matches!(error.kind(), ErrorKind::AuthenticationFailed)
        || error.code().is_some_and(|code| REFUSALS.contains(&code))
}

/// Whether a command's error means the fleet cannot be used now (no connection, a timeout, a
/// refused login or permission, a server loading, read-only, out of memory or busy): every
/// breaker goes local (and a refusal, see [`is_refusal`], for good). The rest (`ERR`, `WRONGTYPE`: a script that failed on a value under one of
/// the crate's keys; a reply of the wrong shape) is a problem of that dependency's record.
pub(super) fn is_unreachable(error: &redis::RedisError) -> bool {
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
