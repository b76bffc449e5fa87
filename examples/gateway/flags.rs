//! The gateway's numeric command-line values (`--duration`, `--concurrency`), read with messages
//! that say what is wrong: not a number, too small, or too large with the largest accepted,
//! whatever the size of the number given; and how a flag's value is written (`--flag=value`).
//!
//! Shared by the example (`main.rs`) and the integration test (`tests/examples/gateway.rs`).

use std::num::IntErrorKind;
use std::time::Duration;

/// A command-line word as a flag and the value written into it: `--flag=value` is `("--flag",
/// Some("value"))`; anything else is itself, with no value (its value, if it takes one, is the
/// next word).
pub fn split(arg: String) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
        _ => (arg, None),
    }
}

/// `text`, the value of `flag`, as a whole number from `min` to `max`.
///
/// # Errors
///
/// One line naming the flag and the value: not a whole number, too small (with the least
/// accepted) or too large (with the most), also for a number too large for any integer type.
pub fn whole_number(flag: &str, text: &str, min: usize, max: usize) -> Result<usize, String> {
    let too_large = || format!("{flag}: `{text}` is too large: at most {max}");
    let too_small = || format!("{flag}: `{text}` is too small: at least {min}");
    let trimmed = text.trim();
    match trimmed.parse::<usize>() {
        Ok(n) if n > max => Err(too_large()),
        Ok(n) if n < min => Err(too_small()),
        Ok(n) => Ok(n),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Err(too_large()),
        // A negative whole number, of any size: too small, not "not a number".
        Err(_) if is_negative_whole_number(trimmed) => Err(too_small()),
        Err(_) => Err(format!("{flag}: `{text}` is not a whole number")),
    }
}

fn is_negative_whole_number(text: &str) -> bool {
    text.strip_prefix('-')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// `text`, the value of `flag`, as a number of seconds more than 0 and at most `max`.
///
/// # Errors
///
/// One line naming the flag and the value: not a number of seconds, too small (0 or less, or
/// less than a nanosecond) or too large (with the most accepted).
pub fn seconds(flag: &str, text: &str, max: f64) -> Result<Duration, String> {
    let not_a_number = || format!("{flag}: `{text}` is not a number of seconds");
    let secs: f64 = text.trim().parse().map_err(|_| not_a_number())?;
    if secs.is_nan() {
        return Err(not_a_number());
    }
    if secs > max {
        return Err(format!(
            "{flag}: `{text}` is too large: at most {max} seconds"
        ));
    }
    if secs <= 0.0 || Duration::from_secs_f64(secs).is_zero() {
        return Err(format!(
            "{flag}: `{text}` is too small: more than 0 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}
