package redisstore

import "github.com/redis/go-redis/v9"

// takeScript decides one request in one round trip. It is the arithmetic of
// package internal/window, in integer microseconds, and must stay in step
// with it (the conformance suite and a comparison with memstore check both).
//
// KEYS[1] is the caller's key. Its value packs, little-endian, the time of
// the last admitted request (a double: microseconds since the Unix epoch,
// exact below 2^53) and then, for each window, its 21 counters (counter j
// holds bucket number mod 21), 2 bytes each for a limit up to 65,535 and 4
// bytes above, and its Prev (2 bytes, see window.Counts): 8 + 44 bytes a
// limit, read and written whole with one GET and one SET, which also sets
// the time to live. A refused request writes nothing, unless the clock
// stepped back far enough to move the counts.
//
// ARGV: now (µs since the Unix epoch, or -1 to read the server's TIME),
// cost, then for each window its period (µs, a multiple of 20), its limit
// and the unit of its Prev (µs, window.Shape.Unit).
//
// It returns {allowed (1 or 0), then for each window: remaining, reset (µs),
// retry after (µs), and last the retry after (µs) of a request of cost 1,
// when the request was refused and counted at its own time (0 when the
// clock stood still for it)}: integers, all below 2^53, so no precision
// is lost on the way out of Lua's doubles.
var takeScript = redis.NewScript(takeLua)

// takeLua is the source of takeScript, sent with EVAL when a server does not
// have the script (see batch.go).
const takeLua = `
local BUCKETS = 20
local SLOTS = BUCKETS + 1
local FIELDS = SLOTS + 1
local STEP_BACK = 1000000
local NARROW = 65535
local PREV_SET = 32768
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
local n = (#ARGV - 2) / 3
local fmod = math.fmod
-- The fields of one window: 21 counters of 2 or 4 bytes, then Prev.
local NARROW_FIELDS = 'I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2I2'
local WIDE_FIELDS = 'I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I4I2'
local format = '<d'
for i = 0, n - 1 do
	if tonumber(ARGV[4 + 3 * i]) <= NARROW then
		format = format .. NARROW_FIELDS
	else
		format = format .. WIDE_FIELDS
	end
end

-- floor(a / b) for a >= 0, computed with fmod, which is exact where a / b
-- may round.
local function floordiv(a, b)
	return (a - fmod(a, b)) / b
end
local function ceildiv(a, b)
	local q = floordiv(a, b)
	if q * b < a then
		q = q + 1
	end
	return q
end

-- c holds every field: counter j of window i is c[FIELDS*i + j + 2] and its
-- Prev c[FIELDS*i + SLOTS + 2], so that c can be packed back as it is,
-- after c[1], the time of the last admitted request.
local c
local stored = redis.call('GET', KEYS[1])
if stored and #stored == struct.size(format) then
	c = {struct.unpack(format, stored)}
	c[#c] = nil -- struct.unpack also returns the next position
else
	c = {0}
	for f = 2, FIELDS * n + 1 do
		c[f] = 0
	end
end
local last = c[1]

local periods, widths, units, limits = {}, {}, {}, {}
local longest = 0
for i = 0, n - 1 do
	local period = tonumber(ARGV[3 + 3 * i])
	periods[i], widths[i], limits[i], units[i] = period, period / BUCKETS, tonumber(ARGV[4 + 3 * i]), tonumber(ARGV[5 + 3 * i])
	if period > longest then
		longest = period
	end
end

-- prev returns the time window i's Prev stands for, or nil.
local function prev(i)
	local p = c[FIELDS * i + SLOTS + 2]
	if p < PREV_SET then
		return nil
	end
	local top = ceildiv(last, units[i])
	return (top - (top - (p - PREV_SET)) % PREV_SET) * units[i]
end

local write, stood = false, false
if now < last then
	if last - now <= STEP_BACK then
		-- A small step back is read as the clock standing still.
		now, stood = last, true
	else
		-- A large one: every count is treated as made now.
		for i = 0, n - 1 do
			local base = FIELDS * i + 2
			local s = 0
			for j = 0, FIELDS - 1 do
				if j < SLOTS then
					s = s + c[base + j]
				end
				c[base + j] = 0
			end
			c[base + floordiv(now, widths[i]) % SLOTS] = s
		end
		last, c[1], write = now, now, true
	end
end

-- Advance every window and check that the cost fits all of them.
local allowed = true
local curs, sums = {}, {}
for i = 0, n - 1 do
	local period, width = periods[i], widths[i]
	local base = FIELDS * i + 2
	local from = floordiv(last, width)
	local cur = floordiv(now, width)
	if now - last >= period then
		for j = 0, FIELDS - 1 do
			c[base + j] = 0
		end
	else
		for b = from + 1, cur do
			c[base + b % SLOTS] = 0
		end
		local p = prev(i)
		if p and now - p >= period then
			local b = floordiv(p, width)
			if b < from and b >= cur - BUCKETS then
				c[base + b % SLOTS] = 0
			end
			c[base + SLOTS] = 0
		end
	end
	local sum = 0
	for j = 0, SLOTS - 1 do
		sum = sum + c[base + j]
	end
	curs[i], sums[i] = cur, sum
	if sum + cost > limits[i] then
		allowed = false
	end
end

-- leave returns when bucket b of window i leaves it.
local function leave(i, b)
	local period, width = periods[i], widths[i]
	if b == floordiv(last, width) then
		return last + period
	end
	local at = (b + 1 + BUCKETS) * width
	local p = prev(i)
	if p and floordiv(p, width) == b and p + period < at then
		at = p + period
	end
	if last + period < at then
		at = last + period
	end
	return at
end

-- wait returns how long a request of cost k waits for room in window i:
-- its buckets leave oldest first.
local function wait(i, k)
	local base = FIELDS * i + 2
	local s, limit = sums[i], limits[i]
	if s + k <= limit then
		return 0
	end
	if k > limit then
		return periods[i]
	end
	for b = curs[i] - BUCKETS, curs[i] - 1 do
		s = s - c[base + b % SLOTS]
		if s + k <= limit then
			return leave(i, b) - now
		end
	end
	return last + periods[i] - now
end

local out = {allowed and 1 or 0}
local one = 0
if allowed then
	for i = 0, n - 1 do
		local width = widths[i]
		local base = FIELDS * i + 2
		local from, cur = floordiv(last, width), curs[i]
		local m = c[base + from % SLOTS]
		if cur ~= from and m ~= 0 then
			-- The bucket of last stops being the newest: Prev keeps its
			-- latest request unless it keeps one whose units would wait
			-- longer without it.
			local take = true
			local p = prev(i)
			if p then
				local b = floordiv(p, width)
				local pm = c[base + b % SLOTS]
				if pm ~= 0 and pm * ((b + 1) * width - p) >= m * ((from + 1) * width - last) then
					take = false
				end
			end
			if take then
				c[base + SLOTS] = PREV_SET + ceildiv(last, units[i]) % PREV_SET
			end
		end
		local f = base + cur % SLOTS
		c[f] = c[f] + cost
		sums[i] = sums[i] + cost
	end
	last, c[1], write = now, now, true
end
for i = 0, n - 1 do
	local sum = sums[i]
	local reset = 0
	if sum > 0 then
		reset = last + periods[i] - now
	end
	local retry = 0
	if not allowed then
		retry = wait(i, cost)
		local w1 = wait(i, 1)
		if w1 > one then
			one = w1
		end
	end
	local remaining = limits[i] - sum
	if remaining < 0 then
		remaining = 0
	end
	out[3 * i + 2], out[3 * i + 3], out[3 * i + 4] = remaining, reset, retry
end
if stood then
	-- The answer is for a later time than the request's: the over-limit
	-- cache, which counts down from the request's time, must not keep it.
	one = 0
end
out[3 * n + 2] = one
if write then
	-- Every window is certainly empty one longest period after now.
	redis.call('SET', KEYS[1], struct.pack(format, unpack(c)), 'PX', string.format('%d', math.ceil(longest / 1000)))
end
return out
`
