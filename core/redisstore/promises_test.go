package redisstore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestSameAnswersAsMemstore sends one random schedule to memstore and to
// Redis, with and without the over-limit cache, on a server and a cluster:
// the Lua script and package window must give the same answers, and the
// cache only answers what Redis would (the same decision, Retry-After and
// Reset, a Remaining never above Redis's). The schedule mixes costs, limits
// with 16- and 32-bit counters, bursts, pauses and steps of the clock back.
func TestSameAnswersAsMemstore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
		cache  bool
	}{
		{name: "server", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }},
		{name: "server with cache", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }, cache: true},
		{name: "cluster with cache", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }, cache: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := redisstore.Config{Client: tc.client(t), CacheSize: -1}
			if tc.cache {
				cfg.CacheSize = 0
			}
			rs := newStore(t, cfg)
			ms := memstore.New(memstore.Config{SweepInterval: -1})
			t.Cleanup(func() { ms.Close() })
			rng := rand.New(rand.NewPCG(11, 12))
			limits := []core.Rate{{Limit: 7, Period: 10 * time.Second}, core.PerMinute(20), {Limit: 100_000, Period: time.Hour}}
			req := storecall.Request{Scope: "same", Caller: core.UserCaller("carol"), Limits: limits, Now: storetest.Start.Add(1234567 * time.Microsecond)}
			ctx := context.Background()
			denied, cached := 0, rs.Stats().CacheHits
			for i := range 2000 {
				req.Now = req.Now.Add(randomStep(rng))
				req.Cost = int64(1 + rng.IntN(4))
				want, err := storecall.Take(ctx, ms, req)
				require.NoError(t, err)
				got, err := storecall.Take(ctx, rs, req)
				require.NoError(t, err)
				require.Equal(t, want.Allowed, got.Allowed, "request %d of cost %d at %s", i, req.Cost, req.Now.Sub(storetest.Start))
				if !got.Allowed {
					denied++
				}
				for j := range limits {
					w, g := want.Limits[j], got.Limits[j]
					require.Equal(t, w.RetryAfter, g.RetryAfter, "request %d, %s: Retry-After", i, limits[j])
					require.Equal(t, w.Reset, g.Reset, "request %d, %s: Reset", i, limits[j])
					if tc.cache {
						require.LessOrEqual(t, g.Remaining, w.Remaining, "request %d, %s: Remaining", i, limits[j])
					} else {
						require.Equal(t, w.Remaining, g.Remaining, "request %d, %s: Remaining", i, limits[j])
					}
				}
			}
			assert.Greater(t, denied, 300)
			if tc.cache {
				assert.Positive(t, rs.Stats().CacheHits-cached, "the cache answered some")
			}
		})
	}
}

// randomStep returns the step of the clock before a request of a random
// schedule: none, a burst, a pause, or a step back that the script reads as
// the clock standing still or that moves the counts.
func randomStep(rng *rand.Rand) time.Duration {
	switch k := rng.IntN(40); {
	case k < 4:
		return 0
	case k == 4:
		return -time.Duration(rng.IntN(1_000_000)) * time.Microsecond // stands still
	case k == 5:
		return -time.Duration(1_000_001+rng.IntN(100_000_000)) * time.Microsecond // moves the counts
	case k < 9:
		return time.Duration(rng.IntN(40_000_000)) * time.Microsecond
	default:
		return time.Duration(rng.IntN(700_000)) * time.Microsecond
	}
}

// TestRollingDeployFromV010 runs one random schedule of one caller through
// two versions of the service sharing a Redis, as during a rolling deploy:
// v0.1.0's take script (testdata/take-v0.1.0.lua, one key a call) and this
// store, whose decisions share script calls with another caller's. Both
// read and write the same keys and values, so every decision, its
// remaining and its retry after, is the one memstore gives for the whole
// schedule, on a server and on a cluster.
func TestRollingDeployFromV010(t *testing.T) {
	t.Parallel()
	lua, err := os.ReadFile("testdata/take-v0.1.0.lua")
	require.NoError(t, err)
	old := redis.NewScript(string(lua))
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{name: "server", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }},
		{name: "cluster", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := tc.client(t)
			rs := newPaired(t, redisstore.Config{Client: client, CacheSize: -1, RequestClock: true})
			ms := memstore.New(memstore.Config{SweepInterval: -1})
			t.Cleanup(func() { ms.Close() })
			rng := rand.New(rand.NewPCG(21, 22))
			limits := []core.Rate{{Limit: 7, Period: 10 * time.Second}, core.PerMinute(20), {Limit: 100_000, Period: time.Hour}}
			req := storecall.Request{Scope: "rolling", Caller: core.UserCaller("dora"), Limits: limits, Now: storetest.Start.Add(7654321 * time.Microsecond)}
			ctx := context.Background()
			denied, byOld := 0, 0
			for i := range 1500 {
				req.Now = req.Now.Add(randomStep(rng))
				req.Cost = int64(1 + rng.IntN(4))
				want, err := storecall.Take(ctx, ms, req)
				require.NoError(t, err)
				var got core.Result
				if rng.IntN(2) == 0 {
					byOld++
					key, args := redisstore.TakeCommand(rs.Store, req)
					out, err := old.Run(ctx, client, []string{key}, args...).Int64Slice()
					require.NoError(t, err)
					require.Contains(t, []int{2 + len(limits), 2 + 3*len(limits)}, len(out), "v0.1.0's answer %v", out)
					got = redisstore.TakeResult(out, limits)
				} else {
					got, err = storecall.Take(ctx, rs, req)
					require.NoError(t, err)
				}
				require.Equal(t, want.Allowed, got.Allowed, "request %d of cost %d at %s", i, req.Cost, req.Now.Sub(storetest.Start))
				for j := range limits {
					require.Equal(t, want.Limits[j].RetryAfter, got.Limits[j].RetryAfter, "request %d, %s: Retry-After", i, limits[j])
					require.Equal(t, want.Limits[j].Remaining, got.Limits[j].Remaining, "request %d, %s: Remaining", i, limits[j])
				}
				if !got.Allowed {
					denied++
				}
			}
			assert.Greater(t, denied, 200)
			assert.Greater(t, byOld, 600)
		})
	}
}

// TestServerClock counts on the Redis server's clock, the default: the
// times in the requests do not matter, so a client whose clock jumps an
// hour ahead neither frees nor locks anything.
func TestServerClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range serverAndCluster {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServerClockStore(t, redisstore.Config{Client: tc.client(t)})
			req := storecall.Request{Scope: "server-clock", Caller: anon("192.0.2.50"), Limits: []core.Rate{core.PerMinute(3), core.PerDay(100)}, Cost: 1, Now: time.Now()}
			start := time.Now()
			for range 3 {
				res, err := storecall.Take(ctx, s, req)
				require.NoError(t, err)
				require.True(t, res.Allowed)
			}
			elapsed := time.Since(start)
			res, err := storecall.Take(ctx, s, req)
			require.NoError(t, err)
			require.False(t, res.Allowed)
			wait := res.Limits[0].RetryAfter
			assert.LessOrEqual(t, wait, time.Minute)
			assert.Greater(t, wait, time.Minute-elapsed-time.Second, "a burst waits a period of the server's clock")
			assert.Equal(t, int64(97), res.Limits[1].Remaining)

			// A client clock an hour ahead, and one a day behind: the
			// server's clock decides.
			for _, skew := range []time.Duration{time.Hour, -24 * time.Hour} {
				r := req
				r.Now = time.Now().Add(skew)
				res, err := storecall.Take(ctx, s, r)
				require.NoError(t, err)
				assert.False(t, res.Allowed, "a client clock %s off frees nothing", skew)
				assert.LessOrEqual(t, res.Limits[0].RetryAfter, wait, "and locks nothing longer")
			}
		})
	}
}

// TestCacheFailsOpenWithTheBreaker remembers a denial, then stops Redis:
// once the breaker is open the cache refuses no one, as the store does.
func TestCacheFailsOpenWithTheBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	s := newStore(t, redisstore.Config{Client: client, BreakerFailures: 1, Timeout: 200 * time.Millisecond, Now: clock.Now})
	req := storecall.Request{Scope: "open", Caller: anon("192.0.2.51"), Limits: []core.Rate{core.PerMinute(1)}, Cost: 1, Now: storetest.Start}
	res, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, 1, s.Stats().Cached)
	res, err = storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.False(t, res.Allowed, "answered from the cache")
	require.Equal(t, int64(1), s.Stats().CacheHits)

	require.NoError(t, srv.Stop())
	other := req
	other.Caller = anon("192.0.2.52")
	_, err = storecall.Take(ctx, s, other)
	require.Error(t, err, "Redis is down")
	require.True(t, s.Stats().BreakerOpen)
	for range 5 {
		_, err := storecall.Take(ctx, s, req)
		assert.ErrorIs(t, err, redisstore.ErrUnavailable, "the cache refuses no one while the breaker is open")
	}
	assert.Equal(t, int64(1), s.Stats().CacheHits)
}
