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

// Shape is what the arithmetic needs of a window's period, in nanoseconds:
// the period, the bucket width and the unit of the time kept in
// [Counts.Prev]. Build it with [ShapeOf].
type Shape struct {
	Period, Width, Unit int64
}

// ShapeOf returns the shape of a window of period p. The unit is the
// smallest power of ten microseconds such that 2^15 units span a period: at
// most a two-hundredth of a bucket, and a divisor of a second for periods up
// to nine hours, so that times in whole seconds are kept exactly.
func ShapeOf(p time.Duration) Shape {
	unit := int64(time.Microsecond)
	for unit*(prevMask+1) < int64(p) {
		unit *= 10
	}
	return Shape{Period: int64(p), Width: Width(p), Unit: unit}
}

// Counts.Prev holds a time in its low 15 bits and whether it is set in its
// top bit.
const (
	prevMask = 1<<15 - 1
	prevSet  = 1 << 15
)

// Width returns the bucket width, in nanoseconds, of a window of period p.
func Width(p time.Duration) int64 {
	return (int64(p) + Buckets - 1) / Buckets
}

// Counts holds one window's state: its counters, indexed by bucket number
// mod Slots, and Prev, when set, the time of the latest request of one
// bucket older than the newest: that bucket then leaves one period after
// Prev instead of one period after its end. Prev keeps the time rounded up
// to a whole unit, mod 2^15 units, and is read back relative to the
// caller's last request, which is less than a period after it.
type Counts[T Counter] struct {
	C    [Slots]T
	Prev uint16
}

// slot returns the index of a bucket's counter. Buckets before the Unix
// epoch's have negative numbers (near time 0, the window reaches back past
// it): the index is the floored remainder, as Lua's % gives.
func slot(bucket int64) int {
	return int((bucket%Slots + Slots) % Slots)
}

// ceilDiv returns ceil(a / b) for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 {
	return (a + b - 1) / b
}

// prev returns the time Prev stands for, and whether it is set: the latest
// time at or before the unit of the caller's last request whose unit number
// is Prev mod 2^15.
func (c *Counts[T]) prev(s Shape, last int64) (int64, bool) {
	if c.Prev&prevSet == 0 {
		return 0, false
	}
	top := ceilDiv(last, s.Unit)
	return (top - (top-int64(c.Prev&prevMask))&prevMask) * s.Unit, true
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
func (c *Counts[T]) Merge(s Shape, now int64) {
	sum := c.total()
	*c = Counts[T]{}
	c.C[slot(now/s.Width)] = T(sum)
}

// total returns the sum of every counter. It is read on every decision,
// once per limit, so it is written out: a loop costs twice the
// instructions (its index, its bound, and a check of each index).
func (c *Counts[T]) total() int64 {
	w := &c.C
	a := int64(w[0]) + int64(w[1]) + int64(w[2]) + int64(w[3]) + int64(w[4]) +
		int64(w[5]) + int64(w[6]) + int64(w[7]) + int64(w[8]) + int64(w[9])
	b := int64(w[10]) + int64(w[11]) + int64(w[12]) + int64(w[13]) + int64(w[14]) +
		int64(w[15]) + int64(w[16]) + int64(w[17]) + int64(w[18]) + int64(w[19])
	return a + b + int64(w[20])
}

// total reads the counters 0 to 20: this fails to compile unless Slots
// is 21.
var _ [Slots - 21]struct{} = [0]struct{}{}

// Pos is where a request falls in a window: From is the bucket of the
// caller's last admitted request, Cur the bucket of the request's time.
type Pos struct {
	From, Cur int64
}

// PosOf returns the buckets of last and now in a window of shape s.
func (s Shape) PosOf(last, now int64) Pos {
	return Pos{From: last / s.Width, Cur: now / s.Width}
}

// Bucket returns the bucket of time t (t >= 0) in a window of shape s.
func (s Shape) Bucket(t int64) int64 {
	return t / s.Width
}

// PosIn returns PosOf(last, now) for a request whose bucket cur is
// s.Bucket(now), with now >= last: when last is in that bucket, as for a
// caller that calls often, it divides nothing, so that a store can find
// cur before it locks the caller's entry and hold the lock for less.
func (s Shape) PosIn(last, cur int64) Pos {
	if last >= cur*s.Width {
		return Pos{From: cur, Cur: cur}
	}
	return Pos{From: last / s.Width, Cur: cur}
}

// Live returns the units the window counts at now, for a caller whose last
// admitted request was at last, without changing it: what Sum returns
// after Advance. It needs now >= last (see [Clock]).
func (c *Counts[T]) Live(s Shape, p Pos, last, now int64) int64 {
	if now-last >= s.Period {
		return 0
	}
	// Every slot, less the ones after From: they hold buckets a whole
	// window old.
	sum := c.total()
	for b := p.From + 1; b <= p.Cur; b++ {
		sum -= int64(c.C[slot(b)])
	}
	if pv, ok := c.prev(s, last); ok && now-pv >= s.Period {
		if b := pv / s.Width; b < p.From && b >= p.Cur-Buckets {
			sum -= int64(c.C[slot(b)])
		}
	}
	return sum
}

// Advance clears the counters of the buckets that left the window by now,
// for a caller whose last admitted request was at last: all of them if now
// is at least one period after last; otherwise the ones between the bucket
// of last and the bucket of now, whose slots still hold buckets a whole
// window old, and the bucket of Prev once now is a period after Prev. It
// needs now >= last (see [Clock]).
func (c *Counts[T]) Advance(s Shape, p Pos, last, now int64) {
	if now-last >= s.Period {
		*c = Counts[T]{}
		return
	}
	for b := p.From + 1; b <= p.Cur; b++ {
		c.C[slot(b)] = 0
	}
	if pv, ok := c.prev(s, last); ok && now-pv >= s.Period {
		if b := pv / s.Width; b < p.From && b >= p.Cur-Buckets {
			c.C[slot(b)] = 0
		}
		c.Prev = 0
	}
}

// Sum returns the units counted in the window. Call Advance first.
func (c *Counts[T]) Sum() int64 {
	return c.total()
}

// Add records cost units in the bucket of the request (p.Cur), for a
// caller whose last admitted request was at last and becomes the request.
// Call Advance first.
//
// When now opens a new bucket, the bucket of last stops being the newest
// and would leave a period after its end, up to a bucket width after its
// latest request left. Prev can keep the latest request of one such
// bucket: it keeps the one whose units would wait longest for it, counted
// as units times the time from the latest request to the bucket's end.
func (c *Counts[T]) Add(s Shape, p Pos, last, cost int64) {
	from, cur := p.From, p.Cur
	if n := c.C[slot(from)]; cur != from && n != 0 {
		gain := float64(n) * float64(((from+1)*s.Width-last)/int64(time.Microsecond))
		p, ok := c.prev(s, last)
		if b := p / s.Width; ok && c.C[slot(b)] != 0 {
			if float64(c.C[slot(b)])*float64(((b+1)*s.Width-p)/int64(time.Microsecond)) >= gain {
				ok = false // keep the older bucket's time
			} else {
				ok = true
			}
		} else {
			ok = true
		}
		if ok {
			c.Prev = prevSet | uint16(ceilDiv(last, s.Unit)&prevMask)
		}
	}
	c.C[slot(cur)] += T(cost)
}

// Remove takes up to cost units out of bucket b, for a caller whose last
// admitted request was at last, and returns how many it took: none if b is
// not one of the buckets the counters hold (b after the bucket of last, or
// more than Buckets before it: it has left the window), and never more
// than the bucket holds, so that no counter goes below zero. The time of
// last is left as it is (the window then empties no sooner: the safe
// side). It is how a store gives back the units of a request counted at a
// time in bucket b (see core.Counter).
func (c *Counts[T]) Remove(s Shape, last, b, cost int64) int64 {
	from := last / s.Width
	if b > from || b < from-Buckets {
		return 0
	}
	v := &c.C[slot(b)]
	n := min(int64(*v), cost)
	*v -= T(n)
	return n
}

// Leave returns when bucket b of a window leaves it, for a caller whose last
// admitted request was at last: the bucket of last one period after last;
// the bucket of Prev one period after Prev; any other when its end is one
// window width (Buckets buckets) old. None leaves later than last + period.
func (c *Counts[T]) Leave(s Shape, last, b int64) int64 {
	if b == last/s.Width {
		return last + s.Period
	}
	at := (b + 1 + Buckets) * s.Width
	if p, ok := c.prev(s, last); ok && p/s.Width == b {
		at = min(at, p+s.Period)
	}
	return min(at, last+s.Period)
}

// Wait returns how long after now a request of the given cost must wait until
// the window, receiving nothing meanwhile, has room for it: 0 if it has room
// now. The buckets leave oldest first, each at its [Counts.Leave] time, so
// the wait is at most last + period - now. A cost above the limit never
// fits: the wait is then the period. Call Advance first.
func (c *Counts[T]) Wait(s Shape, p Pos, last, now, limit, cost int64) time.Duration {
	sum := c.Sum()
	if sum+cost <= limit {
		return 0
	}
	if cost > limit {
		return time.Duration(s.Period)
	}
	for b := p.Cur - Buckets; b < p.Cur; b++ {
		sum -= int64(c.C[slot(b)])
		if sum+cost <= limit {
			return time.Duration(c.Leave(s, last, b) - now)
		}
	}
	return time.Duration(last + s.Period - now)
}

// Reset returns how long after now a window that holds sum units, receiving
// nothing meanwhile, holds nothing: 0 if it is empty, otherwise the time
// until one period has passed since the caller's last admitted request.
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
