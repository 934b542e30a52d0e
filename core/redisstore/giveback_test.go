package redisstore_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/redistest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// On the server's clock (the default), Result.At is the time of Redis's
// TIME the script counted at, and a give-back finds the request's bucket
// with it: concurrent takes and give-backs stay exact, as in the
// conformance suite, which counts on the requests' clock.
func TestGiveBackOnTheServerClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  redisstore.Config
	}{
		{name: "batched"},
		{name: "unbatched", cfg: redisstore.Config{MaxBatch: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Client = newClient(t, server.Addr)
			s := newServerClockStore(t, cfg)
			const limit, workers, rounds = 5, 20, 10
			limits := []core.Rate{core.PerMinute(limit), core.PerDay(100)}
			who := anon("192.0.2.77")
			before := time.Now()
			var kept atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range workers {
				wg.Go(func() {
					<-start
					for range rounds {
						req := storecall.Request{Scope: "login", Caller: who, Limits: limits, Cost: 1, Now: time.Now()}
						res, err := storecall.Take(context.Background(), s, req)
						if !assert.NoError(t, err) || !res.Allowed {
							continue
						}
						assert.GreaterOrEqual(t, res.At, before.Add(-time.Second).UnixMicro(), "At is the server's time, in µs")
						if w%4 == 0 {
							kept.Add(1)
							continue
						}
						assert.NoError(t, storecall.GiveBack(context.Background(), s, req, res.At))
					}
				})
			}
			close(start)
			wg.Wait()
			require.LessOrEqual(t, kept.Load(), int64(limit))
			res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: "login", Caller: who, Limits: limits, Cost: 1, Now: time.Now()})
			require.NoError(t, err)
			if kept.Load() == limit {
				assert.False(t, res.Allowed)
				return
			}
			require.True(t, res.Allowed)
			assert.Equal(t, limit-kept.Load()-1, res.Limits[0].Remaining, "only the units kept stay counted")
			assert.Equal(t, 100-kept.Load()-1, res.Limits[1].Remaining)
		})
	}
}

// A give-back forgets the refusal the over-limit cache remembers for the
// caller: the next request is decided by Redis, which has room again.
func TestGiveBackForgetsTheCachedRefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, redisstore.Config{Client: newClient(t, server.Addr)})
	req := storecall.Request{Scope: "login", Caller: anon("192.0.2.78"), Limits: []core.Rate{core.PerMinute(2)}, Cost: 1, Now: storetest.Start}
	first, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.True(t, first.Allowed)
	second, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	require.True(t, second.Allowed)
	for range 2 {
		res, err := storecall.Take(ctx, s, req)
		require.NoError(t, err)
		require.False(t, res.Allowed)
	}
	require.Positive(t, s.Stats().CacheHits, "the second refusal came from the cache")
	require.NoError(t, storecall.GiveBack(ctx, s, req, first.At))
	res, err := storecall.Take(ctx, s, req)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "the refusal the cache remembered is forgotten")
}

// A give-back refused by an open breaker sent nothing: the request stays
// to be given back, and once Redis answers again the give-back is made and
// the caller gets its unit back.
func TestGiveBackRefusedByTheBreakerIsMadeLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(storetest.Start)
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         100 * time.Millisecond,
		BreakerFailures: 1,
		BreakerBackoff:  time.Second,
		Now:             clock.Now,
		CacheSize:       -1,
	})
	lim, err := core.New(core.Config{
		Store:  s,
		Scopes: []core.Scope{{Name: "login", Anon: []core.Rate{core.PerDay(1)}, User: []core.Rate{core.PerDay(1)}}},
		Now:    clock.Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	login, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "login"})
	require.NoError(t, err)
	caller := anon("192.0.2.79")

	var signIn core.Ticket
	login.Check(ctx, &signIn, core.Call{Caller: caller})
	require.True(t, signIn.Counted())

	// One unanswered round trip opens the breaker.
	require.NoError(t, srv.Pause())
	var other core.Ticket
	login.Check(ctx, &other, core.Call{Caller: anon("192.0.2.80")})
	require.NoError(t, srv.Resume())
	require.True(t, s.Stats().BreakerOpen)

	err = signIn.GiveBack(ctx)
	require.ErrorIs(t, err, redisstore.ErrUnavailable)
	assert.ErrorIs(t, err, core.ErrNotSent)
	assert.True(t, signIn.Counted(), "nothing was sent: still to give back")

	// Past the back-off, the give-back is the breaker's trial call. The
	// client may need a moment to read the paused round trip's answer.
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		return signIn.GiveBack(ctx) == nil && !signIn.Counted()
	}, 10*time.Second, 10*time.Millisecond)
	var again core.Ticket
	login.Check(ctx, &again, core.Call{Caller: caller})
	assert.True(t, again.Allowed(), "the unit was given back")
	assert.True(t, again.Counted())
}
