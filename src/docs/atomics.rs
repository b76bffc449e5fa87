//! Every atomic in the breaker, what it holds, and the ordering of each operation on it.
//!
//! Each atomic that takes part in a protocol is the private field of one small type, its *cell*,
//! in a file of its own, which owns the atomic's layout and its only read-modify-write; every
//! atomic is imported through one shim (`sync`), so the model checks (`--cfg loom`) swap in loom's
//! where it matters. *Loom* below marks the atomics loom explores; the others are
//! `portable-atomic`'s under loom too, because they order nothing.
//!
//! # The state (`state/`)
//!
//! | cell | atomic | holds | operations and orderings |
//! |---|---|---|---|
//! | `word::WordCell` | `word` (loom) | the state word: kind, generation, payload | load `Acquire`; `compare_exchange_weak` `AcqRel` on success, `Acquire` on failure (the one read-modify-write). Each write publishes what its caller did before it (a probe's call, a reconfiguration's stores of the settings); each load acquires the newest write it sees. |
//! | `slots::SlotsCell` | `slots` (loom) | the several probes' slots: generation, claimed, succeeded | load `Acquire`; `fetch_update` `AcqRel` / `Acquire`. The count is exact from this atomic's total order alone; the orderings keep a claimer's re-reading of the word after its claim. |
//! | `settings::Settings` | `failure_threshold` (loom) | the threshold in force | load and store `Relaxed`: published by the reconfiguration's read-modify-write of the word, after the stores; a report whose swap reads from that write sees the new threshold. |
//! | `settings::Settings` | `cooldown`, `lease` | the cooldown (with its `SHAPED` flag), the probe timeout and the probes (with the `CAPPED` flag: the breaker has a cap on calls in flight) | load and store `Relaxed`: read afresh by every decision, ordering nothing; `CAPPED` is set once by `fetch_or` after the cap's cell is made, and a caller that misses it admits one call without a slot. |
//! | `cooldown::Cooldown` | `multiplier_ppm`, `max_cooldown_ms`, `jitter_ppm` | the cooldown's shape | load and store `Relaxed`, as the other settings. |
//! | `cooldown::Cooldown` | `in_force` | the record of the cooldown in force: generation, base | load and store `Relaxed`: written before the swap that enters its generation (whose release publishes it) and again by the writer that landed. |
//!
//! # Beside the word (`breaker/`)
//!
//! | cell | atomic | holds | operations and orderings |
//! |---|---|---|---|
//! | `window::Windows` | each stripe's `calls`, `time` | a thread stripe's judged calls (count windows), or its calls per time bucket with the bucket's tag | `fetch_add` and `compare_exchange_weak` `Relaxed`: a count orders nothing; the judge reads whatever has landed. |
//! | `window::Windows` | `slots` (128 bits each) | a shared bucket: tag (generation, number), failures, slow calls | `compare_exchange_weak` `Relaxed`: the tag and both counts change in one swap, so no count moves to another bucket. |
//! | `window::Windows` | `header` (128 bits) | the generation counted, its first time bucket, its base | load and store `Relaxed`: the word's swap decides every trip; an older header judges fewer calls, not wrong ones. |
//! | `window::Windows` | `rate_ppm`, `slow_ns`, `window`, `minimum_calls` | the rate rules in force | load and store `Relaxed`, published by the reconfiguration's write of the word. |
//! | `throttle::Throttle` | `p` | adaptive throttling's probability (`f64` bits, 0 while not shedding), alone on its line | load and store `Relaxed`: every closed admission of a throttled breaker loads it; only the slow paths store it, and it orders nothing. |
//! | `throttle::Throttle` | each own stripe | `accepts·2^32 + requests` of the one thread whose index it is | load and store `Relaxed`, no read-modify-write: no other thread ever writes it (`thread_index` is never handed out twice), so no count is lost; readers sum whatever has landed. |
//! | `throttle::Throttle` | each shared stripe | the same, for threads with a larger index | `fetch_add` `Relaxed`. |
//! | `throttle::Throttle` | `ring`, `latest`, `restart` (128 bits each) | snapshots: an epoch and a time above the stripes' sum | `compare_exchange_weak` (the ring: the first in a bucket wins) and store `Relaxed`: a snapshot orders nothing; an older one gives an estimate, not a wrong count. |
//! | `throttle::Throttle` | `k_bits`, `window_ms`, `computed` | the settings in force, and the bucket of the last computation | load and store `Relaxed`, as the other settings. |
//! | `cap::Cap` | `slots` (loom) | the cap on calls in flight: the limit in force and the calls holding a slot, one word on a cache line of its own | claim: `compare_exchange_weak` `Relaxed`, written only while the count is below the limit (no overshoot to roll back); release: `fetch_sub` `Relaxed`; a new limit: `compare_exchange_weak` `Relaxed`. The cap is exact from this atomic's total order alone, and it publishes nothing. |
//! | `cap::Cap` | `estimate` (loom) | the adaptive limit: its value and the gradient's baseline or AIMD's last decrease | `compare_exchange_weak` `Relaxed`: each sample moves it from the value it read; its whole part is then written into `slots`. |
//! | `cap::Cap` | `settings` | the cap's configuration | load and store `Relaxed`, stored under the reconfiguration's lock and read afresh by each sample. |
//! | `fleet::tap::Tap` (feature `redis`; the breaker's hook) | `flags` | what the breaker has to tell the fleet's worker | `fetch_or` and `swap` `AcqRel` (a signal set after the worker's swap queues the breaker again); a `Relaxed` load skips a signal already set. |
//! | `fleet::tap::Tap` | `governed`, `grant` | whether the fleet chooses the probe, and the slot it gave this instance | store `Release`, load `Acquire`: a caller that sees a grant sees the word the worker freed before granting it (the word's own swap still makes the claim exclusive). |
//! | `fleet::tap::Tap` | `elsewhere_until_ms` | when another instance's probe lease ends | `Relaxed`: it only shapes a retry-after. |
//! | `machine::Cold` | `prober` (a `once_cell::race::OnceBox`) | a health check's prober, once started (`Builder::probe_with`) | set once by a compare-and-swap of its pointer, read with `Acquire` (once_cell's): a caller that finds it reads the prober as it was made. Read only where the probe slot is about to be claimed and where a transition is told. |
//! | `prober::Prober` | `alive` (loom) | whether the prober's task still runs | store `Release` when the task ends (however it ends), load `Acquire` by the gate on the probe slot: it orders nothing else, and a stale `true` only blocks a caller for one more try, with `probe_in_flight`. |
//!
//! # Counters
//!
//! The metrics counters (`observe::counters`) and a registry's idle-eviction marks
//! (`registry::eviction`) are `Relaxed` adds and loads: each is a count or a time that orders
//! nothing, read one after another while calls go on. So are the fleet's counters
//! (`fleet::status::Status`: commands, messages, adoptions, outages, bad records, claims won),
//! `RelaxedU64`s read by `FleetHandle::stats`; its `connected` flag (an `AtomicBool`) is stored
//! `Release` by the worker and loaded `Acquire` by `FleetHandle::is_connected`, so a caller that
//! reads `true` also sees the syncs the worker made before setting it, and one that reads `false`
//! sees every breaker's tap already ungoverned (the worker clears the taps before the flag), so
//! its next call may take a local probe.
