//! The crate's layers are one-way: a module refers only to modules below it, at folder level and
//! at file level, so the imports form no circle.
//!
//! This reads every file under `src/` and checks each path it names (`crate::…`, `super::…`,
//! `self::…`, in `use` lines and in code) against the order below. A folder's `mod.rs` may
//! declare and re-export its files (`mod x;`, `pub use self::x::…`: the index); every other
//! reference must point down. A new file has to be given its place here, which is the point: the
//! order is a decision, written down.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The top-level modules, bottom up.
const LAYERS: &[&str] = &[
    "sync", "time", "config", "classify", "types", "state", "observe", "breaker", "registry",
    "pool", "fleet", "agent", "tower", "mcp", "docs", "fuzzing",
];

/// Each folder's files, bottom up (`mod` is the folder's `mod.rs`).
const FILES: &[(&str, &[&str])] = &[
    (
        "state",
        &[
            "pack", "word", "slots", "settings", "backoff", "hint", "cooldown", "rates", "limit",
            "decide", "mod",
        ],
    ),
    (
        "breaker",
        &[
            "hook",
            "throttle",
            "window",
            "budget_ring",
            "budget",
            "cap",
            "prober",
            "machine",
            "sharing",
            "probes",
            "admit",
            "report",
            "manual",
            "reconfigure",
            "capped",
            "ticket",
            "permit",
            "pooled",
            "call",
            "builder",
            "admission",
            "hint",
            "throttling",
            "health",
            "checks",
            "mod",
            "loom_tests",
        ],
    ),
    (
        "config",
        &[
            "defaults",
            "error",
            "fields",
            "shape",
            "rates",
            "concurrency",
            "throttling",
            "limits",
            "validated",
            "mod",
        ],
    ),
    (
        "classify",
        &["outcome", "classifier", "mod", "hints", "http", "reqwest"],
    ),
    (
        "docs",
        &[
            "atomics",
            "calls",
            "checks",
            "configuration",
            "contract",
            "examples",
            "features",
            "fleet",
            "layers",
            "mcp",
            "observability",
            "time",
            "mod",
        ],
    ),
    (
        "fleet",
        &[
            "status",
            "keys",
            "millis",
            "tap",
            "script",
            "reconcile",
            "reconcile_tests",
            "flush",
            "backstop",
            "redact",
            "error",
            "handle",
            "connection",
            "send",
            "receive",
            "worker",
            "start",
            "builder",
            "mod",
            "install",
        ],
    ),
    (
        "observe",
        &["counters", "export", "listener", "events", "herald", "mod"],
    ),
    (
        "registry",
        &[
            "pool_spec",
            "config",
            "bounds",
            "hook",
            "map",
            "budgets",
            "eviction",
            "lookup",
            "pools",
            "reload",
            "builder",
            "toml",
            "export",
            "mod",
        ],
    ),
    (
        "agent",
        &[
            "fields",
            "message",
            "result",
            "retry",
            "run",
            "spans",
            "guard",
            "target",
            "pipeline",
            "tool_call",
            "pool_call",
            "mod",
        ],
    ),
    ("pool", &["members", "permit", "choose", "call", "mod"]),
    ("tower", &["future", "service", "mod", "layer"]),
    (
        "mcp",
        &["classify", "result", "client", "gateway", "ping", "mod"],
    ),
];

/// One source file: its top-level module and its file within it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    layer: String,
    file: String,
}

impl Place {
    fn of(relative: &Path) -> Place {
        let parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        match parts.as_slice() {
            [layer] => Place {
                layer: layer.clone(),
                file: "mod".into(),
            },
            [layer, file] => Place {
                layer: layer.clone(),
                file: file.clone(),
            },
            // A file's own folder (`decide/adopt.rs`): a part of that file, in its place.
            [layer, file, _part] => Place {
                layer: layer.clone(),
                file: file.clone(),
            },
            _ => panic!(
                "a file nested deeper than a file's own folder: {}",
                relative.display()
            ),
        }
    }

    fn layer_rank(&self) -> usize {
        LAYERS
            .iter()
            .position(|l| *l == self.layer)
            .unwrap_or_else(|| panic!("module `{}` has no place in LAYERS", self.layer))
    }

    fn files(&self) -> &'static [&'static str] {
        FILES
            .iter()
            .find(|(folder, _)| *folder == self.layer)
            .map_or(&["mod"][..], |(_, files)| *files)
    }

    fn file_rank(&self) -> usize {
        self.files()
            .iter()
            .position(|f| *f == self.file)
            .unwrap_or_else(|| {
                panic!(
                    "file `{}` of `{}` has no place in FILES",
                    self.file, self.layer
                )
            })
    }

    /// The file of this folder that `name` (the segment after `super::` or `self::`, or after
    /// the folder's name) refers to: the file of that name, or else an item of `mod.rs`.
    fn sibling(&self, name: &str) -> Place {
        let file = if self.files().contains(&name) {
            name
        } else {
            "mod"
        };
        Place {
            layer: self.layer.clone(),
            file: file.into(),
        }
    }
}

/// The code of a file as statements (a `use` group spanning lines is read whole), each with the
/// line it starts on.
fn statements(text: &str) -> Vec<(usize, String)> {
    let mut statements: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (number, code) in code_lines(text) {
        if open {
            let last = statements.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(code.trim());
        } else {
            statements.push((number, code.clone()));
        }
        let trimmed = statements.last().unwrap().1.trim_start().to_owned();
        open = (trimmed.starts_with("use ") || trimmed.contains(" use ")) && !trimmed.contains(';');
    }
    statements
}

/// The code of a file: line comments and everything from its unit tests on removed. A line inside
/// an inline module (`mod sealed { … }`) is marked with a leading `@`: its `super` is the file.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut depth = 0usize;
    let mut inline_at: Option<usize> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test") {
            break; // unit tests sit at the end, and their `super` is the file itself
        }
        let code = match line.find("//") {
            // Outside a string literal (an even number of quotes before it).
            Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
            _ => line,
        };
        let words: Vec<&str> = code.split_whitespace().collect();
        let opens_module = words
            .iter()
            .position(|w| *w == "mod")
            .is_some_and(|at| words.get(at + 2) == Some(&"{"));
        if opens_module && inline_at.is_none() {
            inline_at = Some(depth);
        }
        let marked = if inline_at.is_some() && !opens_module {
            format!("@{code}")
        } else {
            code.to_owned()
        };
        depth += code.matches('{').count();
        depth = depth.saturating_sub(code.matches('}').count());
        if inline_at.is_some_and(|at| depth <= at) {
            inline_at = None;
        }
        lines.push((number + 1, marked));
    }
    lines
}

/// The first segment after each occurrence of `prefix` that starts a path in `code`.
fn segments_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(found_at) = code[from..].find(prefix) {
        let at = from + found_at;
        let before = code[..at].chars().next_back();
        let after = &code[at + prefix.len()..];
        from = at + prefix.len();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // part of a longer name, or of another path (`super::super::`)
        }
        if let Some(group) = after.strip_prefix('{') {
            // `super::{a, b::C}`: the first segment of each item.
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let item = item.trim();
                let end = item
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(item.len());
                if end > 0 {
                    found.push(&item[..end]);
                }
            }
            continue;
        }
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if end > 0 {
            found.push(&after[..end]);
        }
    }
    found
}

/// Every source file under `src/` but the unit tests' own files (`tests.rs`, `loom_tests.rs`),
/// sorted, with the `src/` folder.
fn sources() -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let test_file = path
                .file_stem()
                .is_some_and(|stem| stem == "tests" || stem == "loom_tests");
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !test_file {
                files.push(path);
            }
        }
    }
    files.sort();
    (src, files)
}

/// `path` under `src`, with `/` between its parts on every platform.
fn relative_to(src: &Path, path: &Path) -> String {
    path.strip_prefix(src)
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// Each occurrence of any of `needles` in the code (not the comments, not the unit tests) of a
/// file not in `allowed` (paths under `src/`), as `file:line: code`.
fn occurrences(needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let (src, files) = sources();
    let mut found = Vec::new();
    for path in &files {
        let relative = relative_to(&src, path);
        if allowed
            .iter()
            .any(|a| relative == *a || relative.starts_with(&format!("{a}/")))
        {
            continue;
        }
        let text = fs::read_to_string(path).unwrap();
        for (number, code) in code_lines(&text) {
            if needles.iter().any(|n| code.contains(n)) {
                found.push(format!(
                    "src/{relative}:{number}: {}",
                    code.trim_start_matches('@').trim()
                ));
            }
        }
    }
    found
}

/// Only the decider builds a next state word or a next value of the probe slots: a constructor
/// appears in the word's file, the slots' file and the decider's files alone (the breaker's
/// initial word, `Word::initial`, aside). The fuzz targets' internals (`fuzzing.rs`, built only
/// under `--cfg fuzzing`) build words of every layout to check it, and move no breaker.
#[test]
fn only_the_decider_builds_a_next_word_or_slots_value() {
    let constructors = [
        "Word::closed(",
        "Word::closed_with(",
        "Word::open(",
        "Word::probing(",
        "Word::half_open(",
        "Word::isolated(",
        "Word::pack(",
        "Word(",
        "Slots::new(",
        "Slots(",
    ];
    let allowed = [
        "state/word.rs",
        "state/slots.rs",
        "state/decide.rs",
        "state/decide",
        "fuzzing.rs",
    ];
    let found = occurrences(&constructors, &allowed);
    assert!(
        found.is_empty(),
        "a word or slots value built outside the decider:\n{}",
        found.join("\n")
    );
    // The scan sees constructors where they are.
    assert!(!occurrences(&constructors, &[]).is_empty());
}

/// Every atomic comes through `sync.rs`, so a model checker can swap it.
#[test]
fn atomics_are_imported_only_through_sync() {
    let needles = ["sync::atomic", "portable_atomic", "loom::"];
    let found = occurrences(&needles, &["sync.rs"]);
    assert!(
        found.is_empty(),
        "an atomic imported outside sync.rs:\n{}",
        found.join("\n")
    );
}

/// The clock is read through `time.rs` alone, so tests move one clock.
#[test]
fn the_clock_is_read_only_through_time() {
    let needles = [
        "Instant::now(",
        "SystemTime::now(",
        "UNIX_EPOCH",
        ".recent()",
    ];
    let found = occurrences(&needles, &["time.rs"]);
    assert!(
        found.is_empty(),
        "a clock read outside time.rs:\n{}",
        found.join("\n")
    );
}

/// Inside the crate a path names the module that defines an item (`crate::types::State`), not
/// the root's re-export of it (`crate::State`): the root is the index for users, and a path
/// through it hides which layer an item comes from.
#[test]
fn crate_paths_name_the_defining_module_not_the_roots_re_exports() {
    let (src, files) = sources();
    let mut found = Vec::new();
    for path in &files {
        let relative = relative_to(&src, path);
        let text = fs::read_to_string(path).unwrap();
        for (number, code) in code_lines(&text) {
            let through_root = segments_after(&code, "crate::")
                .iter()
                .any(|segment| segment.starts_with(|c: char| c.is_ascii_uppercase()));
            if through_root {
                found.push(format!("src/{relative}:{number}: {}", code.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a path through the root's re-exports:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_module_refers_only_to_modules_below_it() {
    let (src, files) = sources();

    let mut upward = Vec::new();
    let mut edges: BTreeMap<Place, Vec<Place>> = BTreeMap::new();
    for path in &files {
        let relative = path.strip_prefix(&src).unwrap();
        if relative == Path::new("lib.rs") {
            continue; // the index: declarations and re-exports
        }
        let here = Place::of(relative);
        let text = fs::read_to_string(path).unwrap();
        for (number, code) in statements(&text) {
            let trimmed = code.trim_start_matches('@').trim_start();
            let index_line = here.file == "mod"
                && (trimmed.starts_with("pub use ")
                    || trimmed.starts_with("pub(crate) use ")
                    || trimmed.starts_with("mod ")
                    || trimmed.starts_with("pub mod ")
                    || trimmed.starts_with("pub(crate) mod "));
            if index_line {
                continue;
            }
            let mut targets = Vec::new();
            for layer in segments_after(&code, "crate::") {
                let rest = &code[code.find(&format!("crate::{layer}")).unwrap()..];
                if layer == here.layer {
                    let inner = segments_after(rest, &format!("crate::{layer}::"));
                    targets.push(here.sibling(inner.first().copied().unwrap_or("mod")));
                } else if LAYERS.contains(&layer) {
                    targets.push(Place {
                        layer: layer.to_owned(),
                        file: "mod".into(),
                    });
                }
            }
            // In an inline module `super` is this file; elsewhere `super` is the folder (for a
            // file of it) and `self` is the folder (for its `mod.rs`).
            let inline = code.starts_with('@');
            if !inline && here.file != "mod" {
                for name in segments_after(&code, "super::") {
                    targets.push(here.sibling(name));
                }
            }
            if here.file == "mod" {
                for name in segments_after(&code, "self::") {
                    targets.push(here.sibling(name));
                }
            }
            for target in targets {
                if target == here {
                    continue;
                }
                let down = if target.layer == here.layer {
                    target.file_rank() < here.file_rank()
                } else {
                    target.layer_rank() < here.layer_rank()
                };
                if !down {
                    upward.push(format!(
                        "src/{}:{number} refers up, to {}/{}: {}",
                        relative.display(),
                        target.layer,
                        target.file,
                        code.trim()
                    ));
                }
                edges.entry(here.clone()).or_default().push(target);
            }
        }
        // Every file has its place.
        here.layer_rank();
        here.file_rank();
    }
    assert!(upward.is_empty(), "{}", upward.join("\n"));
    assert!(
        edges.len() >= 20,
        "the check saw references in only {} files: is it reading the sources?",
        edges.len()
    );
}

#[test]
fn the_path_scanner_finds_paths_and_skips_longer_names() {
    assert_eq!(
        segments_after(
            "use crate::time::Origin; x(crate::sync::lock(&m))",
            "crate::"
        ),
        ["time", "sync"]
    );
    assert_eq!(
        segments_after("use super::super::word::*;", "super::"),
        ["super"]
    );
    assert_eq!(
        segments_after("use super::{AgentRun, result::ToolResult};", "super::"),
        ["AgentRun", "result"]
    );
    let grouped = statements("use super::{\n    a,\n    b,\n};\nfn f() {}");
    assert_eq!(grouped.len(), 2);
    assert!(grouped[0].1.contains('b'));
    assert_eq!(segments_after("mycrate::x", "crate::"), Vec::<&str>::new());
    let inline = code_lines("mod sealed {\n    impl S for super::R {}\n}\nuse super::X;");
    let marked: Vec<bool> = inline.iter().map(|(_, l)| l.starts_with('@')).collect();
    assert_eq!(
        marked,
        [false, true, true, false],
        "its closing brace is inside it too"
    );
    let lines =
        code_lines("let a = 1; // crate::agent\nlet url = \"http://x\";\n#[cfg(test)]\nmod t {}");
    assert_eq!(lines.len(), 2);
    assert!(!lines[0].1.contains("agent"));
    assert!(lines[1].1.contains("http://x"));
}

/// Lines of a file before its unit tests (the first `#[cfg(test)]` or `#[cfg(all(test, …))]` at
/// the start of a line), and the lines from there on.
fn code_and_test_lines(text: &str) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let tests = lines
        .iter()
        .position(|l| l.starts_with("#[cfg(test)]") || l.starts_with("#[cfg(all(test"))
        .unwrap_or(lines.len());
    (tests, lines.len() - tests)
}

/// The size rule: a file is one concept, short enough to read in one sitting. At most about 400
/// lines before its unit tests (docs included: an item's long prose belongs in a `docs` page,
/// which is prose and exempt), and unit tests of more than about 300 lines go in a sibling file
/// (`tests.rs`, `NAME_tests.rs`, `loom_tests.rs`: test code, exempt).
#[test]
fn every_file_is_short_enough_to_read_in_one_sitting() {
    const MAX_CODE: usize = 420;
    const MAX_INLINE_TESTS: usize = 320;
    let (src, files) = sources();
    let mut long = Vec::new();
    for path in &files {
        let relative = relative_to(&src, path);
        let stem = path.file_stem().unwrap().to_string_lossy();
        if relative.starts_with("docs/") || stem.ends_with("_tests") {
            continue;
        }
        let (code, tests) = code_and_test_lines(&fs::read_to_string(path).unwrap());
        if code > MAX_CODE {
            long.push(format!(
                "src/{relative}: {code} lines before its tests (at most {MAX_CODE})"
            ));
        }
        if tests > MAX_INLINE_TESTS {
            long.push(format!(
                "src/{relative}: {tests} lines of unit tests in the file (at most {MAX_INLINE_TESTS}; more go in a sibling file)"
            ));
        }
    }
    assert!(
        long.is_empty(),
        "files over the size rule:\n{}",
        long.join("\n")
    );
}

/// A folder's `mod.rs` and the crate root are indexes: declarations, re-exports and their docs,
/// never the home of a type or a function.
#[test]
fn every_mod_rs_is_an_index() {
    const ITEMS: &[&str] = &[
        "fn ",
        "struct ",
        "enum ",
        "impl ",
        "impl<",
        "trait ",
        "const ",
        "static ",
        "type ",
        "macro_rules!",
    ];
    let (src, files) = sources();
    let mut defined = Vec::new();
    let mut indexes = 0;
    for path in &files {
        let relative = relative_to(&src, path);
        if !(relative.ends_with("/mod.rs") || relative == "lib.rs") {
            continue;
        }
        indexes += 1;
        let text = fs::read_to_string(path).unwrap();
        let mut doctest_only = false;
        for (number, line) in text.lines().enumerate() {
            // The README's doctests hang on a unit struct that exists only under `cfg(doctest)`.
            if line.starts_with("#[cfg(all(doctest") || line.starts_with("#[cfg(doctest") {
                doctest_only = true;
                continue;
            }
            let item = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ");
            if ITEMS.iter().any(|i| item.starts_with(i)) && !doctest_only {
                defined.push(format!("src/{relative}:{}: {line}", number + 1));
            }
            if !line.starts_with("#[") {
                doctest_only = false;
            }
        }
    }
    assert!(
        indexes >= 8,
        "the check saw only {indexes} indexes: is it reading the sources?"
    );
    assert!(
        defined.is_empty(),
        "items defined in an index:\n{}",
        defined.join("\n")
    );
}
