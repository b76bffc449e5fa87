-- The body of the verdict script (`VERDICT` in script.rs, which says what it does and its ARGV),
-- run after prelude.lua.
if not rec then return {'missing'} end
local gen = tonumber(ARGV[4])
if rec.gen ~= gen or ls.holder ~= ARGV[3] or ls.gen ~= gen then
  return reply('stale', rec, ls, now, epoch())
end
-- A reopen keeps the end the probe's hint set (ARGV[6], ms from now; 0: none).
local hinted = 0
if ARGV[5] == 'open' and tonumber(ARGV[6]) > 0 then hinted = now + tonumber(ARGV[6]) end
rec.gen, rec.state, rec.at, rec.lu, rec.hu = rec.gen + 1, ARGV[5], now, 0, hinted
redis.call('DEL', KEYS[2], KEYS[3])
ls = {holder = '', gen = -1}
local e = write(rec, ls, now)
return reply('wrote', rec, ls, now, e)
