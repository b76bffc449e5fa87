//! The shared record's format, its keys, and the Lua scripts that are its only writers (their
//! text in the `.lua` files beside this one: `prelude.lua`, the part every script begins with,
//! then one file per script).
//!
//! Each shared transition is one script, sent as `EVALSHA` (redis-rs [`redis::Script`] loads it
//! on a `NOSCRIPT` answer), so it runs atomically on the server: it reads the record, checks the
//! generation it was given, writes, bumps the epoch and publishes, with nothing between. Every
//! time in a record is the server's (`TIME`), in ms since the Unix epoch; no instance's clock is
//! written, so instances whose clocks disagree still agree on when a cooldown ends.
//!
//! # Keys (under the user's prefix `P`, encoded as `super::keys` says, for dependency `D`)
//!
//! | key | type | contents |
//! |---|---|---|
//! | `P:breaker:D` | hash, expiring after the record TTL (set at every write and sync) | `v` (format version, `1`), `gen` (fleet generation), `state` (`closed`, `open`, `isolated`), `at` (ms: when the state was entered), `lu` (ms: end of the last probe lease taken in this open period, `0` if none or released), `m` (the id of the last change by hand) |
//! | `P:votes:D` | hash | one field per instance: `count at tripped` (its consecutive counted failures, when it last reported, whether it tripped locally) |
//! | `P:probe:D` | string, with a TTL | `gen instance`: the probe lease (`SET … NX PX`) |
//! | `P:epoch` | integer | bumped by every write of any record; a changed epoch tells an instance it missed a message |
//! | `P:incarnation` | string | the server's time when the keys were first written after a wipe; a changed one tells an instance every record was lost |
//!
//! Every write publishes the new record on channel `P:transitions` as one line of tab-separated
//! fields: `1 epoch gen state at now holder lease_until dependency` (`holder` empty when no lease).

use redis::Value;

use super::keys::Keys;
use super::millis::ServerMs;

/// The record format this build reads and writes.
pub(crate) const FORMAT_VERSION: &str = "1";

/// A shared state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shared {
    Closed,
    Open,
    Isolated,
}

impl Shared {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Shared::Closed => "closed",
            Shared::Open => "open",
            Shared::Isolated => "isolated",
        }
    }

    fn parse(text: &str) -> Option<Shared> {
        match text {
            "closed" => Some(Shared::Closed),
            "open" => Some(Shared::Open),
            "isolated" => Some(Shared::Isolated),
            _ => None,
        }
    }
}

/// One dependency's shared record, as a script or a message gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) epoch: u64,
    pub(crate) generation: u64,
    pub(crate) state: Shared,
    /// When the state was entered.
    pub(crate) at: ServerMs,
    /// The server's time when the record was read or published.
    pub(crate) now: ServerMs,
    /// The instance holding the probe lease, if any.
    pub(crate) holder: Option<String>,
    /// The end of the last lease of this open period (0: none).
    pub(crate) lease_until: ServerMs,
    /// The end a dependency's hint set for this open period (0: none): a probe lease is not
    /// granted before it.
    pub(crate) hinted_until: ServerMs,
}

/// What a script answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The script wrote; here is the new record.
    Wrote(Record),
    /// Nothing written; here is the record as it stands.
    Same(Record),
    /// The given generation is not the record's (or the lease is not this instance's): nothing
    /// written; here is the record as it stands.
    Stale(Record),
    /// This instance holds the probe lease (claimed now or before).
    Won(Record),
    /// Another instance holds the probe lease.
    Held(Record),
    /// The cooldown has not ended: ask again in this many ms.
    Wait(Record, u64),
    /// No record under the key (wiped): sync first.
    Missing,
    /// The key or the lease holds something this build does not read.
    Bad(String),
}

/// The common part of every script: time, the record's checks, the reply and the message.
const PRELUDE: &str = include_str!("prelude.lua");

/// Read the record; create it from this instance's state if it is missing.
/// ARGV: channel, dependency, local state, ms since the local state was entered, last fleet
/// generation this instance knew.
const SYNC: &str = include_str!("sync.lua");

/// Report an instance's consecutive counted failures (its whole run, not the new ones: a lost or
/// repeated report counts nothing twice) and whether it tripped on its own, and trip the fleet if
/// the votes reach the rule. ARGV: channel, dependency, instance, expected generation, the
/// count, tripped (0/1), fleet threshold, minimum instances, window ms, the hinted end of the
/// instance's open period in ms from now (0: none; kept as the record's `hu` if this trips it).
const REPORT: &str = include_str!("report.lua");

/// Claim the probe lease: not before the cooldown's end nor the record's hinted end (`hu`).
/// ARGV: channel, dependency, instance, cooldown ms, lease ms.
const CLAIM: &str = include_str!("claim.lua");

/// The probe's verdict. ARGV: channel, dependency, instance, lease generation, `closed` or `open`,
/// the hinted end of the reopened period in ms from now (0: none).
const VERDICT: &str = include_str!("verdict.lua");

/// Give back an unused probe lease. ARGV: channel, dependency, instance, lease generation.
const RELEASE: &str = include_str!("release.lua");

/// A change by hand. ARGV: channel, dependency, `isolated` or `closed`, the fleet generation
/// this instance knew, the change's id (`instance:n`): a change sent again after a timeout whose
/// first sending landed is recognised by its id and changes nothing. A close (`force_closed`, `reset`) is judged against that generation: if the
/// fleet has moved on (a trip elsewhere the instance had not heard of), it is stale and changes
/// nothing. An isolation always applies: an operator's stop wins over any state.
const MANUAL: &str = include_str!("manual.lua");

/// The scripts, hashed once.
pub(crate) struct Scripts {
    pub(crate) sync: redis::Script,
    pub(crate) report: redis::Script,
    pub(crate) claim: redis::Script,
    pub(crate) verdict: redis::Script,
    pub(crate) release: redis::Script,
    pub(crate) manual: redis::Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        let script = |body: &str| redis::Script::new(&format!("{PRELUDE}{body}"));
        Scripts {
            sync: script(SYNC),
            report: script(REPORT),
            claim: script(CLAIM),
            verdict: script(VERDICT),
            release: script(RELEASE),
            manual: script(MANUAL),
        }
    }
}

/// A script's invocation with the dependency's keys and the first two arguments (the channel and
/// the dependency's name) every script takes.
pub(crate) fn invocation<'a>(
    script: &'a redis::Script,
    keys: &Keys,
    dependency: &str,
) -> redis::ScriptInvocation<'a> {
    let mut invocation = script.prepare_invoke();
    invocation
        .key(&keys.record)
        .key(&keys.votes)
        .key(&keys.lease)
        .key(&keys.epoch)
        .key(&keys.incarnation)
        .arg(&keys.channel)
        .arg(dependency);
    invocation
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(text) => Some(text.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parse a script's reply. A shape this build does not know is `Bad`, never a panic.
pub(crate) fn parse_reply(value: &Value) -> Reply {
    let Value::Array(items) = value else {
        return Reply::Bad("the script's reply is not a list".into());
    };
    let fields: Option<Vec<String>> = items.iter().map(text).collect();
    let Some(fields) = fields else {
        return Reply::Bad("the script's reply holds a value that is not text".into());
    };
    match fields.first().map(String::as_str) {
        Some("missing") => return Reply::Missing,
        Some("bad") => {
            return Reply::Bad(fields.get(1).cloned().unwrap_or_default());
        }
        _ => {}
    }
    if fields.len() != 10 {
        return Reply::Bad(format!(
            "the script's reply has {} fields, not 10",
            fields.len()
        ));
    }
    let Some(record) = parse_record(&fields[1..9]) else {
        return Reply::Bad("the script's reply holds a malformed record".into());
    };
    match fields[0].as_str() {
        "wrote" => Reply::Wrote(record),
        "same" => Reply::Same(record),
        "stale" => Reply::Stale(record),
        "won" => Reply::Won(record),
        "held" => Reply::Held(record),
        "wait" => match fields[9].parse() {
            Ok(ms) => Reply::Wait(record, ms),
            Err(_) => Reply::Bad("the script's wait has no time".into()),
        },
        other => Reply::Bad(format!("the script answered {other:?}")),
    }
}

/// `epoch gen state at now holder lease_until hinted_until`.
fn parse_record(fields: &[String]) -> Option<Record> {
    let [
        epoch,
        generation,
        state,
        at,
        now,
        holder,
        lease_until,
        hinted_until,
    ] = fields
    else {
        return None;
    };
    Some(Record {
        epoch: epoch.parse().ok()?,
        generation: generation.parse().ok()?,
        state: Shared::parse(state)?,
        at: ServerMs(at.parse().ok()?),
        now: ServerMs(now.parse().ok()?),
        holder: (!holder.is_empty()).then(|| holder.clone()),
        lease_until: ServerMs(lease_until.parse().ok()?),
        hinted_until: ServerMs(hinted_until.parse().ok()?),
    })
}

/// Parse a published message: the dependency and its record, or why it is malformed.
pub(crate) fn parse_message(payload: &str) -> Result<(String, Record), String> {
    let fields: Vec<&str> = payload.splitn(10, '\t').collect();
    let [version, rest @ ..] = fields.as_slice() else {
        return Err("an empty message".into());
    };
    if *version != FORMAT_VERSION {
        return Err(format!(
            "a message of format version {version:?}; this build reads version {FORMAT_VERSION}"
        ));
    }
    let [record @ .., dependency] = rest else {
        return Err("a message with no fields".into());
    };
    if record.len() != 8 {
        return Err(format!("a message with {} fields, not 10", fields.len()));
    }
    let owned: Vec<String> = record.iter().map(|s| (*s).to_owned()).collect();
    let record =
        parse_record(&owned).ok_or_else(|| "a message with a malformed record".to_owned())?;
    Ok(((*dependency).to_owned(), record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        for payload in [
            "",
            "2\t1\t1\topen\t5\t6\t\t0\t0\tsearch",
            "1\t1\t1\topen",
            "1\tx\t1\topen\t5\t6\t\t0\t0\tsearch",
            "1\t1\t1\tajar\t5\t6\t\t0\t0\tsearch",
            "1\t1\t1\topen\t5\t6\t\t0\tx\tsearch",
            "\u{0}\u{1}",
        ] {
            assert!(parse_message(payload).is_err(), "{payload:?}");
        }
        let (dependency, record) =
            parse_message("1\t7\t3\topen\t5\t6\tgw-1\t9\t11\tsearch\tv2").unwrap();
        assert_eq!(dependency, "search\tv2", "the name is the rest of the line");
        assert_eq!(record.holder.as_deref(), Some("gw-1"));
        assert_eq!(
            (
                record.epoch,
                record.generation,
                record.lease_until,
                record.hinted_until
            ),
            (7, 3, ServerMs(9), ServerMs(11))
        );
    }

    #[test]
    fn malformed_replies_are_bad_not_panics() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert!(matches!(parse_reply(&Value::Nil), Reply::Bad(_)));
        assert!(matches!(
            parse_reply(&Value::Array(vec![bulk("wrote")])),
            Reply::Bad(_)
        ));
        assert_eq!(
            parse_reply(&Value::Array(vec![bulk("missing")])),
            Reply::Missing
        );
        let mut fields: Vec<Value> = ["wait", "1", "2", "open", "3", "4", "", "0", "0", "17"]
            .iter()
            .map(|s| bulk(s))
            .collect();
        assert!(matches!(
            parse_reply(&Value::Array(fields.clone())),
            Reply::Wait(_, 17)
        ));
        fields[3] = bulk("ajar");
        assert!(matches!(parse_reply(&Value::Array(fields)), Reply::Bad(_)));
    }
}
