//! What the worker sends: a breaker's news (counts, trips, verdicts, changes by hand) and the
//! claim of the fleet's probe, each one script.

use super::connection::is_unreachable;
use super::*;

impl Worker {
    // Breakers.

    pub(super) async fn add(&mut self, breaker: Arc<CircuitBreaker>) {
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
            claim_scheduled: None,
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
    pub(super) fn local(&mut self, name: &str) {
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        let Some(tap) = tap_of(&dep.breaker) else {
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
                | TransitionReason::SlowCallRate
                | TransitionReason::RetryAfter => {
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

    /// Send what a dependency has pending, if Redis is reachable: the sends
    /// [`next_step`](flush::next_step) orders, each made here. The flush ends at the first send
    /// that fails; what is still pending goes at the next one.
    pub(super) async fn flush(&mut self, name: &str) {
        let scripts = Arc::clone(&self.scripts);
        let settings = Arc::clone(&self.settings);
        // The fleet's generation as known once the record is read, before the first send that
        // names it: a change by hand and the count after it are sent against the same one.
        let mut known_generation = None;
        let mut done = None;
        loop {
            let Some(dep) = self.deps.get(name) else {
                return;
            };
            let facts = FlushFacts {
                connected: self.connected,
                bad: dep.bad.is_some(),
                synced: dep.synced,
                resync: dep.pending.resync,
                manual: dep.pending.manual.is_some(),
                verdict: dep.pending.verdict.is_some(),
            };
            let Some(step) = flush::next_step(facts, done) else {
                if done.is_none() {
                    return;
                }
                break;
            };
            done = Some(step);
            if step >= Step::Manual && known_generation.is_none() {
                known_generation = Some(dep.known.as_ref().map_or(0, |r| r.generation));
            }
            let generation = known_generation.unwrap_or(0);
            match step {
                Step::Sync => {
                    if self.sync(name, true).await.is_err() {
                        return;
                    }
                }
                Step::Resync => {
                    if self.sync(name, true).await.is_err() {
                        return;
                    }
                    if let Some(dep) = self.deps.get_mut(name) {
                        dep.pending.resync = false;
                    }
                }
                Step::Manual => {
                    let Some((state, id)) = dep.pending.manual else {
                        continue;
                    };
                    let mut invocation = script::invocation(&scripts.manual, &dep.keys, &dep.name);
                    invocation
                        .arg(state.as_str())
                        .arg(generation)
                        .arg(format!("{}:{id}", self.holder));
                    let Ok(reply) = self.invoke(invocation).await else {
                        return;
                    };
                    // The count is read afresh when reported, so a report still pending stays
                    // pending: a failure counted after the change (or before: the count says
                    // which) is sent next.
                    let dep = self.deps.get_mut(name).expect("present");
                    dep.pending.manual = None;
                    dep.pending.verdict = None;
                    self.applied(name, reply, true);
                }
                Step::Verdict => {
                    let Some((generation, closed)) = dep.pending.verdict else {
                        continue;
                    };
                    let mut invocation = script::invocation(&scripts.verdict, &dep.keys, &dep.name);
                    invocation
                        .arg(&self.holder)
                        .arg(generation)
                        .arg(if closed { "closed" } else { "open" })
                        .arg(dep.breaker.hinted_remaining_ms());
                    let Ok(reply) = self.invoke(invocation).await else {
                        return;
                    };
                    let dep = self.deps.get_mut(name).expect("present");
                    dep.pending.verdict = None;
                    dep.mine = None;
                    if let Some(tap) = tap_of(&dep.breaker) {
                        tap.revoke();
                    }
                    self.applied(name, reply, true);
                }
                Step::Report => {
                    if !self.report(name, &scripts, &settings, generation).await {
                        return;
                    }
                }
            }
        }
        self.maybe_claim(name).await;
    }

    /// The count's step of a flush: decided by [`report`](reconcile::report), sent if it says
    /// so; `false` if the send failed.
    async fn report(
        &mut self,
        name: &str,
        scripts: &Scripts,
        settings: &Settings,
        known_generation: u64,
    ) -> bool {
        let Some(dep) = self.deps.get(name) else {
            return false;
        };
        let now = tokio_now();
        let config = dep.breaker.config();
        let decision = reconcile::report(ReportFacts {
            pending: dep.pending.report,
            closed_failures: dep.breaker.closed_failures(),
            recent: dep.last_report.is_some_and(|at| now < at + REPORT_INTERVAL),
            fleet_closed: dep
                .known
                .as_ref()
                .is_some_and(|r| r.state == Shared::Closed),
            local_trip: dep.local_trip,
            own_threshold: config.failure_threshold(),
            fleet_threshold: settings.failure_threshold,
        });
        match decision {
            Report::Nothing => {}
            Report::Later => {
                let at = dep.last_report.map(|at| at + REPORT_INTERVAL);
                self.deps.get_mut(name).expect("present").report_at = at;
            }
            Report::Drop => self.deps.get_mut(name).expect("present").pending.report = false,
            Report::Send { count, threshold } => {
                let mut invocation = script::invocation(&scripts.report, &dep.keys, &dep.name);
                invocation
                    .arg(&settings.instance)
                    .arg(known_generation)
                    .arg(count)
                    .arg(u8::from(dep.local_trip))
                    .arg(threshold)
                    .arg(settings.min_instances)
                    .arg(settings.window_ms)
                    .arg(dep.breaker.hinted_remaining_ms());
                let Ok(reply) = self.invoke(invocation).await else {
                    return false;
                };
                let dep = self.deps.get_mut(name).expect("present");
                dep.pending.report = false;
                dep.last_report = Some(now);
                dep.report_at = None;
                self.applied(name, reply, false);
            }
        }
        true
    }

    /// Claim the fleet's probe if a local call wants it and it may be claimed now.
    pub(super) async fn maybe_claim(&mut self, name: &str) {
        let scripts = Arc::clone(&self.scripts);
        let Some(dep) = self.deps.get(name) else {
            return;
        };
        let now = tokio_now();
        let facts = ClaimFacts {
            connected: self.connected,
            wanted: dep.want,
            open: dep.known.as_ref().is_some_and(|r| r.state == Shared::Open),
            mine: dep.mine.is_some(),
            bad: dep.bad.is_some(),
            waiting: dep.claim_at.is_some_and(|at| at > now),
            elsewhere: dep.elsewhere.is_some_and(|until| until > now),
        };
        if !reconcile::claim(facts) {
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
        let answer = match &reply {
            Reply::Won(record) => ClaimAnswer::Won {
                already: dep.mine.is_some_and(|m| m.generation == record.generation),
            },
            Reply::Held(record) => ClaimAnswer::Held {
                end_known: record.lease_until > record.now,
            },
            Reply::Wait(_, ms) => ClaimAnswer::Wait { ms: *ms },
            _ => ClaimAnswer::Other,
        };
        let after = reconcile::claimed(answer, self.settings.probe_window_ms);
        if let (true, Reply::Won(record)) = (after.take_probe, &reply) {
            let sent = tokio_now();
            let granted = take_fleet_probe(&dep.breaker, self.settings.probe_window_ms);
            // The slot freed for the fleet's probe is a change made from the fleet.
            self.status.adopted.fetch_add(1, Ordering::Relaxed);
            // The word left the open state meanwhile (closed or isolated by hand): the lease is
            // given back at once, by the timer.
            dep.mine = Some(Mine {
                generation: record.generation,
                granted,
                sent,
                window_end: sent + window,
                lease_end: sent + Duration::from_millis(lease_ms),
            });
            self.status.claims_won.fetch_add(1, Ordering::Relaxed);
        }
        dep.want = after.wanted;
        match after.again {
            Again::Keep => {}
            Again::Clear => dep.claim_at = None,
            Again::After { ms } => dep.claim_at = Some(tokio_now() + Duration::from_millis(ms)),
        }
        self.applied(name, reply, false);
    }

    /// Read a dependency's record, creating it from the local state if it is missing.
    pub(super) async fn sync(&mut self, name: &str, force: bool) -> Result<(), ()> {
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

    /// Run a script. `Err` when Redis is unreachable (the worker is then local).
    pub(super) async fn invoke(
        &mut self,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<Reply, Unreachable> {
        let mut invocation = invocation;
        // Every script's last argument: the record's expiry.
        invocation.arg(self.settings.record_ttl_ms);
        self.status.commands.fetch_add(1, Ordering::Relaxed);
        let answer: Result<redis::Value, redis::RedisError> =
            invocation.invoke_async(&mut self.manager).await;
        match answer {
            Ok(value) => Ok(script::parse_reply(&value)),
            Err(error) if is_unreachable(&error) => {
                self.failed(&error);
                Err(Unreachable)
            }
            // The server ran the script and it failed (a foreign value under one of our keys).
            Err(error) => Ok(Reply::Bad(error.to_string())),
        }
    }

    /// Apply a script's reply to its dependency.
    pub(super) fn applied(&mut self, name: &str, reply: Reply, force: bool) {
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

    pub(super) fn bad(&mut self, name: &str, problem: String) {
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        if let Some(tap) = tap_of(&dep.breaker) {
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
}
