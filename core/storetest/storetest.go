package storetest

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

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// Start is the time the suite's fake clocks start at: a Monday, midnight
// UTC, so that buckets of every period used line up with it.
var Start = time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)

// runID keeps the scopes of two runs of the suite apart, for stores that
// outlive a test (a Redis server): the suite never flushes a store.
var runID = rand.Uint64()

var scopeSeq atomic.Int64

// uniqueScope returns a scope name no other test of this process uses.
func uniqueScope(t *testing.T) string {
	return fmt.Sprintf("storetest-%x-%d", runID, scopeSeq.Add(1))
}

// Run runs the conformance suite against the stores newStore returns. It
// calls newStore once per subtest; the store may be shared with other tests,
// since every subtest uses scopes of its own. Every case runs on counters
// the store was bound to, as a Limiter binds it: the counting, the
// give-back and the reset (one caller freed and no other, a caller without
// counts, limits of another width, resets concurrent with requests).
func Run(t *testing.T, newStore func(t *testing.T) core.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s core.Store)
	}{
		{"OneWindow", testOneWindow},
		{"TwoWindows", testTwoWindows},
		{"Cost", testCost},
		{"LargestLimitAndCost", testLargest},
		{"AllOrNothing", testAllOrNothing},
		{"RetryAfterIsHonestAndExact", testRetryAfter},
		{"NeverMoreThanLimitInAnyInterval", testStrict},
		{"RemainingAndReset", testRemainingAndReset},
		{"CallersApart", testCallersApart},
		{"Expiry", testExpiry},
		{"ClockSteppingBack", testClockBack},
		{"TimesBeforeTheEpoch", testEpoch},
		{"Concurrency", testConcurrency},
		{"PacingBelowTheRateIsNeverRefused", testPacing},
		{"BurstAndObeyGetsWhatAnExactLogGives", testBurstAndObey},
		{"BurstsAtBucketAndWindowEdges", testEdges},
		{"NeverMoreThanLimitAtAnyOffset", testStrictOffsets},
		{"ConservativeAgainstAnExactLog", testConservative},
		{"MixedCosts", testMixedCosts},
		{"ClockStepForward", testClockStepForward},
		{"ClientHangsUp", testClientHangsUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}

	// Reset (reset.go) and give-back (giveback.go).
	runReset(t, newStore)
	t.Run("GiveBack", func(t *testing.T) { runGiveBack(t, newStore) })
	t.Run("PlansShareOneCount", func(t *testing.T) {
		t.Parallel()
		testPlans(t, newStore(t))
	})
}

// caller is a test helper that sends requests for one caller and scope.
type caller struct {
	t      *testing.T
	s      core.Store
	scope  string
	who    core.Caller
	limits []core.Rate
	now    time.Time
}

func newCaller(t *testing.T, s core.Store, limits ...core.Rate) *caller {
	return &caller{t: t, s: s, scope: uniqueScope(t), who: anon("192.0.2.1"), limits: limits, now: Start}
}

func anon(addr string) core.Caller {
	a := netip.MustParseAddr(addr).Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	return core.NetworkCaller(netip.PrefixFrom(a, bits))
}

// host is the caller of one IPv6 address alone, as with
// Config.IPv6Bits 128.
func host(addr string) core.Caller {
	return core.NetworkCaller(netip.PrefixFrom(netip.MustParseAddr(addr), 128))
}

func (c *caller) take(cost int64) core.Result {
	c.t.Helper()
	res, err := storecall.Take(context.Background(), c.s, storecall.Request{Scope: c.scope, Caller: c.who, Limits: c.limits, Cost: cost, Now: c.now})
	require.NoError(c.t, err)
	for i := range c.limits {
		require.Equal(c.t, c.limits[i], res.Limits[i].Rate, "Result.Limits[%d].Rate", i)
	}
	return res
}

func (c *caller) allow(n int) {
	c.t.Helper()
	for i := range n {
		res := c.take(1)
		require.True(c.t, res.Allowed, "request %d of %d at %s should be allowed", i+1, n, c.now.Sub(Start))
	}
}

func retryAfter(r core.Result) time.Duration {
	var d time.Duration
	for _, l := range r.Limits {
		d = max(d, l.RetryAfter)
	}
	return d
}

func testOneWindow(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(5))
	for i := range 5 {
		res := c.take(1)
		require.True(t, res.Allowed)
		assert.Equal(t, int64(4-i), res.Limits[0].Remaining)
		assert.Zero(t, res.Limits[0].RetryAfter)
	}
	res := c.take(1)
	assert.False(t, res.Allowed, "the 6th request in a minute of 5/min")
	assert.Zero(t, res.Limits[0].Remaining)
	// All five were made at one instant: they leave the window together,
	// one period later.
	assert.Equal(t, time.Minute, res.Limits[0].RetryAfter)
	c.now = Start.Add(time.Minute - time.Microsecond)
	assert.False(t, c.take(1).Allowed, "1µs before the period is over")
	c.now = Start.Add(time.Minute)
	c.allow(5)
	assert.False(t, c.take(1).Allowed)
}

func testTwoWindows(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(3), core.Rate{Limit: 5, Period: time.Hour})
	c.allow(3)
	res := c.take(1)
	require.False(t, res.Allowed)
	assert.Equal(t, time.Minute, res.Limits[0].RetryAfter, "minute limit")
	assert.Zero(t, res.Limits[1].RetryAfter, "hour limit has room")
	assert.Equal(t, time.Minute, retryAfter(res))
	assert.Equal(t, int64(2), res.Limits[1].Remaining)

	c.now = c.now.Add(time.Minute)
	c.allow(2)
	res = c.take(1)
	require.False(t, res.Allowed)
	assert.Equal(t, int64(1), res.Limits[0].Remaining)
	assert.Zero(t, res.Limits[0].RetryAfter)
	// All five lie in the hour's first 3-minute bucket, the last made at
	// 1 minute: they leave the window together at 61 minutes.
	assert.Equal(t, time.Hour, res.Limits[1].RetryAfter)
	assert.Equal(t, time.Hour, res.Limits[1].Reset)
	c.now = Start.Add(time.Hour + time.Minute)
	c.allow(3)
}

func testCost(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(10))
	for i := range 3 {
		res := c.take(3)
		require.True(t, res.Allowed)
		assert.Equal(t, int64(10-3*(i+1)), res.Limits[0].Remaining)
	}
	res := c.take(3)
	assert.False(t, res.Allowed, "cost 3 with 1 remaining")
	assert.Equal(t, int64(1), res.Limits[0].Remaining)
	res = c.take(1)
	assert.True(t, res.Allowed, "cost 1 with 1 remaining")
	assert.Zero(t, res.Limits[0].Remaining)
	res = c.take(10)
	assert.False(t, res.Allowed)
	c.now = c.now.Add(res.Limits[0].RetryAfter)
	assert.True(t, c.take(10).Allowed, "a cost equal to the limit fits an empty window")
}

// testLargest holds the bounds of what a store counts: Bind refuses a
// limit above core.MaxLimit (no Limiter binds one); at core.MaxLimit a
// cost of the whole limit fits an empty window, and a cost above
// core.MaxLimit is refused, not an error, and counts nothing.
func testLargest(t *testing.T, s core.Store) {
	_, err := s.Bind(uniqueScope(t), core.Anonymous, []core.Rate{{Limit: 1 << 40, Period: time.Minute}})
	assert.Error(t, err, "a limit above core.MaxLimit")
	_, err = s.Bind(uniqueScope(t), core.Anonymous, []core.Rate{core.PerMinute(10), {Limit: core.MaxLimit + 1, Period: time.Hour}})
	assert.Error(t, err, "a second limit above core.MaxLimit")

	c := newCaller(t, s, core.PerMinute(core.MaxLimit), core.PerDay(core.MaxLimit))
	for _, cost := range []int64{1 << 33, core.MaxLimit + 1, 1 << 62} {
		res := c.take(cost)
		assert.False(t, res.Allowed, "cost %d", cost)
		assert.Equal(t, int64(core.MaxLimit), res.Limits[0].Remaining, "cost %d counts nothing", cost)
	}
	res := c.take(core.MaxLimit - 1)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(1), res.Limits[0].Remaining)
	res = c.take(1)
	require.True(t, res.Allowed)
	assert.Zero(t, res.Limits[1].Remaining)
	assert.False(t, c.take(1).Allowed)
}

func testAllOrNothing(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(10), core.Rate{Limit: 4, Period: time.Hour})
	res := c.take(3)
	require.True(t, res.Allowed)
	res = c.take(2)
	require.False(t, res.Allowed, "the hour limit has 1 left")
	assert.Equal(t, int64(7), res.Limits[0].Remaining, "a denied request takes nothing from the minute limit")
	assert.Equal(t, int64(1), res.Limits[1].Remaining)
	res = c.take(1)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(6), res.Limits[0].Remaining)
	assert.Zero(t, res.Limits[1].Remaining)
}

func testRetryAfter(t *testing.T, s core.Store) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newCaller(t, s, core.Rate{Limit: 7, Period: 10 * time.Second}, core.PerMinute(20))
	denied := 0
	for range 400 {
		c.now = c.now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
		cost := int64(1 + rng.IntN(3))
		res := c.take(cost)
		if res.Allowed {
			continue
		}
		denied++
		wait := retryAfter(res)
		require.Positive(t, wait)
		for _, l := range res.Limits[:len(c.limits)] {
			require.LessOrEqual(t, l.RetryAfter, l.Rate.Period, "a wait is at most the period")
			require.LessOrEqual(t, l.Reset, l.Rate.Period)
		}
		if wait > time.Millisecond {
			c.now = c.now.Add(wait - time.Millisecond)
			require.False(t, c.take(cost).Allowed, "retry-after %s is the shortest wait: 1ms earlier is too early", wait)
			c.now = c.now.Add(time.Millisecond)
		} else {
			c.now = c.now.Add(wait)
		}
		require.True(t, c.take(cost).Allowed, "waiting retry-after %s is enough", wait)
	}
	assert.Greater(t, denied, 50, "the scenario should exercise denials")
}

func testStrict(t *testing.T, s core.Store) {
	strictFrom(t, s, Start)
}

// strictFrom sends bursts and pauses from start and checks, with an exact
// log of what was admitted, that no interval of a limit's period holds more
// than its limit.
func strictFrom(t *testing.T, s core.Store, start time.Time) {
	rng := rand.New(rand.NewPCG(3, uint64(start.UnixNano())))
	limits := []core.Rate{{Limit: 10, Period: 4 * time.Second}, {Limit: 25, Period: 20 * time.Second}}
	c := newCaller(t, s, limits...)
	c.now = start
	type admitted struct {
		at   time.Time
		cost int64
	}
	var log []admitted
	for range 3000 {
		// Bursts and pauses: mostly quick requests, now and then a gap.
		step := time.Duration(rng.IntN(200)) * time.Millisecond
		if rng.IntN(20) == 0 {
			step = time.Duration(rng.IntN(8000)) * time.Millisecond
		}
		c.now = c.now.Add(step)
		cost := int64(1 + rng.IntN(2))
		if c.take(cost).Allowed {
			log = append(log, admitted{c.now, cost})
		}
	}
	require.Greater(t, len(log), 200)
	for _, r := range limits {
		for i, a := range log {
			var sum int64
			for j := i; j >= 0 && a.at.Sub(log[j].at) < r.Period; j-- {
				sum += log[j].cost
			}
			require.LessOrEqual(t, sum, r.Limit, "units admitted in the %s ending at %s", r.Period, a.at.Sub(Start))
		}
	}
}

func testRemainingAndReset(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(10), core.PerDay(100))
	c.now = Start.Add(20 * time.Second)
	res := c.take(2)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(8), res.Limits[0].Remaining)
	assert.Equal(t, int64(98), res.Limits[1].Remaining)
	// The window holds nothing once the last request is a period old.
	assert.Equal(t, time.Minute, res.Limits[0].Reset)
	assert.Equal(t, 24*time.Hour, res.Limits[1].Reset)
	c.now = c.now.Add(40 * time.Second)
	res = c.take(1)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(7), res.Limits[0].Remaining)
	assert.Equal(t, time.Minute, res.Limits[0].Reset, "a new request moves the reset")
	c.now = c.now.Add(10 * time.Second)
	res = c.take(8)
	require.False(t, res.Allowed)
	assert.Equal(t, int64(7), res.Limits[0].Remaining)
	assert.Equal(t, 50*time.Second, res.Limits[0].Reset, "a refused request does not")
	assert.Equal(t, 24*time.Hour-10*time.Second, res.Limits[1].Reset)
	for i := 2; i < core.MaxLimits; i++ {
		assert.Zero(t, res.Limits[i], "unused Result.Limits[%d]", i)
	}
}

func testCallersApart(t *testing.T, s core.Store) {
	scope := uniqueScope(t)
	other := uniqueScope(t)
	limits := []core.Rate{core.PerMinute(1)}
	callers := []core.Caller{
		{},
		anon("192.0.2.1"),
		anon("192.0.2.2"),
		anon("2001:db8:1:2::1"),
		anon("2001:db8:1:3::1"),
		anon("::ffff:192.0.2.3"),
		core.NetworkCaller(netip.MustParsePrefix("::ffff:0:0/95")), // a mapped network too short to unmap
		// The networks next to the unknown caller's key, whatever it
		// is: every IPv4 address has a caller, and with IPv6Bits 128
		// every IPv6 address does.
		anon("0.0.0.0"),
		anon("255.255.255.255"),
		host("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
		host("::"),
		host("::ffff:0:0:0"),
		core.UserCaller("192.0.2.1"),
		core.UserCaller("alice"),
		core.UserCaller("Alice"),
		core.UserCaller("alice "),
		core.UserCaller("a|b"),
		core.UserCaller("a"),
		core.UserCaller("{alice}"),
		core.UserCaller("{alice"),
		core.UserCaller("a:b:c"),
		core.UserCaller("\x00"),
		core.UserCaller("ünïcode ✓"),
		core.UserCaller(string(make([]byte, 300))),
	}
	for _, sc := range []string{scope, other} {
		for _, who := range callers {
			res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: sc, Caller: who, Limits: limits, Cost: 1, Now: Start})
			require.NoError(t, err)
			assert.True(t, res.Allowed, "the first request of %q (%v) in %s shares no count", who.String(), who.Kind(), sc)
		}
	}
	for _, who := range callers {
		res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: scope, Caller: who, Limits: limits, Cost: 1, Now: Start})
		require.NoError(t, err)
		assert.False(t, res.Allowed, "the second request of %q is counted", who.String())
	}
}

func testExpiry(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(10), core.Rate{Limit: 20, Period: time.Hour})
	c.now = Start.Add(7 * time.Minute)
	c.allow(10)
	res := c.take(1)
	require.False(t, res.Allowed)
	// Quiet for the longest window since the last admitted request:
	// everything is forgotten.
	c.now = c.now.Add(time.Hour)
	res = c.take(1)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(9), res.Limits[0].Remaining)
	assert.Equal(t, int64(19), res.Limits[1].Remaining)
}

func testClockBack(t *testing.T, s core.Store) {
	c := newCaller(t, s, core.PerMinute(3))
	c.now = Start.Add(10 * time.Minute)
	c.allow(3)
	c.now = Start.Add(10*time.Minute - 500*time.Millisecond)
	res := c.take(1)
	assert.False(t, res.Allowed, "a clock that steps back a little stands still")
	assert.Equal(t, time.Minute, res.Limits[0].RetryAfter)
	c.now = Start.Add(8 * time.Minute)
	res = c.take(1)
	assert.False(t, res.Allowed, "a clock that steps back frees nothing")
	assert.Equal(t, time.Minute, res.Limits[0].RetryAfter, "the counts are taken as made at the new time: the caller waits a period, not the step")
	c.now = Start.Add(9 * time.Minute)
	c.allow(3)
}

func testEpoch(t *testing.T, s core.Store) {
	// A zero time.Time (a clock never set) and the epoch itself are
	// counted at the epoch, whose window reaches back before it.
	c := newCaller(t, s, core.PerMinute(2))
	c.now = time.Time{}
	c.allow(1)
	c.now = time.Unix(0, 0)
	c.allow(1)
	res := c.take(1)
	require.False(t, res.Allowed)
	assert.Equal(t, time.Minute, res.Limits[0].RetryAfter)
}

func testConcurrency(t *testing.T, s core.Store) {
	const limit, callers = 25, 200
	scope := uniqueScope(t)
	who := anon("198.51.100.7")
	limits := []core.Rate{core.PerMinute(limit), core.PerDay(1000)}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			<-start
			res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: scope, Caller: who, Limits: limits, Cost: 1, Now: Start})
			if err != nil {
				errs <- err
				return
			}
			if res.Allowed {
				allowed.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(limit), allowed.Load(), "exactly the limit of %d concurrent requests is allowed", callers)
}
