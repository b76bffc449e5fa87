//! Per-dependency configuration from TOML, and live reload: what a file means, how each bad file
//! is refused (naming the dependency, the field and, for a syntax error, the line), and that a
//! reload reconfigures breakers in place while a refused one changes nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolbreaker::quanta::{Clock, Mock};
use toolbreaker::{
    BlockedReason, CircuitBreaker, Config, FailureKind, Outcome, Registry, RegistryConfig, State,
    Transition, TransitionReason, registry::ConfigFileError,
};

const FAIL: Outcome = Outcome::Failure(FailureKind::Unavailable);
const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);
/// `MAX_DURATION` in ms: 2^40.
const MAX_MS: u64 = 1 << 40;

fn cfg(threshold: u32, cooldown: Duration, probe_timeout: Duration) -> Config {
    Config::new(threshold, cooldown, probe_timeout).expect("valid config")
}

fn parse(text: &str) -> RegistryConfig {
    RegistryConfig::from_toml(text).unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

fn refuse(text: &str) -> ConfigFileError {
    match RegistryConfig::from_toml(text) {
        Ok(config) => panic!("{text:?} should be refused, got {config:?}"),
        Err(e) => e,
    }
}

fn fail(breaker: &CircuitBreaker) -> Option<Transition> {
    breaker.try_acquire().expect("admitted").record(FAIL)
}

fn fail_n(breaker: &CircuitBreaker, n: u32) -> Option<Transition> {
    let mut last = None;
    for i in 0..n {
        assert_eq!(last, None, "failure {i} of {n} came after a trip");
        last = fail(breaker);
    }
    last
}

// ---------------------------------------------------------------------------------------------
// What a file means.

#[test]
fn missing_sections_mean_the_crate_defaults() {
    for text in [
        "[default]\n",
        "[dependencies]\n",
        "[default]\n[dependencies]\n",
    ] {
        let config = parse(text);
        assert_eq!(config, RegistryConfig::default(), "{text:?}");
        assert_eq!(config.default_config(), Config::default());
        assert_eq!(config.dependencies().count(), 0);
    }
    // Keys left out of [default] are the crate's defaults, not anything else.
    let config = parse("[default]\nfailure_threshold = 2\n");
    assert_eq!(
        config.default_config(),
        cfg(2, Duration::from_secs(30), Duration::from_secs(30))
    );
}

#[test]
fn dependency_sections_inherit_the_keys_they_leave_out_from_default() {
    let text = "\
[default]
failure_threshold = 7
cooldown_ms = 5000
probe_timeout_ms = 2500

[dependencies.search]
failure_threshold = 2

[dependencies.weather]
cooldown_ms = 100
probe_timeout_ms = 50

[dependencies.quotes]
";
    let config = parse(text);
    assert_eq!(config.default_config(), cfg(7, 5 * S, 2500 * MS));
    assert_eq!(config.config_for("search"), cfg(2, 5 * S, 2500 * MS));
    assert_eq!(config.config_for("weather"), cfg(7, 100 * MS, 50 * MS));
    assert_eq!(
        config.config_for("quotes"),
        cfg(7, 5 * S, 2500 * MS),
        "an empty section is the default"
    );
    assert_eq!(config.config_for("unnamed"), config.default_config());
    let names: Vec<&str> = config.dependencies().map(|(name, _)| name).collect();
    assert_eq!(names, ["quotes", "search", "weather"], "in name order");
}

#[test]
fn default_applies_to_dependencies_written_before_it() {
    let config =
        parse("[dependencies.search]\nfailure_threshold = 2\n\n[default]\ncooldown_ms = 700\n");
    assert_eq!(
        config.config_for("search"),
        cfg(2, 700 * MS, Duration::from_secs(30))
    );
}

#[test]
fn quoted_names_may_hold_dots_and_other_characters() {
    let config = parse(
        "[dependencies.\"api.example.com\"]\ncooldown_ms = 10000\n\
         [dependencies.\"météo v2\"]\nfailure_threshold = 9\n\
         [dependencies.'literal.name']\nprobe_timeout_ms = 3\n",
    );
    assert_eq!(config.config_for("api.example.com").cooldown(), 10 * S);
    assert_eq!(config.config_for("api").cooldown(), Duration::from_secs(30));
    assert_eq!(config.config_for("météo v2").failure_threshold(), Some(9));
    assert_eq!(config.config_for("literal.name").probe_timeout(), 3 * MS);
    assert_eq!(config.dependencies().count(), 3);
}

#[test]
fn the_largest_values_are_accepted_and_one_more_is_refused() {
    let config = parse(&format!(
        "[default]\nfailure_threshold = {}\ncooldown_ms = {MAX_MS}\nprobe_timeout_ms = {MAX_MS}\n",
        u32::MAX
    ));
    assert_eq!(config.default_config().failure_threshold(), Some(u32::MAX));
    assert_eq!(
        config.default_config().cooldown(),
        toolbreaker::config::MAX_DURATION
    );
    assert_eq!(
        config.default_config().probe_timeout(),
        toolbreaker::config::MAX_DURATION
    );
    let smallest =
        parse("[default]\nfailure_threshold = 1\ncooldown_ms = 1\nprobe_timeout_ms = 1\n");
    assert_eq!(smallest.default_config(), cfg(1, MS, MS));
}

// ---------------------------------------------------------------------------------------------
// How a bad file is refused.

/// A bad file, and the dependency, field and line its error names.
type BadFile = (
    String,
    Option<&'static str>,
    Option<&'static str>,
    Option<usize>,
);

/// Every bad file this suite knows, with the dependency, field and line its error names.
fn bad_files() -> Vec<BadFile> {
    let mut bad: Vec<BadFile> = vec![
        // Syntax, with the line, and the section and key of that line, read from the text.
        (
            "[default]\nfailure_threshold = 3\ncooldown_ms = = 5\n".into(),
            None,
            Some("cooldown_ms"),
            Some(3),
        ),
        ("[default\ncooldown_ms = 5\n".into(), None, None, Some(1)),
        // Past i64: judged like any other number (too large), not a syntax error.
        (
            "[default]\ncooldown_ms = 99999999999999999999\n".into(),
            None,
            Some("cooldown_ms"),
            None,
        ),
        (
            "\n\n\n\n[dependencies.search]\ncooldown_ms = 5 5\n".into(),
            Some("search"),
            Some("cooldown_ms"),
            Some(6),
        ),
        (
            "[default]\nfailure_threshold = 1\nfailure_threshold = 2\n".into(),
            None,
            Some("failure_threshold"),
            Some(3),
        ),
        // A table defined twice: the header's own line names the dependency.
        (
            "[dependencies.\"météo\"]\ncooldown_ms = 1\n[dependencies.\"météo\"]\n".into(),
            Some("météo"),
            None,
            Some(3),
        ),
        // A file that sets nothing is refused: a half-written file must not reset everything.
        ("".into(), None, None, None),
        ("# only a comment\n\n".into(), None, None, None),
        // The shape of the file.
        ("[defaults]\ncooldown_ms = 5\n".into(), None, None, None),
        ("failure_threshold = 3\n".into(), None, None, None),
        ("dependencies = 5\n".into(), None, None, None),
        ("dependencies = [\"search\"]\n".into(), None, None, None),
        ("default = 5\n".into(), None, None, None),
        (
            "[dependencies]\nsearch = 5\n".into(),
            Some("search"),
            None,
            None,
        ),
        (
            "[dependencies]\nsearch = \"fast\"\n".into(),
            Some("search"),
            None,
            None,
        ),
        // Unknown keys: a misspelling is refused, not ignored.
        (
            "[default]\ncooldown = 5\n".into(),
            None,
            Some("cooldown"),
            None,
        ),
        (
            "[dependencies.search]\ncooldown = 5\n".into(),
            Some("search"),
            Some("cooldown"),
            None,
        ),
        (
            "[dependencies.search]\nfailure_treshold = 5\n".into(),
            Some("search"),
            Some("failure_treshold"),
            None,
        ),
        // An unquoted dotted name is a nested table: `api` with an unknown key `example`.
        (
            "[dependencies.api.example.com]\ncooldown_ms = 5\n".into(),
            Some("api"),
            Some("example"),
            None,
        ),
    ];
    // Wrong types, out-of-range and zero values, for each field, in [default] and in a dependency.
    let values: [(&str, &str); 7] = [
        ("\"5\"", "string"),
        ("5.0", "float"),
        ("true", "bool"),
        ("[5]", "array"),
        ("{ ms = 5 }", "inline table"),
        ("1979-05-27", "date"),
        ("-1", "negative"),
    ];
    let fields = ["failure_threshold", "cooldown_ms", "probe_timeout_ms"];
    for field in fields {
        for (value, _) in values {
            bad.push((
                format!("[default]\n{field} = {value}\n"),
                None,
                Some(field),
                None,
            ));
            bad.push((
                format!("[dependencies.search]\n{field} = {value}\n"),
                Some("search"),
                Some(field),
                None,
            ));
        }
        bad.push((format!("[default]\n{field} = 0\n"), None, Some(field), None));
        bad.push((
            format!("[dependencies.\"api.example.com\"]\n{field} = 0\n"),
            Some("api.example.com"),
            Some(field),
            None,
        ));
    }
    for field in ["cooldown_ms", "probe_timeout_ms"] {
        for too_long in [MAX_MS + 1, u64::from(u32::MAX) << 20, i64::MAX as u64] {
            bad.push((
                format!("[dependencies.search]\n{field} = {too_long}\n"),
                Some("search"),
                Some(field),
                None,
            ));
        }
    }
    for too_many in [u64::from(u32::MAX) + 1, i64::MAX as u64] {
        bad.push((
            format!("[default]\nfailure_threshold = {too_many}\n"),
            None,
            Some("failure_threshold"),
            None,
        ));
    }
    // The fault is in the second of two sections: it is the one named.
    bad.push((
        "[dependencies.alpha]\nfailure_threshold = 1\n[dependencies.beta]\ncooldown_ms = 0\n"
            .into(),
        Some("beta"),
        Some("cooldown_ms"),
        None,
    ));
    bad
}

#[test]
fn every_bad_file_is_refused_naming_the_dependency_field_and_line() {
    for (text, dependency, field, line) in bad_files() {
        let err = refuse(&text);
        assert_eq!(
            (err.dependency(), err.field(), err.line()),
            (dependency, field, line),
            "{text:?}: {err}"
        );
        let shown = err.to_string();
        assert!(
            shown.starts_with("invalid breaker configuration file"),
            "{shown}"
        );
        if let Some(dependency) = dependency {
            assert!(
                shown.contains(&format!("[dependencies.{dependency:?}]")),
                "{text:?}: {shown}"
            );
        }
        if let Some(field) = field {
            assert!(shown.contains(&format!("`{field}`")), "{text:?}: {shown}");
            if dependency.is_none() {
                assert!(shown.contains("[default]"), "{text:?}: {shown}");
            }
        }
        if let Some(line) = line {
            assert!(shown.contains(&format!("line {line}")), "{text:?}: {shown}");
        }
    }
}

#[test]
fn the_error_message_names_the_section_field_and_problem() {
    assert_eq!(
        refuse("[dependencies.search]\ncooldown_ms = 0\n").to_string(),
        "invalid breaker configuration file, [dependencies.\"search\"] `cooldown_ms`: it must be at least 1 ms"
    );
    assert_eq!(
        refuse("[default]\nfailure_threshold = 0\n").to_string(),
        "invalid breaker configuration file, [default] `failure_threshold`: it must be at least 1"
    );
    assert_eq!(
        refuse("[default]\ncooldown = 5\n").to_string(),
        "invalid breaker configuration file, [default] `cooldown`: unknown key; expected \
         `failure_threshold`, `cooldown_ms`, `probe_timeout_ms`, `failure_rate`, \
         `slow_call_threshold_ms`, `slow_call_rate`, `window_calls`, `window_ms`, \
         `minimum_calls`, `cooldown_multiplier`, `max_cooldown_ms`, `cooldown_jitter`, `probes`, \
         `max_hinted_open_ms`, `hint_jitter`, `open_on_long_hint`, `max_in_flight`, \
         `adaptive_concurrency`, `adaptive_throttling`, `retry_budget`"
    );
    assert_eq!(
        refuse(&format!(
            "[dependencies.\"api.example.com\"]\nprobe_timeout_ms = {}\n",
            MAX_MS + 1
        ))
        .to_string(),
        "invalid breaker configuration file, [dependencies.\"api.example.com\"] `probe_timeout_ms`: \
         too large: at most 1099511627776 ms (about 35 years), not 1099511627777"
    );
    assert_eq!(
        refuse("[dependencies]\nsearch = 5\n").to_string(),
        "invalid breaker configuration file, [dependencies.\"search\"]: must be a table of settings, found integer"
    );
    let dotted = refuse("[dependencies.api.example.com]\ncooldown_ms = 5\n").to_string();
    assert!(
        dotted.contains("[dependencies.\"api.example.com\"]") && dotted.contains("quoted"),
        "an unquoted dotted name is explained: {dotted}"
    );
    let nested_default = refuse("[default.x]\ncooldown_ms = 5\n").to_string();
    assert!(
        nested_default.contains("[default] `x`") && !nested_default.contains("quoted"),
        "the quoting hint is for dependency names only: {nested_default}"
    );
    assert!(
        refuse("failure_threshold = 3\n")
            .to_string()
            .contains("`failure_threshold` at the top level"),
        "a setting outside any section"
    );
    let syntax = refuse("[default]\ncooldown_ms = = 5\n");
    assert!(
        syntax
            .to_string()
            .starts_with("invalid breaker configuration file, line 2, [default] `cooldown_ms`: "),
        "{syntax}"
    );
}

/// Every message along an error's `source()` chain, outermost first.
fn chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(error), |&e| e.source())
        .map(ToString::to_string)
        .collect()
}

/// How many messages along the chain hold `text`.
fn told(chain: &[String], text: &str) -> usize {
    chain.iter().filter(|shown| shown.contains(text)).count()
}

/// The `std::error::Error` convention: an error either shows its inner error in its `Display` or
/// returns it from `source()`, never both, so a reporter that prints the chain says each thing
/// once. `ConfigFileError` shows it (one line for an operator), so nothing it shows comes back.
#[test]
fn each_text_appears_once_along_the_source_chain() {
    // The parser's message.
    let syntax = refuse("[default]\ncooldown_ms = = 5\n");
    let shown = chain(&syntax);
    assert_eq!(shown.len(), 1, "{shown:?}");
    let message = shown[0]
        .rsplit_once(": ")
        .map(|(_, message)| message.to_owned())
        .expect("the parser's words after the field");
    assert!(!message.is_empty(), "{shown:?}");
    assert_eq!(told(&shown, &message), 1, "{shown:?}");

    // A value `Config` refuses: its words, once.
    let invalid = refuse("[default]\ncooldown_ms = 0\n");
    let shown = chain(&invalid);
    assert_eq!(told(&shown, "must be at least 1 ms"), 1, "{shown:?}");
    assert_eq!(shown.len(), 1, "{shown:?}");

    // A file that cannot be read: the system's words, once; the I/O error is still at hand.
    let (registry, _mock, _heard) = registry(BASE);
    let path = temp_path("chain");
    let system = std::fs::read_to_string(&path).unwrap_err().to_string();
    for err in [
        registry.reload_file(&path).expect_err("missing"),
        RegistryConfig::from_file(&path).expect_err("missing"),
    ] {
        let shown = chain(&err);
        assert_eq!(told(&shown, &system), 1, "{shown:?}");
        assert!(
            shown[0].contains(&system),
            "shown by the error itself: {shown:?}"
        );
        assert_eq!(
            err.io_error().map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
    }
}

#[test]
fn the_error_message_for_a_value_of_the_wrong_type_says_what_was_found() {
    let shown = refuse("[dependencies.search]\nfailure_threshold = \"5\"\n").to_string();
    assert!(shown.contains("not a string"), "{shown}");
    let shown = refuse("[dependencies.search]\ncooldown_ms = -3\n").to_string();
    assert!(shown.contains("not -3"), "{shown}");
    let shown = refuse("[dependencies.search]\nfailure_threshold = 4294967296\n").to_string();
    assert!(
        shown.contains("4294967295"),
        "the largest threshold: {shown}"
    );
}

#[test]
fn the_error_message_for_a_duration_gives_the_range_accepted() {
    let shown = refuse("[dependencies.search]\ncooldown_ms = -3\n").to_string();
    assert!(
        shown.contains(&MAX_MS.to_string()),
        "the largest cooldown accepted is 2^40 ms: {shown}"
    );
    assert!(!shown.contains(&u64::MAX.to_string()), "{shown}");
}

/// A number too large for any integer type (past `i64`, past `i128`, in hex) is too large like
/// any other: the error names the section and field and gives the largest accepted, and a
/// negative one of any size is out of the range, not a parse failure.
#[test]
fn a_number_of_any_size_is_too_large_or_negative_naming_the_section_and_field() {
    let past_i128 = "9".repeat(50);
    let fields = [
        ("failure_threshold", "at most 4294967295 failures"),
        ("cooldown_ms", "at most 1099511627776 ms (about 35 years)"),
        (
            "probe_timeout_ms",
            "at most 1099511627776 ms (about 35 years)",
        ),
    ];
    for (field, most) in fields {
        let range = if field == "failure_threshold" {
            "must be a whole number of failures from 1 to 4294967295"
        } else {
            "must be a whole number of ms from 1 to 1099511627776"
        };
        for (value, problem) in [
            (
                "99999999999999999999",
                format!("too large: {most}, not 99999999999999999999"),
            ),
            (
                "99_999_999_999_999_999_999",
                format!("too large: {most}, not 99999999999999999999"),
            ),
            (
                past_i128.as_str(),
                format!("too large: {most}, not {past_i128}"),
            ),
            (
                "0xFFFFFFFFFFFFFFFFFFFF",
                format!("too large: {most}, not 0xFFFFFFFFFFFFFFFFFFFF"),
            ),
            (
                "-99999999999999999999",
                format!("{range}, not -99999999999999999999"),
            ),
            (
                &format!("-{past_i128}"),
                format!("{range}, not -{past_i128}"),
            ),
        ] {
            let text = format!("[dependencies.search]\n{field} = {value}\n");
            let err = refuse(&text);
            assert_eq!(
                (err.dependency(), err.field(), err.line()),
                (Some("search"), Some(field), None),
                "{text:?}: {err}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "invalid breaker configuration file, [dependencies.\"search\"] `{field}`: {problem}"
                ),
                "{text:?}"
            );
            let text = format!("[default]\n{field} = {value}\n");
            assert_eq!(
                refuse(&text).to_string(),
                format!("invalid breaker configuration file, [default] `{field}`: {problem}"),
                "{text:?}"
            );
        }
    }
    // Inside `i64` but past the largest: the same words.
    assert_eq!(
        refuse("[dependencies.search]\nfailure_threshold = 4294967296\n").to_string(),
        "invalid breaker configuration file, [dependencies.\"search\"] `failure_threshold`: \
         too large: at most 4294967295 failures, not 4294967296"
    );
    // And the largest values written other ways are still accepted.
    let config = parse("[default]\nfailure_threshold = 0xFFFF_FFFF\ncooldown_ms = +1_000\n");
    assert_eq!(config.default_config().failure_threshold(), Some(u32::MAX));
    assert_eq!(config.default_config().cooldown(), S);
}

#[test]
fn the_error_message_for_a_default_that_is_not_a_table_names_it() {
    let shown = refuse("default = 5\n").to_string();
    assert!(shown.contains("default"), "{shown}");
}

// ---------------------------------------------------------------------------------------------
// Reload: in place, keeping state.

const BASE: &str = "\
[default]
failure_threshold = 5
cooldown_ms = 10000
probe_timeout_ms = 5000

[dependencies.search]
failure_threshold = 1
";

type Heard = Arc<Mutex<Vec<(String, Transition)>>>;

fn registry(text: &str) -> (Registry, Arc<Mock>, Heard) {
    let (clock, mock) = Clock::mock();
    let heard: Heard = Arc::default();
    let log = Arc::clone(&heard);
    let registry = Registry::builder()
        .config(parse(text))
        .clock(clock)
        .on_transition(move |event| {
            log.lock()
                .unwrap()
                .push((event.dependency().to_owned(), *event.transition()));
        })
        .build();
    mock.increment(100 * S);
    (registry, mock, heard)
}

#[test]
fn a_reload_reconfigures_existing_breakers_in_place_keeping_their_state() {
    let (registry, mock, heard) = registry(BASE);
    let search = registry.get("search");
    let weather = registry.get("weather");
    assert_eq!(search.config(), cfg(1, 10 * S, 5 * S));
    assert_eq!(weather.config(), cfg(5, 10 * S, 5 * S));
    fail(&search).expect("search trips at t0");
    assert_eq!(fail_n(&weather, 2), None);
    mock.increment(3 * S);

    let text = "\
[default]
failure_threshold = 4
cooldown_ms = 5000

[dependencies.search]
failure_threshold = 2
";
    let changes = registry.reload_toml(text).expect("valid").into_changes();
    let new_default = cfg(4, 5 * S, Duration::from_secs(30));
    let new_search = cfg(2, 5 * S, Duration::from_secs(30));
    let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "default: failure_threshold 5 -> 4, cooldown_ms 10000 -> 5000, probe_timeout_ms 5000 -> 30000",
            "search: failure_threshold 1 -> 2, cooldown_ms 10000 -> 5000, probe_timeout_ms 5000 -> 30000",
            "weather: failure_threshold 5 -> 4, cooldown_ms 10000 -> 5000, probe_timeout_ms 5000 -> 30000",
        ]
    );
    let summary: Vec<(Option<&str>, Config, Config, bool)> = changes
        .iter()
        .map(|c| {
            (
                c.dependency(),
                c.before(),
                c.after(),
                c.transition().is_some(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (None, cfg(5, 10 * S, 5 * S), new_default, false),
            (Some("search"), cfg(1, 10 * S, 5 * S), new_search, false),
            (Some("weather"), cfg(5, 10 * S, 5 * S), new_default, false),
        ]
    );
    assert_eq!(registry.configuration(), parse(text));

    // The same handles see the new settings; the open one stays open, for the new cooldown
    // counted from its opening.
    assert_eq!(
        (search.config(), weather.config()),
        (new_search, new_default)
    );
    let blocked = search.try_acquire().unwrap_err();
    assert_eq!(
        (blocked.reason(), blocked.retry_after()),
        (BlockedReason::DependencyOpen, 2 * S)
    );
    // The closed one keeps its count of 2: one more is 3 of 4, the next trips.
    assert_eq!(fail(&weather), None);
    assert_eq!(fail(&weather).map(|t| t.failures()), Some(4));

    // A breaker made after the reload uses the new configuration.
    assert_eq!(registry.get("fresh").config(), new_default);
    assert_eq!(registry.config_for("search"), new_search);
    assert_eq!(
        heard.lock().unwrap().len(),
        2,
        "two trips, nothing from the reload"
    );
}

#[test]
fn a_dependency_removed_from_the_file_falls_back_to_the_default() {
    let (registry, _mock, _heard) = registry(BASE);
    let search = registry.get("search");
    let without =
        "[default]\nfailure_threshold = 5\ncooldown_ms = 10000\nprobe_timeout_ms = 5000\n";
    let changes = registry.reload_toml(without).unwrap().into_changes();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].dependency(), Some("search"));
    assert_eq!(changes[0].before(), cfg(1, 10 * S, 5 * S));
    assert_eq!(changes[0].after(), cfg(5, 10 * S, 5 * S));
    assert_eq!(changes[0].to_string(), "search: failure_threshold 1 -> 5");
    assert_eq!(search.config(), cfg(5, 10 * S, 5 * S));
    assert_eq!(fail_n(&search, 4), None, "no longer trips at 1");
    assert_eq!(registry.configuration().dependencies().count(), 0);
}

#[test]
fn changes_name_every_dependency_whose_configuration_changed_in_name_order() {
    let (registry, _mock, _heard) = registry(BASE);
    let _weather = registry.get("weather");
    assert_eq!(
        registry.reload_toml(BASE).unwrap().changes(),
        [],
        "the same file: no change"
    );

    // Named in the new file without a breaker yet; `search` unchanged; `weather` unchanged (still
    // the default); the default itself unchanged.
    let text = format!(
        "{BASE}\n[dependencies.zeta]\ncooldown_ms = 1\n[dependencies.alpha]\nprobe_timeout_ms = 2\n"
    );
    let changes = registry.reload_toml(&text).unwrap().into_changes();
    let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "alpha: probe_timeout_ms 5000 -> 2",
            "zeta: cooldown_ms 10000 -> 1"
        ]
    );
    assert!(changes.iter().all(|c| c.transition().is_none()));
    assert_eq!(registry.len(), 1, "a reload creates no breaker");

    // Only the default changes: it, and every dependency that follows it.
    let text = text.replace("failure_threshold = 5", "failure_threshold = 6");
    let changes = registry.reload_toml(&text).unwrap().into_changes();
    let shown: Vec<String> = changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "default: failure_threshold 5 -> 6",
            "alpha: failure_threshold 5 -> 6",
            "weather: failure_threshold 5 -> 6",
            "zeta: failure_threshold 5 -> 6",
        ]
    );
    assert_eq!(changes[0].dependency(), None);
}

#[test]
fn a_reload_that_lowers_a_threshold_below_a_closed_count_trips_and_says_so() {
    let (registry, mock, heard) = registry(BASE);
    let weather = registry.get("weather");
    assert_eq!(fail_n(&weather, 3), None);
    mock.increment(S);
    let text =
        format!("{BASE}\n[dependencies.weather]\nfailure_threshold = 3\ncooldown_ms = 2000\n");
    let changes = registry.reload_toml(&text).unwrap().into_changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        changes[0].to_string(),
        "weather: failure_threshold 5 -> 3, cooldown_ms 10000 -> 2000 (closed -> open: failure_threshold)"
    );
    let trip = *changes[0].transition().expect("the trip");
    assert_eq!(
        (
            trip.from(),
            trip.to(),
            trip.reason(),
            trip.failures(),
            trip.cooldown()
        ),
        (
            State::Closed,
            State::Open,
            TransitionReason::FailureThreshold,
            3,
            2 * S
        )
    );
    assert_eq!(weather.state(), State::Open);
    assert_eq!(weather.try_acquire().unwrap_err().retry_after(), 2 * S);
    assert_eq!(*heard.lock().unwrap(), [("weather".to_owned(), trip)]);
}

/// `[dependencies.serch]` for `search`: the file is put in force (the section may be for a
/// dependency used later), `search` keeps its own settings, and the reload says which sections
/// no breaker uses; checked before the reload, the same names are unknown.
#[test]
fn a_reload_file_names_the_sections_no_breaker_uses() {
    let (registry, _mock, _heard) = registry(BASE);
    let search = registry.get("search");
    let _weather = registry.get("weather");
    let text = format!(
        "{BASE}\n[dependencies.serch]\nfailure_threshold = 2\n[dependencies.weather]\ncooldown_ms = 7\n"
    );
    let reload = registry.reload_toml(&text).unwrap();
    assert_eq!(reload.unmatched(), ["serch"]);
    assert_eq!(
        search.config().failure_threshold(),
        Some(1),
        "search keeps its own"
    );
    assert_eq!(
        registry.configuration(),
        parse(&text),
        "the file is in force"
    );

    let file = TempFile(temp_path("unmatched"));
    std::fs::write(&file.0, &text).unwrap();
    assert_eq!(
        registry.reload_file(&file.0).unwrap().unmatched(),
        ["serch"]
    );
    let config = RegistryConfig::from_file(&file.0).unwrap();
    assert_eq!(
        config.unknown_dependencies(["search", "weather"]),
        ["serch"]
    );
    assert_eq!(
        toolbreaker::registry::closest_name("serch", ["weather", "search"]),
        Some("search")
    );
    assert!(registry.reload_toml(BASE).unwrap().unmatched().is_empty());
}

// ---------------------------------------------------------------------------------------------
// A refused reload changes nothing.

#[test]
fn a_refused_reload_leaves_every_configuration_and_breaker_as_it_was() {
    let (registry, mock, heard) = registry(BASE);
    let search = registry.get("search");
    let weather = registry.get("weather");
    let api = registry.get("api.example.com");
    fail(&search).expect("search open");
    assert_eq!(fail_n(&weather, 4), None, "weather closed with 4 of 5");
    api.force_open().expect("api isolated");
    mock.increment(S);
    let configuration = registry.configuration();
    let configs = [search.config(), weather.config(), api.config()];
    let heard_before = heard.lock().unwrap().len();

    let mut files = bad_files();
    // Valid sections before the bad one would trip `weather` and change `search`: none of it may
    // happen.
    files.push((
        "[default]\nfailure_threshold = 1\n[dependencies.search]\ncooldown_ms = 1\n\
         [dependencies.weather]\nfailure_threshold = 2\n[dependencies.zz]\nfailure_threshold = 0\n"
            .into(),
        Some("zz"),
        Some("failure_threshold"),
        None,
    ));
    for (text, dependency, field, line) in files {
        let err = registry
            .reload_toml(&text)
            .expect_err("a bad file is refused");
        assert_eq!(
            (err.dependency(), err.field(), err.line()),
            (dependency, field, line),
            "{text:?}"
        );
        assert_eq!(registry.configuration(), configuration, "{text:?}");
        assert_eq!(
            [search.config(), weather.config(), api.config()],
            configs,
            "{text:?}"
        );
        assert_eq!(registry.config_for("new"), configuration.default_config());
    }
    assert_eq!(heard.lock().unwrap().len(), heard_before, "no transition");
    assert_eq!(registry.len(), 3, "no breaker made");

    // And the state is as it was: search open for the rest of its cooldown, weather closed at
    // 4 of 5, api isolated.
    assert_eq!(search.try_acquire().unwrap_err().retry_after(), 9 * S);
    assert_eq!(fail(&weather).map(|t| t.failures()), Some(5));
    assert_eq!(
        api.try_acquire().unwrap_err().reason(),
        BlockedReason::Isolated
    );
}

// ---------------------------------------------------------------------------------------------
// Files.

/// A path in the temporary directory that no other test or run uses.
fn temp_path(tag: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!(
        "toolbreaker-reload-test-{tag}-{}-{nanos}.toml",
        std::process::id()
    ))
}

/// Removes the file when dropped, so a failing assertion still cleans up.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn reload_file_of_a_missing_file_is_refused_and_changes_nothing() {
    let (registry, _mock, _heard) = registry(BASE);
    let search = registry.get("search");
    let before = registry.configuration();
    let path = temp_path("missing");
    assert!(!path.exists());

    let err = registry.reload_file(&path).expect_err("missing file");
    assert_eq!(
        (err.dependency(), err.field(), err.line()),
        (None, None, None)
    );
    let shown = err.to_string();
    assert!(shown.contains("cannot read"), "{shown}");
    assert!(shown.contains(&path.display().to_string()), "{shown}");
    let io = err.io_error().expect("the io::Error is kept");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(shown.contains(&io.to_string()), "{shown}");
    assert_eq!(registry.configuration(), before);
    assert_eq!(search.config(), before.config_for("search"));

    assert!(RegistryConfig::from_file(&path).is_err());
}

#[test]
fn reload_file_applies_a_file_and_refuses_a_bad_one() {
    let (registry, _mock, _heard) = registry(BASE);
    let search = registry.get("search");
    let file = TempFile(temp_path("applied"));
    let text = "[default]\ncooldown_ms = 250\n[dependencies.search]\nfailure_threshold = 3\n";
    std::fs::write(&file.0, text).unwrap();

    assert_eq!(RegistryConfig::from_file(&file.0).unwrap(), parse(text));
    let changes = registry
        .reload_file(&file.0)
        .expect("applied")
        .into_changes();
    assert_eq!(
        changes.first().and_then(|c| c.dependency()),
        None,
        "the default first"
    );
    assert_eq!(search.config(), cfg(3, 250 * MS, Duration::from_secs(30)));
    assert_eq!(registry.configuration(), parse(text));

    // The same file, now broken: refused, with its line, and the configuration stays.
    std::fs::write(
        &file.0,
        "[default]\ncooldown_ms = 250\n[dependencies.search\n",
    )
    .unwrap();
    let err = registry.reload_file(&file.0).expect_err("broken");
    assert_eq!(err.line(), Some(3));
    assert_eq!(registry.configuration(), parse(text));
    assert_eq!(search.config(), cfg(3, 250 * MS, Duration::from_secs(30)));
}

/// A reload puts the configuration in force everywhere: a breaker reconfigured by hand since is
/// set back, and the change is reported.
#[test]
fn after_a_reload_every_breaker_has_the_configuration_in_force() {
    let (registry, _mock, _heard) = registry(BASE);
    let search = registry.get("search");
    search.reconfigure(cfg(9, S, S));
    let changes = registry.reload_toml(BASE).unwrap().into_changes();
    assert_eq!(search.config(), registry.config_for("search"));
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].dependency(), Some("search"));
    assert_eq!(changes[0].before(), cfg(9, S, S));
}

#[test]
fn breakers_created_while_reloads_run_all_end_with_the_configuration_in_force() {
    use std::sync::Barrier;
    const CREATORS: usize = 2;
    const NAMES: usize = 300;
    let registry = Arc::new(Registry::builder().config(parse(BASE)).build());
    let files = [
        "[default]\nfailure_threshold = 3\n[dependencies.n7]\ncooldown_ms = 7\n".to_owned(),
        "[default]\nfailure_threshold = 4\n[dependencies.n9]\ncooldown_ms = 9\n".to_owned(),
    ];
    let start = Arc::new(Barrier::new(CREATORS + 1));
    let creators: Vec<_> = (0..CREATORS)
        .map(|c| {
            let (registry, start) = (Arc::clone(&registry), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                for i in 0..NAMES {
                    // Both threads create the same names, in opposite orders.
                    let n = if c == 0 { i } else { NAMES - 1 - i };
                    registry.get(&format!("n{n}"));
                }
            })
        })
        .collect();
    let reloader = {
        let (registry, start, files) = (Arc::clone(&registry), Arc::clone(&start), files.clone());
        std::thread::spawn(move || {
            start.wait();
            for i in 0..101 {
                registry.reload_toml(&files[i % 2]).unwrap();
                std::thread::yield_now();
            }
        })
    };
    for c in creators {
        c.join().unwrap();
    }
    reloader.join().unwrap();

    let in_force = registry.configuration();
    assert_eq!(
        in_force,
        parse(&files[0]),
        "101 reloads end on the first file"
    );
    assert_eq!(registry.len(), NAMES);
    for n in 0..NAMES {
        let name = format!("n{n}");
        assert_eq!(
            registry.get(&name).config(),
            in_force.config_for(&name),
            "{name}"
        );
    }
}
