-- The body of the claim script (`CLAIM` in script.rs, which says what it does and its ARGV),
-- run after prelude.lua.
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
-- The cooldown's end, or the end a hint set for the period, whichever is later.
local ready = math.max(math.max(rec.at, rec.lu) + tonumber(ARGV[4]), rec.hu)
if now < ready then return reply('wait', rec, ls, now, epoch(), s(ready - now)) end
rec.gen, rec.lu = rec.gen + 1, now + tonumber(ARGV[5])
redis.call('SET', KEYS[3], s(rec.gen) .. ' ' .. ARGV[3], 'NX', 'PX', ARGV[5])
ls = {holder = ARGV[3], gen = rec.gen}
local e = write(rec, ls, now)
return reply('won', rec, ls, now, e)
