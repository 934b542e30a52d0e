package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// runReset runs the cases of a reset, on counters the store was bound to.
func runReset(t *testing.T, newStore func(t *testing.T) core.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s core.Store)
	}{
		{"FreesOneCallerOnly", testResetOneCaller},
		{"CallerWithoutCounts", testResetNoCounts},
		{"WhateverTheLimits", testResetAnyLimits},
		{"ConcurrentWithTakes", testResetConcurrent},
	} {
		t.Run("Reset/"+tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// resetCaller is a caller whose counts a test takes and resets.
type resetCaller struct {
	*caller
}

func (c resetCaller) reset() {
	c.t.Helper()
	require.NoError(c.t, storecall.Reset(context.Background(), c.s, storecall.Request{Scope: c.scope, Caller: c.who, Limits: c.limits, Now: c.now}))
}

// remaining takes one unit and returns what each limit has left.
func (c resetCaller) remaining() []int64 {
	c.t.Helper()
	res := c.take(1)
	require.True(c.t, res.Allowed, "%s in %s", c.who, c.scope)
	out := make([]int64, len(c.limits))
	for i := range out {
		out[i] = res.Limits[i].Remaining
	}
	return out
}

func testResetOneCaller(t *testing.T, s core.Store) {
	limits := []core.Rate{core.PerMinute(5), core.PerDay(100)}
	scope, other := uniqueScope(t), uniqueScope(t)
	at := func(scope string, who core.Caller) resetCaller {
		return resetCaller{&caller{t: t, s: s, scope: scope, who: who, limits: limits, now: Start.Add(30 * time.Second)}}
	}
	blocked := at(scope, anon("192.0.2.1"))
	neighbour := at(scope, anon("192.0.2.2"))
	user := at(scope, core.UserCaller("192.0.2.1")) // the other kind, named alike
	elsewhere := at(other, anon("192.0.2.1"))
	v6 := at(scope, anon("2001:db8:1:2::1"))
	unknown := at(scope, core.Caller{})
	last := at(scope, host("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
	zero := at(scope, anon("0.0.0.0"))

	blocked.allow(5)
	require.False(t, blocked.take(1).Allowed, "blocked before the reset")
	neighbour.allow(2)
	user.allow(3)
	elsewhere.allow(1)
	v6.allow(5)
	last.allow(1)
	zero.allow(1)
	unknown.allow(5)
	unknown.reset()
	assert.Equal(t, []int64{4, 99}, unknown.remaining(), "the caller whose address is unknown is reset")
	assert.Equal(t, []int64{3, 98}, last.remaining(), "the last IPv6 address keeps its counts")
	assert.Equal(t, []int64{3, 98}, zero.remaining(), "0.0.0.0 keeps its counts")

	blocked.reset()
	assert.Equal(t, []int64{4, 99}, blocked.remaining(), "the whole limit less the cost")
	assert.Equal(t, []int64{2, 97}, neighbour.remaining(), "another caller keeps its counts")
	assert.Equal(t, []int64{1, 96}, user.remaining(), "the other kind keeps its counts")
	assert.Equal(t, []int64{3, 98}, elsewhere.remaining(), "another scope keeps its counts")
	require.False(t, v6.take(1).Allowed, "an IPv6 caller keeps its counts")

	// An IPv6 network is reset by any address in it, as it is counted.
	at(scope, anon("2001:db8:1:2:ffff::9")).reset()
	assert.Equal(t, []int64{4, 99}, v6.remaining())
	user.reset()
	assert.Equal(t, []int64{4, 99}, user.remaining())
	assert.Equal(t, []int64{3, 98}, blocked.remaining(), "a user's reset leaves the anonymous caller's counts")
}

func testResetNoCounts(t *testing.T, s core.Store) {
	c := resetCaller{newCaller(t, s, core.PerMinute(5), core.PerDay(100))}
	c.reset()
	c.reset()
	assert.Equal(t, []int64{4, 99}, c.remaining())
	c.who = core.UserCaller("nobody")
	c.reset()
	assert.Equal(t, []int64{4, 99}, c.remaining())
}

// testResetAnyLimits resets a caller counted under two limits of one
// period, one of them above 65,535 (a memory store may keep those apart):
// a reset under either clears both.
func testResetAnyLimits(t *testing.T, s core.Store) {
	small := resetCaller{newCaller(t, s, core.PerMinute(5))}
	large := small
	large.caller = &caller{t: t, s: s, scope: small.scope, who: small.who, limits: []core.Rate{core.PerMinute(100_000)}, now: Start}
	small.allow(5)
	large.allow(3)
	small.reset()
	assert.Equal(t, []int64{4}, small.remaining())
	// 99,999 if the counts are kept apart; 99,998 if shared with the
	// request just made.
	assert.GreaterOrEqual(t, large.remaining()[0], int64(99_998))
}

// testResetConcurrent resets a caller while it and another caller send
// requests: every call succeeds, the other caller's requests are all
// counted, and after a last reset the caller has its whole limit.
func testResetConcurrent(t *testing.T, s core.Store) {
	const limit, workers, each = 10_000, 4, 50
	reset := resetCaller{newCaller(t, s, core.PerMinute(limit))}
	other := resetCaller{&caller{t: t, s: s, scope: reset.scope, who: anon("192.0.2.99"), limits: reset.limits, now: Start}}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				for _, c := range []resetCaller{reset, other} {
					res, err := storecall.Take(ctx, s, storecall.Request{Scope: c.scope, Caller: c.who, Limits: c.limits, Cost: 1, Now: Start})
					if assert.NoError(t, err) {
						assert.True(t, res.Allowed)
					}
				}
			}
		})
		if w == 0 {
			wg.Go(func() {
				for range each {
					assert.NoError(t, storecall.Reset(ctx, s, storecall.Request{Scope: reset.scope, Caller: reset.who, Limits: reset.limits, Now: Start}))
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, []int64{limit - workers*each - 1}, other.remaining(), "every request of the other caller counted")
	reset.reset()
	assert.Equal(t, []int64{limit - 1}, reset.remaining())
}
