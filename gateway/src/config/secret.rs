//! [`Secret`]: a credential read from the configuration (a header value, a child's environment
//! variable) that no `Debug` or `Display` shows.

use core::fmt;

/// A credential from the configuration: an upstream's header value or a stdio child's
/// environment variable, after `${VAR}` expansion. Its `Debug` and `Display` print `<redacted>`,
/// so a logged [`UpstreamConfig`](super::UpstreamConfig), `/status` or an error never shows it;
/// [`expose`](Self::expose) gives the value to the one place that sends it.
///
/// Equality compares the values (a reload tells a changed token from an unchanged one); it is
/// not constant-time, so it is for configurations, not for checking a client's token.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::config::Secret;
///
/// let token = Secret::new("Bearer s3cr3t");
/// assert_eq!(token.expose(), "Bearer s3cr3t");
/// assert_eq!(format!("{token} {token:?}"), "<redacted> <redacted>");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret holding `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the header or environment it is meant for (never for a log).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neither_debug_nor_display_shows_the_value() {
        let secret = Secret::new("hunter2");
        let shown = format!("{secret} {secret:?} {:?}", vec![("k", secret.clone())]);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(secret.expose(), "hunter2");
        assert_ne!(secret, Secret::new("hunter3"));
    }
}
