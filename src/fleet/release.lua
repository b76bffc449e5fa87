-- The body of the release script (`RELEASE` in script.rs, which says what it does and its ARGV),
-- run after prelude.lua.
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
