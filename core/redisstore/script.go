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
local key = KEYS[1]
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local n = (#ARGV - 2) / 2
local format = '<d' .. string.rep('I4', SLOTS * n)

-- floor(a / b) for integers below 2^53: fmod is exact where a / b may round.
local function idiv(a, b)
	return (a - math.fmod(a, b)) / b
end

local last = 0
local v = {}
local stored = redis.call('GET', key)
if stored and #stored == struct.size(format) then
	v = {struct.unpack(format, stored)}
	last = v[1]
end
-- A clock that steps back is read as standing still: nothing is freed early.
if now < last then
	now = last
end

local windows = {}
local allowed = true
for i = 0, n - 1 do
	local width = tonumber(ARGV[3 + 2 * i])
	local limit = tonumber(ARGV[4 + 2 * i])
	local c = {}
	for j = 0, SLOTS - 1 do
		c[j] = v[SLOTS * i + j + 2] or 0
	end
	-- Advance: clear the buckets that left the window since last.
	local from, cur = idiv(last, width), idiv(now, width)
	if cur - from >= SLOTS then
		for j = 0, SLOTS - 1 do
			c[j] = 0
		end
	else
		for b = from + 1, cur do
			c[b % SLOTS] = 0
		end
	end
	local sum = 0
	for j = 0, SLOTS - 1 do
		sum = sum + c[j]
	end
	-- Wait: drop the oldest buckets until the cost fits.
	local wait = -1
	if sum + cost <= limit then
		wait = 0
	else
		local s = sum
		for k = 0, SLOTS - 1 do
			s = s - c[(cur - BUCKETS + k) % SLOTS]
			if s + cost <= limit then
				wait = (cur + 1 + k) * width - now
				break
			end
		end
	end
	windows[i] = {width = width, limit = limit, c = c, cur = cur, sum = sum, wait = wait}
	if wait ~= 0 then
		allowed = false
	end
end

-- Reset: how long until the newest non-empty bucket leaves the window.
local function reset(w)
	for k = 0, SLOTS - 1 do
		local b = w.cur - k
		if w.c[b % SLOTS] ~= 0 then
			return (b + 1 + BUCKETS) * w.width - now
		end
	end
	return 0
end

local out = {allowed and 1 or 0}
local state = {now}
local expire = 0
for i = 0, n - 1 do
	local w = windows[i]
	local retry = w.wait
	if retry < 0 then
		-- The cost is above the limit: it never fits.
		retry = reset(w) + w.width
	end
	if allowed then
		w.c[w.cur % SLOTS] = w.c[w.cur % SLOTS] + cost
		w.sum = w.sum + cost
	end
	local remaining = w.limit - w.sum
	if remaining < 0 then
		remaining = 0
	end
	out[#out + 1] = remaining
	out[#out + 1] = reset(w)
	out[#out + 1] = retry
	for j = 0, SLOTS - 1 do
		state[#state + 1] = w.c[j]
	end
	-- The window is certainly empty at (cur + 1 + BUCKETS) * width.
	local e = (w.cur + 1 + BUCKETS) * w.width - now
	if e > expire then
		expire = e
	end
end
redis.call('SET', key, struct.pack(format, unpack(state)), 'PX', string.format('%d', math.ceil(expire / 1000)))
return out
`
