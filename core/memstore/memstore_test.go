package memstore_test

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
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
	return core.Caller{Network: netip.PrefixFrom(a, 32)}
}

func take(t testing.TB, s *memstore.Store, c core.Caller, now time.Time) core.Result {
	res, err := s.Take(context.Background(), core.Request{Scope: "api", Caller: c, Limits: twoLimits, Cost: 1, Now: now})
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
		take(t, s, core.Caller{User: "user" + string(rune('a'+i))}, storetest.Start)
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
			callers := make([]core.Caller, bc.callers)
			for i := range callers {
				callers[i] = nthCaller(i)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					res, err := s.Take(ctx, core.Request{Scope: "api", Caller: callers[i%len(callers)], Limits: limits, Cost: 1, Now: now})
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
