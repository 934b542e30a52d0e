// Package balancetest is the conformance suite of the stores of package
// balance ([balance.Store]): every store runs it, as every window store runs
// core/storetest.
package balancetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
)

// Run runs the conformance cases of the decaying balance against the
// stores newStore returns: the decay figures, fractional seconds, the
// thresholds, the warning's cost and its once-per-second rule, the
// warning that never drops, the drop's cost, recovery after a drop, a
// caller who retries once a second let back in, charges that saturate, callers and scopes kept apart, the clock
// stepping back, concurrency (N concurrent charges add exactly N costs)
// and a reset (one caller freed and no other, concurrent with charges).
// It calls newStore once per subtest; the store may be shared with other
// tests, since every subtest uses scopes of its own. Exemption is the
// [balance.Guard]'s, tested in package balance.
func Run(t *testing.T, newStore func(t *testing.T) balance.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s balance.Store)
	}{
		{"DecayVector", testDecayVector},
		{"FractionalSeconds", testFractionalSeconds},
		{"Thresholds", testThresholds},
		{"WarningOncePerSecond", testWarningOncePerSecond},
		{"WarningNeverDrops", testWarningNeverDrops},
		{"DropCostAndRecovery", testDropAndRecovery},
		{"OnceASecondGetsBackIn", testOnceASecondGetsBackIn},
		{"Saturation", testSaturation},
		{"CallersAndScopesApart", testBalancesApart},
		{"ClockSteppingBack", testBalanceClockBack},
		{"Concurrency", testBalanceConcurrency},
		{"Reset", testResetBalance},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// start is the time of the first request of every case.
var start = storetest.Start

// runID keeps the scopes of two runs of the suite apart, for stores that
// outlive a test (a Redis server): the suite never flushes a store.
var runID = rand.Uint64()

var scopeSeq atomic.Int64

// uniqueScope returns a scope name no other test of this process uses.
func uniqueScope() string {
	return fmt.Sprintf("balancetest-%x-%d", runID, scopeSeq.Add(1))
}

// anon returns the anonymous caller of addr's network: /32 or /64.
func anon(addr string) core.Caller {
	a := netip.MustParseAddr(addr).Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	return core.NetworkCaller(netip.PrefixFrom(a, bits).Masked())
}

// rippled is the policy of the XRP Ledger server, every figure written
// out, as a [balance.Guard] hands it to its store.
var rippled = balance.Policy{Window: 32 * time.Second, Warn: 5000, WarnCost: 2000, WarnEvery: time.Second, Drop: 15000, DropCost: 3000}

// noThresholds is rippled's window with thresholds no test reaches: the
// decay alone.
var noThresholds = balance.Policy{Window: 32 * time.Second, Warn: core.MaxLimit, WarnCost: 2000, WarnEvery: time.Second, Drop: core.MaxLimit, DropCost: 3000}

// balanceCaller sends charges for one caller and scope.
type balanceCaller struct {
	t      *testing.T
	s      balance.Store
	scope  string
	who    core.Caller
	policy balance.Policy
	now    time.Time
}

func newBalanceCaller(t *testing.T, s balance.Store, p balance.Policy) *balanceCaller {
	return &balanceCaller{t: t, s: s, scope: uniqueScope(), who: anon("192.0.2.1"), policy: p, now: start}
}

func (c *balanceCaller) charge(cost int64) balance.Result {
	c.t.Helper()
	res, err := c.s.Charge(context.Background(), balance.Request{Scope: c.scope, Caller: c.who, Policy: c.policy, Cost: cost, Now: c.now})
	require.NoError(c.t, err)
	return res
}

func testDecayVector(t *testing.T, s balance.Store) {
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{
		{0, 15000}, {time.Second, 14531}, {2 * time.Second, 14077}, {10 * time.Second, 10919},
		{32 * time.Second, 5430}, {64 * time.Second, 1965}, {128 * time.Second, 257}, {129 * time.Second, 0},
	} {
		c := newBalanceCaller(t, s, noThresholds)
		res := c.charge(480000)
		require.Equal(t, int64(15000), res.Balance)
		require.Zero(t, res.Before)
		c.now = start.Add(tc.at)
		res = c.charge(0)
		assert.Equal(t, tc.want, res.Before, "balance %s after a charge of 480000", tc.at)
		assert.Equal(t, tc.want, res.Balance, "a charge of 0 adds nothing")
	}
}

func testFractionalSeconds(t *testing.T, s balance.Store) {
	// Charges 0.6 s apart: the sum steps at 1 s and 2 s, keeping the
	// remainder, whatever the store's clock resolution.
	c := newBalanceCaller(t, s, noThresholds)
	c.charge(480000)
	var got []int64
	for range 4 {
		c.now = c.now.Add(600 * time.Millisecond)
		got = append(got, c.charge(0).Before)
	}
	assert.Equal(t, []int64{15000, 14531, 14531, 14077}, got)
}

func testThresholds(t *testing.T, s balance.Store) {
	p := rippled
	c := newBalanceCaller(t, s, p)
	res := c.charge(4999*32 + 31)
	assert.Equal(t, balance.Result{Balance: 4999}, res, "just below the warning threshold")
	res = c.charge(1)
	assert.Equal(t, balance.Result{Before: 4999, Balance: 5000 + 2000/32, Warned: true, WarnCharged: true}, res,
		"at the warning threshold (inclusive): warned, and the warning costs 2000")

	// Without the warning's cost, to reach the drop threshold exactly.
	quiet := p
	quiet.Warn = core.MaxLimit
	c = newBalanceCaller(t, s, quiet)
	res = c.charge(15000*32 - 1)
	assert.Equal(t, balance.Result{Balance: 14999}, res)
	res = c.charge(1)
	assert.Equal(t, balance.Result{Before: 14999, Balance: 15000}, res, "the request that reaches the threshold is served")
	res = c.charge(20)
	assert.Equal(t, balance.Result{Before: 15000, Balance: (15000*32 + 3000) / 32, Dropped: true}, res,
		"at the drop threshold (inclusive): refused, charged 3000 instead of 20")
}

func testWarningOncePerSecond(t *testing.T, s balance.Store) {
	p := rippled
	c := newBalanceCaller(t, s, p)
	res := c.charge(6000 * 32)
	require.True(t, res.Warned)
	require.True(t, res.WarnCharged)
	sum := int64(6000*32 + 2000)
	for _, dt := range []time.Duration{0, 300 * time.Millisecond, 999 * time.Millisecond} {
		c.now = start.Add(dt)
		res = c.charge(20)
		sum += 20
		assert.False(t, res.Warned, "at %s: within a second of the last warning", dt)
		assert.False(t, res.WarnCharged, "at %s", dt)
		assert.Equal(t, sum/32, res.Balance, "at %s", dt)
	}
	c.now = start.Add(time.Second)
	res = c.charge(20)
	assert.True(t, res.Warned, "a second after the last warning")
	assert.True(t, res.WarnCharged)
	sum -= (sum + 31) / 32
	assert.Equal(t, (sum+20+2000)/32, res.Balance)

	// WarnEvery is the interval: 2.5 s, then every request.
	for _, tc := range []struct {
		every time.Duration
		want  []bool // warned at 0.1, 1.1, 2.1, 3.1, 4.1 and 5.1 s, after a warning at 0
	}{
		{every: 2500 * time.Millisecond, want: []bool{false, false, false, true, false, false}},
		{every: 0, want: []bool{true, true, true, true, true, true}},
	} {
		p.WarnEvery = tc.every
		c = newBalanceCaller(t, s, p)
		c.charge(8000 * 32)
		var got []bool
		for i := range 6 {
			c.now = start.Add(time.Duration(i)*time.Second + 100*time.Millisecond)
			got = append(got, c.charge(20).Warned)
		}
		assert.Equal(t, tc.want, got, "WarnEvery %s", tc.every)
	}
}

func testWarningNeverDrops(t *testing.T, s balance.Store) {
	// A caller just below the drop threshold is warned, and the warning is
	// charged only up to the threshold: its next request is served.
	p := rippled
	p.Warn = 14995
	c := newBalanceCaller(t, s, p)
	require.False(t, c.charge(14994*32).Warned)
	res := c.charge(32)
	assert.Equal(t, balance.Result{Before: 14994, Balance: 14999, Warned: true, WarnCharged: true}, res)
	res = c.charge(0)
	assert.False(t, res.Dropped, "not dropped by a warning")
	assert.Equal(t, balance.Result{Before: 14999, Balance: 14999}, res)
	// A request that reaches the threshold by its own cost is served, and
	// the next is refused.
	res = c.charge(20)
	assert.Equal(t, balance.Result{Before: 14999, Balance: 15000}, res)
	assert.True(t, c.charge(0).Dropped)
}

func testDropAndRecovery(t *testing.T, s balance.Store) {
	p := rippled
	c := newBalanceCaller(t, s, p)
	c.charge(16000 * 32)
	// Hammering keeps the caller out: every refused attempt costs 3000.
	for i := range 20 {
		c.now = start.Add(time.Duration(i) * 100 * time.Millisecond)
		res := c.charge(20)
		require.True(t, res.Dropped, "attempt %d", i)
	}
	// Silent, the balance decays below 15000 and the caller is served.
	res := c.charge(0)
	require.True(t, res.Dropped)
	sum := res.Balance*32 + 31 // an upper bound of the sum
	wait := 0
	for sum/32 >= 15000 {
		sum -= (sum + 31) / 32
		wait++
	}
	c.now = c.now.Add(time.Duration(wait+1) * time.Second)
	res = c.charge(20)
	assert.False(t, res.Dropped, "after %d s of silence: balance %d", wait+1, res.Before)
	assert.Less(t, res.Before, int64(15000))
	assert.True(t, res.Warned)
}

func testOnceASecondGetsBackIn(t *testing.T, s balance.Store) {
	// Low thresholds with the costs scaled to them, as balance.New gives
	// them (DropCost 400 at Drop 2000): a caller dropped at a balance of
	// 2100 and refused once a second falls below the threshold and is
	// served again.
	p := rippled
	p.Warn, p.WarnCost, p.Drop, p.DropCost = 1000, 400, 2000, 400
	c := newBalanceCaller(t, s, p)
	c.charge(2100 * 32)
	served := -1
	for i := range 10 {
		if !c.charge(20).Dropped {
			served = i
			break
		}
		c.now = c.now.Add(time.Second)
	}
	assert.Equal(t, 2, served, "refused at 0 and 1 s, served at 2 s")

	// rippled's 3000 at that threshold keeps the same caller out: the
	// figure balance.New refuses.
	p.DropCost = 3000
	c = newBalanceCaller(t, s, p)
	c.charge(2100 * 32)
	for i := range 30 {
		require.True(t, c.charge(20).Dropped, "at %d s", i)
		c.now = c.now.Add(time.Second)
	}
}

func testSaturation(t *testing.T, s balance.Store) {
	// The largest cost saturates the sum: the caller's balance never wraps
	// to a credit, and it is refused from then on.
	const maxInt64 = 1<<63 - 1
	c := newBalanceCaller(t, s, rippled)
	c.charge(3000)
	res := c.charge(maxInt64)
	assert.False(t, res.Dropped, "the request is served: the caller was below the threshold")
	assert.Equal(t, int64(1<<53)/32, res.Balance, "saturated, not wrapped")
	for range 3 {
		res = c.charge(maxInt64)
		assert.True(t, res.Dropped)
		assert.Equal(t, int64(1<<53)/32, res.Balance)
	}
	c.now = c.now.Add(time.Minute)
	res = c.charge(20)
	assert.True(t, res.Dropped, "still out a minute later")
	assert.Positive(t, res.Before)
}

func testBalancesApart(t *testing.T, s balance.Store) {
	c := newBalanceCaller(t, s, noThresholds)
	c.charge(32 * 100)
	others := []*balanceCaller{
		{t: t, s: s, scope: c.scope, who: anon("192.0.2.2"), policy: noThresholds, now: start},
		{t: t, s: s, scope: c.scope, who: core.UserCaller("192.0.2.1"), policy: noThresholds, now: start},
		{t: t, s: s, scope: c.scope + "x", who: c.who, policy: noThresholds, now: start},
		{t: t, s: s, scope: c.scope, who: anon("2001:db8::1"), policy: noThresholds, now: start},
		{t: t, s: s, scope: c.scope, who: core.Caller{}, policy: noThresholds, now: start}, // unknown address
		{t: t, s: s, scope: c.scope, who: anon("0.0.0.0"), policy: noThresholds, now: start},
		{t: t, s: s, scope: c.scope, who: anon("255.255.255.255"), policy: noThresholds, now: start},
		{t: t, s: s, scope: c.scope, who: core.NetworkCaller(netip.MustParsePrefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128")), policy: noThresholds, now: start},
	}
	for i, o := range others {
		assert.Equal(t, int64(i+1), o.charge(32*int64(i+1)).Balance, "caller %d has a balance of its own", i)
	}
	assert.Equal(t, int64(100), c.charge(0).Balance)
}

func testBalanceClockBack(t *testing.T, s balance.Store) {
	c := newBalanceCaller(t, s, noThresholds)
	c.now = start.Add(time.Minute)
	c.charge(480000)
	c.now = start
	assert.Equal(t, int64(15000), c.charge(0).Before, "a clock that steps back stands still")
	c.now = start.Add(time.Minute + time.Second)
	assert.Equal(t, int64(14531), c.charge(0).Before)
}

func testBalanceConcurrency(t *testing.T, s balance.Store) {
	const n = 200
	c := newBalanceCaller(t, s, noThresholds)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-gate
			_, err := s.Charge(context.Background(), balance.Request{Scope: c.scope, Caller: c.who, Policy: noThresholds, Cost: 32, Now: start})
			assert.NoError(t, err)
		})
	}
	close(gate)
	wg.Wait()
	assert.Equal(t, int64(n), c.charge(0).Balance, "%d concurrent charges of 32 add exactly %d", n, n)
}

func testResetBalance(t *testing.T, s balance.Store) {
	r := s
	p := noThresholds
	p.Drop = 15000
	dropped := newBalanceCaller(t, s, p)
	other := *dropped
	other.who = anon("192.0.2.2")
	user := *dropped
	user.who = core.UserCaller("192.0.2.1")
	reset := func(c *balanceCaller) {
		t.Helper()
		require.NoError(t, r.ResetBalance(context.Background(), balance.Request{Scope: c.scope, Caller: c.who, Policy: c.policy, Now: c.now}))
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
					_, err := s.Charge(ctx, balance.Request{Scope: c.scope, Caller: c.who, Policy: c.policy, Cost: 32, Now: c.now})
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 25 {
			assert.NoError(t, r.ResetBalance(ctx, balance.Request{Scope: dropped.scope, Caller: dropped.who, Policy: dropped.policy, Now: dropped.now}))
		}
	})
	wg.Wait()
	assert.Equal(t, int64(100), busy.charge(0).Balance, "100 charges of 32 over a 32 s window")
	reset(dropped)
	assert.Zero(t, dropped.charge(0).Balance)
}
