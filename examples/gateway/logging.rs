//! The gateway's `--log DIRECTIVE`: tracing-subscriber's `EnvFilter` syntax, checked before
//! anything starts, so a filter that would print nothing by mistake is a usage error.
//!
//! `EnvFilter` reads a bare word that is not a level as a target, so `--log notalevel` is a
//! valid filter for events of a target `notalevel`, which nothing has: it would print nothing,
//! silently. Here a bare word is a level, or the crate's own target (`toolbreaker`, or a module
//! path in it); any other target takes a level (`hyper=debug`).
//!
//! Shared by the example (`main.rs`) and the integration test (`tests/examples/gateway.rs`).

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// The target of the crate's events; its spans' targets are module paths under it.
const CRATE_TARGET: &str = "toolbreaker";

/// `text`, the value of `flag`, as a filter of tracing events.
///
/// # Errors
///
/// One line naming the flag and the value: not a filter directive (the parser's words), or a
/// bare word that is neither a level nor the crate's target.
pub fn filter(flag: &str, text: &str) -> Result<EnvFilter, String> {
    if text.trim().is_empty() {
        return Err(format!(
            "{flag}: `{text}` is empty: give a level, such as `info`, or TARGET=LEVEL"
        ));
    }
    for directive in text.split(',').map(str::trim) {
        let bare = !directive.is_empty() && !directive.contains(['=', '[']);
        let crate_target = directive == CRATE_TARGET
            || directive
                .strip_prefix(CRATE_TARGET)
                .is_some_and(|rest| rest.starts_with("::"));
        if bare && directive.parse::<LevelFilter>().is_err() && !crate_target {
            return Err(format!(
                "{flag}: `{directive}` is not a level (off, error, warn, info, debug, trace) \
                 nor the crate's target (`{CRATE_TARGET}`); for another target write \
                 TARGET=LEVEL, such as `{directive}=debug`"
            ));
        }
    }
    EnvFilter::try_new(text).map_err(|e| format!("{flag}: `{text}` is not a filter directive: {e}"))
}
