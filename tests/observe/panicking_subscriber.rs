//! A tracing subscriber that panics on the `counted failure` event: the event is the
//! subscriber's code and runs before a probe's report lands, so unwinding from it must give the
//! probe's slot back (as dropping the permit would) rather than hold it until the lease ends.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use toolbreaker::{CircuitBreaker, FailureKind, Outcome, State};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

struct PanicOnFailureEvent;

impl<S: Subscriber> Layer<S> for PanicOnFailureEvent {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0 == "counted failure" {
            panic!("the subscriber failed");
        }
    }
}

#[test]
fn a_subscriber_panicking_on_a_probes_failure_event_gives_the_probe_slot_back() {
    let _turn = crate::turn();
    let subscriber = tracing_subscriber::registry().with(PanicOnFailureEvent);
    let _guard = crate::subscribe(subscriber);
    let (clock, mock) = toolbreaker::quanta::Clock::mock();
    let breaker = CircuitBreaker::builder()
        .failure_threshold(1)
        .cooldown(Duration::from_millis(100))
        .probe_timeout(Duration::from_secs(60))
        .clock(clock)
        .build()
        .unwrap();
    let first = breaker.try_acquire().unwrap();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        first.record(Outcome::Failure(FailureKind::Timeout))
    }));
    assert!(
        panicked.is_err(),
        "the subscriber's panic reaches the caller"
    );
    assert_eq!(
        breaker.state(),
        State::Closed,
        "the failure was not recorded: the panic came before the report"
    );

    // Open the breaker with the event off, then make the probe's failure event panic.
    drop(_guard);
    breaker
        .try_acquire()
        .unwrap()
        .record(Outcome::Failure(FailureKind::Timeout));
    mock.increment(Duration::from_millis(100));
    let _guard = crate::subscribe(tracing_subscriber::registry().with(PanicOnFailureEvent));
    let probe = breaker.try_acquire().unwrap();
    assert!(probe.is_probe());
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        probe.record(Outcome::Failure(FailureKind::Unavailable))
    }));
    assert!(panicked.is_err());
    let next = breaker.try_acquire().expect(
        "the slot was given back: the next caller is the probe, long before the lease ends",
    );
    assert!(next.is_probe());
}
