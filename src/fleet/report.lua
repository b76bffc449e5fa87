-- The body of the report script (`REPORT` in script.rs, which says what it does and its ARGV),
-- run after prelude.lua.
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
  -- The end the tripping instance's hints set (ARGV[10], ms from now; 0: none).
  local hinted = 0
  if tonumber(ARGV[10]) > 0 then hinted = now + tonumber(ARGV[10]) end
  rec.gen, rec.state, rec.at, rec.lu, rec.hu = rec.gen + 1, 'open', now, 0, hinted
  redis.call('DEL', KEYS[2], KEYS[3])
  ls = {holder = '', gen = -1}
  local e = write(rec, ls, now)
  return reply('wrote', rec, ls, now, e, s(sum) .. ' ' .. s(voters))
end
return reply('same', rec, ls, now, epoch(), s(sum) .. ' ' .. s(voters))
