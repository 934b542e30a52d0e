package redisstore

import "github.com/redis/go-redis/v9"

// takeScript decides one request in one round trip. It is the arithmetic of
// package internal/window, in integer microseconds, and must stay in step
// with it (the conformance suite checks both).
//
// KEYS[1] is the caller's key. Its value packs, little-endian, the time of
// the last request (a double: microseconds since the Unix epoch, exact below
// 2^53) and then, for each window, its five 4-byte counters (counter j holds
// bucket number mod 5): 8 + 20 bytes a limit, read and written whole with
// one GET and one SET, which also sets the time to live.
//
// ARGV: now (µs since the Unix epoch), cost, then for each window its bucket
// width (µs) and its limit.
//
// It returns {allowed (1 or 0), then for each window: remaining, reset (µs),
// retry after (µs)}: integers, all below 2^53, so no precision is lost on
// the way out of Lua's doubles.
var takeScript = redis.NewScript(takeLua)

// takeLua is the source of takeScript, sent with EVAL when a server does not
// have the script (see batch.go).
const takeLua = `
local SLOTS = 5
local BUCKETS = 4
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local n = (#ARGV - 2) / 2
local format = '<d' .. string.rep('I4', SLOTS * n)
local fmod = math.fmod

-- c holds every counter: counter j of window i is c[SLOTS*i + j + 2], so
-- that c can be packed back as it is, after c[1], the time of the last
-- request.
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
-- A clock that steps back is read as standing still: nothing is freed early.
if now < last then
	now = last
end
c[1] = now

-- Advance every window and check that the cost fits all of them.
-- floor(a / b) is computed with fmod, which is exact where a / b may round.
local allowed = true
local curs, sums = {}, {}
for i = 0, n - 1 do
	local width = tonumber(ARGV[3 + 2 * i])
	local base = SLOTS * i + 2
	local from = (last - fmod(last, width)) / width
	local cur = (now - fmod(now, width)) / width
	if cur - from >= SLOTS then
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
end

local out = {allowed and 1 or 0}
local expire = 0
for i = 0, n - 1 do
	local width = tonumber(ARGV[3 + 2 * i])
	local limit = tonumber(ARGV[4 + 2 * i])
	local base = SLOTS * i + 2
	local cur, sum = curs[i], sums[i]
	if allowed then
		local f = base + cur % SLOTS
		c[f] = c[f] + cost
		sum = sum + cost
	end
	-- Reset: until the newest non-empty bucket leaves the window.
	local reset = 0
	for k = 0, SLOTS - 1 do
		if c[base + (cur - k) % SLOTS] ~= 0 then
			reset = (cur - k + 1 + BUCKETS) * width - now
			break
		end
	end
	-- Retry after: drop the oldest buckets until the cost fits.
	local retry = 0
	if not allowed and sum + cost > limit then
		retry = reset + width -- the cost is above the limit: it never fits
		local s = sum
		for k = 0, SLOTS - 1 do
			s = s - c[base + (cur - BUCKETS + k) % SLOTS]
			if s + cost <= limit then
				retry = (cur + 1 + k) * width - now
				break
			end
		end
	end
	local remaining = limit - sum
	if remaining < 0 then
		remaining = 0
	end
	out[3 * i + 2], out[3 * i + 3], out[3 * i + 4] = remaining, reset, retry
	-- The window is certainly empty at (cur + 1 + BUCKETS) * width.
	local e = (cur + 1 + BUCKETS) * width - now
	if e > expire then
		expire = e
	end
end
redis.call('SET', KEYS[1], struct.pack(format, unpack(c)), 'PX', string.format('%d', math.ceil(expire / 1000)))
return out
`
