-- The body of the manual script (`MANUAL` in script.rs, which says what it does and its ARGV),
-- run after prelude.lua.
if rec and redis.call('HGET', KEYS[1], 'm') == ARGV[5] then return reply('same', rec, ls, now, epoch()) end
if not rec then rec = {gen = tonumber(ARGV[4]), state = 'closed', at = now, lu = 0, hu = 0} end
if ARGV[3] ~= 'isolated' and rec.gen ~= tonumber(ARGV[4]) then
  return reply('stale', rec, ls, now, epoch())
end
rec.gen, rec.state, rec.at, rec.lu, rec.hu = rec.gen + 1, ARGV[3], now, 0, 0
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'm', ARGV[5])
ls = {holder = '', gen = -1}
local e = write(rec, ls, now)
return reply('wrote', rec, ls, now, e)
