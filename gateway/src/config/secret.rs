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

/// The shortest text from the environment that is replaced in free text (a log line, a
/// library's error, a child's stderr): 8 characters. A field (`url`, `command`, an argument,
/// `cwd`) of at least that length that holds a `${VAR}` is replaced by its shown form, the value
/// `<redacted>` whatever its length (`http://h:<redacted>/mcp`); a value of at least that length
/// is replaced anywhere. Shorter ones (a port, a log level, `1`) are not searched for on their
/// own, since that would blank ordinary numbers and words out of every line, and no credential
/// is that short. Header and `env` values are credentials by their field: the log replaces them
/// from 4 characters.
pub const SHORTEST_ENV_VALUE: usize = 8;

/// What of one upstream's settings came from the environment (`${VAR}`), so that it is never
/// shown: each value a variable gave, and each `url`, `command`, argument and `cwd` that holds
/// one with its shown form (the value replaced by `<redacted>`).
///
/// Its `Debug` shows only how many values it holds.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::config::GatewayConfig;
///
/// let config = GatewayConfig::from_toml_str_with(
///     "[upstreams.a]\nurl = \"http://127.0.0.1:9/k/${KEY}/mcp\"\n",
///     |name| (name == "KEY").then(|| "k3y-0123456789".to_owned()),
/// )?;
/// let redaction = &config.upstreams[0].redaction;
/// assert_eq!(
///     redaction.apply("error sending request for url (http://127.0.0.1:9/k/k3y-0123456789/mcp)"),
///     "error sending request for url (http://127.0.0.1:9/k/<redacted>/mcp)"
/// );
/// assert_eq!(redaction.apply("key k3y-0123456789"), "key <redacted>");
/// # Ok::<(), toolbreaker_gateway::config::GatewayConfigError>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    /// (the text as expanded, as shown), for each field that holds a variable's value.
    fields: Vec<(String, String)>,
    /// Each value a variable gave.
    values: Vec<Secret>,
}

impl Redaction {
    /// Records a field's value after expansion.
    pub(crate) fn record(&mut self, expanded: &super::env::Expanded) {
        if expanded.values.is_empty() {
            return;
        }
        if expanded.text != expanded.shown
            && !self.fields.iter().any(|(text, _)| *text == expanded.text)
        {
            self.fields
                .push((expanded.text.clone(), expanded.shown.clone()));
        }
        for value in &expanded.values {
            if !self.values.iter().any(|v| v.expose() == value) {
                self.values.push(Secret::new(value.clone()));
            }
        }
    }

    /// Records `printed`, another way of writing the field whose expanded value is `field` (a
    /// URL as a library prints it, normalised and percent-encoded), with the field's shown form.
    pub(crate) fn alias(&mut self, printed: &str, field: &str) {
        let shown = self.shown(field).to_owned();
        if printed != field
            && shown != field
            && !self.fields.iter().any(|(text, _)| text == printed)
        {
            self.fields.push((printed.to_owned(), shown));
        }
    }

    /// Whether nothing came from the environment.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// What to replace in free text, and with what, longest first: each field that holds a
    /// value with its shown form, then each value with `<redacted>`; of each, those of
    /// [`SHORTEST_ENV_VALUE`] characters or more (a field that is only `${ROOT}`, `/`, would
    /// otherwise blank every `/`).
    pub fn replacements(&self) -> Vec<(&str, &str)> {
        let mut all: Vec<(&str, &str)> = self
            .fields
            .iter()
            .map(|(text, shown)| (text.as_str(), shown.as_str()))
            .filter(|(text, _)| text.chars().count() >= SHORTEST_ENV_VALUE)
            .chain(
                self.values
                    .iter()
                    .map(Secret::expose)
                    .filter(|v| v.chars().count() >= SHORTEST_ENV_VALUE)
                    .map(|v| (v, super::env::REDACTED)),
            )
            .collect();
        all.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        all
    }

    /// `text` with every [replacement](Self::replacements) made.
    pub fn apply(&self, text: &str) -> String {
        self.replacements()
            .into_iter()
            .fold(text.to_owned(), |text, (from, to)| text.replace(from, to))
    }

    /// The shown form of a field's whole value (`url`, `command`, an argument, `cwd`):
    /// `<redacted>` where a variable's value is, whatever its length; `text` itself when it
    /// holds none.
    pub fn shown<'a>(&'a self, text: &'a str) -> &'a str {
        self.fields
            .iter()
            .find(|(expanded, _)| expanded == text)
            .map_or(text, |(_, shown)| shown.as_str())
    }
}

impl fmt::Debug for Redaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redaction({} values)", self.values.len())
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

    #[test]
    fn a_redaction_shows_fields_whole_and_long_values_anywhere() {
        let env = |name: &str| match name {
            "KEY" => Some("longsecret1".to_owned()),
            "PORT" => Some("8080".to_owned()),
            _ => None,
        };
        let mut redaction = Redaction::default();
        for text in ["http://h:${PORT}/k/${KEY}/mcp", "--port=${PORT}", "plain"] {
            redaction.record(&super::super::env::expand_traced(text, &env).unwrap());
        }
        assert_eq!(
            redaction.shown("http://h:8080/k/longsecret1/mcp"),
            "http://h:<redacted>/k/<redacted>/mcp"
        );
        assert_eq!(redaction.shown("--port=8080"), "--port=<redacted>");
        assert_eq!(redaction.shown("plain"), "plain");
        assert_eq!(
            redaction.apply("GET http://h:8080/k/longsecret1/mcp; longsecret1 on 8080"),
            "GET http://h:<redacted>/k/<redacted>/mcp; <redacted> on 8080",
            "a short value is replaced only as part of its field"
        );
        assert_eq!(format!("{redaction:?}"), "Redaction(2 values)");
    }
}
