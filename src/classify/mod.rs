//! Outcomes, failure kinds, and the classification of a call's result.
//!
//! Only failures that say the dependency is unhealthy count toward tripping a breaker. A call that
//! failed because of the caller (bad arguments, auth, not found) is [`Outcome::Ignored`]: it neither
//! counts nor clears the run of failures.

mod classifier;
#[cfg(feature = "http")]
mod hints;
#[cfg(feature = "http")]
pub mod http;
mod outcome;
#[cfg(feature = "reqwest")]
pub mod reqwest;

pub use self::classifier::{Classify, with};
pub use self::outcome::{Classified, FailureKind, Outcome};
