// Package window holds the counting arithmetic that every ratescope store
// shares: a sliding window made of a fixed number of buckets, read
// conservatively so that no interval of the window's length ever holds more
// requests than the limit.
//
// A window of period P is cut into buckets of width B = ceil(P / Buckets),
// aligned on the Unix epoch. The state of one window is [Slots] counters,
// where the counter for bucket j lives at index j mod Slots, and the time of
// the last update (shared by all windows of one caller). At time t, in
// bucket cur = t / B, the window counts every bucket from cur-Buckets to cur:
// those are all the buckets that overlap the interval (t-P, t]. Because the
// count covers at least that interval, a request is admitted only if the
// requests of the last P plus its cost do not exceed the limit, which gives
// the guarantee: in any interval of length P, at most Limit units are
// admitted. The price is that requests in the oldest bucket are still
// counted for up to B after they left the interval, so a caller who used its
// whole allowance may wait up to B longer than an exact log would make it.
//
// The Redis store runs the same arithmetic in Lua; its script and this file
// must stay in step (the conformance suite checks both).
package window

import "time"

// Buckets is the number of buckets a period is cut into. A bucket is
// ceil(period/Buckets) long.
const Buckets = 4

// Slots is the number of counters one window keeps: the Buckets that cover a
// period plus the current one.
const Slots = Buckets + 1

// Counts holds one window's counters, indexed by bucket number mod Slots.
type Counts [Slots]uint32

// Width returns the bucket width, in nanoseconds, of a window of period p.
func Width(p time.Duration) int64 {
	return (int64(p) + Buckets - 1) / Buckets
}

// slot returns the index of a bucket's counter. Buckets before the Unix
// epoch's have negative numbers (near time 0, the window reaches back past
// it): the index is the floored remainder, as Lua's % gives.
func slot(bucket int64) int {
	return int((bucket%Slots + Slots) % Slots)
}

// Advance moves the counters from the bucket of time last to the bucket of
// time now (both in nanoseconds since the Unix epoch), clearing the counters
// of the buckets that left the window. A now before last changes nothing.
func (c *Counts) Advance(width, last, now int64) {
	from, to := last/width, now/width
	if to <= from {
		return
	}
	if to-from >= Slots {
		*c = Counts{}
		return
	}
	for b := from + 1; b <= to; b++ {
		c[slot(b)] = 0
	}
}

// Sum returns the units counted in the window. Call Advance first.
func (c *Counts) Sum() int64 {
	var s int64
	for _, v := range c {
		s += int64(v)
	}
	return s
}

// Add records cost units in the bucket of time now. Call Advance first.
func (c *Counts) Add(width, now, cost int64) {
	c[slot(now/width)] += uint32(cost)
}

// Wait returns how long after now a request of the given cost must wait until
// the window, receiving nothing meanwhile, has room for it: 0 if it has room
// now. ok is false if the request can never fit (cost above limit). Call
// Advance first.
func (c *Counts) Wait(width, now, limit, cost int64) (wait time.Duration, ok bool) {
	sum := c.Sum()
	if sum+cost <= limit {
		return 0, true
	}
	cur := now / width
	for i := int64(0); i < Slots; i++ {
		sum -= int64(c[slot(cur-Buckets+i)])
		if sum+cost <= limit {
			// Bucket cur-Buckets+i leaves the window once the window's
			// start passes its end: at the start of bucket cur+1+i.
			return time.Duration((cur+1+i)*width - now), true
		}
	}
	return 0, false
}

// Reset returns how long after now the window, receiving nothing meanwhile,
// holds nothing: 0 if it is empty. Call Advance first.
func (c *Counts) Reset(width, now int64) time.Duration {
	cur := now / width
	for i := int64(0); i < Slots; i++ {
		b := cur - i
		if c[slot(b)] != 0 {
			return time.Duration((b+1+Buckets)*width - now)
		}
	}
	return 0
}

// Expiry returns the first time, in nanoseconds since the Unix epoch, at
// which a window last updated at last is certainly empty.
func Expiry(width, last int64) int64 {
	return (last/width + 1 + Buckets) * width
}
