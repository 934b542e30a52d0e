package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// syncBuffer is a bytes.Buffer safe for concurrent writes, for logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// failureClient is a client of a server of the test's own, counting its
// commands, that fails fast: no retries.
func failureClient(t *testing.T, srv *redistest.Server) (*redis.Client, *counter) {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 100})
	t.Cleanup(func() { _ = c.Close() })
	hook := &counter{}
	c.AddHook(hook)
	return c, hook
}

// TestBreaker stops Redis mid-test: calls fail fast, the breaker opens and
// stops calling Redis, and once Redis is back and the back-off (on the fake
// clock) has passed, counting resumes.
func TestBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, hook := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	var logs syncBuffer
	s := newStore(t, redisstore.Config{
		Client:  client,
		Timeout: 200 * time.Millisecond,
		Now:     clock.Now,
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
	})
	req := storecall.Request{Scope: "breaker", Caller: anon("192.0.2.10"), Limits: []core.Rate{core.PerMinute(3)}, Cost: 1, Now: storetest.Start}
	_, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)

	require.NoError(t, srv.Stop())
	for i := range 3 {
		start := time.Now()
		_, err := storecall.Take(ctx, s, req)
		took := time.Since(start)
		t.Logf("failed call %d against a stopped Redis took %s", i+1, took)
		require.Error(t, err)
		assert.NotErrorIs(t, err, redisstore.ErrUnavailable, "call %d goes to Redis", i+1)
		assert.Less(t, took, time.Second, "a failing call returns within about the timeout")
	}
	st := s.Stats()
	assert.Equal(t, int64(3), st.Failures)
	assert.Equal(t, int64(1), st.BreakerOpens)
	assert.True(t, st.BreakerOpen)

	sent := hook.n.Load()
	for range 10 {
		_, err := storecall.Take(ctx, s, req)
		assert.ErrorIs(t, err, redisstore.ErrUnavailable)
	}
	assert.Equal(t, sent, hook.n.Load(), "an open breaker sends nothing")
	assert.Equal(t, int64(10), s.Stats().FailedFast)

	require.NoError(t, srv.Restart())
	// Before the back-off has passed the breaker is open, unless a call
	// the store gave up on, which go-redis was still dialling for, reached
	// the restarted Redis: its late answer says the node is alive and
	// closes the breaker (ADR 0007).
	if _, err = storecall.Take(ctx, s, req); err != nil {
		assert.ErrorIs(t, err, redisstore.ErrUnavailable, "the back-off has not passed")
	} else {
		assert.False(t, s.Stats().BreakerOpen, "served before the back-off only once a late answer closed the breaker")
	}

	// After the back-off, one trial call goes through and closes the
	// breaker. The client may need a moment to dial again: a failed trial
	// reopens the breaker, so move the clock on and try again.
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		_, err := storecall.Take(ctx, s, req)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	assert.False(t, s.Stats().BreakerOpen)

	// The restarted Redis starts empty: the caller has 3 again.
	req.Scope = "breaker-after"
	for range 3 {
		res, err := storecall.Take(ctx, s, req)
		require.NoError(t, err)
		assert.True(t, res.Allowed)
	}
	res, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "counting resumed")

	assert.Contains(t, logs.String(), "circuit open")
	assert.Contains(t, logs.String(), "circuit closed")
}

// TestTimeout pauses Redis: it takes the connection but never answers, and
// the call must give up: at about Timeout in a process that is not slowed
// (TestQuietProcessGivesUp, without the race detector), within the
// documented bound in one as slowed as this package's tests under -race
// beside the other packages' (ADR 0007).
func TestTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	s := newStore(t, redisstore.Config{Client: client, Timeout: 50 * time.Millisecond})
	req := storecall.Request{Scope: "timeout", Caller: anon("192.0.2.11"), Limits: []core.Rate{core.PerMinute(3)}, Cost: 1, Now: storetest.Start}
	_, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { _ = srv.Resume() })
	start := time.Now()
	_, err = storecall.Take(ctx, s, req)
	took := time.Since(start)
	t.Logf("a call to a hung Redis with a 50ms timeout took %s", took)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || isTimeout(err), "a timeout: %v", err)
	assert.Less(t, took, bound(50*time.Millisecond))
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// TestCallerCancels checks that a caller giving up is not held against
// Redis.
func TestCallerCancels(t *testing.T) {
	t.Parallel()
	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr), BreakerFailures: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := storecall.Take(ctx, s, storecall.Request{Scope: "cancel", Caller: anon("192.0.2.12"), Limits: []core.Rate{core.PerMinute(3)}, Cost: 1, Now: storetest.Start})
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, s.Stats().Failures)
	assert.False(t, s.Stats().BreakerOpen)
}

// TestOverLimitCache floods Redis with a caller that used all of its
// minute limit: the store answers from its cache until a request of cost 1
// would fit again, but asks Redis about requests of other costs.
func TestOverLimitCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t, server.Addr)
	hook := &counter{}
	client.AddHook(hook)
	s := newStore(t, redisstore.Config{Client: client})
	req := storecall.Request{Scope: "flood", Caller: core.UserCaller("mallory"), Limits: []core.Rate{core.PerMinute(5), core.PerDay(100)}, Cost: 5, Now: storetest.Start}
	res, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	req.Cost = 3
	res, err = storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.False(t, res.Allowed, "5 + 3 > 5")
	wait := res.Limits[0].RetryAfter
	require.Equal(t, time.Minute, wait)

	sent := hook.n.Load()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 500 {
				r := req
				r.Now = req.Now.Add(time.Duration(i) * 119 * time.Millisecond) // up to 59.4s
				got, err := storecall.Take(ctx, s, r)
				if !assert.NoError(t, err) || !assert.False(t, got.Allowed) {
					return
				}
				assert.Equal(t, wait-r.Now.Sub(req.Now), got.Limits[0].RetryAfter, "Retry-After counts down")
				assert.Equal(t, wait-r.Now.Sub(req.Now), got.Limits[0].Reset, "Reset counts down")
				assert.Zero(t, got.Limits[0].Remaining)
				assert.Equal(t, int64(95), got.Limits[1].Remaining)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, sent, hook.n.Load(), "a flood of denied requests sends nothing to Redis")
	assert.Equal(t, int64(2000), s.Stats().CacheHits)
	assert.Equal(t, 1, s.Stats().Cached)

	other := req
	other.Cost = 2
	res, err = storecall.Take(ctx, s, other)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
	assert.Equal(t, sent+1, hook.n.Load(), "a request of another cost asks Redis")

	later := req
	later.Now = req.Now.Add(wait)
	res, err = storecall.Take(ctx, s, later)
	require.NoError(t, err)
	assert.Equal(t, sent+2, hook.n.Load(), "once a request of cost 1 fits, Redis is asked again")
	assert.True(t, res.Allowed, "the burst has left the minute window")
}

// TestOverLimitCacheBounded fills a small cache with many denied callers.
func TestOverLimitCacheBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr), CacheSize: 32})
	for i := range 200 {
		req := storecall.Request{Scope: "bounded", Caller: core.UserCaller(string(rune('a' + i))), Limits: []core.Rate{core.PerMinute(1)}, Cost: 1, Now: storetest.Start}
		res, err := storecall.Take(ctx, s, req)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		res, err = storecall.Take(ctx, s, req)
		require.NoError(t, err)
		require.False(t, res.Allowed)
	}
	assert.LessOrEqual(t, s.Stats().Cached, 32)
	assert.Positive(t, s.Stats().Cached)
}

// TestRedisFull fills a server of the test's own that has a memory limit
// and the noeviction policy: Redis refuses the writes, so the decisions
// fail (open: nothing is refused), and the breaker opens. CheckStore warns
// about this set-up (ratescope.W605).
func TestRedisFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	s := newStore(t, redisstore.Config{Client: client})
	req := storecall.Request{Scope: "full", Caller: anon("192.0.2.13"), Limits: []core.Rate{core.PerMinute(3)}, Cost: 1, Now: storetest.Start}
	_, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)

	require.NoError(t, client.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, client.ConfigSet(ctx, "maxmemory", "1").Err()) // full at once
	var errs int
	for i := range 10 {
		r := req
		r.Caller = anon(fmt.Sprintf("192.0.2.%d", 100+i))
		res, err := storecall.Take(ctx, s, r)
		if err != nil {
			errs++
		}
		assert.False(t, err == nil && !res.Allowed, "nothing is refused")
	}
	assert.Equal(t, 10, errs, "a full Redis fails every decision")
	assert.True(t, s.Stats().BreakerOpen, "and opens the breaker")
	assert.Contains(t, warningIDs(s.CheckStore(ctx)), "ratescope.W605")
}

// TestErrorReplyIsNoStall makes one caller's key a hash, so that each of
// its decisions meets WRONGTYPE, and sends a burst of them mixed with
// decisions for other callers through batches of 2: a batch whose every
// decision met an error reply was answered, so the node has not stalled
// and the decisions queued behind it are sent and counted. (Before, such a
// batch read as silence and failed the whole queue with "stopped
// answering".)
func TestErrorReplyIsNoStall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t, server.Addr)
	prefix := fmt.Sprintf("ratescope-wrongtype-%d:", time.Now().UnixNano()) // -count runs apart
	s := newStore(t, redisstore.Config{Client: client, Prefix: prefix, MaxBatch: 2, BreakerFailures: 1_000_000, CacheSize: -1})
	bad := storecall.Request{Scope: "wrongtype", Caller: core.UserCaller("wes"), Limits: []core.Rate{core.PerMinute(core.MaxLimit)}, Cost: 1, Now: storetest.Start}
	_, err := storecall.Take(ctx, s, bad)
	require.NoError(t, err)
	keys := scanKeys(t, client, prefix)
	require.Len(t, keys, 1)
	require.NoError(t, client.Del(ctx, keys[0]).Err())
	require.NoError(t, client.HSet(ctx, keys[0], "f", "v").Err())
	t.Cleanup(func() { _ = client.Del(context.Background(), keys[0]).Err() })

	var wg sync.WaitGroup
	var badErrs, goodErrs sync.Map
	for i := range 400 {
		wg.Go(func() {
			req := bad
			if i%2 == 1 {
				req.Caller = core.UserCaller(fmt.Sprintf("good-%d", i))
			}
			_, err := storecall.Take(ctx, s, req)
			switch {
			case i%2 == 0:
				badErrs.Store(i, err)
			case err != nil:
				goodErrs.Store(i, err)
			}
		})
	}
	wg.Wait()
	badErrs.Range(func(_, v any) bool {
		err, _ := v.(error)
		if assert.Error(t, err, "a key of another type fails the decision") {
			assert.True(t, redis.HasErrorPrefix(err, "WRONGTYPE"), "Redis's own reply, not a stall: %v", err)
		}
		return true
	})
	goodErrs.Range(func(k, v any) bool {
		t.Errorf("decision %v failed: %v", k, v)
		return true
	})
	t.Logf("%+v", s.Stats())
}

// TestBadValueFailsItsDecisionAlone corrupts one caller's value by hand:
// every 2-byte counter at 65,535, which the next admitted request would
// carry past 65,535. Its decision shares a script call with 39 others
// (redisstore.Gather): it fails alone, with the script's RATESCOPE error,
// and the 39 others are decided and counted once each. Batches of its
// decisions alone fail every decision they carry, and still do not open
// the node's breaker: the node answered, and serves every other key.
func TestBadValueFailsItsDecisionAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newClient(t, server.Addr)
	prefix := fmt.Sprintf("ratescope-badvalue-%d:", time.Now().UnixNano()) // -count runs apart
	limits := []core.Rate{core.PerMinute(100)}
	bad := storecall.Request{Scope: "badvalue", Caller: core.UserCaller("vic"), Limits: limits, Cost: 1, Now: storetest.Start}
	_, err := storecall.Take(ctx, newStore(t, redisstore.Config{Client: client, Prefix: prefix}), bad)
	require.NoError(t, err)
	keys := scanKeys(t, client, prefix)
	require.Len(t, keys, 1)
	v, err := client.Get(ctx, keys[0]).Bytes()
	require.NoError(t, err)
	const counters = 9 + 6 // the header of one window: then 21 counters of 2 bytes
	require.Len(t, v, counters+21*2)
	for i := counters; i < len(v); i++ {
		v[i] = 0xff
	}
	require.NoError(t, client.Set(ctx, keys[0], v, redis.KeepTTL).Err())
	t.Cleanup(func() { _ = client.Del(context.Background(), keys[0]).Err() })

	const batch = 40
	s := newStore(t, redisstore.Config{Client: client, Prefix: prefix, BreakerFailures: 2, CacheSize: -1})
	redisstore.Gather(s, batch)
	takeAll := func(reqs []storecall.Request) ([]core.Result, []error) {
		res, errs := make([]core.Result, len(reqs)), make([]error, len(reqs))
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Go(func() { res[i], errs[i] = storecall.Take(ctx, s, req) })
		}
		wg.Wait()
		return res, errs
	}

	reqs := []storecall.Request{bad}
	for i := 1; i < batch; i++ {
		req := bad
		req.Caller = core.UserCaller(fmt.Sprintf("batchmate-%d", i))
		reqs = append(reqs, req)
	}
	res, errs := takeAll(reqs)
	if assert.Error(t, errs[0], "the corrupted value fails its decision") {
		assert.True(t, redis.HasErrorPrefix(errs[0], "RATESCOPE"), "the script's own error: %v", errs[0])
	}
	failed := 0
	for i := 1; i < batch; i++ {
		if !assert.NoError(t, errs[i], "batchmate %d", i) {
			failed++
			continue
		}
		assert.True(t, res[i].Allowed)
	}
	t.Logf("batchmates failed: %d of %d", failed, batch-1)
	// Counted once each: the next request of each has 98 left.
	res, errs = takeAll(reqs[1:])
	for i := range res {
		if assert.NoError(t, errs[i]) {
			assert.Equal(t, int64(98), res[i].Limits[0].Remaining, "batchmate %d counted once", i+1)
		}
	}

	for range 3 {
		alone := make([]storecall.Request, batch)
		for i := range alone {
			alone[i] = bad
		}
		_, errs := takeAll(alone)
		for _, err := range errs {
			assert.Error(t, err)
		}
	}
	st := s.Stats()
	assert.False(t, st.BreakerOpen, "a key's own fault does not open the breaker")
	assert.Zero(t, st.BreakerOpens)
}

// TestRestartWithoutPersistence holds what docs/howto/run-with-redis.md
// says of a Redis without persistence (as redistest runs it: no RDB, no
// AOF): a restart forgets every count, and each caller gets its whole limit
// again within the window it had used up, twice its limit in all.
func TestRestartWithoutPersistence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	const callers, limit = 1000, 5
	limits := []core.Rate{core.PerMinute(limit)}
	served := make([]atomic.Int64, callers)
	takeAll := func() {
		client, _ := failureClient(t, srv)
		s := newStore(t, redisstore.Config{Client: client, CacheSize: -1})
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				req := storecall.Request{Scope: "restart", Caller: core.UserCaller(fmt.Sprintf("c%d", i)), Limits: limits, Cost: 1, Now: storetest.Start.Add(time.Duration(i) * time.Millisecond)}
				for range limit + 1 {
					res, err := storecall.Take(ctx, s, req)
					if assert.NoError(t, err) && res.Allowed {
						served[i].Add(1)
					}
				}
			})
		}
		wg.Wait()
	}
	takeAll()
	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Restart())
	takeAll() // the same minute, on the limiter's clock
	forgotten := 0
	for i := range served {
		if served[i].Load() > limit {
			forgotten++
		}
		assert.LessOrEqual(t, served[i].Load(), int64(2*limit))
	}
	t.Logf("counts forgotten by the restart: %d of %d callers", forgotten, callers)
	assert.Equal(t, callers, forgotten, "a Redis without persistence forgets every count")
}
