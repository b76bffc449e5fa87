//! [`GatewayConfigError`]: a configuration file that could not be read, parsed or validated.

use core::fmt;
use std::path::{Path, PathBuf};

/// A gateway configuration that could not be read, parsed or validated; nothing was changed.
///
/// Names the file (when read from one), the line (where the parser or the file tells it), the
/// section (`upstreams.search`, `upstreams.search.tools.query`, `default`, or in the JSON form
/// `mcpServers.search`) and the key at fault (`cooldown_ms`, `headers.Authorization`). Its
/// `Display` is the whole story on one line, in the file's own terms, such as
///
/// ```text
/// gateway.toml:7: [upstreams.search] headers.Authorization: environment variable SEARCH_TOKEN is not set
/// line 4: [upstreams.search] cooldown_ms: must be a whole number of ms from 1 to ..., not -1
/// mcpServers.files.comand: unknown key (did you mean `command`?); expected ...
/// ```
///
/// It never shows a secret: a value read from the environment is named, not printed.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::config::GatewayConfig;
///
/// let text = "[upstreams.search]\nurl = \"http://127.0.0.1:9/mcp\"\ncooldown_ms = 0\n";
/// let err = GatewayConfig::from_toml_str(text).unwrap_err();
/// assert_eq!((err.section(), err.key(), err.line()), (Some("upstreams.search"), Some("cooldown_ms"), Some(3)));
/// assert_eq!(err.to_string(), "line 3: [upstreams.search] cooldown_ms: it must be at least 1 ms");
/// ```
#[derive(Debug)]
pub struct GatewayConfigError(Box<Details>);

/// What a [`GatewayConfigError`] holds (boxed: an error is one pointer on the happy path's
/// `Result`).
#[derive(Debug)]
struct Details {
    path: Option<PathBuf>,
    line: Option<usize>,
    section: Option<String>,
    key: Option<String>,
    json: bool,
    problem: String,
    io: Option<std::io::Error>,
}

impl GatewayConfigError {
    /// An error in `section` (TOML's form), at `key`, on `line`.
    pub(super) fn toml(
        section: Option<String>,
        key: Option<&str>,
        line: Option<usize>,
        problem: impl Into<String>,
    ) -> Self {
        GatewayConfigError(Box::new(Details {
            path: None,
            line,
            section,
            key: key.map(str::to_owned),
            json: false,
            problem: problem.into(),
            io: None,
        }))
    }

    /// An error in the `mcpServers` JSON, in `section`, at `key`, on `line`.
    pub(super) fn json(
        section: Option<String>,
        key: Option<&str>,
        line: Option<usize>,
        problem: impl Into<String>,
    ) -> Self {
        let mut error = GatewayConfigError::toml(section, key, line, problem);
        error.0.json = true;
        error
    }

    /// The file at `path` could not be read.
    pub(super) fn unreadable(path: &Path, io: std::io::Error) -> Self {
        let mut error =
            GatewayConfigError::toml(None, None, None, format!("cannot read the file: {io}"));
        error.0.io = Some(io);
        error.in_file(path)
    }

    /// The same error, read from the file at `path` (unless it names a file already: one the
    /// file at `path` imports).
    pub(super) fn in_file(mut self, path: &Path) -> Self {
        self.0.path.get_or_insert_with(|| path.to_owned());
        self
    }

    /// The file it was read from, if it was read from one.
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// The 1-based line at fault, when the parser or the file tells it.
    pub fn line(&self) -> Option<usize> {
        self.0.line
    }

    /// The section at fault, as a dotted path: `upstreams.search`,
    /// `upstreams.search.tools.query`, `default`, `mcpServers.search`; `None` for the file as a
    /// whole or its top level.
    pub fn section(&self) -> Option<&str> {
        self.0.section.as_deref()
    }

    /// The key at fault (`cooldown_ms`, `headers.Authorization`, an unknown key), if one is.
    pub fn key(&self) -> Option<&str> {
        self.0.key.as_deref()
    }

    /// What is wrong, without the file, line, section and key.
    pub fn problem(&self) -> &str {
        &self.0.problem
    }

    /// The error reading the file, when that is what failed (its text is in the `Display`).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.0.io.as_ref()
    }
}

impl fmt::Display for GatewayConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.0;
        match (&d.path, d.line) {
            (Some(path), Some(line)) => write!(f, "{}:{line}: ", path.display())?,
            (Some(path), None) => write!(f, "{}: ", path.display())?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        match (&d.section, &d.key, d.json) {
            (Some(section), Some(key), false) => write!(f, "[{section}] {key}: ")?,
            (Some(section), None, false) => write!(f, "[{section}]: ")?,
            (Some(section), Some(key), true) => write!(f, "{section}.{key}: ")?,
            (Some(section), None, true) => write!(f, "{section}: ")?,
            (None, Some(key), _) => write!(f, "{key}: ")?,
            (None, None, _) => {}
        }
        f.write_str(&d.problem)
    }
}

impl std::error::Error for GatewayConfigError {
    /// The cause of the I/O error that stopped the file being read, if it has one (the I/O
    /// error's own text is already in this error's `Display`).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.io.as_ref()?.source()
    }
}

/// `name` as one part of a dotted path: bare when TOML allows it bare, else quoted.
pub(crate) fn path_part(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}
