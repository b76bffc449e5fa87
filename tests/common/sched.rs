//! What a call waited for, with the scheduler's share taken out: a stopwatch that gives the time
//! since it started less the time this thread spent runnable but waiting for a CPU.
//!
//! A test that proves a call never waits cannot bound the call's wall-clock time: on a busy
//! machine the thread is descheduled mid-call for as long as the other runnable threads take
//! (21 ms was seen against a 20 ms bound). Linux counts, per thread, the nanoseconds it spent on a
//! run queue (`/proc/thread-self/schedstat`, second field; see the kernel's
//! `Documentation/scheduler/sched-stats.rst`). Subtracted from the elapsed time, what is left is
//! the time the thread ran or was blocked (on a lock, on I/O, on a sleep): a call that waits on
//! something shows here however busy the machine is. What is left can still grow with load in two
//! ways, which is why the bounds on it are in seconds: blocking on a lock whose holder is
//! descheduled (the holder's run-queue time is not this thread's), and time the hypervisor takes
//! from a virtual CPU (the guest sees the thread running).
//!
//! Linux only (and a kernel that keeps these counts, `CONFIG_SCHED_INFO`): elsewhere
//! [`RunQueue::this_thread`] panics and says so.

#![allow(dead_code)]

use std::fs::File;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The calling thread's run-queue counter, open for cheap repeated reads. Not `Send`: the file is
/// the thread that opened it, whichever thread reads it.
pub struct RunQueue {
    file: File,
    _this_thread: PhantomData<*const ()>,
}

impl RunQueue {
    /// The calling thread's counter.
    ///
    /// # Panics
    ///
    /// Off Linux, or where the kernel keeps no per-thread run-queue counts.
    #[cfg(target_os = "linux")]
    pub fn this_thread() -> RunQueue {
        const PATH: &str = "/proc/thread-self/schedstat";
        let file = File::open(PATH).unwrap_or_else(|e| {
            panic!("cannot open {PATH} ({e}): the no-wait checks need Linux's per-thread schedstat")
        });
        let queue = RunQueue {
            file,
            _this_thread: PhantomData,
        };
        // This thread is running, so it has been given a CPU at least once: a zero count of
        // timeslices means the kernel counts nothing.
        assert!(
            queue.read().2 > 0,
            "{PATH} reads 0 timeslices: this kernel keeps no run-queue counts (CONFIG_SCHED_INFO), \
             which the no-wait checks need"
        );
        queue
    }

    /// The calling thread's counter.
    ///
    /// # Panics
    ///
    /// Always: the no-wait checks read Linux's per-thread schedstat, which this system lacks.
    #[cfg(not(target_os = "linux"))]
    pub fn this_thread() -> RunQueue {
        panic!(
            "the no-wait checks read Linux's per-thread run-queue time \
             (/proc/thread-self/schedstat); run these tests on Linux"
        )
    }

    /// Nanoseconds on a CPU, nanoseconds waiting on a run queue, timeslices run.
    #[cfg(target_os = "linux")]
    fn read(&self) -> (u64, u64, u64) {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        // A read at offset 0 makes the kernel format the counts afresh.
        let n = self.file.read_at(&mut buf, 0).expect("read schedstat");
        let text = std::str::from_utf8(&buf[..n]).expect("schedstat is text");
        let mut fields = text.split_ascii_whitespace().map(|f| {
            f.parse::<u64>()
                .unwrap_or_else(|e| panic!("schedstat field {f:?}: {e} in {text:?}"))
        });
        let mut next = || {
            fields
                .next()
                .unwrap_or_else(|| panic!("schedstat {text:?}"))
        };
        (next(), next(), next())
    }

    #[cfg(not(target_os = "linux"))]
    fn read(&self) -> (u64, u64, u64) {
        unreachable!("no RunQueue is made off Linux")
    }

    /// How long this thread has waited on a run queue since it started.
    pub fn queued(&self) -> Duration {
        Duration::from_nanos(self.read().1)
    }

    /// A stopwatch started now.
    pub fn stopwatch(&self) -> Stopwatch<'_> {
        // The clock first, then the counter, so every run-queue wait the counter shows from
        // here on lies inside the stopwatch's time.
        let started = Instant::now();
        let queued = self.queued();
        Stopwatch {
            queue: self,
            started,
            queued,
        }
    }
}

/// Time since its start less this thread's run-queue time since then.
pub struct Stopwatch<'a> {
    queue: &'a RunQueue,
    started: Instant,
    queued: Duration,
}

impl Stopwatch<'_> {
    /// The time since the start that this thread ran or was blocked: the elapsed time less its
    /// time waiting on a run queue.
    ///
    /// Never less than what the thread was blocked for: a wait shows in full. (The counter is
    /// read inside the elapsed time, so the run-queue time subtracted all lies within it; a
    /// thread descheduled during the reads themselves shows that time, which only adds.)
    pub fn unqueued(&self) -> Duration {
        let queued = self.queue.queued().saturating_sub(self.queued);
        self.started.elapsed().saturating_sub(queued)
    }
}

/// A blocked thread's time is not run-queue time: a sleep shows in full, so a call that waits
/// cannot hide in the subtraction.
#[test]
fn a_sleep_shows_in_full_as_unqueued_time() {
    let queue = RunQueue::this_thread();
    let watch = queue.stopwatch();
    std::thread::sleep(Duration::from_millis(50));
    let unqueued = watch.unqueued();
    assert!(unqueued >= Duration::from_millis(50), "{unqueued:?}");
}
