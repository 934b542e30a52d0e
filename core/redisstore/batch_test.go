package redisstore_test

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// burst sends goroutines × each decisions at once through s: one hot caller
// limited to limit (of which exactly limit must be allowed) and many callers
// with room. It returns how many decisions it sent.
func burst(t *testing.T, s *redisstore.Store, scope string, goroutines, each int, limit int64) int64 {
	t.Helper()
	ctx := context.Background()
	hot := storecall.Request{Scope: scope, Caller: core.UserCaller("hot"), Limits: []core.Rate{core.PerMinute(limit), core.PerDay(10 * limit)}, Cost: 1, Now: storetest.Start}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range each {
				req := hot
				if i%2 == 1 {
					req.Caller = core.NetworkCaller(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(g), byte(i)}), 32))
				}
				res, err := storecall.Take(ctx, s, req)
				if !assert.NoError(t, err) {
					return
				}
				if i%2 == 1 {
					assert.True(t, res.Allowed, "a caller with room")
				} else if res.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, limit, allowed.Load(), "the hot caller gets exactly its limit")
	return int64(goroutines * each)
}

// TestBatching checks that concurrent decisions share round trips, and
// script calls: on a server one EVALSHA a round trip decides the whole
// batch, on a cluster the decisions of one hash slot (the hot caller's)
// share one; and that MaxBatch 1 sends every decision alone.
func TestBatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		client   func(t *testing.T) redis.UniversalClient
		maxBatch int
	}{
		{name: "server", client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }},
		{name: "cluster", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }},
		{name: "server unbatched", maxBatch: 1, client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }},
		{name: "cluster unbatched", maxBatch: 1, client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cluster) }},
		{name: "server batches of 2", maxBatch: 2, client: func(t *testing.T) redis.UniversalClient { return newClient(t, server.Addr) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := tc.client(t)
			hook := &counter{}
			addHook(client, hook)
			s := newStore(t, redisstore.Config{Client: client, MaxBatch: tc.maxBatch, CacheSize: -1})
			// Dial the connections and load the script on every node
			// first: a first EVALSHA that meets NOSCRIPT is sent again.
			burst(t, s, "batching-warm-up", 64, 10, 100)
			before := s.Stats()
			cmds, trips := hook.scripts.Load(), hook.trips.Load()

			decisions := burst(t, s, "batching", 64, 20, 100)
			cmds, trips = hook.scripts.Load()-cmds, hook.trips.Load()-trips
			after := s.Stats()
			calls, fromStore, commands := after.Calls-before.Calls, after.RoundTrips-before.RoundTrips, after.Commands-before.Commands
			t.Logf("%d decisions in %d commands, %d round trips (%d by the store's count)", decisions, cmds, trips, fromStore)
			assert.Equal(t, decisions, calls)
			assert.Equal(t, trips, fromStore, "Stats.RoundTrips")
			assert.Equal(t, cmds, commands, "Stats.Commands")
			if tc.maxBatch == 1 {
				assert.Equal(t, decisions, cmds, "one command per decision")
				assert.Equal(t, decisions, trips, "one round trip per decision")
				return
			}
			assert.Less(t, trips, decisions, "decisions share round trips")
			assert.Less(t, cmds, decisions, "decisions share script calls")
			if _, ok := client.(*redis.ClusterClient); ok {
				assert.GreaterOrEqual(t, cmds, trips, "on a cluster, a command per hash slot of a round trip")
				// Half the decisions are the hot caller's: those of a
				// round trip make one command, and each other caller's
				// decision at most one of its own.
				assert.LessOrEqual(t, cmds, trips+decisions/2, "on a cluster, the hot caller's decisions of a round trip share one command")
			} else {
				assert.Equal(t, trips, cmds, "on a server, one command a round trip")
			}
			if tc.maxBatch == 2 {
				assert.GreaterOrEqual(t, trips, decisions/2, "no more than MaxBatch decisions a round trip")
			}
		})
	}
}

// TestNoScript flushes the script cache of servers of the test's own between
// decisions: EVALSHA then fails with NOSCRIPT, and the store must send those
// decisions again with EVAL, alone and in batches, on a server and on a
// cluster.
func TestNoScript(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	cl := redistest.ClusterFor(t, 3)
	for _, tc := range []struct {
		name     string
		client   func(t *testing.T) redis.UniversalClient
		maxBatch int
	}{
		{name: "server", client: func(t *testing.T) redis.UniversalClient { return newClient(t, srv.Addr) }},
		{name: "server unbatched", maxBatch: 1, client: func(t *testing.T) redis.UniversalClient { return newClient(t, srv.Addr) }},
		{name: "cluster", client: func(t *testing.T) redis.UniversalClient { return newClusterClient(t, cl) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := tc.client(t)
			flush := func() {
				t.Helper()
				if c, ok := client.(*redis.ClusterClient); ok {
					require.NoError(t, c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
						return n.ScriptFlush(ctx).Err()
					}))
					return
				}
				require.NoError(t, client.ScriptFlush(ctx).Err())
			}
			s := newStore(t, redisstore.Config{Client: client, MaxBatch: tc.maxBatch, CacheSize: -1})
			req := storecall.Request{Scope: "noscript", Caller: core.UserCaller("ann"), Limits: []core.Rate{core.PerMinute(1000)}, Cost: 1, Now: storetest.Start}
			_, err := storecall.Take(ctx, s, req)
			require.NoError(t, err)

			flush()
			res, err := storecall.Take(ctx, s, req)
			require.NoError(t, err, "a lone decision after SCRIPT FLUSH")
			assert.Equal(t, int64(998), res.Limits[0].Remaining, "the counts survived: only scripts were flushed")

			flush()
			n := burst(t, s, "noscript-"+tc.name, 32, 10, 50)
			assert.Equal(t, n+2, s.Stats().Calls)
			assert.Zero(t, s.Stats().Failures)
		})
	}
}

// senders counts the goroutines sending batches, in every store of the
// process.
func senders() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "redisstore.(*node).run")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestIdleStoreRunsNothing checks that a store leaves no goroutine running
// once its decisions are answered. It does not run in parallel: it counts
// the goroutines of the whole process.
func TestIdleStoreRunsNothing(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: server.Addr, ContextTimeoutEnabled: true, PoolSize: 64})
	require.NoError(t, client.Ping(context.Background()).Err())
	// Count from inside a condition of Eventually, as after: it runs its
	// condition on a goroutine of its own.
	var before, after int
	require.Eventually(t, func() bool { before = runtime.NumGoroutine(); return true }, time.Second, time.Millisecond)
	s := newStore(t, redisstore.Config{Client: client})
	burst(t, s, "idle", 64, 10, 100)
	require.NoError(t, client.Close())
	assert.Eventually(t, func() bool { return senders() == 0 }, 5*time.Second, 5*time.Millisecond, "no sender left")
	assert.Eventually(t, func() bool { after = runtime.NumGoroutine(); return after <= before }, 5*time.Second, 5*time.Millisecond, "goroutines")
	t.Logf("goroutines: %d before, %d after", before, after)
}

// TestTimeoutInBatch pauses Redis under a burst of decisions: every caller
// gives up after about Timeout (on a slowed process, while it lags, up to
// the bound of ADR 0007), or at its own shorter deadline, whether its command
// was in flight or still queued behind a batch, and once Redis resumes the
// store works again.
func TestTimeoutInBatch(t *testing.T) {
	t.Parallel()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	const timeout = 100 * time.Millisecond
	s := newStore(t, redisstore.Config{Client: client, Timeout: timeout, BreakerFailures: 1000})
	ctx := context.Background()
	req := storecall.Request{Scope: "slow", Caller: core.UserCaller("sam"), Limits: []core.Rate{core.PerMinute(1000)}, Cost: 1, Now: storetest.Start}
	_, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	slowest := map[time.Duration]time.Duration{} // by the caller's deadline
	for i := range 64 {
		wg.Go(func() {
			ctx, want := ctx, timeout
			if i%4 == 0 {
				// A caller with a deadline of its own, shorter than
				// Timeout.
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
				defer cancel()
				want = 20 * time.Millisecond
			}
			start := time.Now()
			_, err := storecall.Take(ctx, s, req)
			took := time.Since(start)
			mu.Lock()
			slowest[want] = max(slowest[want], took)
			mu.Unlock()
			if assert.Error(t, err) {
				assert.True(t, errors.Is(err, context.DeadlineExceeded) || isTimeout(err), "a timeout: %v", err)
			}
			// A caller gives up at its own deadline, or when the batch
			// in flight has gone Timeout without an answer (on a slowed
			// process, while it lags): a caller queued behind a
			// batch sent before it may fail with it, a little before
			// its own Timeout.
			assert.GreaterOrEqual(t, took, want/2, "waited for about its deadline")
			limit := want + time.Second
			if want == timeout {
				limit = bound(timeout)
			}
			assert.Less(t, took, limit, "gave up by its deadline")
		})
	}
	wg.Wait()
	t.Logf("64 at once against a paused Redis, Timeout %s: slowest %s with a deadline of %s, %s with none of their own",
		timeout, slowest[20*time.Millisecond], 20*time.Millisecond, slowest[timeout])
	assert.Positive(t, s.Stats().Failures)

	require.NoError(t, srv.Resume())
	resumed = true
	require.Eventually(t, func() bool {
		_, err := storecall.Take(ctx, s, req)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the store works again once Redis answers")
	res, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
}
