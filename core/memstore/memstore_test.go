package memstore_test

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/balance/balancetest"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) core.Store {
		s := memstore.New(memstore.Config{})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

var twoLimits = []core.Rate{core.PerMinute(60), core.PerDay(1000)}

// nthCaller returns a distinct anonymous caller for each i.
func nthCaller(i int) core.Caller {
	a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	return core.NetworkCaller(netip.PrefixFrom(a, 32))
}

func take(t testing.TB, s *memstore.Store, c core.Caller, now time.Time) core.Result {
	res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: "api", Caller: c, Limits: twoLimits, Cost: 1, Now: now})
	require.NoError(t, err)
	return res
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func TestIdleEntriesExpireAndMemoryReturns(t *testing.T) {
	s := memstore.New(memstore.Config{SweepInterval: -1})
	defer s.Close()
	const callers = 200_000
	before := heapInUse()
	for i := range callers {
		take(t, s, nthCaller(i), storetest.Start)
	}
	for i := range 10 {
		take(t, s, core.UserCaller("user"+string(rune('a'+i))), storetest.Start)
	}
	require.Equal(t, callers+10, s.Len())
	peak := heapInUse()
	require.Greater(t, peak, before)

	// Still inside the day window: nothing may be forgotten.
	assert.Zero(t, s.Sweep(storetest.Start.Add(24*time.Hour-time.Millisecond)))
	assert.Equal(t, callers+10, s.Len())

	// A day after the last request: everything is.
	assert.Equal(t, callers+10, s.Sweep(storetest.Start.Add(24*time.Hour)))
	assert.Zero(t, s.Len())
	after := heapInUse()
	grown := peak - before
	assert.Less(t, float64(after)-float64(before), 0.10*float64(grown),
		"memory back under 10%% of the peak's growth: before %d, peak %d, after %d", before, peak, after)
}

func TestMaxEntriesBoundsMemory(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{MaxEntries: 640, SweepInterval: -1})
	defer s.Close()
	for i := range 10_000 {
		take(t, s, nthCaller(i), storetest.Start)
	}
	assert.LessOrEqual(t, s.Len(), 640)
	assert.Positive(t, s.Evictions())

	// Later, a new caller at a full shard makes room by dropping expired
	// entries, not by evicting a live one.
	evicted, full := s.Evictions(), s.Len()
	take(t, s, nthCaller(100_000), storetest.Start.Add(31*time.Hour))
	assert.Equal(t, evicted, s.Evictions(), "expired entries were dropped instead")
	assert.Less(t, s.Len(), full)
}

func TestBackgroundSweep(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	s := memstore.New(memstore.Config{SweepInterval: time.Millisecond, Now: clock.Now})
	take(t, s, nthCaller(1), storetest.Start)
	clock.Advance(31 * time.Hour)
	require.Eventually(t, func() bool { return s.Len() == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice is safe")
	assert.False(t, s.Shared())
}

// TestSweepFollowsTheRequestsClock runs the background sweep beside
// requests on a fake clock, years before the system clock: the sweep drops
// what has expired on the requests' clock and nothing else. Before issue
// 18 it read time.Now, found every entry years old, and set a refused
// caller free.
func TestSweepFollowsTheRequestsClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Start)
	s := memstore.New(memstore.Config{SweepInterval: time.Millisecond})
	t.Cleanup(func() { _ = s.Close() })
	takeIn := func(scope string, limit core.Rate, c core.Caller) core.Result {
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: scope, Caller: c, Limits: []core.Rate{limit}, Cost: 1, Now: clock.Now()})
		require.NoError(t, err)
		return res
	}
	perHour := core.Rate{Limit: 1, Period: time.Hour}
	blocked, gone, later := nthCaller(1), nthCaller(2), nthCaller(3)
	require.True(t, takeIn("hour", perHour, blocked).Allowed)
	require.False(t, takeIn("hour", perHour, blocked).Allowed, "blocked for an hour")
	require.True(t, takeIn("minute", core.PerMinute(1), gone).Allowed)

	clock.Advance(2 * time.Minute)
	require.True(t, takeIn("minute", core.PerMinute(1), later).Allowed)
	// gone's window is empty at the latest request's time: the sweep
	// drops it, and keeps the others.
	require.Eventually(t, func() bool { return s.Len() == 2 }, 5*time.Second, time.Millisecond, "the sweep drops what expired on the requests' clock")
	res := takeIn("hour", perHour, blocked)
	assert.False(t, res.Allowed, "the blocked caller stays blocked")
	assert.Equal(t, 58*time.Minute, res.Limits[0].RetryAfter)
}

// BenchmarkTake measures a decision with a minute and a day limit on a
// bound counter, as a core.Limiter decides.
func BenchmarkTake(b *testing.B) {
	now := storetest.Start
	for _, bc := range []struct {
		name    string
		callers int
	}{{"hot", 1}, {"callers=10000", 10_000}} {
		b.Run(bc.name, func(b *testing.B) {
			s := memstore.New(memstore.Config{SweepInterval: -1})
			defer s.Close()
			limits := []core.Rate{{Limit: core.MaxLimit, Period: time.Minute}, {Limit: core.MaxLimit, Period: 24 * time.Hour}}
			c, err := s.Bind("api", core.Anonymous, limits)
			require.NoError(b, err)
			keys := make([]core.Key, bc.callers)
			for i := range keys {
				keys[i] = nthCaller(i).Key()
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					res, err := c.Take(ctx, keys[i%len(keys)], 1, now)
					if err != nil || !res.Allowed {
						b.Fatal("denied", err)
					}
				}
			})
		})
	}
}

// BenchmarkMemoryPerCaller reports the heap bytes one tracked caller costs
// with a minute and a day limit.
func BenchmarkMemoryPerCaller(b *testing.B) {
	const callers = 1_000_000
	for range b.N {
		s := memstore.New(memstore.Config{SweepInterval: -1, MaxEntries: 2 * callers})
		before := heapInUse()
		for i := range callers {
			take(b, s, nthCaller(i), storetest.Start)
		}
		peak := heapInUse()
		s.Sweep(storetest.Start.Add(31 * time.Hour))
		after := heapInUse()
		b.ReportMetric(float64(peak-before)/callers, "B/caller")
		b.ReportMetric(100*(float64(after)-float64(before))/float64(peak-before), "%held-after-idle")
		runtime.KeepAlive(s)
		s.Close()
	}
}

func TestBalanceConformance(t *testing.T) {
	t.Parallel()
	balancetest.Run(t, func(t *testing.T) balance.Store {
		s := memstore.New(memstore.Config{})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// Two counters bound to the same scope, kind and limits share their
// counts; another scope, kind or set of periods keeps its own. Bind refuses
// limits no counter can keep.
func TestBindShares(t *testing.T) {
	s := memstore.New(memstore.Config{SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	limits := []core.Rate{core.PerMinute(2), core.PerDay(10)}
	ip := nthCaller(1)
	take := func(scope string, caller core.Caller, limits []core.Rate) bool {
		t.Helper()
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: scope, Caller: caller, Limits: limits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		return res.Allowed
	}
	assert.True(t, take("api", ip, limits))
	assert.True(t, take("api", ip, limits))
	assert.False(t, take("api", ip, limits), "a second counter of the same binding sees the count of the first")

	assert.True(t, take("other", ip, limits), "another scope")
	assert.True(t, take("api", core.UserCaller("ann"), limits), "a signed-in caller")
	assert.True(t, take("api", ip, limits[:1]), "other periods")
	v6 := core.NetworkCaller(netip.MustParsePrefix("2001:db8::/64"))
	assert.True(t, take("api", v6, limits))
	assert.True(t, take("api", v6, limits))
	assert.False(t, take("api", v6, limits), "IPv6 callers share their count too")

	for _, bad := range [][]core.Rate{nil, {core.PerMinute(1), core.PerMinute(2), core.PerMinute(3), core.PerMinute(4), core.PerMinute(5)}, {{Limit: 0, Period: time.Minute}}} {
		_, err := s.Bind("api", core.Anonymous, bad)
		assert.Error(t, err, "%v", bad)
	}
}

// BenchmarkNewCallersPastMaxEntries decides one request of a new caller at
// a time, on a clock that moves 10 ms a request (a replayed access log),
// in a store full of callers whose minute and day windows are not over:
// each new caller takes an entry from the others. It measures what making
// room costs when no entry has expired.
func BenchmarkNewCallersPastMaxEntries(b *testing.B) {
	const bound = 20_000
	s := memstore.New(memstore.Config{MaxEntries: bound, SweepInterval: -1})
	defer s.Close()
	now := storetest.Start
	for i := range bound {
		take(b, s, nthCaller(i), now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now = now.Add(10 * time.Millisecond)
		take(b, s, nthCaller(bound+i%1_000_000), now)
	}
}

// TestFullStoreSweepsBeforeEvicting holds the rule of a full store: a new
// caller takes the room of expired entries of its shard, on the requests'
// clock, before evicting a live one; and a full store whose entries have
// not expired evicts. (A shard sweeps only once something in it can have
// expired, at most once a second.)
func TestFullStoreSweepsBeforeEvicting(t *testing.T) {
	const bound = 1000
	s := memstore.New(memstore.Config{MaxEntries: bound, SweepInterval: -1})
	defer s.Close()
	now := storetest.Start
	for i := range bound {
		take(t, s, nthCaller(i), now)
	}
	// An hour on, every window still holds the callers' requests: each
	// new caller evicts one.
	now = now.Add(time.Hour)
	for i := range 100 {
		take(t, s, nthCaller(bound+i), now.Add(time.Duration(i)*time.Second))
	}
	require.EqualValues(t, 100, s.Evictions())
	// Past the day window, the first bound callers' entries have expired:
	// new callers, a second apart, take their room. Only a caller whose
	// shard was swept already and holds no expired entry evicts a live one
	// (the sweep is of its shard, not of the store): 64 to 72 of 900 in
	// runs before the sweep skipped shards with nothing to find; 900 if
	// the store never swept.
	now = now.Add(25 * time.Hour)
	for i := range bound - 100 {
		take(t, s, nthCaller(2*bound+i), now.Add(time.Duration(i)*time.Second))
	}
	assert.LessOrEqual(t, s.Evictions()-100, int64(100), "expired entries swept, few evicted")
	assert.LessOrEqual(t, s.Len(), bound)
}

// TestGiveBackAfterEvictionGivesNothing holds that a caller whose entry was
// evicted starts afresh, and that a give-back of a request counted on the
// evicted entry takes nothing off the fresh one: at 3/min, one request
// before the eviction and three after are all a minute allows.
func TestGiveBackAfterEvictionGivesNothing(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{MaxEntries: 1, SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	limits := []core.Rate{core.PerMinute(3)}
	req := func(c core.Caller, now time.Time) storecall.Request {
		return storecall.Request{Scope: "api", Caller: c, Limits: limits, Cost: 1, Now: now}
	}
	alice, bob := nthCaller(1), nthCaller(2)
	now := storetest.Start

	first, err := storecall.Take(ctx, s, req(alice, now))
	require.NoError(t, err)
	require.True(t, first.Allowed)
	_, err = storecall.Take(ctx, s, req(bob, now)) // evicts alice
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Evictions())

	now = now.Add(time.Second) // the same bucket of the minute window
	served := 1
	for range 3 {
		res, err := storecall.Take(ctx, s, req(alice, now))
		require.NoError(t, err)
		if res.Allowed {
			served++
		}
	}
	require.NoError(t, storecall.GiveBack(ctx, s, req(alice, now), first.At))
	res, err := storecall.Take(ctx, s, req(alice, now))
	require.NoError(t, err)
	if res.Allowed {
		served++
	}
	assert.Equal(t, 4, served, "one request before the eviction, three after")
}
