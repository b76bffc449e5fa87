//! Why a fleet could not be built or did not connect.

use core::fmt;

use super::redact::redact;
use crate::config::ConfigError;

/// Why a [`Fleet`](super::Fleet) could not be built
/// ([`FleetBuilder::build`](super::FleetBuilder::build)) or did not connect
/// ([`FleetHandle::connected`](super::FleetHandle::connected)). No variant holds a URL's
/// password (see [`redact`](super::redact())).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FleetError {
    /// A setting is invalid; the error names the field.
    Config(ConfigError),
    /// The URL is not a Redis URL; the parser's message.
    Url(String),
    /// [`FleetBuilder::build`](super::FleetBuilder::build) was called outside a Tokio runtime.
    NoRuntime,
    /// Redis refused this instance: a wrong or missing password or user, or a command the
    /// user's ACL denies (the server's answer). A configuration error.
    Refused(String),
    /// No connection within the time waited, in ms; the last error met, if any.
    Timeout {
        /// How long was waited, in ms.
        waited_ms: u64,
        /// The last error (Redis unreachable, a connection refused, no answer), if any.
        last: Option<String>,
    },
}

impl fmt::Debug for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Config(error) => f.debug_tuple("Config").field(error).finish(),
            FleetError::Url(error) => f.debug_tuple("Url").field(&redact(error)).finish(),
            FleetError::NoRuntime => f.write_str("NoRuntime"),
            FleetError::Refused(error) => f.debug_tuple("Refused").field(&redact(error)).finish(),
            FleetError::Timeout { waited_ms, last } => f
                .debug_struct("Timeout")
                .field("waited_ms", waited_ms)
                .field("last", &last.as_deref().map(redact))
                .finish(),
        }
    }
}

impl From<ConfigError> for FleetError {
    fn from(error: ConfigError) -> Self {
        FleetError::Config(error)
    }
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Config(error) => error.fmt(f),
            FleetError::Url(error) => write!(f, "invalid Redis URL: {}", redact(error)),
            FleetError::Refused(error) => write!(
                f,
                "Redis refused this instance (check the URL's user and password and the user's ACL): {}",
                redact(error)
            ),
            FleetError::Timeout {
                waited_ms,
                last: Some(last),
            } => write!(
                f,
                "no connection to Redis within {waited_ms} ms; the last error: {}",
                redact(last)
            ),
            FleetError::Timeout {
                waited_ms,
                last: None,
            } => write!(f, "no connection to Redis within {waited_ms} ms"),
            FleetError::NoRuntime => f.write_str(
                "a fleet must be built inside a Tokio runtime: its worker is spawned on it",
            ),
        }
    }
}

impl std::error::Error for FleetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FleetError::Config(error) => Some(error),
            _ => None,
        }
    }
}
