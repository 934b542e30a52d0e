package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestBalanceKeys checks, on a server and on a cluster, that one charge is
// one script command in one round trip, that every balance key expires
// 4*Window+1 s after the balance's last step, and that a caller's balance
// key has the hash tag of its window keys, so that a cluster keeps them on
// one master.
func TestBalanceKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
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
			hook := &counter{}
			addHook(client, hook)
			prefix := uniquePrefix()
			s := newStore(t, redisstore.Config{Client: client, Prefix: prefix})
			policy := balance.DefaultConfig().Policy
			callers := []core.Caller{anon("192.0.2.7"), core.UserCaller("bob"), core.UserCaller("{x}%")}
			// A first charge starts the balance's steps: its key lives
			// 129 s, 4*32 s and one more, after which the balance is 0.
			now := storetest.Start.Add(7*time.Minute + 500*time.Millisecond)
			for _, who := range callers {
				// The first charge on a master may find the script missing
				// and send it with EVAL: count the second.
				_, err := s.Charge(ctx, balance.Request{Scope: "ws", Caller: who, Policy: policy, Cost: 20, Now: now})
				require.NoError(t, err)
				scripts, trips := hook.scripts.Load(), hook.trips.Load()
				_, err = s.Charge(ctx, balance.Request{Scope: "ws", Caller: who, Policy: policy, Cost: 20, Now: now})
				require.NoError(t, err)
				assert.Equal(t, int64(1), hook.scripts.Load()-scripts, "one script command per charge")
				assert.Equal(t, int64(1), hook.trips.Load()-trips, "one round trip per charge")
				_, err = storecall.Take(ctx, s, storecall.Request{Scope: "ws", Caller: who, Limits: []core.Rate{core.PerMinute(10)}, Cost: 1, Now: now})
				require.NoError(t, err)
			}
			keys := scanKeys(t, client, prefix)
			require.Len(t, keys, 2*len(callers))
			tags := map[string]int{}
			for _, k := range keys {
				tags[k[strings.IndexByte(k, '{'):strings.IndexByte(k, '}')+1]]++
				if !strings.HasSuffix(k, ":b32") {
					continue
				}
				ttl, err := client.PTTL(ctx, k).Result()
				require.NoError(t, err)
				assert.LessOrEqual(t, ttl, 129*time.Second, "key %q", k)
				assert.Greater(t, ttl, 128*time.Second, "key %q", k)
			}
			assert.Len(t, tags, len(callers))
			for tag, n := range tags {
				assert.Equal(t, 2, n, "the window and balance keys of %s share the tag", tag)
			}
		})
	}
}

func TestBalanceNoScript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A server of the test's own: other tests count the script commands
	// sent to the shared one, and a flush there would add EVALs to them.
	srv := redistest.ServerFor(t)
	for _, maxBatch := range []int{64, 1} {
		client := newClient(t, srv.Addr)
		s := newStore(t, redisstore.Config{Client: client, MaxBatch: maxBatch})
		req := balance.Request{Scope: fmt.Sprintf("noscript-%d", maxBatch), Caller: core.UserCaller("ann"), Policy: balance.DefaultConfig().Policy, Cost: 32 * 10, Now: storetest.Start}
		_, err := s.Charge(ctx, req)
		require.NoError(t, err)
		require.NoError(t, client.ScriptFlush(ctx).Err())
		res, err := s.Charge(ctx, req)
		require.NoError(t, err, "MaxBatch %d", maxBatch)
		assert.Equal(t, int64(20), res.Balance, "the balance survived, MaxBatch %d", maxBatch)
	}
}

func TestBalanceFailsWhenDown(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	s := newStore(t, redisstore.Config{Client: client, Timeout: 200 * time.Millisecond, BreakerFailures: 2, BreakerBackoff: time.Hour})
	req := balance.Request{Scope: "down", Caller: core.UserCaller("ann"), Policy: balance.DefaultConfig().Policy, Cost: 20, Now: storetest.Start}
	_, err := s.Charge(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	for range 2 {
		_, err := s.Charge(context.Background(), req)
		require.Error(t, err)
	}
	_, err = s.Charge(context.Background(), req)
	assert.ErrorIs(t, err, redisstore.ErrUnavailable, "the breaker that guards Take guards Charge")
	_, err = storecall.Take(context.Background(), s, storecall.Request{Scope: "down", Caller: core.UserCaller("ann"), Limits: []core.Rate{core.PerMinute(1)}, Cost: 1, Now: storetest.Start})
	assert.ErrorIs(t, err, redisstore.ErrUnavailable)
}

func TestBalanceBadRequest(t *testing.T) {
	t.Parallel()
	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr)})
	for _, req := range []balance.Request{
		{Scope: "bad", Cost: -1, Policy: balance.DefaultConfig().Policy},
		{Scope: "bad", Cost: 1, Policy: balance.Policy{Window: 1500 * time.Millisecond}},
	} {
		_, err := s.Charge(context.Background(), req)
		assert.Error(t, err)
	}
	assert.Zero(t, s.Stats().Calls, "nothing was sent")
}

// BenchmarkCharge measures balance decisions next to BenchmarkTake's window
// decisions, on the local Redis, with the default batching.
func BenchmarkCharge(b *testing.B) {
	for _, bc := range []struct {
		name   string
		client func(b *testing.B) redis.UniversalClient
	}{
		{name: "Server/HotCaller", client: func(b *testing.B) redis.UniversalClient { return newClient(b, server.Addr) }},
		{name: "Cluster/HotCaller", client: func(b *testing.B) redis.UniversalClient { return newClusterClient(b, cluster) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStore(b, redisstore.Config{Client: bc.client(b)})
			policy := balance.DefaultConfig().Policy
			policy.Warn, policy.Drop = core.MaxLimit, core.MaxLimit
			req := balance.Request{Scope: "bench-charge", Caller: anon("192.0.2.1"), Policy: policy, Cost: 0, Now: storetest.Start}
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() { _, _ = s.Charge(context.Background(), req) })
			}
			wg.Wait()
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Charge(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// TestBalanceServerClock checks that by default a balance decays on the
// Redis server's clock: a charge reads at once as its cost over the window
// whatever time the request carries, and a request clock an hour ahead
// neither decays the balance nor locks the caller out.
func TestBalanceServerClock(t *testing.T) {
	t.Parallel()
	s := newServerClockStore(t, redisstore.Config{Client: newClient(t, server.Addr)})
	ctx := context.Background()
	req := balance.Request{Scope: "server-clock", Caller: core.UserCaller("alice"), Policy: balance.DefaultConfig().Policy, Cost: 32 * 1000, Now: time.Unix(0, 0)}
	res, err := s.Charge(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), res.Balance, "no decay between the charge and its reading")
	req.Cost, req.Now = 0, time.Now().Add(time.Hour)
	res, err = s.Charge(ctx, req)
	require.NoError(t, err)
	assert.InDelta(t, 1000, res.Balance, 100, "an hour on the request's clock is nothing on the server's")
}
