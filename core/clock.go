package core

import (
	"sync/atomic"
	"time"
)

// systemClock is the default clock of a Limiter (Config.Now): the times of
// time.Now, for one read of the system's monotonic clock per decision
// instead of time.Now's two (the wall clock and the monotonic one).
//
// It keeps an anchor, a time from time.Now, and returns the anchor moved
// on by the monotonic time elapsed since: the same monotonic reading as
// time.Now gives, and the same wall time but for a step of the wall clock
// since the anchor. The anchor is taken again once it is older than every
// (a second), so that a step of the wall clock is followed within that
// time by what reads the wall time (the Redis store's RequestClock,
// memstore's balances).
type systemClock struct {
	every  time.Duration
	anchor atomic.Pointer[time.Time]
}

// anchorEvery is how long a systemClock keeps an anchor.
const anchorEvery = time.Second

func newSystemClock(every time.Duration) *systemClock {
	c := &systemClock{every: every}
	t := time.Now()
	c.anchor.Store(&t)
	return c
}

// now returns the current time, with a monotonic reading.
func (c *systemClock) now() time.Time {
	a := c.anchor.Load()
	if d := time.Since(*a); d < c.every {
		return a.Add(d)
	}
	t := time.Now()
	c.anchor.Store(&t)
	return t
}
