package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// runReset runs the cases of a reset ([core.ResetStore]) and, if the store
// keeps balances, of a balance's reset ([core.BalanceResetStore]), for a
// store that has them: both are optional abilities (a store's own test
// asserts that it has them). Each window case takes through the store and,
// for a [core.ScopedStore], through the Store of ForScope too, as a
// Limiter does, while the reset goes to the store itself.
func runReset(t *testing.T, newStore func(t *testing.T) core.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s core.Store, r core.ResetStore)
	}{
		{"FreesOneCallerOnly", testResetOneCaller},
		{"CallerWithoutCounts", testResetNoCounts},
		{"WhateverTheLimits", testResetAnyLimits},
		{"ConcurrentWithTakes", testResetConcurrent},
	} {
		t.Run("Reset/"+tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			r, ok := s.(core.ResetStore)
			if !ok {
				t.Logf("%T has no Reset (core.ResetStore): not run", s)
				return
			}
			tc.fn(t, s, r)
			if ss, ok := s.(core.ScopedStore); ok {
				t.Run("ForScope", func(t *testing.T) { tc.fn(t, scoped{ss}, r) })
			}
		})
	}
	t.Run("Reset/Balance", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		bs, ok := s.(interface {
			core.BalanceStore
			core.BalanceResetStore
		})
		if !ok {
			t.Logf("%T has no ResetBalance (core.BalanceResetStore): not run", s)
			return
		}
		testResetBalance(t, bs, bs)
	})
}

// resetCaller is a caller whose counts a test takes and resets.
type resetCaller struct {
	*caller
	r core.ResetStore
}

func (c resetCaller) reset() {
	c.t.Helper()
	require.NoError(c.t, c.r.Reset(context.Background(), core.Request{Scope: c.scope, Caller: c.who, Limits: c.limits, Now: c.now}))
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

func testResetOneCaller(t *testing.T, s core.Store, r core.ResetStore) {
	limits := []core.Rate{core.PerMinute(5), core.PerDay(100)}
	scope, other := uniqueScope(t), uniqueScope(t)
	at := func(scope string, who core.Caller) resetCaller {
		return resetCaller{&caller{t: t, s: s, scope: scope, who: who, limits: limits, now: Start.Add(30 * time.Second)}, r}
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

func testResetNoCounts(t *testing.T, s core.Store, r core.ResetStore) {
	c := resetCaller{newCaller(t, s, core.PerMinute(5), core.PerDay(100)), r}
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
func testResetAnyLimits(t *testing.T, s core.Store, r core.ResetStore) {
	small := resetCaller{newCaller(t, s, core.PerMinute(5)), r}
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
func testResetConcurrent(t *testing.T, s core.Store, r core.ResetStore) {
	const limit, workers, each = 10_000, 4, 50
	reset := resetCaller{newCaller(t, s, core.PerMinute(limit)), r}
	other := resetCaller{&caller{t: t, s: s, scope: reset.scope, who: anon("192.0.2.99"), limits: reset.limits, now: Start}, r}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				for _, c := range []resetCaller{reset, other} {
					res, err := s.Take(ctx, core.Request{Scope: c.scope, Caller: c.who, Limits: c.limits, Cost: 1, Now: Start})
					if assert.NoError(t, err) {
						assert.True(t, res.Allowed)
					}
				}
			}
		})
		if w == 0 {
			wg.Go(func() {
				for range each {
					assert.NoError(t, r.Reset(ctx, core.Request{Scope: reset.scope, Caller: reset.who, Limits: reset.limits, Now: Start}))
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, []int64{limit - workers*each - 1}, other.remaining(), "every request of the other caller counted")
	reset.reset()
	assert.Equal(t, []int64{limit - 1}, reset.remaining())
}

func testResetBalance(t *testing.T, s core.BalanceStore, r core.BalanceResetStore) {
	p := noThresholds
	p.Drop = 15000
	dropped := newBalanceCaller(t, s, p)
	other := *dropped
	other.who = anon("192.0.2.2")
	user := *dropped
	user.who = core.UserCaller("192.0.2.1")
	reset := func(c *balanceCaller) {
		t.Helper()
		require.NoError(t, r.ResetBalance(context.Background(), core.BalanceRequest{Scope: c.scope, Caller: c.who, Policy: c.policy, Now: c.now}))
	}

	require.Equal(t, int64(15000), dropped.charge(480000).Balance)
	require.True(t, dropped.charge(20).Dropped)
	require.Equal(t, int64(7500), other.charge(240000).Balance)
	require.Equal(t, int64(5000), user.charge(160000).Balance)

	reset(dropped)
	res := dropped.charge(20)
	assert.False(t, res.Dropped)
	assert.Zero(t, res.Before, "the balance is gone")
	assert.Equal(t, int64(0), res.Balance, "20 over a 32 s window rounds to 0")
	assert.Equal(t, int64(7500), other.charge(0).Balance, "another caller keeps its balance")
	assert.Equal(t, int64(5000), user.charge(0).Balance, "the other kind keeps its balance")

	reset(&user)
	assert.Zero(t, user.charge(0).Balance)
	nobody := *dropped
	nobody.who = core.UserCaller("nobody")
	reset(&nobody)
	assert.Zero(t, nobody.charge(0).Balance)

	// Resets concurrent with charges, of the caller reset and of another,
	// whose every charge counts.
	busy := *dropped
	busy.who = anon("192.0.2.3")
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				for _, c := range []*balanceCaller{dropped, &busy} {
					_, err := s.Charge(ctx, core.BalanceRequest{Scope: c.scope, Caller: c.who, Policy: c.policy, Cost: 32, Now: c.now})
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 25 {
			assert.NoError(t, r.ResetBalance(ctx, core.BalanceRequest{Scope: dropped.scope, Caller: dropped.who, Policy: dropped.policy, Now: dropped.now}))
		}
	})
	wg.Wait()
	assert.Equal(t, int64(100), busy.charge(0).Balance, "100 charges of 32 over a 32 s window")
	reset(dropped)
	assert.Zero(t, dropped.charge(0).Balance)
}
