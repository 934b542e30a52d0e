package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratescope/ratescope/core"
)

// GiveBack implements [core.Counter] with one EVALSHA command, sent as
// Take's are (batched, through the same circuit breaker and Timeout), so
// that it fails in the same ways: [ErrUnavailable] while the breaker of the
// caller's node is open, a wrapped Redis or context error otherwise; the
// units then stay counted. The script takes cost units out of the
// counter of each window's bucket of time at (the [core.Result.At] of the
// Take that allowed the request: the time the take script counted it at,
// on the server's clock unless Config.RequestClock), never below zero. A
// bucket that has left its window, a key that has expired, or counts moved
// since by a step back of the clock (the time of the caller's last request
// is then before at) are left alone. It keeps the key's time to live and
// the time of the caller's last request, so that the windows empty no
// sooner. A denial the over-limit cache of this Store remembers for the
// caller is dropped once the script ran, and one Redis gave before it is
// not remembered after it; a denial another process's cache remembers
// lasts until it ends (at most until a request of cost 1 would have fit
// without the give-back: the strict side).
func (c *counter) GiveBack(ctx context.Context, key core.Key, cost int64, at int64) error {
	if cost < 1 || at <= 0 {
		return nil // nothing to give, or no Take of this store allowed it
	}
	s := c.s
	req := &request{head: c.head, tail: c.tail, key: key, limits: c.limits, cost: cost}
	var buf [128]byte
	rkey := string(appendKey(buf[:0], req))
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redisstore: give back: %w", err)
	}
	nd := s.nodes.forKey(ctx, rkey)
	if err := s.admit(nd); err != nil {
		return err
	}
	var out [1]int64
	_, err := s.run(ctx, nd, newGiveBackCall(rkey, at, req), out[:])
	if s.cache != nil {
		// After the script, whatever its answer (it may have run): see
		// denials.forget.
		ck := cacheKey{key: rkey}
		for i, r := range req.limits {
			ck.limits[i] = r.Limit
		}
		s.cache.forget(&ck)
	}
	if err != nil {
		return fmt.Errorf("redisstore: give back: %w", err)
	}
	return nil
}

// newGiveBackCall returns a call from callPool for giveBackScript on key.
func newGiveBackCall(key string, at int64, req *request) *call {
	c := callPool.Get().(*call)
	c.key, c.lua = key, giveBackLua
	b := c.packed[:0]
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(at)))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(req.cost)))
	for _, r := range req.limits {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(r.Period/time.Microsecond)))
	}
	c.args[0], c.args[1], c.args[2], c.args[3] = "evalsha", &giveBackSHA, "1", &c.key
	c.args[4] = string(b) // boxed once per give-back: off the decisions' path
	c.n = 5
	return c
}

// giveBackScript takes the units of a request counted by takeScript back
// out of the caller's value (see takeScript for its layout). KEYS[1] is the
// caller's key; ARGV[1] packs, as little-endian doubles, the time the
// request was counted at (µs since the Unix epoch, as takeScript returned
// it), its cost, and each window's period (µs). For each window, the
// counter of the bucket of that time, if it is still one of the 21 the
// value holds (not after the bucket of the last admitted request, not more
// than 20 buckets before it), loses up to cost units, never below zero,
// and the window's sum as much. Nothing else changes: the time of the last
// admitted request, the Prevs and the key's time to live (KEEPTTL) stay.
// A missing key, a value of another layout, or a time after the last
// admitted request (the counts were moved by a step back of the clock
// since) are left alone. It returns {units taken out, summed over the
// windows}. It is short and runs only on a give-back, so it has no share
// in the cost of a decision (ADR 0005).
var giveBackScript = redis.NewScript(giveBackLua)

var giveBackLua = `
local BUCKETS, SLOTS = 20, 21
local byte, char, sub, get = string.byte, string.char, string.sub, struct.unpack
local args = ARGV[1]
local n = #args / 8 - 2
local at, cost = get('<dd', args)
local stored = redis.call('GET', KEYS[1])
local hsize = 9 + 6 * n
if not stored or #stored <= hsize then
	return 0
end
local mask = byte(stored, hsize)
local size, bit = hsize, 1
for i = 0, n - 1 do
	if mask % (2 * bit) >= bit then
		size = size + 4 * SLOTS
	else
		size = size + 2 * SLOTS
	end
	bit = 2 * bit
end
local last = get('<d', stored)
if mask >= bit or size ~= #stored or at > last then
	return 0
end
local head, body, pos, copied, freed = '', '', hsize + 1, hsize + 1, 0
bit = 1
for i = 0, n - 1 do
	local cs = 2
	if mask % (2 * bit) >= bit then
		cs = 4
	end
	bit = 2 * bit
	local width = get('<d', args, 17 + 8 * i) / BUCKETS
	local from = (last - math.fmod(last, width)) / width
	local b = (at - math.fmod(at, width)) / width
	local s0, s1, s2, s3, p0, p1 = byte(stored, 9 + 6 * i, 14 + 6 * i)
	local sum = s0 + 256 * (s1 + 256 * (s2 + 256 * s3))
	if b >= from - BUCKETS then
		local co = pos + (b % SLOTS) * cs
		local c0, c1, c2, c3 = byte(stored, co, co + cs - 1)
		local c = c0 + 256 * c1
		if cs == 4 then
			c = c + 65536 * (c2 + 256 * c3)
		end
		local d = cost
		if c < d then
			d = c
		end
		if d > 0 then
			c, sum, freed = c - d, sum - d, freed + d
			local e0 = c % 256
			local r = (c - e0) / 256
			local e
			if cs == 2 then
				e = char(e0, r)
			else
				local e1 = r % 256
				r = (r - e1) / 256
				local e2 = r % 256
				e = char(e0, e1, e2, (r - e2) / 256)
			end
			body = body .. sub(stored, copied, co - 1) .. e
			copied = co + cs
		end
	end
	local b0 = sum % 256
	local r = (sum - b0) / 256
	local b1 = r % 256
	r = (r - b1) / 256
	local b2 = r % 256
	head = head .. char(b0, b1, b2, (r - b2) / 256, p0, p1)
	pos = pos + SLOTS * cs
end
if freed > 0 then
	redis.call('SET', KEYS[1], sub(stored, 1, 8) .. head .. char(mask) .. body .. sub(stored, copied), 'KEEPTTL')
end
return {freed}
`

// giveBackSHA is giveBackScript's SHA-1, read once.
var giveBackSHA = giveBackScript.Hash()
