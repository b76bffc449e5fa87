//! `${VAR}` in configuration values: expanded from the environment at load.

/// Where a variable's value comes from: the process environment, or a test's table.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment (a variable that is not valid Unicode counts as unset).
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `text` with every `${NAME}` (also written `${env:NAME}`, Cursor's form) replaced by the
/// variable's value, `${NAME:-fallback}` by the fallback when the variable is unset or empty,
/// and `$$` by one `$`; any other `$` stays as it is. The error is the problem, for the caller
/// to name the field: an unset variable, a name that is not one, or a `${` never closed.
pub(crate) fn expand(text: &str, env: Env<'_>) -> Result<String, String> {
    expand_traced(text, env).map(|e| e.text)
}

/// A value after `${VAR}` expansion, with what came from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// The value, as [`expand`] gives it.
    pub(crate) text: String,
    /// The value as it may be shown: each variable's value replaced by `<redacted>` (a
    /// fallback, written in the file, stays).
    pub(crate) shown: String,
    /// Each value a variable gave (empty ones left out).
    pub(crate) values: Vec<String>,
}

/// As [`expand`], with the shown form and the variables' values.
pub(crate) fn expand_traced(text: &str, env: Env<'_>) -> Result<Expanded, String> {
    if !text.contains('$') {
        return Ok(Expanded {
            text: text.to_owned(),
            shown: text.to_owned(),
            values: Vec::new(),
        });
    }
    let mut out = String::with_capacity(text.len());
    let mut shown = String::with_capacity(text.len());
    let mut values = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        shown.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            shown.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = inner.find('}') else {
                return Err("a `${` is not closed by `}`".to_owned());
            };
            let body = &inner[..end];
            let (name, fallback) = match body.split_once(":-") {
                Some((name, fallback)) => (name, Some(fallback)),
                None => (body, None),
            };
            let name = name.strip_prefix("env:").unwrap_or(name);
            if !is_variable_name(name) {
                return Err(format!(
                    "`${{{body}}}` does not name an environment variable (letters, digits and \
                     `_`, not starting with a digit; write `$$` for a literal `$`)"
                ));
            }
            match (env(name), fallback) {
                (Some(value), Some(fallback)) if value.is_empty() => {
                    out.push_str(fallback);
                    shown.push_str(fallback);
                }
                (Some(value), _) => {
                    out.push_str(&value);
                    if !value.is_empty() {
                        shown.push_str(REDACTED);
                        values.push(value);
                    }
                }
                (None, Some(fallback)) => {
                    out.push_str(fallback);
                    shown.push_str(fallback);
                }
                (None, None) => {
                    return Err(format!("environment variable {name} is not set"));
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            shown.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    shown.push_str(rest);
    Ok(Expanded {
        text: out,
        shown,
        values,
    })
}

/// What a redacted value is shown as.
pub(crate) const REDACTED: &str = "<redacted>";

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_each_form() {
        let cases = [
            ("Bearer ${TOKEN}", "Bearer t0k"),
            ("${env:TOKEN}/x", "t0k/x"),
            ("${MISSING:-http://localhost}", "http://localhost"),
            ("${EMPTY:-dflt}", "dflt"),
            ("${TOKEN:-dflt}", "t0k"),
            ("a$$b $x ${EMPTY}.", "a$b $x ."),
            ("no dollars", "no dollars"),
        ];
        for (text, want) in cases {
            assert_eq!(expand(text, &env).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn the_shown_form_hides_each_variables_value_and_keeps_fallbacks() {
        let e = expand_traced("http://${MISSING:-h}/k/${TOKEN}/${EMPTY}x$$", &env).unwrap();
        assert_eq!(e.text, "http://h/k/t0k/x$");
        assert_eq!(e.shown, "http://h/k/<redacted>/x$");
        assert_eq!(e.values, ["t0k"]);
        let plain = expand_traced("plain", &env).unwrap();
        assert_eq!((plain.shown.as_str(), plain.values.len()), ("plain", 0));
    }

    #[test]
    fn refuses_unset_bad_names_and_unclosed() {
        assert_eq!(
            expand("Bearer ${SEARCH_TOKEN}", &env).unwrap_err(),
            "environment variable SEARCH_TOKEN is not set"
        );
        assert_eq!(
            expand("${TOKEN", &env).unwrap_err(),
            "a `${` is not closed by `}`"
        );
        assert!(
            expand("${1X}", &env)
                .unwrap_err()
                .starts_with("`${1X}` does not name")
        );
        assert!(expand("${}", &env).is_err());
    }
}
