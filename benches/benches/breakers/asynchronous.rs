//! Async: `CircuitBreaker::run` around a ready future, against awaiting the future bare.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::Criterion;

use crate::peers::*;

/// Poll a future once with a no-op waker; the futures here are always ready.
fn poll_ready<F: Future>(fut: F) -> F::Output {
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the future is ready"),
    }
}

/// Group 7: The overhead `run` adds to a ready future (no runtime: one poll by hand).
pub fn run(c: &mut Criterion) {
    let mut g = c.benchmark_group("async_ready_future");
    let tb = toolbreaker(5, Duration::from_secs(3600));
    g.bench_function("bare", |b| {
        b.iter(|| black_box(poll_ready(async { op(false) })))
    });
    g.bench_function("toolbreaker_run", |b| {
        b.iter(|| black_box(poll_ready(tb.run(async { op(false) }, classify))))
    });
    g.finish();
}
