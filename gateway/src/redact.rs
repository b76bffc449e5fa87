//! Credentials kept out of the log: every line the gateway logs (its own, and rmcp's, reqwest's
//! and the stdio children's stderr) is written through [`Redactor`], which replaces each
//! credential of the config in force with `<redacted>`: header values, stdio `env` values, a
//! URL's user, password and query string, and the bearer token.

use std::io::Write;
use std::sync::{OnceLock, PoisonError, RwLock};

use tracing_subscriber::fmt::MakeWriter;

use crate::config::{GatewayConfig, Secret, Transport};

/// The process's redactor (the log is the process's).
pub fn redactor() -> &'static Redactor {
    static REDACTOR: OnceLock<Redactor> = OnceLock::new();
    REDACTOR.get_or_init(Redactor::default)
}

/// The credentials to keep out of the log; see the [module](self).
#[derive(Debug, Default)]
pub struct Redactor {
    secrets: RwLock<Vec<String>>,
}

/// Shorter values are not redacted (a header `X-Debug: 1`): they would blank out ordinary
/// words, and say nothing of a credential.
const SHORTEST: usize = 4;

impl Redactor {
    /// The credentials of `config` and `token` are redacted from now on, besides those given
    /// before (at start, then for each reloaded file: an old upstream may still log while it
    /// ends).
    pub fn add(&self, config: &GatewayConfig, token: Option<&Secret>) {
        let mut secrets = self
            .secrets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut add = |value: &str| {
            // The whole value, and each word of it (`Bearer TOKEN`: the token alone too).
            for part in std::iter::once(value).chain(value.split_whitespace()) {
                if part.len() >= SHORTEST && !secrets.iter().any(|s| s == part) {
                    secrets.push(part.to_owned());
                }
            }
        };
        for upstream in &config.upstreams {
            match &upstream.transport {
                Transport::Http { url, headers } => {
                    for part in crate::upstream::url_credentials(url) {
                        add(&part);
                    }
                    headers.iter().for_each(|(_, value)| add(value.expose()));
                }
                Transport::Stdio { env, .. } => {
                    env.iter().for_each(|(_, value)| add(value.expose()))
                }
            }
        }
        if let Some(token) = token {
            add(token.expose());
        }
        // Longest first: a secret that holds another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        *self.secrets.write().unwrap_or_else(PoisonError::into_inner) = secrets;
    }

    /// `text` with every credential replaced by `<redacted>`.
    pub fn apply(&self, text: &str) -> String {
        let secrets = self.secrets.read().unwrap_or_else(PoisonError::into_inner);
        secrets.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), "<redacted>")
        })
    }
}

/// One log line on its way to stderr: kept until it is complete (the writer is dropped after
/// each event), then redacted and written at once.
#[derive(Debug)]
pub struct Line {
    redactor: &'static Redactor,
    text: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let line = self.redactor.apply(&String::from_utf8_lossy(&self.text));
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

impl<'a> MakeWriter<'a> for &'static Redactor {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            redactor: self,
            text: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_credential_of_the_config_is_redacted_and_nothing_else() {
        let text = r#"
[upstreams.a]
url = "http://user:pw1234@127.0.0.1:9/mcp?api_key=QSTOKEN123"
headers = { Authorization = "Bearer HDRSECRET99", X-Debug = "1" }
[upstreams.b]
command = "server"
env = { API_KEY = "envsecret42" }
"#;
        let config = GatewayConfig::from_toml_str(text).unwrap();
        let redactor = Redactor::default();
        redactor.add(&config, Some(&Secret::new("gateway-token")));
        let line = "url http://user:pw1234@127.0.0.1:9/mcp?api_key=QSTOKEN123 Bearer HDRSECRET99 \
                    HDRSECRET99 envsecret42 gateway-token X-Debug: 1 user";
        let shown = redactor.apply(line);
        for secret in [
            "QSTOKEN123",
            "pw1234",
            "HDRSECRET99",
            "envsecret42",
            "gateway-token",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("127.0.0.1:9/mcp") && shown.ends_with("X-Debug: 1 <redacted>"),
            "{shown}"
        );
    }
}
