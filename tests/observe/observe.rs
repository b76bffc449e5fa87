//! What the breaker and the pipeline tell the outside world with feature `tracing`: transition,
//! blocked and failure events with their fields, the pipeline's spans, the transition listener,
//! and that nothing from a request, a response or an error ever reaches a subscriber.
//!
//! Each test installs its own subscriber for its own thread (`set_default`): a layer that keeps
//! every span and event with its fields, and the span it fired in. Time is the breaker's mock
//! clock and tokio's paused clock; nothing sleeps.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use toolbreaker::agent::FailedKind;
use toolbreaker::classify::reqwest::classify_reqwest_error;
use toolbreaker::classify::{self, http::HttpClassifier};
use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::tower::CircuitBreakerLayer;
use toolbreaker::{
    AgentRun, CallError, CircuitBreaker, FailureKind, Outcome, RetryPolicy, State, ToolGuard,
    ToolResult, Transition, TransitionReason,
};
use tower::{Layer as _, ServiceExt, service_fn};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

// ---------------------------------------------------------------------------------------------
// The capturing layer

/// A field's value as recorded.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_owned())
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::U64(n)
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Self {
        Value::U64(n.into())
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Self {
        Value::F64(x)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

type Fields = BTreeMap<String, Value>;

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().to_owned(), Value::Str(value.to_owned()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::U64(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::I64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::Bool(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `message`, and `format_args!` values, arrive here.
        self.0
            .insert(field.name().to_owned(), Value::Str(format!("{value:?}")));
    }
}

/// A span as the layer saw it: its fields as of now, its parent (an index into `spans`), and
/// when it closed on tokio's clock.
#[derive(Clone, Debug)]
struct SpanRec {
    name: &'static str,
    target: String,
    level: Level,
    parent: Option<usize>,
    fields: Fields,
    closed: Option<Instant>,
}

/// An event: the spans it fired in, innermost first (indices into `spans`).
#[derive(Clone, Debug)]
struct EventRec {
    level: Level,
    target: String,
    scope: Vec<usize>,
    fields: Fields,
}

impl EventRec {
    fn message(&self) -> &str {
        match self.fields.get("message") {
            Some(Value::Str(m)) => m,
            _ => "",
        }
    }
}

#[derive(Debug, Default)]
struct Log {
    spans: Vec<SpanRec>,
    events: Vec<EventRec>,
}

/// The span's index into `Log::spans`, kept in the registry's extensions (span ids are reused).
struct Index(usize);

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Log>>);

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is in the registry");
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut fields = Fields::new();
        attrs.record(&mut Visitor(&mut fields));
        let mut log = self.0.lock().unwrap();
        log.spans.push(SpanRec {
            name: attrs.metadata().name(),
            target: attrs.metadata().target().to_owned(),
            level: *attrs.metadata().level(),
            parent,
            fields,
            closed: None,
        });
        span.extensions_mut().insert(Index(log.spans.len() - 1));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).expect("a closing span is in the registry");
        let index = span.extensions().get::<Index>().expect("indexed").0;
        self.0.lock().unwrap().spans[index].closed = Some(Instant::now());
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a recorded span is in the registry");
        let index = span.extensions().get::<Index>().expect("indexed").0;
        let mut log = self.0.lock().unwrap();
        values.record(&mut Visitor(&mut log.spans[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let scope = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .filter_map(|span| span.extensions().get::<Index>().map(|i| i.0))
                    .collect()
            })
            .unwrap_or_default();
        let mut fields = Fields::new();
        event.record(&mut Visitor(&mut fields));
        self.0.lock().unwrap().events.push(EventRec {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            scope,
            fields,
        });
    }
}

impl Capture {
    fn events(&self) -> Vec<EventRec> {
        self.0.lock().unwrap().events.clone()
    }

    fn spans(&self) -> Vec<SpanRec> {
        self.0.lock().unwrap().spans.clone()
    }

    /// The events with this message.
    fn named(&self, message: &str) -> Vec<EventRec> {
        self.events()
            .into_iter()
            .filter(|e| e.message() == message)
            .collect()
    }

    fn clear(&self) {
        *self.0.lock().unwrap() = Log::default();
    }
}

/// Capture everything at every level on this thread until the guard drops.
fn capture() -> (Capture, crate::Subscribed) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = crate::subscribe(subscriber);
    (capture, guard)
}

/// Assert that `fields` holds exactly `expected` (plus `message`, which is checked apart).
#[track_caller]
fn assert_fields(fields: &Fields, expected: &[(&str, Value)]) {
    let mut fields = fields.clone();
    fields.remove("message");
    let expected: Fields = expected
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    assert_eq!(fields, expected);
}

// ---------------------------------------------------------------------------------------------
// Breakers

const COOLDOWN: Duration = Duration::from_secs(30);
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

fn builder(threshold: u32) -> (toolbreaker::breaker::Builder, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    let builder = CircuitBreaker::builder()
        .name("search")
        .failure_threshold(threshold)
        .cooldown(COOLDOWN)
        .probe_timeout(PROBE_TIMEOUT)
        .clock(clock);
    (builder, mock)
}

fn breaker(threshold: u32) -> (CircuitBreaker, Arc<Mock>) {
    let (builder, mock) = builder(threshold);
    (builder.build().unwrap(), mock)
}

const UNAVAILABLE: Outcome = Outcome::Failure(FailureKind::Unavailable);

/// Record `n` counted failures; the last one's transition, if any.
fn fail(breaker: &CircuitBreaker, n: u32) -> Option<Transition> {
    let mut last = None;
    for _ in 0..n {
        last = breaker.try_acquire().unwrap().record(UNAVAILABLE);
    }
    last
}

/// The fields a transition event must carry for `t` of the breaker named `search`.
fn transition_fields(t: &Transition) -> Vec<(&'static str, Value)> {
    vec![
        ("dependency", "search".into()),
        ("from", t.from().as_str().into()),
        ("to", t.to().as_str().into()),
        ("generation", t.generation().into()),
        ("reason", t.reason().as_str().into()),
        ("failures", t.failures().into()),
        (
            "cooldown_ms",
            u64::try_from(t.cooldown().as_millis()).unwrap().into(),
        ),
    ]
}

/// The one transition event captured since the last `clear`, checked against `t` and `level`.
#[track_caller]
fn assert_one_transition(capture: &Capture, t: &Transition, level: Level) {
    let events = capture.named("circuit breaker transition");
    assert_eq!(events.len(), 1, "one event per transition: {events:#?}");
    let event = &events[0];
    assert_eq!(event.level, level);
    assert_eq!(event.target, "toolbreaker");
    assert_fields(&event.fields, &transition_fields(t));
}

// ---------------------------------------------------------------------------------------------
// Transition events

#[test]
fn a_trip_is_one_warn_event_with_reason_failure_threshold_and_the_failure_count() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(3);
    assert_eq!(fail(&breaker, 2), None);
    assert!(capture.named("circuit breaker transition").is_empty());

    let trip = fail(&breaker, 1).expect("the third failure trips");
    assert_one_transition(&capture, &trip, Level::WARN);
    assert_fields(
        &capture.named("circuit breaker transition")[0].fields,
        &[
            ("dependency", "search".into()),
            ("from", "closed".into()),
            ("to", "open".into()),
            ("generation", trip.generation().into()),
            ("reason", "failure_threshold".into()),
            ("failures", 3u64.into()),
            ("cooldown_ms", 30_000u64.into()),
        ],
    );
}

#[test]
fn the_probe_cycle_announces_each_step_with_its_reason_level_and_generation() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(1);
    let trip = fail(&breaker, 1).unwrap();

    // The cooldown passes: reading the state announces nothing; the claim does.
    mock.increment(COOLDOWN);
    capture.clear();
    assert_eq!(breaker.state(), State::HalfOpen);
    assert!(
        capture.events().is_empty(),
        "state() never writes, so never announces"
    );
    let probe = breaker.try_acquire().expect("the probe");
    let claims = capture.named("circuit breaker transition");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].level, Level::INFO);
    assert_fields(
        &claims[0].fields,
        &[
            ("dependency", "search".into()),
            ("from", "open".into()),
            ("to", "half_open".into()),
            ("generation", probe.generation().into()),
            ("reason", "cooldown_elapsed".into()),
            ("failures", 0u64.into()),
            ("cooldown_ms", 30_000u64.into()),
        ],
    );
    // Claiming the slot of an open word keeps its generation: no probe of it is alive.
    assert_eq!(probe.generation(), trip.generation());

    // The probe fails: warn, probe_failed, one failure.
    capture.clear();
    let reopened = probe.record(UNAVAILABLE).expect("a failed probe reopens");
    assert_eq!(reopened.reason(), TransitionReason::ProbeFailed);
    assert_eq!(reopened.failures(), 1);
    assert_one_transition(&capture, &reopened, Level::WARN);

    // The next probe succeeds: info, probe_succeeded.
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().expect("the next probe");
    capture.clear();
    let closed = probe
        .record(Outcome::Success)
        .expect("a successful probe closes");
    assert_eq!(
        (closed.from(), closed.to(), closed.reason()),
        (
            State::HalfOpen,
            State::Closed,
            TransitionReason::ProbeSucceeded
        )
    );
    assert_one_transition(&capture, &closed, Level::INFO);
}

#[test]
fn a_probe_past_its_lease_is_announced_as_timed_out_by_the_next_caller() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(1);
    fail(&breaker, 1).unwrap();
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().expect("the probe");

    mock.increment(PROBE_TIMEOUT);
    capture.clear();
    assert_eq!(breaker.state(), State::Open, "the lease ran out");
    assert!(capture.events().is_empty(), "nobody has found it yet");

    let blocked = breaker.try_acquire().unwrap_err();
    assert_eq!(blocked.state(), State::Open);
    let events = capture.named("circuit breaker transition");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].level, Level::WARN);
    assert_fields(
        &events[0].fields,
        &[
            ("dependency", "search".into()),
            ("from", "half_open".into()),
            ("to", "open".into()),
            // The lease's generation moved on by one.
            ("generation", (probe.generation() + 1).into()),
            ("reason", "probe_timed_out".into()),
            ("failures", 1u64.into()),
            ("cooldown_ms", 30_000u64.into()),
        ],
    );
    assert_eq!(probe.record(Outcome::Success), None, "too late to count");
}

#[test]
fn a_claim_after_an_unfound_probe_timeout_announces_both_transitions_in_order() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(1);
    fail(&breaker, 1).unwrap();
    mock.increment(COOLDOWN);
    let stale = breaker.try_acquire().expect("the probe");

    // The lease runs out and the cooldown after it passes before anyone calls.
    mock.increment(PROBE_TIMEOUT + COOLDOWN);
    capture.clear();
    let probe = breaker.try_acquire().expect("the next probe");
    assert_ne!(probe.generation(), stale.generation());
    let events = capture.named("circuit breaker transition");
    let seen: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e.level,
                e.fields["reason"].clone(),
                e.fields["generation"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                Level::WARN,
                "probe_timed_out".into(),
                probe.generation().into()
            ),
            (
                Level::INFO,
                "cooldown_elapsed".into(),
                probe.generation().into()
            ),
        ]
    );
}

#[test]
fn changes_by_hand_are_announced_with_reason_manual() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(5);
    fail(&breaker, 2);

    capture.clear();
    let isolated = breaker.force_open().expect("closed → open");
    assert_eq!(isolated.reason(), TransitionReason::Manual);
    assert_eq!(isolated.failures(), 2, "the count at the time");
    assert_one_transition(&capture, &isolated, Level::WARN);

    capture.clear();
    let closed = breaker.force_closed().expect("open → closed");
    assert_one_transition(&capture, &closed, Level::INFO);
    assert_eq!(closed.to(), State::Closed);

    // Reset from open (tripped by failures this time).
    fail(&breaker, 5).unwrap();
    capture.clear();
    let reset = breaker.reset().expect("open → closed");
    assert_eq!(
        (reset.from(), reset.to(), reset.reason()),
        (State::Open, State::Closed, TransitionReason::Manual)
    );
    assert_one_transition(&capture, &reset, Level::INFO);

    // No transition, no event.
    capture.clear();
    assert_eq!(breaker.reset(), None);
    assert_eq!(breaker.force_closed(), None);
    assert!(capture.named("circuit breaker transition").is_empty());
}

// ---------------------------------------------------------------------------------------------
// Blocked calls and counted failures

#[test]
fn a_blocked_call_is_a_debug_event_with_state_reason_and_retry_after() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(1);
    fail(&breaker, 1).unwrap();

    mock.increment(Duration::from_secs(12));
    capture.clear();
    assert!(breaker.try_acquire().is_err());
    let events = capture.named("call blocked");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].level, Level::DEBUG);
    assert_eq!(events[0].target, "toolbreaker");
    assert_fields(
        &events[0].fields,
        &[
            ("dependency", "search".into()),
            ("state", "open".into()),
            ("reason", "dependency_open".into()),
            ("retry_after_ms", 18_000u64.into()),
        ],
    );

    // Half-open with the probe out: probe_in_flight, for the rest of the lease.
    mock.increment(Duration::from_secs(18));
    let _probe = breaker.try_acquire().expect("the probe");
    mock.increment(Duration::from_secs(4));
    capture.clear();
    assert!(breaker.try_acquire().is_err());
    let events = capture.named("call blocked");
    assert_eq!(events.len(), 1);
    assert_fields(
        &events[0].fields,
        &[
            ("dependency", "search".into()),
            ("state", "half_open".into()),
            ("reason", "probe_in_flight".into()),
            ("retry_after_ms", 6_000u64.into()),
        ],
    );

    // Isolated by hand.
    breaker.force_open().unwrap();
    capture.clear();
    assert!(breaker.try_acquire().is_err());
    let events = capture.named("call blocked");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].fields["reason"], "isolated".into());
    assert_eq!(events[0].fields["state"], "open".into());
}

/// A call shed by adaptive throttling is one `call blocked` debug event, state closed, reason
/// `throttled`, and nothing else: no failure event, no transition.
#[test]
fn a_call_shed_by_adaptive_throttling_is_a_blocked_debug_event() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (builder, _mock) = builder(1_000);
    let breaker = builder
        .adaptive_throttling(2.0, Duration::from_secs(10))
        .build()
        .unwrap();
    fail(&breaker, 1);
    capture.clear();
    let shed = (0..1_000)
        .filter(|_| breaker.try_acquire().is_err())
        .count();
    assert!(shed > 0);
    let events = capture.named("call blocked");
    assert_eq!(events.len(), shed);
    assert_eq!(events[0].level, Level::DEBUG);
    assert_fields(
        &events[0].fields,
        &[
            ("dependency", "search".into()),
            ("state", "closed".into()),
            ("reason", "throttled".into()),
            ("retry_after_ms", 1_000u64.into()),
        ],
    );
    assert_eq!(capture.events().len(), shed, "only the blocked events");
}

/// A pool: a member passed over while another serves logs nothing; a call the panic rule admits
/// is a `pool panic` event naming the pool and the member; a pool none of whose members admits
/// is one `call blocked` event under the pool's name.
#[test]
fn a_pools_panic_and_blocked_calls_are_debug_events_under_its_name() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (clock, mock) = Clock::mock();
    let registry = toolbreaker::Registry::builder()
        .default_config(
            toolbreaker::Config::new(1, Duration::from_secs(30), Duration::from_secs(5)).unwrap(),
        )
        .clock(clock)
        .build();
    let pool = toolbreaker::Pool::builder("search")
        .group(["a", "b"])
        .max_ejected(0.5)
        .build(&registry)
        .unwrap();
    fail(&registry.get("a"), 1).unwrap();
    capture.clear();
    let served = pool.try_acquire().unwrap();
    assert_eq!(served.member(), "b");
    served.record(Outcome::Success);
    assert!(
        capture.named("call blocked").is_empty(),
        "a, passed over, logged nothing"
    );

    mock.increment(Duration::from_secs(1));
    fail(&registry.get("b"), 1).unwrap();
    capture.clear();
    let panic = pool.try_acquire().unwrap();
    assert!(panic.is_panic());
    let events = capture.named("pool panic");
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].level, events[0].target.as_str()),
        (Level::DEBUG, "toolbreaker")
    );
    assert_fields(
        &events[0].fields,
        &[("pool", "search".into()), ("member", "a".into())],
    );
    assert!(capture.named("call blocked").is_empty());

    let closed = toolbreaker::Pool::builder("search-closed")
        .group(["a", "b"])
        .build(&registry)
        .unwrap();
    capture.clear();
    assert!(closed.try_acquire().is_err());
    let events = capture.named("call blocked");
    assert_eq!(
        events.len(),
        1,
        "one event for the pool, none for its members"
    );
    assert_fields(
        &events[0].fields,
        &[
            ("dependency", "search-closed".into()),
            ("state", "open".into()),
            ("reason", "pool_exhausted".into()),
            ("retry_after_ms", 29_000u64.into()),
        ],
    );
}

#[test]
fn a_counted_failure_is_a_debug_event_with_its_kind_and_no_duration_from_a_bare_permit() {
    let _turn = crate::turn();
    // A bare permit is not timed (the healthy path reads no clock); the pipeline times its
    // attempts, and its failure events carry the duration (see the pipeline tests below).
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(10);

    let permit = breaker.try_acquire().unwrap();
    mock.increment(Duration::from_millis(1500));
    permit.record(Outcome::Failure(FailureKind::Timeout));
    let permit = breaker.try_acquire().unwrap();
    mock.increment(Duration::from_millis(250));
    permit.record(Outcome::Failure(FailureKind::RateLimited {
        retry_after: Some(Duration::from_secs(7)),
    }));

    let events = capture.named("counted failure");
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(
        events
            .iter()
            .all(|e| e.level == Level::DEBUG && e.target == "toolbreaker")
    );
    assert_fields(
        &events[0].fields,
        &[
            ("dependency", "search".into()),
            ("failure_kind", "timeout".into()),
        ],
    );
    assert_fields(
        &events[1].fields,
        &[
            ("dependency", "search".into()),
            ("failure_kind", "rate_limited".into()),
        ],
    );
}

#[test]
fn ignored_outcomes_and_successes_are_no_failure_events() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(1);
    for outcome in [Outcome::Ignored, Outcome::Success, Outcome::Ignored] {
        let permit = breaker.try_acquire().unwrap();
        mock.increment(Duration::from_millis(10));
        assert_eq!(permit.record(outcome), None);
    }
    assert!(capture.events().is_empty(), "{:#?}", capture.events());
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn with_the_subscriber_at_info_only_transitions_are_seen() {
    let _turn = crate::turn();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry()
        .with(capture.clone())
        .with(tracing_subscriber::filter::LevelFilter::INFO);
    let _guard = crate::subscribe(subscriber);
    assert!(!tracing::enabled!(target: "toolbreaker", Level::DEBUG));

    let (breaker, mock) = breaker(2);
    let trip = fail(&breaker, 2).unwrap();
    assert!(breaker.try_acquire().is_err());
    mock.increment(COOLDOWN);
    breaker.try_acquire().unwrap().record(Outcome::Success);

    let events = capture.events();
    assert!(
        events.iter().all(|e| e.level <= Level::INFO),
        "no debug events: {events:#?}"
    );
    let reasons: Vec<_> = events.iter().map(|e| e.fields["reason"].clone()).collect();
    assert_eq!(
        reasons,
        ["failure_threshold", "cooldown_elapsed", "probe_succeeded"].map(Value::from)
    );
    assert_eq!(events[0].fields["generation"], trip.generation().into());
}

// ---------------------------------------------------------------------------------------------
// The listener

#[test]
fn the_listener_is_called_once_per_transition_with_the_events_data() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let heard: Arc<Mutex<Vec<(String, Transition)>>> = Arc::default();
    let (builder, mock) = builder(2);
    let breaker = builder
        .on_transition({
            let heard = Arc::clone(&heard);
            move |event| {
                heard
                    .lock()
                    .unwrap()
                    .push((event.dependency().to_owned(), *event.transition()));
            }
        })
        .build()
        .unwrap();

    let mut returned = Vec::new();
    returned.push(fail(&breaker, 2).unwrap()); // trip
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().unwrap(); // claim: not returned, but heard
    returned.push(probe.record(UNAVAILABLE).unwrap()); // probe failed
    mock.increment(COOLDOWN);
    let probe = breaker.try_acquire().unwrap();
    mock.increment(PROBE_TIMEOUT);
    assert!(breaker.try_acquire().is_err()); // probe timed out, found here
    drop(probe);
    returned.push(breaker.force_open().unwrap());
    returned.push(breaker.reset().unwrap());
    assert_eq!(breaker.reset(), None);

    let heard = heard.lock().unwrap().clone();
    let reasons: Vec<_> = heard.iter().map(|(_, t)| t.reason()).collect();
    assert_eq!(
        reasons,
        [
            TransitionReason::FailureThreshold,
            TransitionReason::CooldownElapsed,
            TransitionReason::ProbeFailed,
            TransitionReason::CooldownElapsed,
            TransitionReason::ProbeTimedOut,
            TransitionReason::Manual,
            TransitionReason::Manual,
        ]
    );
    assert!(heard.iter().all(|(dependency, _)| dependency == "search"));
    // What `record` and the manual calls returned is what the listener heard.
    let heard_returned: Vec<_> = [0, 2, 5, 6].iter().map(|&i| heard[i].1).collect();
    assert_eq!(heard_returned, returned);

    // One event per transition, with the same data, in the same order.
    let events = capture.named("circuit breaker transition");
    assert_eq!(events.len(), heard.len());
    for (event, (_, transition)) in events.iter().zip(&heard) {
        assert_fields(&event.fields, &transition_fields(transition));
    }
}

// ---------------------------------------------------------------------------------------------
// The pipeline's spans

/// The dependency's answer in pipeline tests; its `Display` reaches the model, never the trace.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    Unavailable,
    BadArguments,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

fn classify(result: &Result<&'static str, Answer>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(Answer::Unavailable) => UNAVAILABLE,
        Err(Answer::BadArguments) => Outcome::Ignored,
    }
}

fn no_jitter(retries: u32) -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(retries)
        .min_delay(Duration::from_millis(100))
        .jitter(false)
}

/// The one span named `name`, by index.
#[track_caller]
fn only_span(spans: &[SpanRec], name: &str) -> usize {
    let found: Vec<_> = (0..spans.len())
        .filter(|&i| spans[i].name == name)
        .collect();
    assert_eq!(found.len(), 1, "one {name} span: {spans:#?}");
    found[0]
}

/// The fields every call span has from its start, for dependency `search` on run `run-42`.
fn call_span_fields() -> Vec<(&'static str, Value)> {
    vec![
        ("otel.name", "execute_tool search".into()),
        ("otel.kind", "internal".into()),
        ("gen_ai.operation.name", "execute_tool".into()),
        ("gen_ai.tool.name", "search".into()),
        ("dependency", "search".into()),
        ("run_id", "run-42".into()),
    ]
}

#[tokio::test(start_paused = true)]
async fn a_failed_pipeline_call_is_one_span_holding_its_attempts_and_their_events() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, mock) = breaker(2);
    let guard = ToolGuard::new(Duration::from_secs(2), no_jitter(1));
    let run = AgentRun::new("run-42", Duration::from_secs(60), 10);
    let started = Instant::now();

    // Each attempt takes 40 ms on both clocks, then answers 503.
    let result = guard
        .call(&run, &breaker, classify, || {
            let mock = Arc::clone(&mock);
            async move {
                tokio::time::sleep(Duration::from_millis(40)).await;
                mock.increment(Duration::from_millis(40));
                Err::<&'static str, _>(Answer::Unavailable)
            }
        })
        .await;
    assert!(matches!(result, ToolResult::Failed { counted: true, .. }));
    assert_eq!(result.stats().unwrap().attempts, 2);
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(180),
        "40 + 100 + 40"
    );

    let spans = capture.spans();
    let call = only_span(&spans, "execute_tool");
    assert_eq!(spans[call].level, Level::INFO);
    assert_eq!(spans[call].target, "toolbreaker");
    let mut expected = call_span_fields();
    expected.extend([
        ("attempt", 2u32.into()),
        ("outcome", "failed".into()),
        ("duration_ms", 180.0.into()),
        ("otel.status_code", "error".into()),
        ("error.type", "unavailable".into()),
    ]);
    assert_fields(&spans[call].fields, &expected);

    assert_eq!(
        spans[call].closed,
        Some(started + Duration::from_millis(180))
    );

    let attempts: Vec<_> = (0..spans.len())
        .filter(|&i| spans[i].name == "attempt")
        .collect();
    assert_eq!(attempts.len(), 2);
    // Each attempt's span closes when the attempt ends, not after the wait for the retry.
    assert_eq!(
        attempts
            .iter()
            .map(|&a| spans[a].closed)
            .collect::<Vec<_>>(),
        [40, 180].map(|ms| Some(started + Duration::from_millis(ms)))
    );
    for (n, &a) in attempts.iter().enumerate() {
        assert_eq!(spans[a].parent, Some(call), "an attempt is inside its call");
        assert_fields(
            &spans[a].fields,
            &[
                ("otel.name", "attempt search".into()),
                ("otel.kind", "client".into()),
                ("dependency", "search".into()),
                ("attempt", u32::try_from(n + 1).unwrap().into()),
                ("probe", false.into()),
                ("outcome", "failure".into()),
                ("duration_ms", 40.0.into()),
                ("otel.status_code", "error".into()),
                ("error.type", "unavailable".into()),
            ],
        );
    }

    // Each counted failure fired inside its attempt, so inside the call (with the run's id);
    // the second tripped the breaker, inside the second attempt.
    let failures = capture.named("counted failure");
    assert_eq!(failures.len(), 2);
    for (failure, &a) in failures.iter().zip(&attempts) {
        assert_eq!(failure.scope, [a, call]);
        assert_eq!(
            failure.fields["duration_ms"],
            40.0.into(),
            "the call's duration"
        );
        assert_eq!(failure.fields["failure_kind"], "unavailable".into());
    }
    let trips = capture.named("circuit breaker transition");
    assert_eq!(trips.len(), 1);
    assert_eq!(trips[0].scope, [attempts[1], call]);
    assert_eq!(trips[0].fields["reason"], "failure_threshold".into());
}

#[tokio::test(start_paused = true)]
async fn a_blocked_pipeline_call_is_one_span_with_the_blocked_event_inside() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(1);
    fail(&breaker, 1).unwrap();
    capture.clear();
    let guard = ToolGuard::new(Duration::from_secs(2), no_jitter(3));
    let run = AgentRun::new("run-42", Duration::from_secs(60), 10);

    let mut sent = 0;
    let result = guard
        .call(&run, &breaker, classify, || {
            sent += 1;
            async { Ok("hits") }
        })
        .await;
    assert!(matches!(result, ToolResult::Blocked { .. }));
    assert_eq!(sent, 0);

    let spans = capture.spans();
    assert_eq!(spans.len(), 1, "no attempt spans: {spans:#?}");
    let call = only_span(&spans, "execute_tool");
    let mut expected = call_span_fields();
    expected.extend([
        ("attempt", 0u32.into()),
        ("outcome", "blocked".into()),
        ("duration_ms", 0.0.into()),
        ("otel.status_code", "error".into()),
        ("error.type", "dependency_open".into()),
    ]);
    assert_fields(&spans[call].fields, &expected);

    let blocked = capture.named("call blocked");
    assert_eq!(blocked.len(), 1);
    assert_eq!(
        blocked[0].scope,
        [call],
        "the blocked event is a child of the call"
    );
    assert_eq!(spans[call].fields["run_id"], "run-42".into());
    assert_eq!(blocked[0].fields["reason"], "dependency_open".into());
    assert_eq!(capture.events().len(), 1, "{:#?}", capture.events());
}

#[tokio::test(start_paused = true)]
async fn a_successful_pipeline_call_is_one_ok_span_and_no_events() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_secs(2), no_jitter(3));
    let run = AgentRun::new("run-42", Duration::from_secs(60), 10);

    let result = guard
        .call(&run, &breaker, classify, || async {
            tokio::time::sleep(Duration::from_millis(75)).await;
            Ok("hits")
        })
        .await;
    assert!(result.is_ok());

    let spans = capture.spans();
    let call = only_span(&spans, "execute_tool");
    let mut expected = call_span_fields();
    expected.extend([
        ("attempt", 1u32.into()),
        ("outcome", "ok".into()),
        ("duration_ms", 75.0.into()),
        ("otel.status_code", "ok".into()),
    ]);
    assert_fields(&spans[call].fields, &expected);
    let attempt = only_span(&spans, "attempt");
    assert_eq!(spans[attempt].parent, Some(call));
    assert_eq!(spans[attempt].fields["outcome"], "success".into());
    assert_eq!(spans[attempt].fields["otel.status_code"], "ok".into());
    assert!(!spans[attempt].fields.contains_key("error.type"));
    assert!(capture.events().is_empty(), "{:#?}", capture.events());
}

#[tokio::test(start_paused = true)]
async fn failed_ignored_and_stopped_calls_say_why_in_error_type() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_millis(500), no_jitter(0));
    let run = AgentRun::new("run-42", Duration::from_secs(60), 2);

    // The call's own fault: failed, not counted.
    let result = guard
        .call(&run, &breaker, classify, || async {
            Err(Answer::BadArguments)
        })
        .await;
    assert!(matches!(result, ToolResult::Failed { counted: false, .. }));
    // A timeout, on the per-call limit.
    let result = guard
        .call(&run, &breaker, classify, std::future::pending)
        .await;
    assert!(matches!(result, ToolResult::Failed { counted: true, .. }));
    breaker.reset();
    // The budget of two attempts is spent.
    let result = guard
        .call(&run, &breaker, classify, || async { Ok("hits") })
        .await;
    assert!(matches!(result, ToolResult::Stopped { .. }));

    let spans = capture.spans();
    let calls: Vec<_> = spans.iter().filter(|s| s.name == "execute_tool").collect();
    let summary: Vec<_> = calls
        .iter()
        .map(|s| (s.fields["outcome"].clone(), s.fields["error.type"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            ("failed".into(), "ignored".into()),
            ("failed".into(), "timeout".into()),
            ("stopped".into(), "tool_call_budget".into()),
        ]
    );
    let timed_out = &calls[1].fields;
    assert_eq!(timed_out["duration_ms"], 500.0.into());
    let attempts: Vec<_> = spans.iter().filter(|s| s.name == "attempt").collect();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].fields["outcome"], "ignored".into());
    assert_eq!(attempts[1].fields["outcome"], "failure".into());
    assert_eq!(attempts[1].fields["error.type"], "timeout".into());
    assert_eq!(attempts[1].fields["duration_ms"], 500.0.into());
}

#[tokio::test(start_paused = true)]
async fn an_attempt_cut_by_the_runs_deadline_is_stopped_in_both_spans() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(1);
    let guard = ToolGuard::new(Duration::from_secs(5), no_jitter(0));
    let run = AgentRun::new("run-42", Duration::from_secs(1), 10);

    let result = guard
        .call(&run, &breaker, classify, std::future::pending)
        .await;
    assert!(matches!(result, ToolResult::Stopped { .. }));
    assert_eq!(breaker.state(), State::Closed, "nothing recorded");

    let spans = capture.spans();
    let call = only_span(&spans, "execute_tool");
    assert_eq!(spans[call].fields["outcome"], "stopped".into());
    assert_eq!(spans[call].fields["error.type"], "deadline".into());
    assert_eq!(spans[call].fields["attempt"], 1u32.into());
    let attempt = only_span(&spans, "attempt");
    assert_eq!(spans[attempt].fields["outcome"], "stopped".into());
    assert_eq!(spans[attempt].fields["error.type"], "deadline".into());
    assert_eq!(spans[attempt].fields["duration_ms"], 1000.0.into());
    assert!(capture.named("counted failure").is_empty());
}

// ---------------------------------------------------------------------------------------------
// Secrets

const SECRET: &str = "sk-live-SECRET-4242";

/// An error whose text holds the secret, both ways it can be printed.
struct SecretError(String);

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "upstream said: {}", self.0)
    }
}

impl fmt::Debug for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretError({:?})", self.0)
    }
}

impl std::error::Error for SecretError {}

/// A `MakeWriter` into a shared buffer, for the fmt layer.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Capture everything at TRACE on this thread, both as fields and as the fmt layer's text (every
/// span's opening and closing included), until the guard drops.
fn capture_with_text() -> (Capture, Buffer, crate::Subscribed) {
    let capture = Capture::default();
    let buffer = Buffer::default();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer({
            let buffer = buffer.clone();
            move || buffer.clone()
        })
        .with_ansi(false)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL);
    let subscriber = tracing_subscriber::registry()
        .with(capture.clone())
        .with(fmt)
        .with(tracing_subscriber::filter::LevelFilter::TRACE);
    let guard = crate::subscribe(subscriber);
    (capture, buffer, guard)
}

#[tokio::test(start_paused = true)]
async fn a_secret_in_a_request_response_or_error_never_reaches_a_subscriber() {
    let _turn = crate::turn();
    let (capture, buffer, _guard) = capture_with_text();

    let arguments = format!(r#"{{"query":"weather","api_key":"{SECRET}"}}"#);
    let body = format!(r#"{{"hits":[],"echo":"{SECRET}"}}"#);

    // 1. A direct call: the arguments go in, the secret comes back in the error, then in a body.
    let (direct, mock) = breaker(2);
    let classify_direct = |r: &Result<String, SecretError>| match r {
        Ok(_) => Outcome::Success,
        Err(_) => UNAVAILABLE,
    };
    for _ in 0..2 {
        let answer = direct.call(
            || Err(SecretError(format!("bad key {SECRET} for {arguments}"))),
            classify_direct,
        );
        assert!(matches!(answer, Err(CallError::Inner(_))));
    }
    assert!(matches!(
        direct.call(|| Ok(arguments.clone()), classify_direct),
        Err(CallError::Blocked(_))
    ));
    mock.increment(COOLDOWN);
    assert_eq!(
        direct.call(|| Ok(body.clone()), classify_direct).unwrap(),
        body
    );

    // 2. The pipeline: the arguments in the attempt, the secret in its error and in the body.
    let (piped, _mock) = breaker(2);
    let guard = ToolGuard::new(Duration::from_secs(1), no_jitter(1));
    let run = AgentRun::new("run-7", Duration::from_secs(60), 10);
    let result = guard
        .call(
            &run,
            &piped,
            |r: &Result<String, SecretError>| match r {
                Ok(_) => Outcome::Success,
                Err(_) => UNAVAILABLE,
            },
            || {
                let request = arguments.clone();
                async move { Err(SecretError(format!("rejected {request}"))) }
            },
        )
        .await;
    match &result {
        ToolResult::Failed { error, message, .. } => {
            assert_eq!(error, "unavailable", "the kind, never the error's text");
            assert!(!message.contains(SECRET), "{message}");
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert!(!result.to_json().unwrap().contains(SECRET));
    let blocked = guard
        .call(
            &run,
            &piped,
            |_: &Result<String, SecretError>| Outcome::Success,
            || async { Ok(body.clone()) },
        )
        .await;
    assert!(matches!(blocked, ToolResult::Blocked { .. }));
    piped.reset();
    let ok = guard
        .call(
            &run,
            &piped,
            |_: &Result<String, SecretError>| Outcome::Success,
            || async { Ok(body.clone()) },
        )
        .await;
    assert!(ok.is_ok());

    // 3. The tower layer: the secret in a header, the query string, the response and an error.
    let towered = Arc::new(breaker(2).0);
    let service = CircuitBreakerLayer::http(towered).layer(service_fn({
        let body = body.clone();
        move |request: http::Request<String>| {
            let body = body.clone();
            async move {
                if request.uri().path() == "/fail" {
                    return Err(SecretError(format!("refused {}", request.uri())));
                }
                Ok::<_, SecretError>(
                    http::Response::builder()
                        .status(503)
                        .header("x-echo", request.headers()["authorization"].clone())
                        .body(body)
                        .unwrap(),
                )
            }
        }
    }));
    let request = |path: &str| {
        http::Request::builder()
            .uri(format!("http://tools.internal{path}?api_key={SECRET}"))
            .header("authorization", format!("Bearer {SECRET}"))
            .body(arguments.clone())
            .unwrap()
    };
    let response = service.clone().oneshot(request("/search")).await.unwrap();
    assert_eq!(response.status(), 503);
    let error = service.clone().oneshot(request("/fail")).await.unwrap_err();
    assert!(error.to_string().contains(SECRET));
    let error = service
        .clone()
        .oneshot(request("/search"))
        .await
        .unwrap_err();
    assert!(error.is::<toolbreaker::Blocked>());

    // Events and spans did fire, and none of them holds the secret.
    let text = buffer.text();
    for expected in [
        "circuit breaker transition",
        "counted failure",
        "call blocked",
        "execute_tool",
        "attempt",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
    assert!(!text.contains(SECRET), "the secret leaked into:\n{text}");
    assert!(!text.contains("SECRET-4242"), "part of the secret leaked");
    let captured = format!("{:?}", capture.0.lock().unwrap());
    assert!(capture.events().len() >= 10, "{captured}");
    assert!(
        !captured.contains(SECRET),
        "the secret leaked into:\n{captured}"
    );
}

/// A real `reqwest::Error`, whose `Display` holds the request's URL with its query: a request to
/// a closed port on loopback. Through the pipeline, neither the model's result nor any span or
/// event holds the key. On tokio's real clock (the connection is refused at once; no timeout
/// decides anything), so the paused clock cannot fire the per-call timeout first.
#[tokio::test]
async fn a_reqwest_errors_url_never_reaches_the_model_or_a_subscriber() {
    let _turn = crate::turn();
    const KEY: &str = "SECRET123";
    let (capture, buffer, _guard) = capture_with_text();
    let port = {
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
        listener.local_addr().unwrap().port()
    }; // dropped: nothing listens there now
    let url = format!("http://127.0.0.1:{port}/v1/search?q=x&key={KEY}");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    // What the pipeline must keep from the model: the error's own words hold the key.
    let error = client.get(&url).send().await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    assert!(error.to_string().contains(KEY), "{error}");

    let (breaker, _mock) = breaker(10);
    let guard = ToolGuard::new(Duration::from_secs(10), no_jitter(0));
    let run = AgentRun::new("run-7", Duration::from_secs(60), 10);

    // The HTTP classifier, through `classify::with`, on the client's own result.
    let result = guard
        .call(
            &run,
            &breaker,
            classify::with(&HttpClassifier::new()),
            || client.get(&url).send(),
        )
        .await;
    let shown = format!("{result:?}");
    match &result {
        ToolResult::Failed {
            kind,
            http_status,
            error,
            ..
        } => assert_eq!(
            (*kind, *http_status, error.as_str()),
            (FailedKind::Connect, None, "could not connect")
        ),
        other => panic!("expected failed, got {other:?}"),
    }

    // A tool that returns the body as text: the JSON the model receives.
    let result = guard
        .call(
            &run,
            &breaker,
            |r: &Result<String, reqwest::Error>| match r {
                Ok(_) => Outcome::Success,
                Err(error) => classify_reqwest_error(error),
            },
            || async { client.get(&url).send().await?.text().await },
        )
        .await;
    let json = result.to_json().unwrap();
    assert!(json.contains(r#""kind":"connect""#), "{json}");

    for (what, text) in [
        ("the result", shown),
        ("the JSON", json),
        ("the fmt output", buffer.text()),
        (
            "the captured fields",
            format!("{:?}", capture.0.lock().unwrap()),
        ),
    ] {
        assert!(!text.contains(KEY), "the key leaked into {what}:\n{text}");
        assert!(
            !text.contains("key="),
            "the query leaked into {what}:\n{text}"
        );
    }
    let spans = capture.spans();
    let calls: Vec<_> = spans.iter().filter(|s| s.name == "execute_tool").collect();
    assert_eq!(calls.len(), 2, "the calls were traced: {spans:#?}");
    for call in calls {
        assert_eq!(call.fields["error.type"], "connect".into());
    }
}

/// A retry the retry budget refuses is one `info` event in the call's span, with the dependency
/// and the budget's numbers; the call's span ends `stopped` with `error.type` `retry_budget`.
#[tokio::test(start_paused = true)]
async fn a_retry_the_budget_refuses_is_an_event_with_its_numbers() {
    let _turn = crate::turn();
    let (capture, _guard) = capture();
    let (breaker, _mock) = breaker(10);
    let budget = toolbreaker::RetryBudget::new(0.5, 0, Duration::from_secs(10)).unwrap();
    let guard = ToolGuard::new(Duration::from_secs(2), no_jitter(3)).retry_budget(budget);
    let run = AgentRun::new("run-42", Duration::from_secs(60), 10);
    let result = guard
        .call(&run, &breaker, classify, || async {
            Err(Answer::Unavailable)
        })
        .await;
    assert!(matches!(result, ToolResult::Stopped { .. }), "{result:?}");

    let refused = capture.named("retry refused by the retry budget");
    assert_eq!(refused.len(), 1, "{:#?}", capture.events());
    assert_eq!(refused[0].level, tracing::Level::INFO);
    assert_eq!(refused[0].target, "toolbreaker");
    assert_fields(
        &refused[0].fields,
        &[
            ("dependency", "search".into()),
            ("ratio", 0.5.into()),
            ("min_per_second", 0u32.into()),
            ("window_ms", 10_000u64.into()),
            ("refused", 1u64.into()),
        ],
    );
    let spans = capture.spans();
    let call = only_span(&spans, "execute_tool");
    assert_eq!(refused[0].scope.first(), Some(&call));
    assert_eq!(spans[call].fields["outcome"], "stopped".into());
    assert_eq!(spans[call].fields["error.type"], "retry_budget".into());
}
