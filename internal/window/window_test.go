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
	assert.Equal(t, 15*sec, window.Width(time.Minute))
	assert.Equal(t, sec/4, window.Width(time.Second))
	assert.Equal(t, 6*3600*sec, window.Width(24*time.Hour))
	// A period that does not split evenly rounds the width up, so that the
	// counted buckets always cover the whole period.
	assert.Equal(t, int64(3), window.Width(10*time.Nanosecond))
}

func TestAdvance(t *testing.T) {
	t.Parallel()
	w := window.Width(time.Minute)
	var c window.Counts
	c.Add(w, 0, 3)      // bucket 0
	c.Add(w, 20*sec, 2) // bucket 1
	c.Advance(w, 20*sec, 10*sec)
	assert.Equal(t, int64(5), c.Sum(), "a time before last changes nothing")
	c.Advance(w, 20*sec, 70*sec) // bucket 4: buckets 0..4 still overlap the window
	assert.Equal(t, int64(5), c.Sum())
	c.Advance(w, 70*sec, 75*sec) // bucket 5: bucket 0 left
	assert.Equal(t, int64(2), c.Sum())
	c.Advance(w, 75*sec, 1000*sec) // far later: everything left
	assert.Zero(t, c.Sum())
}

func TestWaitAndReset(t *testing.T) {
	t.Parallel()
	w := window.Width(time.Minute)
	var c window.Counts
	c.Add(w, 5*sec, 4)  // bucket 0, leaves at 75s
	c.Add(w, 40*sec, 6) // bucket 2, leaves at 105s
	now := 50 * sec
	c.Advance(w, 40*sec, now)

	wait, ok := c.Wait(w, now, 10, 1)
	assert.True(t, ok)
	assert.Equal(t, 25*time.Second, wait, "room once bucket 0 leaves, at 75s")
	wait, ok = c.Wait(w, now, 10, 5)
	assert.True(t, ok)
	assert.Equal(t, 55*time.Second, wait, "5 units need bucket 2 gone too, at 105s")
	wait, ok = c.Wait(w, now, 20, 5)
	assert.True(t, ok)
	assert.Zero(t, wait, "room now")
	_, ok = c.Wait(w, now, 10, 11)
	assert.False(t, ok, "a cost above the limit never fits")

	assert.Equal(t, 55*time.Second, c.Reset(w, now), "empty once bucket 2 leaves")
	var empty window.Counts
	assert.Zero(t, empty.Reset(w, now))

	assert.Equal(t, 105*sec, window.Expiry(w, 40*sec))
}

func TestNearTimeZero(t *testing.T) {
	t.Parallel()
	// The window of a request at time 0 reaches back before the epoch.
	w := window.Width(time.Minute)
	var c window.Counts
	c.Add(w, 0, 2)
	wait, ok := c.Wait(w, 0, 2, 1)
	assert.True(t, ok)
	assert.Equal(t, 75*time.Second, wait)
	assert.Equal(t, 75*time.Second, c.Reset(w, 0))
}
