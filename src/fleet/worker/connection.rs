//! The worker's link to Redis: losing it, reconnecting, and the backstop read.

use super::*;

impl Worker {
    // Connection.

    /// Mark Redis unreachable: every breaker works locally; told once per outage.
    pub(super) fn lost(&mut self, error: &str) {
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
    pub(super) async fn reconnect(&mut self) {
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

    pub(super) async fn tick(&mut self) {
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
}

/// Whether a command's error means the fleet cannot be used now (no connection, a timeout, a
/// refused login or permission, a server loading, read-only, out of memory or busy): every
/// breaker goes local. The rest (`ERR`, `WRONGTYPE`: a script that failed on a value under one of
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
