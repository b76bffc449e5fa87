-- The body of the sync script (`SYNC` in script.rs, which says what it does and its ARGV),
-- run after prelude.lua.
if not rec then
  rec = {gen = tonumber(ARGV[5]) + 1, state = ARGV[3], at = now - tonumber(ARGV[4]), lu = 0, hu = 0}
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
