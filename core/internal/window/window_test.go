package window_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core/internal/window"
)

const sec = int64(time.Second)

var minute = window.ShapeOf(time.Minute)

// add admits cost units at now, for a caller whose last admitted request
// was at last, as a store does.
func add[T window.Counter](c *window.Counts[T], s window.Shape, last, now, cost int64) {
	p := s.PosOf(last, now)
	c.Advance(s, p, last, now)
	c.Add(s, p, last, cost)
}

// advance clears what left the window by now.
func advance[T window.Counter](c *window.Counts[T], s window.Shape, last, now int64) {
	c.Advance(s, s.PosOf(last, now), last, now)
}

// wait is Counts.Wait at now.
func wait[T window.Counter](c *window.Counts[T], s window.Shape, last, now, limit, cost int64) time.Duration {
	return c.Wait(s, s.PosOf(last, now), last, now, limit, cost)
}

func TestShape(t *testing.T) {
	t.Parallel()
	assert.Equal(t, window.Shape{Period: 60 * sec, Width: 3 * sec, Unit: 10 * int64(time.Millisecond)}, minute)
	assert.Equal(t, sec/20, window.Width(time.Second))
	assert.Equal(t, 4320*sec, window.Width(24*time.Hour))
	assert.Equal(t, int64(time.Microsecond), window.ShapeOf(time.Second/100).Unit)
	assert.Equal(t, 10*sec, window.ShapeOf(24*time.Hour).Unit)
	// A period that does not split evenly rounds the width up, so that the
	// counted buckets always cover the whole period.
	assert.Equal(t, int64(2), window.Width(30*time.Nanosecond))
}

func TestNarrow(t *testing.T) {
	t.Parallel()
	assert.True(t, window.Narrow(65535))
	assert.False(t, window.Narrow(65536))
	var c window.Counts[uint16]
	add(&c, minute, 0, 0, 65535)
	assert.Equal(t, int64(65535), c.Sum(), "a bucket holds up to the limit")
}

func TestAdvance(t *testing.T) {
	t.Parallel()
	var c window.Counts[uint16]
	add(&c, minute, 0, 0, 3)      // bucket 0
	add(&c, minute, 0, 20*sec, 2) // bucket 6; the last request is at 20s
	last := 20 * sec
	advance(&c, minute, last, 59*sec)
	assert.Equal(t, int64(5), c.Sum())
	advance(&c, minute, last, 60*sec)
	assert.Equal(t, int64(2), c.Sum(), "the request at 0s, kept in Prev, left at 60s")
	advance(&c, minute, last, 79*sec)
	assert.Equal(t, int64(2), c.Sum(), "the request at 20s is in the window until 80s")
	advance(&c, minute, last, 80*sec)
	assert.Zero(t, c.Sum(), "one period after the last request, everything left")
}

func TestWaitAndReset(t *testing.T) {
	t.Parallel()
	p := minute.Period
	var c window.Counts[uint16]
	add(&c, minute, 0, 1*sec, 1)      // bucket 0
	add(&c, minute, 1*sec, 5*sec, 3)  // bucket 1: Prev keeps 1s, bucket 0 leaves at 61s
	add(&c, minute, 5*sec, 40*sec, 6) // bucket 13: bucket 1 weighs more (3 units 1s before its end): Prev keeps 5s
	last, now := 40*sec, 50*sec
	advance(&c, minute, last, now)

	assert.Equal(t, 13*time.Second, wait(&c, minute, last, now, 10, 1), "room once bucket 0 leaves when its end is a period old, at 63s")
	assert.Equal(t, 15*time.Second, wait(&c, minute, last, now, 10, 3), "room for 3 once bucket 1 leaves, a period after its latest request")
	assert.Equal(t, 50*time.Second, wait(&c, minute, last, now, 10, 5), "5 units need the last request gone too, at 100s")
	assert.Zero(t, wait(&c, minute, last, now, 20, 5), "room now")
	assert.Equal(t, time.Minute, wait(&c, minute, last, now, 10, 11), "a cost above the limit never fits: wait a period")

	assert.Equal(t, 50*time.Second, window.Reset(p, last, now, c.Sum()), "empty once the last request leaves")
	assert.Zero(t, window.Reset(p, last, now, 0))
	assert.Equal(t, 100*sec, window.Expiry(p, last))
	assert.Equal(t, 63*sec, c.Leave(minute, last, 0))
	assert.Equal(t, 100*sec, c.Leave(minute, last, 13))
}

func TestBurstWaitsExactlyOnePeriod(t *testing.T) {
	t.Parallel()
	for _, p := range []time.Duration{2 * time.Second, time.Minute, 24 * time.Hour} {
		s := window.ShapeOf(p)
		for _, at := range []int64{0, 1, s.Width - 1, s.Width, 7*s.Width + s.Width/2, 1 << 50} {
			var c window.Counts[uint16]
			advance(&c, s, 0, at)
			add(&c, s, 0, at, 5)
			assert.Equal(t, p, wait(&c, s, at, at, 5, 1), "a burst at %d in %s", at, p)
			assert.Equal(t, p, window.Reset(s.Period, at, at, c.Sum()))
		}
	}
}

func TestPrevNearTheEpochAndFarFromIt(t *testing.T) {
	t.Parallel()
	for _, base := range []int64{0, 1 << 40, 1<<62 - 1<<41} {
		var c window.Counts[uint32]
		add(&c, minute, base, base+sec, 2)        // bucket A
		add(&c, minute, base+sec, base+40*sec, 1) // a later bucket: Prev keeps base+1s
		got := time.Duration(c.Leave(minute, base+40*sec, (base+sec)/minute.Width) - base)
		assert.GreaterOrEqual(t, got, 61*time.Second, "never before the request left")
		assert.Less(t, got, 61*time.Second+time.Duration(minute.Unit), "within a unit of it")
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	at, merge := window.Clock(10*sec, 20*sec)
	assert.Equal(t, 20*sec, at)
	assert.False(t, merge)
	at, merge = window.Clock(10*sec, 10*sec-window.StepBack)
	assert.Equal(t, 10*sec, at, "a small step back stands still")
	assert.False(t, merge)
	at, merge = window.Clock(10*sec, 10*sec-window.StepBack-1)
	assert.Equal(t, 10*sec-window.StepBack-1, at, "a large step back is followed")
	assert.True(t, merge)
}

func TestMerge(t *testing.T) {
	t.Parallel()
	var c window.Counts[uint16]
	add(&c, minute, 0, 3*sec, 2)
	add(&c, minute, 3*sec, 30*sec, 3)
	c.Merge(minute, 7*sec)
	assert.Equal(t, int64(5), c.Sum())
	assert.Equal(t, time.Minute, wait(&c, minute, 7*sec, 7*sec, 5, 1), "merged counts leave together, a period after now")
}

func TestNearTimeZero(t *testing.T) {
	t.Parallel()
	// The window of a request at time 0 reaches back before the epoch.
	var c window.Counts[uint32]
	add(&c, minute, 0, 0, 2)
	assert.Equal(t, time.Minute, wait(&c, minute, 0, 0, 2, 1))
	assert.Equal(t, time.Minute, window.Reset(minute.Period, 0, 0, c.Sum()))
}

func TestLiveIsAdvanceThenSum(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	s := window.ShapeOf(10 * time.Second)
	var c window.Counts[uint16]
	var last, now int64
	for range 20000 {
		now += rng.Int64N(2 * s.Width)
		p := s.PosOf(last, now)
		live := c.Live(s, p, last, now)
		cp := c
		cp.Advance(s, p, last, now)
		require.Equal(t, cp.Sum(), live, "at %d, last %d", now, last)
		if live < 50 {
			c = cp
			c.Add(s, p, last, 1+rng.Int64N(3))
			last = now
		}
	}
}

func TestPosInIsPosOf(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range []time.Duration{time.Second, time.Minute, 24 * time.Hour} {
		s := window.ShapeOf(p)
		for range 20000 {
			now := rng.Int64N(1 << 50)
			last := now - rng.Int64N(min(now+1, 3*s.Width))
			require.Equal(t, s.PosOf(last, now), s.PosIn(last, s.Bucket(now)), "period %v, last %d, now %d", p, last, now)
		}
		for _, last := range []int64{0, s.Width - 1, s.Width, 5*s.Width - 1} {
			now := 5*s.Width - 1
			assert.Equal(t, s.PosOf(last, now), s.PosIn(last, s.Bucket(now)), "period %v, last %d", p, last)
		}
	}
}
