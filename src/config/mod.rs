//! Validated breaker settings: [`Config`], and [`ConfigError`] naming the field that is wrong.
//!
//! Imports nothing above the time seam: every other layer builds on it. The files, bottom up:
//! `defaults` (the defaults and the largest values accepted), `error` (`ConfigError`,
//! `Problem`), `fields` (one field's check), `shape` (the cooldown's backoff and jitter),
//! `rates` (`Window` and the rate rules), `concurrency` (the cap on calls in flight and
//! `Limit`), `throttling` (client-side adaptive throttling's settings), `limits` (a configuration
//! in the word's units), and
//! `validated` (`Config`: the whole validation and its accessors).

mod concurrency;
mod defaults;
mod error;
mod fields;
mod limits;
mod rates;
mod shape;
mod throttling;
mod validated;

pub use self::concurrency::Limit;
pub use self::defaults::{
    DEFAULT_COOLDOWN, DEFAULT_FAILURE_THRESHOLD, DEFAULT_HINT_JITTER, DEFAULT_MAX_HINTED_OPEN,
    DEFAULT_PROBE_TIMEOUT, MAX_DURATION, MAX_PROBES,
};
pub use self::error::{ConfigError, Problem};
pub use self::rates::{DEFAULT_MINIMUM_CALLS, DEFAULT_WINDOW, Window};
pub use self::validated::Config;

pub(crate) use self::defaults::MAX_DURATION_MS;
// The field checks fleet mode's and MCP's builders share.
pub(crate) use self::concurrency::{Adaptive, Algorithm, Concurrency, ConcurrencySettings};
#[cfg(any(feature = "redis", feature = "mcp"))]
pub(crate) use self::fields::{duration_field, name_field};
pub(crate) use self::limits::Limits;
pub(crate) use self::rates::{RateSettings, Rates, WindowLimit};
pub(crate) use self::shape::{Shape, ShapeSettings};
pub(crate) use self::throttling::Throttling;
