//! The TOML file: `[default]` and `[upstreams.NAME]` (read in `toml_upstream`), from the
//! parser's own document so that every key has its line.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use super::breakers::{self, BREAKER_KEYS, Setting};
use super::env::{Env, expand, expand_traced};
use super::error::{GatewayConfigError, path_part};
use super::import;
use super::rules::{self, backticked, unknown_word};
use super::toml_upstream::upstream;
use super::{GatewayConfig, Redaction};

type Entry<'a, 'i> = (&'a Spanned<DeString<'i>>, &'a Spanned<DeValue<'i>>);

/// The document being read: its text (for lines) and where `${VAR}` values come from.
pub(super) struct Doc<'t> {
    text: &'t str,
    env: Env<'t>,
    /// The folder of the file, for the paths it names (`mcp_servers`); `None`: the working
    /// directory.
    base: Option<&'t Path>,
}

impl<'t> Doc<'t> {
    pub(super) fn env(&self) -> Env<'t> {
        self.env
    }

    pub(super) fn base(&self) -> Option<&'t Path> {
        self.base
    }

    pub(super) fn line(&self, span: Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    pub(super) fn err(
        &self,
        section: Option<&str>,
        key: Option<&str>,
        span: Range<usize>,
        problem: impl Into<String>,
    ) -> GatewayConfigError {
        let line = Some(self.line(span));
        GatewayConfigError::toml(section.map(str::to_owned), key, line, problem)
    }

    /// `text` with `${VAR}` expanded and recorded in `redaction`, or an error naming `section`
    /// and `key`.
    pub(super) fn expand_into(
        &self,
        redaction: &mut Redaction,
        text: &str,
        section: &str,
        key: &str,
        span: Range<usize>,
    ) -> Result<String, GatewayConfigError> {
        let expanded = expand_traced(text, self.env)
            .map_err(|p| self.err(Some(section), Some(key), span, p))?;
        redaction.record(&expanded);
        Ok(expanded.text)
    }

    /// `text` with `${VAR}` expanded, or an error naming `section` and `key`.
    pub(super) fn expand(
        &self,
        text: &str,
        section: &str,
        key: &str,
        span: Range<usize>,
    ) -> Result<String, GatewayConfigError> {
        expand(text, self.env).map_err(|p| self.err(Some(section), Some(key), span, p))
    }
}

/// A table's entries in file order (the parser's map may sort them by name).
pub(super) fn entries<'a, 'i>(table: &'a DeTable<'i>) -> Vec<Entry<'a, 'i>> {
    let mut entries: Vec<Entry<'a, 'i>> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

/// Read a whole file; `base` is its folder (paths it names are relative to it).
pub(super) fn parse(
    text: &str,
    env: Env<'_>,
    base: Option<&Path>,
) -> Result<GatewayConfig, GatewayConfigError> {
    let doc = Doc { text, env, base };
    let root = DeTable::parse(text).map_err(|e| {
        let line = e.span().map(|s| doc.line(s));
        GatewayConfigError::toml(None, None, line, e.message().to_owned())
    })?;
    let mut default = Vec::new();
    let mut upstreams = Vec::new();
    let mut breakers = Vec::new();
    let mut seen_upstreams = false;
    let mut imported = import::read(&doc, root.get_ref())?;
    for (key, value) in entries(root.get_ref()) {
        match key.get_ref().as_ref() {
            import::KEY => {}
            "default" => {
                let table = table(&doc, None, "default", key.span(), value)?;
                for (k, v) in entries(table) {
                    if !BREAKER_KEYS.contains(&k.get_ref().as_ref()) {
                        let problem = format!(
                            "unknown key {}; expected a breaker key: {}",
                            unknown_word(k.get_ref(), BREAKER_KEYS),
                            backticked(BREAKER_KEYS)
                        );
                        return Err(doc.err(Some("default"), Some(k.get_ref()), k.span(), problem));
                    }
                    default.push(Setting::new(k.get_ref(), v.get_ref(), doc.line(k.span())));
                }
            }
            "upstreams" => {
                seen_upstreams = true;
                let table = table(&doc, None, "upstreams", key.span(), value)?;
                for (name, value) in entries(table) {
                    if let Some(imported) = &mut imported {
                        let named: &str = name.get_ref();
                        if imported.upstreams.iter().any(|(u, _)| u.name == named) {
                            import::overlay(&doc, name, value, imported)?;
                            continue;
                        }
                        let own = value
                            .get_ref()
                            .as_table()
                            .is_some_and(|t| t.contains_key("url") || t.contains_key("command"));
                        if !own {
                            let section = format!("upstreams.{}", path_part(named));
                            let problem = import::names_no_server(named, imported);
                            return Err(doc.err(Some(&section), None, name.span(), problem));
                        }
                    }
                    let (upstream, own) = upstream(&doc, name, value)?;
                    upstreams.push(upstream);
                    breakers.push(own);
                }
            }
            other => {
                let problem = format!(
                    "unknown table {}; expected `[default]` (breaker settings of every \
                     upstream), `[upstreams.NAME]` and `mcp_servers` (an mcpServers JSON file)",
                    unknown_word(other, ["default", "upstreams", import::KEY])
                );
                return Err(doc.err(None, Some(other), key.span(), problem));
            }
        }
    }
    if let Some(imported) = imported {
        let (configs, own): (Vec<_>, Vec<_>) = imported.upstreams.into_iter().unzip();
        upstreams.splice(0..0, configs);
        breakers.splice(0..0, own);
        seen_upstreams = true;
    }
    if !seen_upstreams || upstreams.is_empty() {
        return Err(GatewayConfigError::toml(
            None,
            None,
            None,
            "the file names no upstream: expected at least one [upstreams.NAME] table",
        ));
    }
    if let Some((i, problem)) = rules::duplicate_prefix(&upstreams) {
        let section = format!("upstreams.{}", path_part(&upstreams[i].name));
        let line = Some(breakers[i].line);
        return Err(GatewayConfigError::toml(
            Some(section),
            Some("prefix"),
            line,
            problem,
        ));
    }
    let registry = breakers::registry(&default, &breakers)?;
    Ok(GatewayConfig {
        upstreams,
        registry,
    })
}

/// `value` as a table, or an error naming `section` (or the top-level key `name`).
pub(super) fn table<'a, 'i>(
    doc: &Doc<'_>,
    section: Option<&str>,
    name: &str,
    span: Range<usize>,
    value: &'a Spanned<DeValue<'i>>,
) -> Result<&'a DeTable<'i>, GatewayConfigError> {
    match value.get_ref() {
        DeValue::Table(table) => Ok(table),
        other => Err(doc.err(
            section,
            Some(name),
            span,
            format!("must be a table, not {}", rules::a(other.type_str())),
        )),
    }
}

/// What a value that must be a string is, else the problem.
pub(super) fn string<'a>(value: &'a DeValue<'_>) -> Result<&'a str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("must be a string, not {}", rules::a(value.type_str())))
}

/// A list of strings, else the problem.
pub(super) fn strings<'a>(value: &'a DeValue<'_>) -> Result<Vec<&'a str>, String> {
    let Some(array) = value.as_array() else {
        return Err(format!(
            "must be a list of strings, not {}",
            rules::a(value.type_str())
        ));
    };
    array
        .iter()
        .map(|v| {
            v.get_ref().as_str().ok_or_else(|| {
                format!(
                    "must be a list of strings, not one holding {}",
                    rules::a(v.get_ref().type_str())
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::ServiceError;
    use rmcp::model::{CallToolResult, ContentBlock, ErrorData};
    use toolbreaker::{Classify, FailureKind, Outcome};

    use crate::config::{GatewayConfig, Transport};

    fn env(name: &str) -> Option<String> {
        (name == "SEARCH_TOKEN").then(|| "s3cr3t".to_owned())
    }

    fn parse(text: &str) -> Result<GatewayConfig, String> {
        GatewayConfig::from_toml_str_with(text, env).map_err(|e| e.to_string())
    }

    /// The error's text for `text`, which must be refused.
    fn refused(text: &str) -> String {
        parse(text).expect_err(text)
    }

    #[test]
    fn the_sample_beside_the_package_parses() {
        let config = parse(include_str!("../../gateway.toml")).unwrap();
        let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["search", "files"], "in file order");
        let search = &config.upstreams[0];
        let Transport::Http { url, headers } = &search.transport else {
            panic!("search is HTTP: {:?}", search.transport);
        };
        assert_eq!(url, "https://search.example.com/mcp");
        assert_eq!(headers[0].0, "Authorization");
        assert_eq!(headers[0].1.expose(), "Bearer s3cr3t");
        assert!(
            !format!("{config:?}").contains("s3cr3t"),
            "Debug shows no secret"
        );
        assert_eq!(search.prefix, "search.");
        assert_eq!(search.per_call_timeout, Duration::from_millis(15_000));
        assert!(!search.exposes("drop_index") && search.exposes("query"));
        assert_eq!(search.breaker_name("query"), "search.query");
        assert_eq!(search.breaker_name("suggest"), "search");
        let files = &config.upstreams[1];
        assert_eq!(files.prefix, "");
        assert!(files.exposes("read_file") && !files.exposes("write_file"));
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &files.transport
        else {
            panic!("files is stdio");
        };
        assert_eq!((command.as_str(), args.len(), cwd), ("npx", 3, &None));
        assert_eq!(
            (env[0].0.as_str(), env[0].1.expose()),
            ("NODE_ENV", "production")
        );
        // Breakers: [default], the upstream's keys over it, the tool's over the upstream's.
        let registry = &config.registry;
        assert_eq!(
            registry.config_for("files").cooldown(),
            Duration::from_secs(10)
        );
        assert!(registry.config_for("search").failure_rate() == Some(0.3));
        let query = registry.config_for("search.query");
        assert_eq!(query.cooldown(), Duration::from_secs(2));
        assert!(query.failure_rate() == Some(0.3), "inherited from search");
        let mut own: Vec<&str> = registry.dependencies().map(|(n, _)| n).collect();
        own.sort_unstable();
        assert_eq!(own, ["search", "search.query", "search.reindex"]);
        let search = &config.upstreams[0];
        assert_eq!(
            search.timeouts_for("reindex"),
            (Duration::from_secs(60), Duration::from_secs(300))
        );
        assert_eq!(
            search.timeouts_for("query"),
            (Duration::from_secs(15), Duration::from_secs(120))
        );
    }

    #[test]
    fn classification_overrides_reach_the_classifiers() {
        let config = parse(
            "[upstreams.a]\nurl = \"http://127.0.0.1:1/mcp\"\ntool_error = \"unavailable\"\n\
             error_codes = { -32002 = \"timeout\", -32603 = \"ignored\" }\n\
             [upstreams.a.tools.t]\nerror_codes = { -32602 = \"other\" }\n",
        )
        .unwrap();
        let a = &config.upstreams[0];
        let answered = Ok(CallToolResult::error(vec![ContentBlock::text("no")]));
        let code = |c: i32| {
            Err(ServiceError::McpError(ErrorData::new(
                rmcp::model::ErrorCode(c),
                "x",
                None,
            )))
        };
        let unavailable = Outcome::Failure(FailureKind::Unavailable);
        assert_eq!(a.classifier.classify(&answered), unavailable);
        assert_eq!(
            a.classifier.classify(&code(-32002)),
            Outcome::Failure(FailureKind::Timeout)
        );
        assert_eq!(a.classifier.classify(&code(-32603)), Outcome::Ignored);
        let t = a.classifier_for("t");
        assert_eq!(t.classify(&answered), unavailable, "the upstream's, kept");
        assert_eq!(
            t.classify(&code(-32602)),
            Outcome::Failure(FailureKind::Other)
        );
        assert!(
            !a.tools[0].own_breaker,
            "no breaker key: the upstream's breaker"
        );
        assert_eq!(a.breaker_name("t"), "a");
        assert!(config.registry.dependencies().next().is_none());
    }

    #[test]
    fn syntax_errors_give_their_line() {
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"x\"\nargs = [\"a\",\n"),
            "line 3: unclosed array, expected `]`"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"x\"\ncommand = \"y\"\n"),
            "line 3: duplicate key"
        );
    }

    #[test]
    fn unknown_tables_and_keys_are_named_with_the_nearest() {
        assert_eq!(
            refused("[upstream.a]\ncommand = \"x\"\n"),
            "line 1: upstream: unknown table `upstream` (did you mean `upstreams`?); expected \
             `[default]` (breaker settings of every upstream), `[upstreams.NAME]` and \
             `mcp_servers` (an mcpServers JSON file)"
        );
        let err = refused("[upstreams.a]\ncommand = \"x\"\ncooldown = 5\n");
        assert!(
            err.starts_with(
                "line 3: [upstreams.a] cooldown: unknown key `cooldown` (did you mean \
                 `cooldown_ms`?); expected `url`, `headers`,"
            ),
            "{err}"
        );
        let err = refused("[default]\ncooldwn_ms = 5\n[upstreams.a]\ncommand = \"x\"\n");
        assert!(
            err.starts_with("line 2: [default] cooldwn_ms: unknown key `cooldwn_ms` (did you mean `cooldown_ms`?)"),
            "{err}"
        );
        let err = refused(
            "[upstreams.a]\ncommand = \"x\"\n[upstreams.a.tools.t]\nown_breaker = true\ntool_eror = \"other\"\n",
        );
        assert!(
            err.starts_with("line 5: [upstreams.a.tools.t] tool_eror: unknown key `tool_eror` (did you mean `tool_error`?)"),
            "{err}"
        );
        assert_eq!(
            refused("[upstreams.a]\ncommand = \"x\"\ntool_error = \"unavailabel\"\n"),
            "line 3: [upstreams.a] tool_error: `unavailabel` (did you mean `unavailable`?) must \
             be one of `ignored`, `success`, `timeout`, `connect`, `rate_limited`, \
             `unavailable`, `other`"
        );
    }

    #[test]
    fn a_file_without_upstreams_is_refused() {
        let expected = "the file names no upstream: expected at least one [upstreams.NAME] table";
        assert_eq!(refused(""), expected);
        assert_eq!(refused("[default]\ncooldown_ms = 5\n"), expected);
        assert_eq!(refused("[upstreams]\n"), expected);
        assert_eq!(
            refused("upstreams = 3\n"),
            "line 1: upstreams: must be a table, not an integer"
        );
    }
}
