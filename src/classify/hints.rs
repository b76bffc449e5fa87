//! The wait a response asks for before the next request, from every header that says one
//! (feature `http`).
//!
//! | header | form | source |
//! |---|---|---|
//! | `Retry-After` | delay-seconds, or an HTTP-date | RFC 9110, section 10.2.3 |
//! | `retry-after-ms` | milliseconds, a fraction rounded up | OpenAI's and Azure OpenAI's APIs |
//! | `x-ratelimit-reset-requests`, `x-ratelimit-reset-tokens` | a duration such as `1s`, `6m0s`, `20ms`, `1h2m3.5s` (units `h`, `m`, `s`, `ms`, `us`, `µs`, `ns`) | OpenAI's API |
//! | `RateLimit-Reset` | delta-seconds | the IETF draft `draft-ietf-httpapi-ratelimit-headers`, up to its revision 06 |
//! | `RateLimit` | the `t` parameter of each used-up quota (`"default";r=0;t=30`; one with `r` above 0 asks for no wait), or the `reset` member (`limit=10, remaining=0, reset=30`) unless `remaining` is above 0, in seconds | the same draft, revisions 07 and later, and up to 06 |
//!
//! The hint is the longest wait any of them gives: a server that sends several means the
//! latest of their resets. A value that cannot be read is left out and counted
//! ([`ignored_hints`](super::http::ignored_hints)), never an error: the response is classified
//! all the same.

use core::time::Duration;
use std::time::SystemTime;

use http::HeaderMap;

use crate::sync::{Ordering, RelaxedU64};

/// Rate-limit hints that could not be read, since the process started.
static IGNORED: RelaxedU64 = RelaxedU64::new(0);

/// How many rate-limit hints could not be read since the process started.
pub(super) fn ignored() -> u64 {
    // Relaxed: a count read for reporting, ordered with nothing.
    IGNORED.load(Ordering::Relaxed)
}

/// What a header's value says: the wait it asks for, if any, and whether some of it could not be
/// read (a `RateLimit` field may hold a readable item beside one that is not).
type Read = (Option<Duration>, bool);

/// A header's reader: its value (trimmed) read as a wait from `now`.
type Reader = fn(&str, SystemTime) -> Read;

/// A reader's answer for a value that is one wait or unreadable.
fn one(wait: Option<Duration>) -> Read {
    (wait, wait.is_none())
}

/// Every header that can carry a wait, with its reader.
const READERS: [(&str, Reader); 6] = [
    ("retry-after", |value, now| {
        one(parse_retry_after(value, now))
    }),
    ("retry-after-ms", |value, _| one(milliseconds(value))),
    ("x-ratelimit-reset-requests", |value, _| {
        one(go_duration(value))
    }),
    ("x-ratelimit-reset-tokens", |value, _| {
        one(go_duration(value))
    }),
    ("ratelimit-reset", |value, _| one(seconds(value))),
    ("ratelimit", |value, _| ratelimit_field(value)),
];

/// The longest wait the headers ask for, from `now`; each value that cannot be read is counted.
pub(super) fn longest(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let mut ignored = 0;
    let wait = longest_counting(headers, now, &mut ignored);
    if ignored > 0 {
        // Relaxed: a count, ordered with nothing.
        IGNORED.fetch_add(ignored, Ordering::Relaxed);
    }
    wait
}

/// [`longest`], counting the values it leaves out into `ignored`.
fn longest_counting(headers: &HeaderMap, now: SystemTime, ignored: &mut u64) -> Option<Duration> {
    let mut longest = None;
    for (name, read) in READERS {
        for value in headers.get_all(name) {
            // As UTF-8, not `to_str`'s visible ASCII: Go writes microseconds as `µs`.
            let Ok(text) = core::str::from_utf8(value.as_bytes()) else {
                *ignored += 1;
                continue;
            };
            let (wait, unreadable) = read(text.trim(), now);
            longest = longest.max(wait);
            *ignored += u64::from(unreadable);
        }
    }
    longest
}

/// A `Retry-After` value as a wait from `now`: delay-seconds, or an HTTP-date (a date in the
/// past is a wait of zero).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(wait) = seconds(value) {
        return Some(wait);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whole seconds, digits only (too many for a `u64` is unreadable, not a panic).
fn seconds(value: &str) -> Option<Duration> {
    digits(value).map(Duration::from_secs)
}

/// Milliseconds, a fraction rounded up (so the wait is never shorter than asked).
fn milliseconds(value: &str) -> Option<Duration> {
    let nanos = decimal(value, 1_000_000)?;
    Some(Duration::from_millis(
        u64::try_from(nanos.div_ceil(1_000_000)).ok()?,
    ))
}

/// A non-empty run of ASCII digits as a `u64`.
fn digits(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// A decimal number (`12`, `1.5`, `.5`; at most 9 digits after the point) times `unit`
/// nanoseconds, in nanoseconds.
fn decimal(value: &str, unit: u128) -> Option<u128> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if whole.is_empty() && fraction.is_empty()
        || fraction.len() > 9
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let scale = 10_u128.pow(u32::try_from(fraction.len()).ok()?);
    let fraction: u128 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().ok()?
    };
    whole
        .checked_mul(unit)?
        .checked_add((fraction * unit).div_ceil(scale))
}

/// A duration as Go writes it (`time.Duration.String`): one or more numbers, each with its
/// unit, largest first (`1h2m3.5s`, `6m0s`, `20ms`, `0s`).
fn go_duration(value: &str) -> Option<Duration> {
    const UNITS: [(&str, u128); 7] = [
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];
    let mut rest = value;
    let mut nanos: u128 = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        // The longest unit that matches (`ms` before `m`).
        let (unit, size) = UNITS
            .iter()
            .filter(|(unit, _)| after.starts_with(unit))
            .max_by_key(|(unit, _)| unit.len())?;
        nanos = nanos.checked_add(decimal(number, *size)?)?;
        rest = &after[unit.len()..];
    }
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// A `RateLimit` field's wait. Two forms:
/// - revisions 07 and later: a list of quota items, each with its remaining quota `r` and its
///   reset `t` in seconds (`"default";r=0;t=30, "burst";r=5;t=2`): the wait is the longest reset
///   of an item that is used up (`r=0`, or no `r`); an item with quota left asks for none;
/// - up to revision 06: one dictionary (`limit=10, remaining=0, reset=30`): the reset, unless
///   `remaining` says quota is left.
///
/// A field with no reset at all asks for no wait and is not unreadable; an item whose reset (or
/// remaining) cannot be read is left out, and the field counted as partly unreadable.
fn ratelimit_field(value: &str) -> Read {
    let mut longest = None;
    let mut unreadable = false;
    // The dictionary form's members, if it is that form.
    let mut remaining = None;
    let mut reset = None;
    for item in value.split(',') {
        let mut parts = item.split(';');
        let head = parts.next().unwrap_or_default().trim();
        if let Some((key, number)) = head.split_once('=') {
            // The dictionary form: a member per item.
            let number = number.trim();
            match key.trim() {
                "remaining" => remaining = Some(number.parse::<u64>().map_err(|_| ())),
                "reset" => reset = Some(seconds(number).ok_or(())),
                _ => {}
            }
            continue;
        }
        let (mut r, mut t) = (None, None);
        for part in parts {
            match part.trim().split_once('=') {
                Some(("r", n)) => r = Some(n.trim().parse::<u64>().map_err(|_| ())),
                Some(("t", n)) => t = Some(seconds(n.trim()).ok_or(())),
                _ => {}
            }
        }
        match (r, t) {
            (_, None) => {}
            (Some(Err(())), _) | (_, Some(Err(()))) => unreadable = true,
            (Some(Ok(left)), Some(Ok(_))) if left > 0 => {}
            (_, Some(Ok(wait))) => longest = longest.max(Some(wait)),
        }
    }
    match (remaining, reset) {
        (_, None) => {}
        (Some(Err(())), _) | (_, Some(Err(()))) => unreadable = true,
        (Some(Ok(left)), Some(Ok(_))) if left > 0 => {}
        (_, Some(Ok(wait))) => longest = longest.max(Some(wait)),
    }
    (longest, unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    fn hint(pairs: &[(&'static str, &'static str)]) -> (Option<Duration>, u64) {
        let mut ignored = 0;
        let wait = longest_counting(&headers(pairs), UNIX_EPOCH, &mut ignored);
        (wait, ignored)
    }

    /// Headers, and the hint they give.
    type Row = (&'static [(&'static str, &'static str)], Option<Duration>);

    const fn ms(ms: u64) -> Option<Duration> {
        Some(Duration::from_millis(ms))
    }

    #[test]
    fn each_header_is_read_in_each_of_its_forms() {
        let rows: [Row; 17] = [
            (&[("retry-after", "120")], ms(120_000)),
            (
                &[("retry-after", "Thu, 01 Jan 1970 00:01:00 GMT")],
                ms(60_000),
            ),
            (&[("retry-after-ms", "1234")], ms(1_234)),
            (&[("retry-after-ms", "20.1")], ms(21)),
            (&[("retry-after-ms", "0")], ms(0)),
            (&[("x-ratelimit-reset-requests", "1s")], ms(1_000)),
            (&[("x-ratelimit-reset-requests", "6m0s")], ms(360_000)),
            (&[("x-ratelimit-reset-tokens", "20ms")], ms(20)),
            (&[("x-ratelimit-reset-tokens", "1h2m3.5s")], ms(3_723_500)),
            (
                &[("x-ratelimit-reset-tokens", "1.5ms")],
                Some(Duration::from_micros(1_500)),
            ),
            (
                &[("x-ratelimit-reset-tokens", "7µs")],
                Some(Duration::from_micros(7)),
            ),
            (&[("x-ratelimit-reset-tokens", "0s")], ms(0)),
            (&[("ratelimit-reset", "30")], ms(30_000)),
            (&[("ratelimit", "\"default\";r=0;t=30")], ms(30_000)),
            (
                &[("ratelimit", "\"a\";r=5;t=10, \"b\";r=0;t=40")],
                ms(40_000),
            ),
            (
                &[("ratelimit", "limit=100, remaining=0, reset=5")],
                ms(5_000),
            ),
            (&[], None),
        ];
        for (pairs, expected) in rows {
            assert_eq!(hint(pairs), (expected, 0), "{pairs:?}");
        }
    }

    #[test]
    fn the_longest_wait_of_every_header_is_the_hint() {
        let all = [
            ("retry-after", "2"),
            ("retry-after-ms", "2500"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
            ("ratelimit-reset", "30"),
            ("ratelimit", "\"default\";r=0;t=45"),
        ];
        assert_eq!(hint(&all), (ms(360_000), 0));
        assert_eq!(hint(&all[..3]), (ms(2_500), 0));
        // Two values of one header: the longer.
        assert_eq!(
            hint(&[("retry-after", "3"), ("retry-after", "9")]),
            (ms(9_000), 0)
        );
    }

    #[test]
    fn a_value_that_cannot_be_read_is_left_out_and_counted() {
        let bad: [(&str, &str); 12] = [
            ("retry-after", "soon"),
            ("retry-after", "-5"),
            ("retry-after", "99999999999999999999999"),
            ("retry-after-ms", "1e3"),
            ("retry-after-ms", "."),
            ("x-ratelimit-reset-requests", "1"),
            ("x-ratelimit-reset-requests", "1x"),
            ("x-ratelimit-reset-requests", "s"),
            ("x-ratelimit-reset-tokens", ""),
            ("ratelimit-reset", "1.5"),
            ("ratelimit", "\"default\";r=x;t=5"),
            ("ratelimit", "\"default\";r=0;t=soon"),
        ];
        for pair in bad {
            assert_eq!(hint(&[pair]), (None, 1), "{pair:?}");
        }
        // Left out, the others still count.
        assert_eq!(
            hint(&[("retry-after", "soon"), ("retry-after-ms", "700")]),
            (ms(700), 1)
        );
        assert_eq!(hint(&bad), (None, 12));
    }

    #[test]
    fn a_ratelimit_field_waits_for_its_used_up_quotas_only() {
        let rows: [(&str, Option<Duration>, u64); 6] = [
            // One item unreadable: left out, the other read.
            ("\"a\";r=0;t=abc, \"b\";r=0;t=30", ms(30_000), 1),
            // A quota with requests left asks for no wait.
            ("\"a\";r=5;t=100, \"b\";r=0;t=2", ms(2_000), 0),
            ("\"a\";r=5;t=100", None, 0),
            // No reset at all: no wait, and nothing unreadable.
            ("\"default\";r=0", None, 0),
            ("limit=100, remaining=50", None, 0),
            ("limit=100, remaining=50, reset=30", None, 0),
        ];
        for (value, wait, ignored) in rows {
            assert_eq!(hint(&[("ratelimit", value)]), (wait, ignored), "{value}");
        }
    }

    #[test]
    fn huge_values_are_unreadable_not_a_panic() {
        for value in [
            "99999999999999999999999999999h",
            "1.0000000001s",
            "18446744073709551616s",
        ] {
            assert_eq!(
                hint(&[("x-ratelimit-reset-tokens", value)]),
                (None, 1),
                "{value}"
            );
        }
        assert_eq!(
            hint(&[("retry-after-ms", "99999999999999999999999999999")]),
            (None, 1)
        );
    }
}
