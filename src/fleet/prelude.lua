-- The common part of every script (`PRELUDE` in script.rs), run before each one's body: time,
-- the record's checks, the reply and the message. KEYS: the record, the votes, the probe lease,
-- the epoch, the incarnation (`invocation` in script.rs); ARGV[1] is the channel, ARGV[2] the
-- dependency, the last the record's expiry in ms. It leaves `now`, `rec`, `ls` and `ikind` set
-- for the body, or returns `bad`.
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
  local f = redis.call('HMGET', KEYS[1], 'v', 'gen', 'state', 'at', 'lu', 'hu')
  if not f[1] then return nil, 'the record has no format version (field v): not written by toolbreaker, or truncated' end
  if f[1] ~= VERSION then return nil, 'the record is format version ' .. f[1] .. '; this build reads version ' .. VERSION end
  local gen, at, lu, hu = tonumber(f[2]), tonumber(f[4]), tonumber(f[5] or '0'), tonumber(f[6] or '0')
  if not gen then return nil, 'the record is truncated or corrupt: field gen is missing or not a number' end
  if f[3] ~= 'closed' and f[3] ~= 'open' and f[3] ~= 'isolated' then
    return nil, 'the record is truncated or corrupt: field state is missing or unknown'
  end
  if not at then return nil, 'the record is truncated or corrupt: field at is missing or not a number' end
  if not lu then return nil, 'the record is corrupt: field lu is not a number' end
  if not hu then return nil, 'the record is corrupt: field hu is not a number' end
  return {gen = gen, state = f[3], at = at, lu = lu, hu = hu}, nil
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
  return {status, s(e), s(rec.gen), rec.state, s(rec.at), s(now), ls.holder, s(rec.lu), s(rec.hu or 0),
    extra or ''}
end
-- The record's expiry, ms: the last argument of every script. Set at every write and every sync.
local TTL = ARGV[#ARGV]
local function write(rec, ls, now)
  redis.call('HSET', KEYS[1], 'v', VERSION, 'gen', s(rec.gen), 'state', rec.state, 'at', s(rec.at), 'lu', s(rec.lu),
    'hu', s(rec.hu or 0))
  redis.call('PEXPIRE', KEYS[1], TTL)
  local e = bump(now)
  redis.call('PUBLISH', ARGV[1], table.concat({VERSION, s(e), s(rec.gen), rec.state, s(rec.at), s(now),
    ls.holder, s(rec.lu), s(rec.hu or 0), ARGV[2]}, '\t'))
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
