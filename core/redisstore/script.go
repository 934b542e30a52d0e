package redisstore

import (
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core/internal/window"
)

// takeScript decides the requests of a batch, one per key, in one call
// (ADR 0006): KEYS[d] is the key of decision d, ARGV[2d-1] and ARGV[2d]
// its arguments, laid out as ARGV[1] and ARGV[2] below (those of the
// one-key script of v0.1.0, which shares keys and values with it). The
// decisions are made in the order of KEYS, each on its own key as if it
// were a call of its own, but on one reading of the server's clock (TIME,
// at most once a call); the answer lists each decision's answer, below,
// or the error Redis replied to one of its commands (WRONGTYPE, OOM), or
// the error the decision raised (prefixed RATESCOPE: a value it cannot
// count on), which fails that decision only and writes nothing for it. On a cluster the keys of
// one call share a hash slot (see grouping).
//
// Each decision is the arithmetic of
// package core/internal/window, in integer microseconds, and must stay in step
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
// GET and written whole with one SET, which sets or keeps the time to live
// (see ARGV[2]). A refused request writes nothing, unless the clock
// stepped back far enough to move the counts.
//
// ARGV[1] packs the numbers, little-endian doubles (all integers below
// 2^53, so exact): now (µs since the Unix epoch, or -1 to read the
// server's TIME), cost, then for each window its period (µs, a multiple of 20), its limit and the unit
// of its Prev (µs, window.Shape.Unit). ARGV[2] is the time to live of the
// value in milliseconds (valueTTL, rounded up), which it sets at most once
// a bucket of the longest window and keeps otherwise. They come packed
// and precomputed because converting a decimal argument to a number costs
// Redis more than the rest of a decision's arithmetic (ADR 0006).
//
// An admitted request gets {1, then each window's remaining, then the time
// it was counted at (µs)}: its reset is the window's period and it waits
// for nothing; the time is core.Result.At, which a give-back sends back
// (giveBackScript). A refused one gets {0,
// then for each window: remaining, reset (µs), retry after (µs), and last
// the retry after (µs) of a request of cost 1, when the request was
// refused and counted at its own time (0 when the clock stood still for
// it)}. All are integers below 2^53, so no precision is lost on the way
// out of Lua's doubles.
var takeScript = redis.NewScript(takeLua)

// valueTTL returns the time to live the take script gives a caller's key
// when it sets one, for windows whose longest period is longest: the
// period, one of its buckets and window.StepBack. The script sets it once
// in each span of a bucket, at the first write of the span, and keeps it
// on the later ones: a second covers a clock that read up to StepBack
// behind the one of that first write.
func valueTTL(longest time.Duration) time.Duration {
	return longest + time.Duration(window.Width(longest)+window.StepBack)
}

// nowLua sets the local now, in microseconds since the Unix epoch, from
// ARGV[1], or from the server's clock when ARGV[1] is negative (ADR 0005):
// the start of the balance script.
const nowLua = `local now = tonumber(ARGV[1])
if now < 0 then
` + timeLua + `
end`

// timeLua reads the server's clock into now: Redis's TIME, in
// microseconds since the Unix epoch.
const timeLua = `	-- Before Redis 5, a script must ask for effects replication before
	-- it reads the clock and writes.
	if redis.replicate_commands then
		redis.replicate_commands()
	end
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000000 + tonumber(t[2])`

// takeLua is the source of takeScript, sent with EVAL when a server does not
// have the script (see batch.go). Its constants are built here, once: the
// script must not build a string or a table it can do without.
var takeLua = `
local BUCKETS = 20
local SLOTS = BUCKETS + 1
local STEP_BACK = 1000000
local NARROW = 65535
local PREV_SET = 32768
-- ZEROS is the longest value, all zeros; ALL2 and ALL4 read or write the
-- 21 counters of a window.
local ZEROS = '` + strings.Repeat(`\0`, 9+6*4+4*window.Slots*4) + `'
local ALL2, ALL4 = '<` + strings.Repeat("I2", window.Slots) + `', '<` + strings.Repeat("I4", window.Slots) + `'
local fmod, byte, char, sub, get, pack = math.fmod, string.byte, string.char, string.sub, struct.unpack, struct.pack
-- clock is the server's clock (TIME, µs since the Unix epoch), read at
-- most once per call, by the first decision that needs it: every decision
-- of a call counts at the same time. The decisions of a call come from one
-- store, so either all read the server's clock, the first before anything
-- is written, or none does.
local clock = nil

-- decide decides one request on key: args and ttl are its ARGV[1] and
-- ARGV[2] in the layout of a lone call (see takeScript). It returns the
-- answer, or Redis's error reply to a command of the decision.
local function decide(key, args, ttl)
local n = (#args / 8 - 2) / 3
local now, cost = get('<dd', args)
if now < 0 then
	if not clock then
` + timeLua + `
		clock = now
	end
	now = clock
end

-- The script is written inline, without helper functions, and builds
-- only the strings it writes and the table it returns: in a script run
-- for every request, creating a closure, a table or a string costs more
-- than the arithmetic, and so does each value struct.pack and
-- struct.unpack convert. floor(a / b) is computed as (a - fmod(a, b)) /
-- b, exact where a / b may round. Window i's arguments start at byte 17 +
-- 24 * i of args, its sum and Prev at byte 9 + 6 * i of the value; the
-- widths' byte is byte 9 + 6 * n, bit i (value 2^i) for window i.

local stored = redis.pcall('GET', key)
if type(stored) == 'table' then
	return stored
end
local hsize, mask = 9 + 6 * n, 0
if stored and #stored > hsize then
	mask = byte(stored, hsize)
	local size, bit = hsize, 1
	for i = 0, n - 1 do
		if mask % (2 * bit) >= bit then
			size = size + 4 * SLOTS
		else
			size = size + 2 * SLOTS
		end
		bit = 2 * bit
	end
	if mask >= bit or size ~= #stored then
		stored = nil
	end
else
	stored = nil
end
if not stored then
	-- No count: a value of zeros, with 2-byte counters.
	stored, mask = sub(ZEROS, 1, hsize + n * 2 * SLOTS), 0
end
local last = get('<d', stored)

local stood, merged = false, false
if now < last then
	if last - now <= STEP_BACK then
		-- A small step back is read as the clock standing still.
		now, stood = last, true
	else
		-- A large one: every count is treated as made now, in the
		-- widths it was written in.
		local head, body, bit = '', '', 1
		for i = 0, n - 1 do
			local period = get('<d', args, 17 + 24 * i)
			local cs, fmt = 2, '<I2'
			if mask % (2 * bit) >= bit then
				cs, fmt = 4, '<I4'
			end
			bit = 2 * bit
			local width = period / BUCKETS
			local sum = get('<I4', stored, 9 + 6 * i)
			local o = ((now - fmod(now, width)) / width % SLOTS) * cs
			head = head .. pack('<I4I2', sum, 0)
			body = body .. sub(ZEROS, 1, o) .. pack(fmt, sum) .. sub(ZEROS, 1, (SLOTS - 1) * cs - o)
		end
		stored, last, merged = pack('<d', now) .. head .. char(mask) .. body, now, true
	end
end

-- One pass over the windows decides the request and, while every window
-- has room, builds the value to write: head holds the new sums and Prevs,
-- widths the new widths' byte; body the counters up to byte copied of the
-- stored value (excluded), the rest is as stored. A window's counters
-- keep the width they were written in (another version of the service,
-- with other limits, may have chosen it: a rolling deploy), but 2-byte
-- counters that the limit needs wider are widened.
-- The first window without room ends the pass: the request is refused,
-- and the answer is worked out further down.
local out
if n == 1 then
	out = {1, 0, 0}
elseif n == 2 then
	out = {1, 0, 0, 0}
elseif n == 3 then
	out = {1, 0, 0, 0, 0}
else
	out = {1, 0, 0, 0, 0, 0}
end
local head, body, at, copied = '', '', hsize + 1, hsize + 1
local allowed, longest, widths, bit = true, 0, 0, 1
for i = 0, n - 1 do
	local period, limit, unit = get('<ddd', args, 17 + 24 * i)
	if period > longest then
		longest = period
	end
	-- cs is the stored width, ns the new one; len and nlen their blocks.
	local cs = 2
	if mask % (2 * bit) >= bit then
		cs = 4
	end
	local ns = cs
	if limit > NARROW then
		ns = 4
	end
	if ns == 4 then
		widths = widths + bit
	end
	bit = 2 * bit
	local len, nlen = SLOTS * cs, SLOTS * ns
	local width = period / BUCKETS
	local cur = (now - fmod(now, width)) / width
	local co = at + (cur % SLOTS) * cs -- the stored counter of the bucket of now
	local s0, s1, s2, s3, p0, p1 = byte(stored, 9 + 6 * i, 14 + 6 * i)
	local sum, prev = s0 + 256 * (s1 + 256 * (s2 + 256 * s3)), p0 + 256 * p1
	-- v becomes the new counter of the bucket of now, unless block holds
	-- the window's new counters whole.
	local v, block = nil, nil
	if now - last >= period then
		-- Every count is a period old: the window starts empty.
		if cost > limit then
			allowed = false
			break
		end
		sum, prev = cost, 0
		block = sub(ZEROS, 1, (cur % SLOTS) * ns)
		v = cost
	else
		local from = (last - fmod(last, width)) / width
		-- The time Prev stands for (p, -1 if none), its bucket (pb) and
		-- whether that bucket leaves the window now (drop).
		local p, pb, expired = -1, 0, false
		if prev >= PREV_SET then
			local r = fmod(last, unit)
			local top = (last - r) / unit
			if r > 0 then
				top = top + 1
			end
			p = (top - (top - (prev - PREV_SET)) % PREV_SET) * unit
			pb = (p - fmod(p, width)) / width
			expired = now - p >= period
		end
		local drop = expired and pb < from and pb >= cur - BUCKETS
		if cur == from and not drop and ns == cs then
			-- The common case: the request falls in the bucket of last
			-- and no bucket leaves: one counter changes.
			if sum + cost > limit then
				allowed = false
				break
			end
			if cs == 2 then
				local c0, c1 = byte(stored, co, co + 1)
				v = c0 + 256 * c1 + cost
			else
				local c0, c1, c2, c3 = byte(stored, co, co + 3)
				v = c0 + 256 * (c1 + 256 * (c2 + 256 * c3)) + cost
			end
			if expired then
				prev = 0
			end
			sum = sum + cost
		else
			-- Buckets leave the window, or its counters widen: its
			-- counters, one by one (slot j in c[j + 1]).
			local all = ALL4
			if cs == 2 then
				all = ALL2
			end
			local c = {get(all, stored, at)}
			if ns == 4 then
				all = ALL4
			end
			for b = from + 1, cur do
				local j = b % SLOTS + 1
				sum = sum - c[j]
				c[j] = 0
			end
			if drop then
				local j = pb % SLOTS + 1
				sum = sum - c[j]
				c[j] = 0
			end
			if sum + cost > limit then
				allowed = false
				break
			end
			if expired then
				prev, p = 0, -1
			end
			-- The bucket of last stops being the newest: Prev keeps its
			-- latest request unless it keeps one whose units would wait
			-- longer without it (units times the time from the latest
			-- request to the bucket's end).
			if cur ~= from then
				local m = c[from % SLOTS + 1]
				if m ~= 0 then
					local take = true
					if p >= 0 then
						local pm = c[pb % SLOTS + 1]
						if pm ~= 0 and pm * ((pb + 1) * width - p) >= m * ((from + 1) * width - last) then
							take = false
						end
					end
					if take then
						local r = fmod(last, unit)
						local q = (last - r) / unit
						if r > 0 then
							q = q + 1
						end
						prev = PREV_SET + q % PREV_SET
					end
				end
			end
			local j = cur % SLOTS + 1
			c[j] = c[j] + cost
			sum = sum + cost
			block = pack(all, unpack(c, 1, SLOTS))
		end
	end
	-- The new sum and Prev; the new counters, as few bytes as can be.
	local b0 = sum % 256
	local r = (sum - b0) / 256
	local b1 = r % 256
	r = (r - b1) / 256
	local b2 = r % 256
	head = head .. char(b0, b1, b2, (r - b2) / 256, prev % 256, (prev - prev % 256) / 256)
	if v then
		b0 = v % 256
		r = (v - b0) / 256
		local e
		if ns == 2 then
			e = char(b0, r)
		else
			b1 = r % 256
			r = (r - b1) / 256
			b2 = r % 256
			e = char(b0, b1, b2, (r - b2) / 256)
		end
		if block then
			-- A window that starts empty: zeros but for the bucket of now.
			body = body .. sub(stored, copied, at - 1) .. block .. e .. sub(ZEROS, 1, nlen - #block - ns)
			copied = at + len
		else
			body = body .. sub(stored, copied, co - 1) .. e
			copied = co + cs
		end
	else
		body = body .. sub(stored, copied, at - 1) .. block
		copied = at + len
	end
	out[i + 2] = limit - sum
	at = at + len
end

if allowed then
	-- Every window is certainly empty one longest period after now. The
	-- first write in each span of a bucket of the longest window sets the
	-- time to live to the longest period, a bucket and a second (ARGV[2]):
	-- that covers every later write of the span, which keeps it (KEEPTTL),
	-- as setting it costs Redis more than the write (ADR 0005). A write
	-- follows the admitted request of last, so a key whose last request
	-- is in the same span has had its time to live set in it; not after
	-- a merge, which is no sign of how long ago that was.
	-- Last in the answer, the time counted at: what a give-back needs to
	-- find the request's buckets (giveBackScript).
	out[n + 2] = now
	local v = pack('<d', now) .. head .. char(widths) .. body .. sub(stored, copied)
	local g = longest / BUCKETS
	local r
	if last > 0 and not merged and (now - fmod(now, g)) == (last - fmod(last, g)) then
		r = redis.pcall('SET', key, v, 'KEEPTTL')
	else
		r = redis.pcall('SET', key, v, 'PX', ttl)
	end
	if r.err then
		return r
	end
	return out
end

-- Refused: for each window, the units it counts at now, when it resets,
-- how long a request of the same cost must wait, and one of cost 1.
local one = 0
out = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
at, bit = hsize + 1, 1
for i = 0, n - 1 do
	local period, limit, unit = get('<ddd', args, 17 + 24 * i)
	local cs, all = 2, ALL2
	if mask % (2 * bit) >= bit then
		cs, all = 4, ALL4
	end
	bit = 2 * bit
	local width = period / BUCKETS
	local from = (last - fmod(last, width)) / width
	local cur = (now - fmod(now, width)) / width
	-- The counters as they stand at now: slot j in c[j + 1].
	local c, sum, p, pb = nil, 0, -1, 0
	if now - last < period then
		c = {get(all, stored, at)}
		local prev
		sum, prev = get('<I4I2', stored, 9 + 6 * i)
		for b = from + 1, cur do
			local j = b % SLOTS + 1
			sum = sum - c[j]
			c[j] = 0
		end
		if prev >= PREV_SET then
			local r = fmod(last, unit)
			local top = (last - r) / unit
			if r > 0 then
				top = top + 1
			end
			p = (top - (top - (prev - PREV_SET)) % PREV_SET) * unit
			pb = (p - fmod(p, width)) / width
			if now - p >= period then
				if pb < from and pb >= cur - BUCKETS then
					local j = pb % SLOTS + 1
					sum = sum - c[j]
					c[j] = 0
				end
				p = -1
			end
		end
	end
	-- The wait of a request of cost w: the buckets leave oldest first,
	-- the bucket of last at last + period, the bucket of Prev a period
	-- after Prev, any other when its end is a window width old.
	for w = 1, 2 do
		local need = cost
		if w == 2 then
			need = 1
		end
		local s, wait = sum, 0
		if need > limit then
			wait = period
		elseif s + need > limit then
			wait = last + period - now
			for b = cur - BUCKETS, cur - 1 do
				s = s - c[b % SLOTS + 1]
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
	local reset = 0
	if sum > 0 then
		reset = last + period - now
	end
	local remaining = limit - sum
	if remaining < 0 then
		remaining = 0
	end
	out[3 * i + 2], out[3 * i + 3] = remaining, reset
	at = at + SLOTS * cs
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
if merged then
	local r = redis.pcall('SET', key, stored, 'PX', ttl)
	if r.err then
		return r
	end
end
return out
end

-- The decisions, in the order of KEYS, each with its own answer. A
-- decision that raises an error (a value it cannot count on, written by
-- hand or by a bug) has written nothing, and gets the error alone, marked
-- RATESCOPE: the others are decided as if it were not there.
local res = {}
for d = 1, #KEYS do
	local ok, r = pcall(decide, KEYS[d], ARGV[2 * d - 1], ARGV[2 * d])
	if ok or type(r) == 'table' then
		res[d] = r
	else
		res[d] = {err = 'RATESCOPE ' .. tostring(r)}
	end
end
return res
`
