//! The shared record's format, its keys, and the Lua scripts that are its only writers.
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
const PRELUDE: &str = r#"
local VERSION = '1'
local function s(n) return string.format('%d', n) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function load()
  local kind = redis.call('TYPE', KEYS[1]).ok
  if kind == 'none' then return nil, nil end
  if kind ~= 'hash' then return nil, 'the key holds a ' .. kind .. ', not a breaker record' end
  local f = redis.call('HMGET', KEYS[1], 'v', 'gen', 'state', 'at', 'lu')
  if not f[1] then return nil, 'the record has no format version (field v): not written by toolbreaker, or truncated' end
  if f[1] ~= VERSION then return nil, 'the record is format version ' .. f[1] .. '; this build reads version ' .. VERSION end
  local gen, at, lu = tonumber(f[2]), tonumber(f[4]), tonumber(f[5] or '0')
  if not gen then return nil, 'the record is truncated or corrupt: field gen is missing or not a number' end
  if f[3] ~= 'closed' and f[3] ~= 'open' and f[3] ~= 'isolated' then
    return nil, 'the record is truncated or corrupt: field state is missing or unknown'
  end
  if not at then return nil, 'the record is truncated or corrupt: field at is missing or not a number' end
  if not lu then return nil, 'the record is corrupt: field lu is not a number' end
  return {gen = gen, state = f[3], at = at, lu = lu}, nil
end
local function lease()
  local kind = redis.call('TYPE', KEYS[3]).ok
  if kind == 'none' then return {holder = '', gen = -1}, nil end
  if kind ~= 'string' then return nil, 'the probe lease key holds a ' .. kind end
  local g, holder = string.match(redis.call('GET', KEYS[3]), '^(%d+) (.+)$')
  if not g then return nil, 'the probe lease is malformed' end
  return {holder = holder, gen = tonumber(g)}, nil
end
local function epoch()
  local e = redis.call('GET', KEYS[4])
  return tonumber(e or '0') or 0
end
local function bump(now)
  if redis.call('EXISTS', KEYS[4]) == 0 then redis.call('SET', KEYS[4], s(now)) end
  if redis.call('EXISTS', KEYS[5]) == 0 then
    local t = redis.call('TIME')
    redis.call('SET', KEYS[5], t[1] .. '.' .. t[2])
  end
  return redis.call('INCR', KEYS[4])
end
local function reply(status, rec, ls, now, e, extra)
  return {status, s(e), s(rec.gen), rec.state, s(rec.at), s(now), ls.holder, s(rec.lu), extra or ''}
end
-- The record's expiry, ms: the last argument of every script. Set at every write and every sync.
local TTL = ARGV[#ARGV]
local function write(rec, ls, now)
  redis.call('HSET', KEYS[1], 'v', VERSION, 'gen', s(rec.gen), 'state', rec.state, 'at', s(rec.at), 'lu', s(rec.lu))
  redis.call('PEXPIRE', KEYS[1], TTL)
  local e = bump(now)
  redis.call('PUBLISH', ARGV[1], table.concat({VERSION, s(e), s(rec.gen), rec.state, s(rec.at), s(now),
    ls.holder, s(rec.lu), ARGV[2]}, '\t'))
  return e
end
local now = now_ms()
local rec, bad = load()
if bad then return {'bad', bad} end
local ls, lbad = lease()
if lbad then return {'bad', lbad} end
local vkind = redis.call('TYPE', KEYS[2]).ok
if vkind ~= 'none' and vkind ~= 'hash' then return {'bad', 'the votes key holds a ' .. vkind} end
local ekind = redis.call('TYPE', KEYS[4]).ok
if ekind ~= 'none' and (ekind ~= 'string' or not tonumber(redis.call('GET', KEYS[4]))) then
  return {'bad', 'the fleet epoch key holds a ' .. ekind .. ' that is not a count'}
end
local ikind = redis.call('TYPE', KEYS[5]).ok
if ikind ~= 'none' and ikind ~= 'string' then
  return {'bad', 'the fleet incarnation key holds a ' .. ikind}
end
"#;

/// Read the record; create it from this instance's state if it is missing.
/// ARGV: channel, dependency, local state, ms since the local state was entered, last fleet
/// generation this instance knew.
const SYNC: &str = r#"
if not rec then
  rec = {gen = tonumber(ARGV[5]) + 1, state = ARGV[3], at = now - tonumber(ARGV[4]), lu = 0}
  redis.call('DEL', KEYS[2], KEYS[3])
  ls = {holder = '', gen = -1}
  local e = write(rec, ls, now)
  return reply('wrote', rec, ls, now, e)
end
-- The incarnation may have been lost alone (evicted): written again, or every instance would
-- read a wipe at every look.
if ikind == 'none' then redis.call('SET', KEYS[5], s(now) .. '.0') end
redis.call('PEXPIRE', KEYS[1], TTL)
return reply('same', rec, ls, now, epoch())
"#;

/// Report an instance's consecutive counted failures (its whole run, not the new ones: a lost or
/// repeated report counts nothing twice) and whether it tripped on its own, and trip the fleet if
/// the votes reach the rule. ARGV: channel, dependency, instance, expected generation, the
/// count, tripped (0/1), fleet threshold, minimum instances, window ms.
const REPORT: &str = r#"
if not rec then return {'missing'} end
if rec.state ~= 'closed' then return reply('same', rec, ls, now, epoch()) end
local tripped = ARGV[6] == '1'
if rec.gen ~= tonumber(ARGV[4]) and not tripped then return reply('stale', rec, ls, now, epoch()) end
local window = tonumber(ARGV[9])
local count, was_tripped = tonumber(ARGV[5]), 0
if tripped then was_tripped = 1 end
if count == 0 and was_tripped == 0 then
  redis.call('HDEL', KEYS[2], ARGV[3])
else
  redis.call('HSET', KEYS[2], ARGV[3], s(count) .. ' ' .. s(now) .. ' ' .. s(was_tripped))
  redis.call('PEXPIRE', KEYS[2], window)
end
local sum, voters, any_trip = 0, 0, false
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local c, a, t = string.match(all[i + 1], '^(%d+) (%d+) (%d)$')
  if c and tonumber(a) >= now - window then
    if tonumber(c) > 0 or t == '1' then
      sum = sum + tonumber(c)
      voters = voters + 1
      if t == '1' then any_trip = true end
    end
  else
    redis.call('HDEL', KEYS[2], all[i])
  end
end
if voters >= tonumber(ARGV[8]) and (any_trip or sum >= tonumber(ARGV[7])) then
  rec.gen, rec.state, rec.at, rec.lu = rec.gen + 1, 'open', now, 0
  redis.call('DEL', KEYS[2], KEYS[3])
  ls = {holder = '', gen = -1}
  local e = write(rec, ls, now)
  return reply('wrote', rec, ls, now, e, s(sum) .. ' ' .. s(voters))
end
return reply('same', rec, ls, now, epoch(), s(sum) .. ' ' .. s(voters))
"#;

/// Claim the probe lease. ARGV: channel, dependency, instance, cooldown ms, lease ms.
const CLAIM: &str = r#"
if not rec then return {'missing'} end
if rec.state ~= 'open' then return reply('same', rec, ls, now, epoch()) end
-- A lease of another generation is a leftover (every claim takes a new generation and every
-- verdict, release or change by hand deletes the lease): it holds nothing. A lease of this
-- generation with no expiry (written by something else) is given one.
if ls.holder ~= '' and ls.gen ~= rec.gen then
  redis.call('DEL', KEYS[3])
  ls = {holder = '', gen = -1}
elseif ls.holder ~= '' and redis.call('PTTL', KEYS[3]) < 0 then
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
if ls.holder ~= '' then
  if ls.holder == ARGV[3] and ls.gen == rec.gen then return reply('won', rec, ls, now, epoch()) end
  return reply('held', rec, ls, now, epoch())
end
local ready = math.max(rec.at, rec.lu) + tonumber(ARGV[4])
if now < ready then return reply('wait', rec, ls, now, epoch(), s(ready - now)) end
rec.gen, rec.lu = rec.gen + 1, now + tonumber(ARGV[5])
redis.call('SET', KEYS[3], s(rec.gen) .. ' ' .. ARGV[3], 'NX', 'PX', ARGV[5])
ls = {holder = ARGV[3], gen = rec.gen}
local e = write(rec, ls, now)
return reply('won', rec, ls, now, e)
"#;

/// The probe's verdict. ARGV: channel, dependency, instance, lease generation, `closed` or `open`.
const VERDICT: &str = r#"
if not rec then return {'missing'} end
local gen = tonumber(ARGV[4])
if rec.gen ~= gen or ls.holder ~= ARGV[3] or ls.gen ~= gen then
  return reply('stale', rec, ls, now, epoch())
end
rec.gen, rec.state, rec.at, rec.lu = rec.gen + 1, ARGV[5], now, 0
redis.call('DEL', KEYS[2], KEYS[3])
ls = {holder = '', gen = -1}
local e = write(rec, ls, now)
return reply('wrote', rec, ls, now, e)
"#;

/// Give back an unused probe lease. ARGV: channel, dependency, instance, lease generation.
const RELEASE: &str = r#"
if not rec then return {'missing'} end
local gen = tonumber(ARGV[4])
if rec.gen ~= gen or ls.holder ~= ARGV[3] or ls.gen ~= gen then
  return reply('stale', rec, ls, now, epoch())
end
rec.lu = 0
redis.call('DEL', KEYS[3])
ls = {holder = '', gen = -1}
local e = write(rec, ls, now)
return reply('wrote', rec, ls, now, e)
"#;

/// A change by hand. ARGV: channel, dependency, `isolated` or `closed`, the fleet generation
/// this instance knew, the change's id (`instance:n`): a change sent again after a timeout whose
/// first sending landed is recognised by its id and changes nothing. A close (`force_closed`, `reset`) is judged against that generation: if the
/// fleet has moved on (a trip elsewhere the instance had not heard of), it is stale and changes
/// nothing. An isolation always applies: an operator's stop wins over any state.
const MANUAL: &str = r#"
if rec and redis.call('HGET', KEYS[1], 'm') == ARGV[5] then return reply('same', rec, ls, now, epoch()) end
if not rec then rec = {gen = tonumber(ARGV[4]), state = 'closed', at = now, lu = 0} end
if ARGV[3] ~= 'isolated' and rec.gen ~= tonumber(ARGV[4]) then
  return reply('stale', rec, ls, now, epoch())
end
rec.gen, rec.state, rec.at, rec.lu = rec.gen + 1, ARGV[3], now, 0
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'm', ARGV[5])
ls = {holder = '', gen = -1}
local e = write(rec, ls, now)
return reply('wrote', rec, ls, now, e)
"#;

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
    if fields.len() != 9 {
        return Reply::Bad(format!(
            "the script's reply has {} fields, not 9",
            fields.len()
        ));
    }
    let Some(record) = parse_record(&fields[1..8]) else {
        return Reply::Bad("the script's reply holds a malformed record".into());
    };
    match fields[0].as_str() {
        "wrote" => Reply::Wrote(record),
        "same" => Reply::Same(record),
        "stale" => Reply::Stale(record),
        "won" => Reply::Won(record),
        "held" => Reply::Held(record),
        "wait" => match fields[8].parse() {
            Ok(ms) => Reply::Wait(record, ms),
            Err(_) => Reply::Bad("the script's wait has no time".into()),
        },
        other => Reply::Bad(format!("the script answered {other:?}")),
    }
}

/// `epoch gen state at now holder lease_until`.
fn parse_record(fields: &[String]) -> Option<Record> {
    let [epoch, generation, state, at, now, holder, lease_until] = fields else {
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
    })
}

/// Parse a published message: the dependency and its record, or why it is malformed.
pub(crate) fn parse_message(payload: &str) -> Result<(String, Record), String> {
    let fields: Vec<&str> = payload.splitn(9, '\t').collect();
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
    if record.len() != 7 {
        return Err(format!("a message with {} fields, not 9", fields.len()));
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
            "2\t1\t1\topen\t5\t6\t\t0\tsearch",
            "1\t1\t1\topen",
            "1\tx\t1\topen\t5\t6\t\t0\tsearch",
            "1\t1\t1\tajar\t5\t6\t\t0\tsearch",
            "\u{0}\u{1}",
        ] {
            assert!(parse_message(payload).is_err(), "{payload:?}");
        }
        let (dependency, record) =
            parse_message("1\t7\t3\topen\t5\t6\tgw-1\t9\tsearch\tv2").unwrap();
        assert_eq!(dependency, "search\tv2", "the name is the rest of the line");
        assert_eq!(record.holder.as_deref(), Some("gw-1"));
        assert_eq!(
            (record.epoch, record.generation, record.lease_until),
            (7, 3, ServerMs(9))
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
        let mut fields: Vec<Value> = ["wait", "1", "2", "open", "3", "4", "", "0", "17"]
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
