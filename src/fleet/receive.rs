//! What the worker receives: a record (a reply or a message) applied through the pure
//! `reconcile`, and the timers.

use super::*;

impl Worker {
    /// Apply a record to its dependency's breaker: decide (`reconcile`), then do. `force`: apply
    /// the state even if the generation is the one already known (after a reconnection or a
    /// wipe).
    pub(super) fn apply(&mut self, name: &str, record: Record, force: bool, source: Source) {
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        let Some(reply_epoch) = reconcile::order(source, record.epoch, dep.reply_epoch) else {
            return;
        };
        dep.reply_epoch = reply_epoch;
        // The word's generation before the tap's news is taken: an adoption lands only if no
        // local change came after it (see `CircuitBreaker::adopt_in`).
        let mut generation = dep.breaker.generation();
        self.local(name);
        let holder = self.holder.clone();
        let connected = self.connected;
        let Some(dep) = self.deps.get_mut(name) else {
            return;
        };
        let known = Known {
            synced: dep.synced,
            generation: dep.known.as_ref().map(|k| k.generation),
            manual_pending: dep.pending.manual.is_some(),
            local_trip: dep.local_trip,
            mine: dep.mine.map(|m| m.generation),
        };
        let breaker = Arc::clone(&dep.breaker);
        let news = News {
            record: &record,
            force,
            holder: &holder,
            connected,
            local_now: LocalMs::now(&breaker),
        };
        let plan = reconcile::reconcile(news, known);
        dep.synced = true;
        dep.bad = None;
        let tap = tap_of(&breaker);
        if plan.unwant {
            dep.want = false;
            dep.claim_at = None;
        }
        if plan.lease == Lease::Drop {
            dep.mine = None;
            if let Some(tap) = tap {
                tap.revoke();
            }
        }
        match plan.elsewhere {
            Elsewhere::Keep => {}
            Elsewhere::Clear => {
                dep.elsewhere = None;
                if let Some(tap) = tap {
                    tap.clear_elsewhere();
                }
            }
            Elsewhere::Until {
                remaining_ms,
                until,
            } => {
                dep.elsewhere = Some(tokio_now() + Duration::from_millis(remaining_ms));
                if let Some(tap) = tap {
                    tap.set_elsewhere_until(until);
                }
            }
        }
        if let Some(local_trip) = plan.local_trip {
            dep.local_trip = local_trip;
        }
        let (mut adopted, mut refused) = (false, false);
        for adoption in plan.adopt {
            let remote = match adoption {
                Adoption::Open(at) => Remote::Open { opened_at_ms: at.0 },
                Adoption::Closed => Remote::Closed,
                Adoption::Isolated => Remote::Isolated,
            };
            match breaker.adopt_in(remote, generation) {
                Ok((after, transition)) => {
                    generation = after;
                    adopted |= transition.is_some();
                }
                Err(()) => refused = true,
            }
        }
        // The fleet's hinted end of its open period, so the deadline here is the fleet's.
        if record.state == Shared::Open && record.hinted_until.0 > record.now.0 {
            breaker.adopt_hint(record.hinted_until.0 - record.now.0);
        }
        if let Some(tap) = tap {
            tap.set_governed(plan.governed);
        }
        if refused {
            // A local change raced the adoption: once the tap's news is sent, read again.
            dep.pending.resync = true;
        }
        if adopted {
            self.status.adopted.fetch_add(1, Ordering::Relaxed);
        }
        // The fleet's probe is claimed when the cooldown ends, not when the first call after it
        // is blocked: that call then finds the probe granted here or known to be elsewhere.
        let cooldown_ms =
            u64::try_from(breaker.cooldown_in_force().as_millis()).unwrap_or(u64::MAX);
        if let Some((start, in_ms)) =
            reconcile::claim_at_cooldown_end(&record, connected, dep.claim_scheduled, cooldown_ms)
        {
            dep.claim_scheduled = Some(start);
            dep.want = true;
            dep.claim_at = Some(tokio_now() + Duration::from_millis(in_ms));
        }
        dep.known = Some(record);
    }

    // Messages and timers.

    pub(super) async fn push(&mut self, push: redis::PushInfo) {
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

    pub(super) fn bad_message(&mut self, problem: String) {
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

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.deps
            .values()
            .flat_map(|dep| {
                let mine = dep.mine.map(|m| {
                    if m.granted.is_none() {
                        m.sent
                    } else if m.granted.is_some_and(|g| dep.breaker.probe_slot_unused(g)) {
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

    pub(super) async fn timers(&mut self) {
        let now = tokio_now();
        let mut due = Vec::new();
        for (name, dep) in &mut self.deps {
            if let Some(mine) = dep.mine {
                let facts = LeaseFacts {
                    granted: mine.granted.is_some(),
                    slot_unused: mine
                        .granted
                        .is_some_and(|g| dep.breaker.probe_slot_unused(g)),
                    window_over: mine.window_end <= now,
                    lease_over: mine.lease_end <= now,
                };
                let decision = reconcile::lease_timer(facts);
                if decision != LeaseTimer::Keep {
                    if let Some(tap) = tap_of(&dep.breaker) {
                        tap.revoke();
                    }
                    dep.mine = None;
                }
                if decision == LeaseTimer::Release {
                    due.push((name.clone(), Due::Release(mine.generation)));
                }
            }
            let over = dep.elsewhere.is_some_and(|until| until <= now);
            let local_now = LocalMs::now(&dep.breaker);
            if let Some(Adoption::Open(at)) = reconcile::elsewhere_ran_out(over, local_now) {
                dep.elsewhere = None;
                if let Some(tap) = tap_of(&dep.breaker) {
                    tap.clear_elsewhere();
                }
                if dep
                    .breaker
                    .adopt(Remote::Open { opened_at_ms: at.0 })
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

    pub(super) async fn release(&mut self, name: &str, generation: u64) {
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
