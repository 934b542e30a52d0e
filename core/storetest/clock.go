// Package storetest checks that a [core.Store] behaves as ratescope
// requires, and provides a fake clock for exact, sleepless tests.
//
// Every store runs the same suite, from a test of its own package:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) core.Store { return memstore.New(memstore.Config{}) })
//	}
//
// The suite covers both windows of a scope, costs, all-or-nothing,
// Retry-After honesty, the strict window guarantee (also at random offsets
// from the epoch), expiry of counts, keys that must not collide, and
// concurrency (exactly N of M concurrent requests allowed); and what a
// caller is promised: a client pacing at up to 95% of a rate is never
// refused, one that bursts and obeys Retry-After gets at least 98% of what
// an exact log gives, no wait is longer than the period, answers stay
// between an exact log's and the period on a mixed-cost schedule, a clock
// that jumps ahead and back locks no one out, and a client that hangs up is
// no store failure. The give-back checks run too, within Run: the cost
// freed on every limit, never more than was counted, never another
// caller's, nothing once the window moved on, and exact under concurrent
// takes and give-backs. A store of package balance runs
// balance/balancetest.Run too.
package storetest

import (
	"sync"
	"time"
)

// Clock is a fake clock for tests: it stands still until told to move. The
// zero value is not usable; build it with [NewClock]. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock that reads start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the clock's time. Pass the method value as a Config.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
