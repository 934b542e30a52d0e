package window_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ratescope/ratescope/internal/window"
)

const sec = int64(time.Second)

func TestWidth(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 3*sec, window.Width(time.Minute))
	assert.Equal(t, sec/20, window.Width(time.Second))
	assert.Equal(t, 4320*sec, window.Width(24*time.Hour))
	// A period that does not split evenly rounds the width up, so that the
	// counted buckets always cover the whole period.
	assert.Equal(t, int64(2), window.Width(30*time.Nanosecond))
}

func TestNarrow(t *testing.T) {
	t.Parallel()
	assert.True(t, window.Narrow(65535))
	assert.False(t, window.Narrow(65536))
	var c window.Counts[uint16]
	c.Add(1, 0, 65535)
	assert.Equal(t, int64(65535), c.Sum(), "a bucket holds up to the limit")
}

func TestAdvance(t *testing.T) {
	t.Parallel()
	w, p := window.Width(time.Minute), int64(time.Minute)
	var c window.Counts[uint16]
	c.Add(w, 0, 3)      // bucket 0
	c.Add(w, 20*sec, 2) // bucket 6; the last request is at 20s
	last := 20 * sec
	c.Advance(w, p, last, 62*sec) // bucket 20: buckets 0..20 still overlap the window
	assert.Equal(t, int64(5), c.Sum())
	c.Advance(w, p, last, 63*sec) // bucket 21: bucket 0 left
	assert.Equal(t, int64(2), c.Sum())
	c.Advance(w, p, last, 79*sec)
	assert.Equal(t, int64(2), c.Sum(), "the request at 20s is in the window until 80s")
	c.Advance(w, p, last, 80*sec)
	assert.Zero(t, c.Sum(), "one period after the last request, everything left")

	var far window.Counts[uint32]
	far.Add(w, 0, 1)
	far.Advance(w, 100*p, 0, 1000*sec) // a window of 100 minutes, 21 buckets later
	assert.Zero(t, far.Sum(), "every slot holds a bucket that left")
}

func TestWaitAndReset(t *testing.T) {
	t.Parallel()
	w, p := window.Width(time.Minute), int64(time.Minute)
	var c window.Counts[uint16]
	c.Add(w, 5*sec, 4)  // bucket 1: leaves when its end (6s) is a period old, at 66s
	c.Add(w, 40*sec, 6) // bucket 13, the last request's: leaves at 40s + 60s
	last, now := 40*sec, 50*sec
	c.Advance(w, p, last, now)

	assert.Equal(t, 16*time.Second, c.Wait(w, p, last, now, 10, 1), "room once bucket 1 leaves, at 66s")
	assert.Equal(t, 50*time.Second, c.Wait(w, p, last, now, 10, 5), "5 units need the last request gone too, at 100s")
	assert.Zero(t, c.Wait(w, p, last, now, 20, 5), "room now")
	assert.Equal(t, time.Minute, c.Wait(w, p, last, now, 10, 11), "a cost above the limit never fits: wait a period")

	assert.Equal(t, 50*time.Second, window.Reset(p, last, now, c.Sum()), "empty once the last request leaves")
	assert.Zero(t, window.Reset(p, last, now, 0))
	assert.Equal(t, 100*sec, window.Expiry(p, last))
	assert.Equal(t, 66*sec, window.Leave(w, p, last, 1))
	assert.Equal(t, 100*sec, window.Leave(w, p, last, 13))
}

func TestBurstWaitsExactlyOnePeriod(t *testing.T) {
	t.Parallel()
	for _, p := range []time.Duration{2 * time.Second, time.Minute, 24 * time.Hour} {
		w := window.Width(p)
		for _, at := range []int64{0, 1, w - 1, w, 7*w + w/2, 1 << 50} {
			var c window.Counts[uint16]
			c.Advance(w, int64(p), 0, at)
			c.Add(w, at, 5)
			assert.Equal(t, p, c.Wait(w, int64(p), at, at, 5, 1), "a burst at %d in %s", at, p)
			assert.Equal(t, p, window.Reset(int64(p), at, at, c.Sum()))
		}
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
	w := window.Width(time.Minute)
	var c window.Counts[uint16]
	c.Add(w, 3*sec, 2)
	c.Add(w, 30*sec, 3)
	c.Merge(w, 7*sec)
	assert.Equal(t, int64(5), c.Sum())
	p := int64(time.Minute)
	assert.Equal(t, time.Minute, c.Wait(w, p, 7*sec, 7*sec, 5, 1), "merged counts leave together, a period after now")
}

func TestNearTimeZero(t *testing.T) {
	t.Parallel()
	// The window of a request at time 0 reaches back before the epoch.
	w, p := window.Width(time.Minute), int64(time.Minute)
	var c window.Counts[uint32]
	c.Add(w, 0, 2)
	assert.Equal(t, time.Minute, c.Wait(w, p, 0, 0, 2, 1))
	assert.Equal(t, time.Minute, window.Reset(p, 0, 0, c.Sum()))
}
