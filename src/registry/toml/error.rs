//! [`ConfigFileError`]: a configuration file that could not be read, parsed or validated.

use core::fmt;

/// A configuration file that could not be read, parsed or validated. Nothing was changed.
///
/// Names the dependency (`None` for `[default]` or the file as a whole) and the field when the
/// fault is in one; a syntax error gives the line.
///
/// Its `Display` is the whole story on one line, the parser's or the file system's words
/// included, so it is not repeated by [`source`](std::error::Error::source) (which goes on with
/// the cause of an I/O error, if it has one); a file that could not be read keeps its
/// [`io_error`](Self::io_error).
#[derive(Debug)]
pub struct ConfigFileError {
    pub(super) dependency: Option<String>,
    /// The pool whose `[pools.NAME]` table is at fault.
    pub(super) pool: Option<String>,
    pub(super) field: Option<String>,
    pub(super) line: Option<usize>,
    pub(super) problem: String,
    pub(super) io: Option<std::io::Error>,
}

impl ConfigFileError {
    pub(super) fn at(
        dependency: Option<&str>,
        field: Option<&str>,
        problem: impl Into<String>,
    ) -> Self {
        ConfigFileError {
            dependency: dependency.map(str::to_owned),
            pool: None,
            field: field.map(str::to_owned),
            line: None,
            problem: problem.into(),
            io: None,
        }
    }

    /// The dependency whose section is at fault; `None` for `[default]` or the whole file.
    pub fn dependency(&self) -> Option<&str> {
        self.dependency.as_deref()
    }

    /// The same error, in pool `pool`'s `[pools.NAME]` table.
    pub(super) fn in_pool(mut self, pool: &str) -> Self {
        self.pool = Some(pool.to_owned());
        self
    }

    /// The pool whose `[pools.NAME]` table is at fault, when the fault is in one.
    pub fn pool(&self) -> Option<&str> {
        self.pool.as_deref()
    }

    /// The field at fault, by its key in the file (`failure_threshold`, `cooldown_ms`,
    /// `slow_call_rate`, ...: never the builder's name for the setting), or the unknown key,
    /// when the fault is in one. The `Display` names settings by their keys too.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The 1-based line of a syntax error.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The error reading the file, when that is what failed (`reload_file`, `from_file`): for
    /// its [`kind`](std::io::Error::kind), say to tell a missing file from an unreadable one.
    /// Its text is already in this error's `Display`.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.io.as_ref()
    }
}

impl fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid breaker configuration file")?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        match (&self.dependency, &self.pool) {
            (Some(d), _) => write!(f, ", [dependencies.{d:?}]")?,
            (None, Some(p)) => write!(f, ", [pools.{p:?}]")?,
            (None, None) if self.field.is_some() => f.write_str(", [default]")?,
            (None, None) => {}
        }
        if let Some(field) = &self.field {
            write!(f, " `{field}`")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for ConfigFileError {
    /// The cause of the I/O error that stopped the file being read, if it has one. The parser's
    /// error, the refused setting and the I/O error itself are in this error's `Display`, so
    /// they are not returned here: each text appears once along the chain.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref()?.source()
    }
}
