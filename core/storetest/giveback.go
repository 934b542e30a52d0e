package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// runGiveBack runs the give-back part of the suite.
func runGiveBack(t *testing.T, newStore func(t *testing.T) core.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s core.Store)
	}{
		{"FreesTheCostOnEveryLimit", testGiveBackEveryLimit},
		{"NeverBelowZero", testGiveBackNeverBelowZero},
		{"OnlyTheRequestsCounts", testGiveBackApart},
		{"TheBucketOfTheRequest", testGiveBackBucket},
		{"AfterTheWindowMovedOn", testGiveBackWindowMovedOn},
		{"ConcurrentTakesAndGiveBacks", testGiveBackConcurrency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// giveBack gives back the units of cost of c's request that res allowed.
func (c *caller) giveBack(res core.Result, cost int64) {
	c.t.Helper()
	require.True(c.t, res.Allowed, "only an allowed request is given back")
	err := storecall.GiveBack(context.Background(), c.s, storecall.Request{Scope: c.scope, Caller: c.who, Limits: c.limits, Cost: cost, Now: c.now}, res.At)
	require.NoError(c.t, err)
}

// room returns how many requests of cost 1 c is allowed now, taking them,
// up to max.
func (c *caller) room(max int) int {
	c.t.Helper()
	for i := range max + 1 {
		if !c.take(1).Allowed {
			return i
		}
	}
	return max + 1
}

func testGiveBackEveryLimit(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(5), core.Rate{Limit: 10, Period: time.Hour})
	c.now = Start.Add(3 * time.Minute)
	first := c.take(2)
	require.True(t, first.Allowed)
	c.allow(3)
	require.False(t, c.take(1).Allowed)
	c.now = c.now.Add(time.Second)
	c.giveBack(first, 2)
	res := c.take(1)
	require.True(t, res.Allowed, "the units given back are free again")
	assert.Equal(t, int64(1), res.Limits[0].Remaining, "5/min: 5 counted, 2 given back, 1 taken")
	assert.Equal(t, int64(6), res.Limits[1].Remaining, "10/hour: 5 counted, 2 given back, 1 taken")
}

func testGiveBackNeverBelowZero(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(5), core.PerDay(100))
	c.now = Start.Add(time.Minute)
	res := c.take(1)
	// More than was counted, and the same request again: its bucket
	// holds one unit, and gives back no more.
	c.giveBack(res, 1)
	c.giveBack(res, 1)
	c.giveBack(res, 4)
	assert.Equal(t, 5, c.room(10), "a count never goes below zero: the caller has its limit, no more")
	c.now = c.now.Add(time.Hour)
	assert.Equal(t, 5, c.room(10), "and keeps it in the next windows")
}

func testGiveBackApart(t *testing.T, s core.Store) {
	limits := []core.Rate{core.PerMinute(2)}
	x := newCaller(t, s, limits...)
	y := &caller{t: t, s: s, scope: x.scope, who: anon("192.0.2.2"), limits: limits, now: Start}
	v6 := &caller{t: t, s: s, scope: x.scope, who: anon("2001:db8::1"), limits: limits, now: Start}
	user := &caller{t: t, s: s, scope: x.scope, who: core.UserCaller("192.0.2.1"), limits: limits, now: Start}
	other := &caller{t: t, s: s, scope: uniqueScope(t), who: x.who, limits: limits, now: Start}
	for _, c := range []*caller{y, v6, user, other} {
		c.allow(2)
	}
	res := x.take(1)
	x.allow(1)
	x.giveBack(res, 1)
	x.giveBack(res, 1)
	for _, c := range []*caller{y, v6, user, other} {
		assert.False(t, c.take(1).Allowed, "another caller, kind or scope (%s in %s) keeps its count", c.who, c.scope)
	}
	assert.Equal(t, 2, x.room(2), "the caller's two units are given back")
}

func testGiveBackBucket(t *testing.T, s core.Store) {
	// 3/min: buckets of 3s. A request counted at 0s is given back after
	// others were counted in later buckets: its bucket, and only it,
	// loses the unit, so the later ones still leave at their own time.
	c := newCaller(t, s, core.PerMinute(3))
	c.now = Start.Add(time.Hour)
	a := c.take(1)
	c.now = c.now.Add(30 * time.Second)
	c.allow(2)
	c.now = c.now.Add(10 * time.Second)
	c.giveBack(a, 1)
	res := c.take(1)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(0), res.Limits[0].Remaining)
	res = c.take(1)
	require.False(t, res.Allowed)
	assert.Equal(t, 50*time.Second, res.Limits[0].RetryAfter, "the first unit to leave is one of 30s, at 90s: the give-back took the unit of 0s (which would have left at 63s), not one of theirs")
}

func testGiveBackWindowMovedOn(t *testing.T, s core.Store) {
	// 3/min: buckets of 3s. The request at 0s leaves the window at 63s,
	// when the bucket of 63s takes over its counter: a give-back of it
	// then must not free a unit of that bucket.
	c := newCaller(t, s, core.PerMinute(3))
	c.now = Start.Add(2 * time.Hour)
	a := c.take(1)
	c.now = c.now.Add(63 * time.Second)
	c.allow(3)
	c.giveBack(a, 1)
	assert.False(t, c.take(1).Allowed, "a give-back after its bucket left the window changes nothing")

	// Once the whole window is empty: nothing to give back, and the
	// counts are as they should be afterwards.
	b := newCaller(t, s, core.PerMinute(3), core.Rate{Limit: 5, Period: time.Hour})
	b.now = Start.Add(3 * time.Hour)
	first := b.take(1)
	b.now = b.now.Add(2 * time.Hour)
	b.giveBack(first, 1)
	res := b.take(1)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(2), res.Limits[0].Remaining)
	assert.Equal(t, int64(4), res.Limits[1].Remaining)
	assert.Equal(t, 2, b.room(5))
}

func testGiveBackConcurrency(t *testing.T, s core.Store) {
	// Half the goroutines give back what they were allowed, the other
	// half keep it: at the end exactly the kept units are counted.
	const limit, workers, rounds = 25, 40, 10
	scope := uniqueScope(t)
	who := anon("198.51.100.9")
	limits := []core.Rate{core.PerMinute(limit), core.PerDay(1000)}
	now := Start.Add(5 * time.Hour)
	var kept atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			<-start
			for range rounds {
				req := storecall.Request{Scope: scope, Caller: who, Limits: limits, Cost: 1, Now: now}
				res, err := storecall.Take(context.Background(), s, req)
				if err != nil {
					errs <- err
					return
				}
				if !res.Allowed {
					continue
				}
				if w%2 == 1 {
					kept.Add(1)
					continue
				}
				if err := storecall.GiveBack(context.Background(), s, req, res.At); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, kept.Load(), int64(limit))
	res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: scope, Caller: who, Limits: limits, Cost: 1, Now: now})
	require.NoError(t, err)
	if kept.Load() == limit {
		assert.False(t, res.Allowed)
		return
	}
	require.True(t, res.Allowed)
	assert.Equal(t, limit-kept.Load()-1, res.Limits[0].Remaining, "only the units kept stay counted")
	assert.Equal(t, 1000-kept.Load()-1, res.Limits[1].Remaining)
}
