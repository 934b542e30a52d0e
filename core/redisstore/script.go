package redisstore

import "github.com/redis/go-redis/v9"

// takeScript decides one request in one round trip. It is the arithmetic of
// package internal/window, in integer microseconds, and must stay in step
// with it (the conformance suite checks both).
//
// KEYS[1] is the caller's key. Its value packs, little-endian, the time of
// the last admitted request (a double: microseconds since the Unix epoch,
// exact below 2^53) and then, for each window, its 21 counters (counter j
// holds bucket number mod 21), 2 bytes each for a limit up to 65,535 and 4
// bytes above: 8 + 42 bytes a limit, read and written whole with one GET and
// one SET, which also sets the time to live. A refused request writes
// nothing (unless the clock stepped back, see below).
//
// ARGV: now (µs since the Unix epoch, or -1 to read the server's TIME),
// cost, then for each window its period (µs, a multiple of 20) and its
// limit.
//
// It returns {allowed (1 or 0), then for each window: remaining, reset (µs),
// retry after (µs), and last the retry after (µs) of a request of cost 1,
// when the request was refused}: integers, all below 2^53, so no precision
// is lost on the way out of Lua's doubles.
var takeScript = redis.NewScript(takeLua)

// takeLua is the source of takeScript, sent with EVAL when a server does not
// have the script (see batch.go).
const takeLua = `
local BUCKETS = 20
local SLOTS = BUCKETS + 1
local STEP_BACK = 1000000
local NARROW = 65535
local now = tonumber(ARGV[1])
if now < 0 then
	-- Before Redis 5, a script must ask for effects replication before
	-- it reads the clock and writes.
	if redis.replicate_commands then
		redis.replicate_commands()
	end
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local cost = tonumber(ARGV[2])
local n = (#ARGV - 2) / 2
local fmod = math.fmod
local format = '<d'
for i = 0, n - 1 do
	if tonumber(ARGV[4 + 2 * i]) <= NARROW then
		format = format .. string.rep('I2', SLOTS)
	else
		format = format .. string.rep('I4', SLOTS)
	end
end

-- floor(a / b) for a >= 0, computed with fmod, which is exact where a / b
-- may round.
local function bucket(a, b)
	return (a - fmod(a, b)) / b
end

-- c holds every counter: counter j of window i is c[SLOTS*i + j + 2], so
-- that c can be packed back as it is, after c[1], the time of the last
-- admitted request.
local c
local stored = redis.call('GET', KEYS[1])
if stored and #stored == struct.size(format) then
	c = {struct.unpack(format, stored)}
	c[#c] = nil -- struct.unpack also returns the next position
else
	c = {0}
	for f = 2, SLOTS * n + 1 do
		c[f] = 0
	end
end
local last = c[1]
local write = false
if now < last then
	if last - now <= STEP_BACK then
		-- A small step back is read as the clock standing still.
		now = last
	else
		-- A large one: every count is treated as made now.
		for i = 0, n - 1 do
			local base = SLOTS * i + 2
			local s = 0
			for j = 0, SLOTS - 1 do
				s = s + c[base + j]
				c[base + j] = 0
			end
			c[base + bucket(now, tonumber(ARGV[3 + 2 * i]) / BUCKETS) % SLOTS] = s
		end
		last, c[1], write = now, now, true
	end
end

-- Advance every window and check that the cost fits all of them.
local allowed = true
local curs, sums = {}, {}
local longest = 0
for i = 0, n - 1 do
	local period = tonumber(ARGV[3 + 2 * i])
	local width = period / BUCKETS
	local base = SLOTS * i + 2
	local from = bucket(last, width)
	local cur = bucket(now, width)
	if now - last >= period or cur - from >= SLOTS then
		for j = 0, SLOTS - 1 do
			c[base + j] = 0
		end
	else
		for b = from + 1, cur do
			c[base + b % SLOTS] = 0
		end
	end
	local sum = 0
	for j = 0, SLOTS - 1 do
		sum = sum + c[base + j]
	end
	curs[i], sums[i] = cur, sum
	if sum + cost > tonumber(ARGV[4 + 2 * i]) then
		allowed = false
	end
	if period > longest then
		longest = period
	end
end
if allowed then
	last, c[1], write = now, now, true
end

-- wait returns how long a request of cost k waits for room in window i:
-- its buckets leave oldest first, bucket b at the earlier of
-- (b + 1 + BUCKETS) * width and last + period.
local function wait(i, k)
	local period = tonumber(ARGV[3 + 2 * i])
	local limit = tonumber(ARGV[4 + 2 * i])
	local width = period / BUCKETS
	local base = SLOTS * i + 2
	local s = sums[i]
	if s + k <= limit then
		return 0
	end
	if k > limit then
		return period
	end
	for b = curs[i] - BUCKETS, curs[i] - 1 do
		s = s - c[base + b % SLOTS]
		if s + k <= limit then
			local leave = (b + 1 + BUCKETS) * width
			if leave > last + period then
				leave = last + period
			end
			return leave - now
		end
	end
	return last + period - now
end

local out = {allowed and 1 or 0}
local one = 0
for i = 0, n - 1 do
	local period = tonumber(ARGV[3 + 2 * i])
	local limit = tonumber(ARGV[4 + 2 * i])
	local sum = sums[i]
	if allowed then
		local f = SLOTS * i + 2 + curs[i] % SLOTS
		c[f] = c[f] + cost
		sum = sum + cost
	end
	local reset = 0
	if sum > 0 then
		reset = last + period - now
	end
	local retry = 0
	if not allowed then
		retry = wait(i, cost)
		local w1 = wait(i, 1)
		if w1 > one then
			one = w1
		end
	end
	local remaining = limit - sum
	if remaining < 0 then
		remaining = 0
	end
	out[3 * i + 2], out[3 * i + 3], out[3 * i + 4] = remaining, reset, retry
end
out[3 * n + 2] = one
if write then
	-- Every window is certainly empty one longest period after now.
	redis.call('SET', KEYS[1], struct.pack(format, unpack(c)), 'PX', string.format('%d', math.ceil(longest / 1000)))
end
return out
`
