package redisstore

import "github.com/redis/go-redis/v9"

// takeScript decides one request in one round trip. It is the arithmetic of
// package internal/window, in integer microseconds, and must stay in step
// with it (the conformance suite and a comparison with memstore check both).
//
// KEYS[1] is the caller's key. Its value packs, little-endian, a header:
// the time of the last admitted request (a double: microseconds since the
// Unix epoch, exact below 2^53) and, for each window, the sum of its
// counters (4 bytes) and its Prev (2 bytes, see window.Counts), and one
// byte whose bit i says that window i's counters are 4 bytes wide; then,
// for each window, its 21 counters (counter j holds bucket number mod 21),
// 2 bytes each for a limit up to 65,535 and 4 bytes above: 9 + 48 bytes
// for one limit, 48 more a limit. The widths are in the value, not
// inferred from the limits, so that a version of the service whose limit
// needs the other width (a rolling deploy moving a limit across 65,535)
// reads the same counts: narrow counters are widened when a limit needs
// it, and wide ones stay wide until the key expires. It is read with one
// GET and written whole with one SET, which
// also sets the time to live. The script reads only the header and the
// counters it needs, so that a decision costs about as much whatever the
// number of buckets. A refused request writes nothing, unless the clock
// stepped back far enough to move the counts.
//
// ARGV: now (µs since the Unix epoch, or -1 to read the server's TIME),
// cost, then for each window its period (µs, a multiple of 20), its limit
// and the unit of its Prev (µs, window.Shape.Unit).
//
// It returns {allowed (1 or 0), then for each window: remaining, reset (µs),
// retry after (µs), and last the retry after (µs) of a request of cost 1,
// when the request was refused and counted at its own time (0 when the
// clock stood still for it)}: integers, all below 2^53, so no precision is
// lost on the way out of Lua's doubles.
var takeScript = redis.NewScript(takeLua)

// nowLua sets the local now, in microseconds since the Unix epoch, from
// ARGV[1], or from the server's clock when ARGV[1] is negative (ADR 0003):
// the start of both scripts.
const nowLua = `local now = tonumber(ARGV[1])
if now < 0 then
	-- Before Redis 5, a script must ask for effects replication before
	-- it reads the clock and writes.
	if redis.replicate_commands then
		redis.replicate_commands()
	end
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end`

// takeLua is the source of takeScript, sent with EVAL when a server does not
// have the script (see batch.go).
const takeLua = `
local BUCKETS = 20
local SLOTS = BUCKETS + 1
local STEP_BACK = 1000000
local NARROW = 65535
local PREV_SET = 32768
local fmod, sub, pack, get = math.fmod, string.sub, struct.pack, struct.unpack
` + nowLua + `
local cost = tonumber(ARGV[2])
local n = (#ARGV - 2) / 3

-- The code is written inline, without helper functions, and its tables are
-- built at their full size: in a script run for every request, creating a
-- closure or growing a table costs more than the arithmetic. floor(a / b)
-- is computed as (a - fmod(a, b)) / b, exact where a / b may round.

-- W holds, for window i (from 0), at 10*i + 1..10: period, width, limit,
-- unit of Prev, counter format, counter size, bucket of last, bucket of
-- now, the time Prev stands for (-1 if none), the bucket of that time.
local W = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
local hsize, longest = 9 + 6 * n, 0
local hfmt = '<dI4I2B'
if n == 2 then
	hfmt = '<dI4I2I4I2B'
elseif n == 3 then
	hfmt = '<dI4I2I4I2I4I2B'
elseif n == 4 then
	hfmt = '<dI4I2I4I2I4I2I4I2B'
end
for i = 0, n - 1 do
	local k = 10 * i
	local period, limit = tonumber(ARGV[3 + 3 * i]), tonumber(ARGV[4 + 3 * i])
	W[k + 1], W[k + 2], W[k + 3], W[k + 4] = period, period / BUCKETS, limit, tonumber(ARGV[5 + 3 * i])
	if limit <= NARROW then
		W[k + 5], W[k + 6] = '<I2', 2
	else
		W[k + 5], W[k + 6] = '<I4', 4
	end
	if period > longest then
		longest = period
	end
end

-- h holds the header: h[1] the last admitted request, h[2*i + 2] the sum
-- of window i's counters, h[2*i + 3] its Prev, h[2*n + 2] the widths of
-- the counters (bit i set: window i's are 4 bytes); blocks[i + 1] its
-- counters, a string of which the script reads and changes only what it
-- needs.
local h, blocks = nil, {'', '', '', ''}
local stored = redis.call('GET', KEYS[1])
if stored and #stored > hsize then
	h = {get(hfmt, stored)}
	h[2 * n + 3] = nil -- struct.unpack also returns the next position
	local mask, size = h[2 * n + 2], hsize
	for i = 0, n - 1 do
		if fmod(mask, 2 ^ (i + 1)) >= 2 ^ i then
			size = size + SLOTS * 4
		else
			size = size + SLOTS * 2
		end
	end
	if mask >= 2 ^ n or size ~= #stored then
		h = nil
	end
end
if h then
	-- The counters are read in the width they were written in, which a
	-- version of the service with other limits may have chosen (a rolling
	-- deploy): 2-byte counters a limit above 65,535 needs are widened, and
	-- 4-byte ones stay so until the key expires, whatever the limit.
	local mask, at = h[2 * n + 2], hsize + 1
	for i = 0, n - 1 do
		local k = 10 * i
		local wide = fmod(mask, 2 ^ (i + 1)) >= 2 ^ i
		local len = SLOTS * 2
		if wide then
			len = SLOTS * 4
		end
		local bl = sub(stored, at, at + len - 1)
		at = at + len
		if wide then
			W[k + 5], W[k + 6] = '<I4', 4
		elseif W[k + 6] == 4 then
			local c = {}
			for j = 0, SLOTS - 1 do
				c[j + 1] = get('<I2', bl, 2 * j + 1)
			end
			bl = pack('<' .. string.rep('I4', SLOTS), unpack(c))
		end
		blocks[i + 1] = bl
	end
else
	h = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for j = 10, 2 * n + 2, -1 do
		h[j] = nil
	end
	for i = 0, n - 1 do
		blocks[i + 1] = string.rep('\0', SLOTS * W[10 * i + 6])
	end
end
local mask = 0
for i = 0, n - 1 do
	if W[10 * i + 6] == 4 then
		mask = mask + 2 ^ i
	end
end
h[2 * n + 2] = mask
local last = h[1]

local write, stood = false, false
if now < last then
	if last - now <= STEP_BACK then
		-- A small step back is read as the clock standing still.
		now, stood = last, true
	else
		-- A large one: every count is treated as made now.
		for i = 0, n - 1 do
			local k = 10 * i
			local width, fmt, cs = W[k + 2], W[k + 5], W[k + 6]
			local o = ((now - fmod(now, width)) / width % SLOTS) * cs
			local zero = string.rep('\0', SLOTS * cs)
			blocks[i + 1] = sub(zero, 1, o) .. pack(fmt, h[2 * i + 2]) .. sub(zero, o + cs + 1)
			h[2 * i + 3] = 0
		end
		last, h[1], write = now, now, true
	end
end

-- Check every window: the units it counts at now, without changing it.
-- Those are the sum of its counters less the slots after the bucket of
-- last (they hold buckets a whole window old) and less the bucket of Prev
-- a period after Prev; nothing a period after last.
local allowed = true
local sums = {0, 0, 0, 0}
for i = 0, n - 1 do
	local k = 10 * i
	local period, width, unit = W[k + 1], W[k + 2], W[k + 4]
	local from = (last - fmod(last, width)) / width
	local cur = (now - fmod(now, width)) / width
	W[k + 7], W[k + 8], W[k + 9] = from, cur, -1
	local p = h[2 * i + 3]
	if p >= PREV_SET then
		local r = fmod(last, unit)
		local top = (last - r) / unit
		if r > 0 then
			top = top + 1
		end
		p = (top - (top - (p - PREV_SET)) % PREV_SET) * unit
		W[k + 9], W[k + 10] = p, (p - fmod(p, width)) / width
	end
	local sum = 0
	if now - last < period then
		sum = h[2 * i + 2]
		local bl, fmt, cs = blocks[i + 1], W[k + 5], W[k + 6]
		for b = from + 1, cur do
			sum = sum - get(fmt, bl, (b % SLOTS) * cs + 1)
		end
		local pb = W[k + 10]
		if p >= 0 and now - p >= period and pb < from and pb >= cur - BUCKETS then
			sum = sum - get(fmt, bl, (pb % SLOTS) * cs + 1)
		end
	end
	sums[i + 1] = sum
	if sum + cost > W[k + 3] then
		allowed = false
	end
end

local out = {allowed and 1 or 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
local one = 0
if allowed then
	for i = 0, n - 1 do
		local k = 10 * i
		local period, width = W[k + 1], W[k + 2]
		local fmt, cs, from, cur = W[k + 5], W[k + 6], W[k + 7], W[k + 8]
		local p, pb = W[k + 9], W[k + 10]
		local bl = blocks[i + 1]
		-- Advance: clear what left the window.
		if now - last >= period then
			bl = string.rep('\0', SLOTS * cs)
			h[2 * i + 2], h[2 * i + 3], p = 0, 0, -1
		else
			-- The slots after the bucket of last, then the bucket of Prev
			-- if it left (as bucket cur + 1 of the loop).
			local expired = p >= 0 and now - p >= period
			local to = cur
			if expired and pb < from and pb >= cur - BUCKETS then
				to = cur + 1
			end
			for b = from + 1, to do
				if b > cur then
					b = pb
				end
				local o = (b % SLOTS) * cs
				local v = get(fmt, bl, o + 1)
				if v ~= 0 then
					bl = sub(bl, 1, o) .. pack(fmt, 0) .. sub(bl, o + cs + 1)
					h[2 * i + 2] = h[2 * i + 2] - v
				end
			end
			if expired then
				h[2 * i + 3], p = 0, -1
			end
		end
		-- The bucket of last stops being the newest: Prev keeps its latest
		-- request unless it keeps one whose units would wait longer
		-- without it (units times the time from the latest request to the
		-- bucket's end).
		if cur ~= from then
			local m = get(fmt, bl, (from % SLOTS) * cs + 1)
			if m ~= 0 then
				local take = true
				if p >= 0 then
					local pm = get(fmt, bl, (pb % SLOTS) * cs + 1)
					if pm ~= 0 and pm * ((pb + 1) * width - p) >= m * ((from + 1) * width - last) then
						take = false
					end
				end
				if take then
					local unit = W[k + 4]
					local r = fmod(last, unit)
					local q = (last - r) / unit
					if r > 0 then
						q = q + 1
					end
					h[2 * i + 3] = PREV_SET + q % PREV_SET
				end
			end
		end
		local o = (cur % SLOTS) * cs
		blocks[i + 1] = sub(bl, 1, o) .. pack(fmt, get(fmt, bl, o + 1) + cost) .. sub(bl, o + cs + 1)
		h[2 * i + 2] = h[2 * i + 2] + cost
		sums[i + 1] = sums[i + 1] + cost
	end
	last, h[1], write = now, now, true
else
	for i = 0, n - 1 do
		local k = 10 * i
		local period, width, limit = W[k + 1], W[k + 2], W[k + 3]
		local fmt, cs, from, cur = W[k + 5], W[k + 6], W[k + 7], W[k + 8]
		local p, pb = W[k + 9], W[k + 10]
		-- The counters as they stand at now, slot by slot.
		local c = {}
		for j = 0, SLOTS - 1 do
			c[j] = 0
		end
		if now - last < period then
			for j = 0, SLOTS - 1 do
				c[j] = get(fmt, blocks[i + 1], j * cs + 1)
			end
			for b = from + 1, cur do
				c[b % SLOTS] = 0
			end
			if p >= 0 and now - p >= period then
				if pb < from and pb >= cur - BUCKETS then
					c[pb % SLOTS] = 0
				end
				p = -1
			end
		end
		-- The wait of a request of cost w: the buckets leave oldest
		-- first, the bucket of last at last + period, the bucket of Prev
		-- a period after Prev, any other when its end is a window width
		-- old.
		for w = 1, 2 do
			local need = cost
			if w == 2 then
				need = 1
			end
			local s, wait = sums[i + 1], 0
			if need > limit then
				wait = period
			elseif s + need > limit then
				wait = last + period - now
				for b = cur - BUCKETS, cur - 1 do
					s = s - c[b % SLOTS]
					if s + need <= limit then
						local at = last + period
						if b ~= from then
							at = (b + 1 + BUCKETS) * width
							if b == pb and p >= 0 and p + period < at then
								at = p + period
							end
							if last + period < at then
								at = last + period
							end
						end
						wait = at - now
						break
					end
				end
			end
			if w == 1 then
				out[3 * i + 4] = wait
			elseif wait > one then
				one = wait
			end
		end
	end
end
for i = 0, n - 1 do
	local sum, period, limit = sums[i + 1], W[10 * i + 1], W[10 * i + 3]
	local reset = 0
	if sum > 0 then
		reset = last + period - now
	end
	local remaining = limit - sum
	if remaining < 0 then
		remaining = 0
	end
	out[3 * i + 2], out[3 * i + 3] = remaining, reset
end
if stood then
	-- The answer is for a later time than the request's: the over-limit
	-- cache, which counts down from the request's time, must not keep it.
	one = 0
end
out[3 * n + 2] = one
for j = 3 * n + 3, 14 do
	out[j] = nil
end
if write then
	-- Every window is certainly empty one longest period after now.
	local v = pack(hfmt, unpack(h, 1, 2 * n + 2))
	if n == 1 then
		v = v .. blocks[1]
	elseif n == 2 then
		v = v .. blocks[1] .. blocks[2]
	else
		v = v .. table.concat(blocks, '', 1, n)
	end
	redis.call('SET', KEYS[1], v, 'PX', math.ceil(longest / 1000))
end
return out
`
