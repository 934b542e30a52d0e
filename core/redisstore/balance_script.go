package redisstore

import "github.com/redis/go-redis/v9"

// balanceScript charges one request to a caller's decaying balance in one
// round trip. It is the arithmetic of package internal/decay, with time
// in integer microseconds, and must stay in step with it (the conformance
// cases of balancetest.Run check both).
//
// KEYS[1] is the caller's balance key. Its value packs, little-endian, three
// doubles: the sum, the time of its last whole-second step and the time of
// the last warning (µs since the Unix epoch; all exact below 2^53),
// read and written whole with one GET and one SET, which also sets the time
// to live: the sum is zero 4*window+1 seconds after its last step, and so
// is the key gone.
//
// ARGV: now (µs since the Unix epoch, or serverClock to read the server's TIME), cost, window (s), warn, warning
// cost, least time between warnings (µs), drop, drop cost.
//
// It returns {dropped, warned, warning charged (1 or 0), balance before,
// balance after}.
var balanceScript = redis.NewScript(balanceLua)

// balanceSHA is balanceScript's SHA-1, read once.
var balanceSHA = balanceScript.Hash()

// balanceLua is the source of balanceScript, sent with EVAL when a server
// does not have the script.
const balanceLua = `
local SECOND = 1000000
local MAXSUM = 9007199254740992
` + nowLua + `
local cost = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local warn = tonumber(ARGV[4])
local warnCost = tonumber(ARGV[5])
local warnEvery = tonumber(ARGV[6])
local drop = tonumber(ARGV[7])
local dropCost = tonumber(ARGV[8])
local fmod = math.fmod
-- div is floor(a / b) for a >= 0, exact where a / b may round.
local function div(a, b)
	return (a - fmod(a, b)) / b
end

local sum, last, warned = 0, 0, 0
local stored = redis.call('GET', KEYS[1])
if stored and #stored == 24 then
	sum, last, warned = struct.unpack('<ddd', stored)
end

-- Decay: one step per whole second since the last step, keeping the
-- remainder. A clock that steps back is read as standing still.
if sum == 0 then
	if now > last then
		last = now
	end
elseif now > last then
	local elapsed = div(now - last, SECOND)
	last = last + elapsed * SECOND
	if elapsed > 4 * window then
		sum = 0
	else
		while elapsed > 0 and sum > 0 do
			sum = sum - div(sum + window - 1, window)
			elapsed = elapsed - 1
		end
	end
end

local before = div(sum, window)
local dropped, isWarned, charged = 0, 0, 0
-- Every charge saturates at MAXSUM (decay.MaxSum): never a wrap to credit.
if before >= drop then
	dropped = 1
	sum = math.min(sum + dropCost, MAXSUM)
else
	sum = math.min(sum + cost, MAXSUM)
	if div(sum, window) >= warn and (warned == 0 or now - warned >= warnEvery) then
		isWarned = 1
		warned = now
		-- The warning never takes the balance to the drop threshold.
		local c = math.min(warnCost, math.min(drop * window - 1, MAXSUM) - sum)
		if c > 0 then
			charged = 1
			sum = sum + c
		end
	end
end

local ttl = last + (4 * window + 1) * SECOND - now
redis.call('SET', KEYS[1], struct.pack('<ddd', sum, last, warned), 'PX', string.format('%d', math.ceil(ttl / 1000)))
return {dropped, isWarned, charged, before, div(sum, window)}
`
