// Package window holds the counting arithmetic that every ratescope store
// shares: a sliding window made of a fixed number of buckets, read
// conservatively so that no interval of the window's length ever holds more
// requests than the limit, and with every answer to a caller bounded by the
// window's period.
//
// A window of period P is cut into Buckets buckets of width B = ceil(P /
// Buckets), aligned on the Unix epoch. The state of one window is [Slots]
// counters, where the counter for bucket j lives at index j mod Slots; the
// caller's state adds last, the time of its last admitted request (shared by
// all windows of one caller). Every request counted is at or before last.
//
// At time t, in bucket cur = t / B, the window counts every bucket from
// cur-Buckets to cur, all the buckets that overlap the interval (t-P, t],
// unless t >= last + P: then every request counted is at least P old and the
// window is empty. Because the count covers at least that interval, a
// request is admitted only if the requests of the last P plus its cost do
// not exceed the limit, which gives the guarantee: in any interval of length
// P, at most Limit units are admitted.
//
// Bucket j leaves the window at L(j) = min((j+1+Buckets) * B, last + P):
// once the window's start passes the bucket's end, or once P has passed
// since the last admitted request, whichever comes first. The newest
// non-empty bucket, the one of last, always leaves at last + P, so a caller
// that spent its whole limit at one instant waits exactly P, as with an
// exact log, and no wait is ever longer than P. An older bucket is counted
// until its end is P old, up to one bucket width after its earliest request
// left the interval: that is the price of keeping counters instead of a log.
//
// The Redis store runs the same arithmetic in Lua; its script and this file
// must stay in step (the conformance suite checks both).
package window

import (
	"math"
	"time"
)

// Buckets is the number of buckets a period is cut into. A bucket is
// ceil(period/Buckets) long. A caller that paces itself evenly at up to
// Buckets/(Buckets+1) of a limit's rate is never refused by that limit.
const Buckets = 20

// Slots is the number of counters one window keeps: the Buckets that cover a
// period plus the current one.
const Slots = Buckets + 1

// StepBack is the largest step back of the clock that is read as the clock
// standing still: goroutines that read the clock in one order and reach the
// counts in another, or two processes' clocks that differ by that much. A
// larger step back moves every count of the caller to the new time (see
// [Clock]).
const StepBack = int64(time.Second)

// Counter is the type of one bucket's counter. A bucket never holds more
// than the limit, so 16 bits serve every limit up to [MaxNarrow].
type Counter interface {
	uint16 | uint32
}

// MaxNarrow is the largest limit whose windows may use 16-bit counters.
const MaxNarrow = math.MaxUint16

// Narrow reports whether a window of the given limit fits 16-bit counters.
func Narrow(limit int64) bool {
	return limit <= MaxNarrow
}

// Counts holds one window's counters, indexed by bucket number mod Slots.
type Counts[T Counter] [Slots]T

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

// Clock returns the time at which to count a request made at now by a
// caller whose last admitted request was at last (both in nanoseconds since
// the Unix epoch). A clock at or after last is read as it is; one that
// stepped back by at most [StepBack] is read as standing still at last, so
// that nothing is freed early. After a larger step back, merge is true: the
// caller must [Counts.Merge] every window at now and record now as its last
// request, so that its counts are treated as made at now. That is
// conservative in real time (they were made earlier) and keeps every wait
// within one period of the clock the caller now sees, instead of leaving it
// refused until the clock catches up.
func Clock(last, now int64) (at int64, merge bool) {
	switch {
	case now >= last:
		return now, false
	case last-now <= StepBack:
		return last, false
	}
	return now, true
}

// Merge moves every count into the bucket of time now. Use it when [Clock]
// says so, before Advance.
func (c *Counts[T]) Merge(width, now int64) {
	var sum T
	for _, v := range c {
		sum += v
	}
	*c = Counts[T]{}
	c[slot(now/width)] = sum
}

// Advance clears the counters of the buckets that left the window by now:
// all of them if now is at least one period after last, otherwise the ones
// between the bucket of last and the bucket of now, whose slots still hold
// buckets a whole window old. It needs now >= last (see [Clock]).
func (c *Counts[T]) Advance(width, period, last, now int64) {
	if now-last >= period {
		*c = Counts[T]{}
		return
	}
	from, to := last/width, now/width
	if to-from >= Slots {
		*c = Counts[T]{}
		return
	}
	for b := from + 1; b <= to; b++ {
		c[slot(b)] = 0
	}
}

// Sum returns the units counted in the window. Call Advance first.
func (c *Counts[T]) Sum() int64 {
	var s int64
	for _, v := range c {
		s += int64(v)
	}
	return s
}

// Add records cost units in the bucket of time now. Call Advance first; the
// caller's last request becomes now.
func (c *Counts[T]) Add(width, now, cost int64) {
	c[slot(now/width)] += T(cost)
}

// Leave returns when bucket b of a window leaves it, for a caller whose last
// admitted request was at last: the earlier of the time the bucket's end is
// one window width (Buckets buckets) old and last + period.
func Leave(width, period, last, b int64) int64 {
	return min((b+1+Buckets)*width, last+period)
}

// Wait returns how long after now a request of the given cost must wait until
// the window, receiving nothing meanwhile, has room for it: 0 if it has room
// now. The buckets leave oldest first, each at its [Leave] time, so the wait
// is at most last + period - now. A cost above the limit never fits: the
// wait is then the period. Call Advance first.
func (c *Counts[T]) Wait(width, period, last, now, limit, cost int64) time.Duration {
	sum := c.Sum()
	if sum+cost <= limit {
		return 0
	}
	if cost > limit {
		return time.Duration(period)
	}
	cur := now / width
	for b := cur - Buckets; b < cur; b++ {
		sum -= int64(c[slot(b)])
		if sum+cost <= limit {
			return time.Duration(Leave(width, period, last, b) - now)
		}
	}
	return time.Duration(last + period - now)
}

// Reset returns how long after now a window that holds sum units, receiving
// nothing meanwhile, holds nothing: 0 if it is empty, otherwise the time
// until P has passed since the caller's last admitted request.
func Reset(period, last, now, sum int64) time.Duration {
	if sum == 0 {
		return 0
	}
	return time.Duration(last + period - now)
}

// Expiry returns the first time, in nanoseconds since the Unix epoch, at
// which a window whose last admitted request was at last is certainly empty.
func Expiry(period, last int64) int64 {
	return last + period
}
