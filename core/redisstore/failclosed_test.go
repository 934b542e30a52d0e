package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/redistest"
)

// TestFailClosedOnAStoppedRedis stops Redis under a limiter with a scope
// that fails closed: its requests are refused with the default Retry-After
// while calls fail, then with the breaker's back-off once it opens, while
// the scope that fails open serves them.
func TestFailClosedOnAStoppedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         200 * time.Millisecond,
		BreakerBackoff:  3 * time.Second,
		BreakerFailures: 2,
		Now:             clock.Now,
		Logger:          slog.New(slog.DiscardHandler),
	})
	lim, err := core.New(core.Config{
		Store:            s,
		Scopes:           append(core.DefaultScopes(), core.Scope{Name: "login", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}}),
		FailClosedScopes: []string{"login"},
		Now:              clock.Now,
		Logger:           slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	login, err := lim.Guard("login", 1)
	require.NoError(t, err)
	caller := anon("192.0.2.10")

	var d core.Decision
	login.DecideInto(ctx, &d, caller, "", http.Header{})
	require.Equal(t, core.OutcomeAllowed, d.Outcome, "Redis answers")

	require.NoError(t, srv.Stop())
	for i := range 2 {
		h := http.Header{}
		login.DecideInto(ctx, &d, caller, "", h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome, "call %d", i+1)
		assert.NotErrorIs(t, d.StoreErr, redisstore.ErrUnavailable, "call %d goes to Redis", i+1)
		assert.Equal(t, "1", h.Get("Retry-After"), "the default: a failed call does not say how long Redis will be away")
	}
	for range 3 {
		h := http.Header{}
		login.DecideInto(ctx, &d, caller, "", h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
		var ra core.RetryAfterError
		require.True(t, errors.As(d.StoreErr, &ra))
		assert.Equal(t, 3*time.Second, ra.RetryAfter())
		assert.Equal(t, "3", h.Get("Retry-After"), "the breaker's back-off")
		assert.Equal(t, 503, d.Status())
	}
	api, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.True(t, api.Allowed, "the other scope fails open")
	assert.Equal(t, core.OutcomeFailedOpen, api.Outcome)
	assert.Equal(t, int64(6), lim.StoreFailures())
}

// retryAfter returns the Retry-After of h in whole seconds.
func retryAfter(t *testing.T, h http.Header) int {
	t.Helper()
	n, err := strconv.Atoi(h.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", h.Get("Retry-After"))
	return n
}

// TestFailClosedOnAPausedRedis pauses Redis (SIGSTOP: the connections stay
// open, nothing answers) under a limiter with a scope that fails closed.
// Every decision of the scope, 20 at once and then one by one, is refused
// once the store's Timeout passes, with a Retry-After of at least 1 and
// never longer than the breaker's back-off, and the scope that fails open
// serves meanwhile. After SIGCONT, and the back-off on the fake clock,
// requests are counted again, in the counts Redis kept.
func TestFailClosedOnAPausedRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.ServerFor(t)
	client, _ := failureClient(t, srv)
	clock := storetest.NewClock(time.Now())
	const backoff = 3 * time.Second
	s := newStore(t, redisstore.Config{
		Client:          client,
		Timeout:         100 * time.Millisecond,
		BreakerBackoff:  backoff,
		BreakerFailures: 2,
		Now:             clock.Now,
		Logger:          slog.New(slog.DiscardHandler),
	})
	const limit = 100
	lim, err := core.New(core.Config{
		Store:            s,
		Scopes:           append(core.DefaultScopes(), core.Scope{Name: "login", Anon: []core.Rate{core.PerMinute(limit)}, User: []core.Rate{core.PerMinute(limit)}}),
		FailClosedScopes: []string{"login"},
		Now:              clock.Now,
		Logger:           slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	login, err := lim.Guard("login", 1)
	require.NoError(t, err)
	caller := anon("192.0.2.20")

	var d core.Decision
	for range 2 {
		login.DecideInto(ctx, &d, caller, "", http.Header{})
		require.Equal(t, core.OutcomeAllowed, d.Outcome, "Redis answers")
	}
	before := s.Stats()

	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	const burst = 20
	var wg sync.WaitGroup
	decisions := make([]core.Decision, burst)
	headers := make([]http.Header, burst)
	for i := range burst {
		headers[i] = http.Header{}
		wg.Go(func() { login.DecideInto(ctx, &decisions[i], caller, "", headers[i]) })
	}
	wg.Wait()
	for i := range burst {
		assert.Equal(t, core.OutcomeFailedClosed, decisions[i].Outcome, "decision %d of the burst", i+1)
		assert.False(t, decisions[i].Allowed)
		assert.Equal(t, http.StatusServiceUnavailable, decisions[i].Status())
		ra := retryAfter(t, headers[i])
		assert.GreaterOrEqual(t, ra, 1)
		assert.LessOrEqual(t, ra, int(backoff/time.Second), "never longer than the back-off")
	}
	// One by one until the breaker is open: at most BreakerFailures more
	// calls go to Redis and wait for the Timeout.
	for i := 0; !s.Stats().BreakerOpen; i++ {
		require.Less(t, i, 2, "the breaker opens after 2 failed round trips")
		h := http.Header{}
		login.DecideInto(ctx, &d, caller, "", h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.Equal(t, "1", h.Get("Retry-After"), "a call that timed out does not say how long Redis will be away")
	}
	sent := s.Stats().Calls - before.Calls
	for range 5 {
		h := http.Header{}
		login.DecideInto(ctx, &d, caller, "", h)
		assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
		assert.ErrorIs(t, d.StoreErr, redisstore.ErrUnavailable)
		assert.Equal(t, "3", h.Get("Retry-After"), "the breaker's back-off")
	}
	assert.Equal(t, sent, s.Stats().Calls-before.Calls, "an open breaker sends nothing")
	api, err := lim.Allow(ctx, "api", caller)
	require.NoError(t, err)
	assert.True(t, api.Allowed, "the scope that fails open serves")
	assert.Equal(t, core.OutcomeFailedOpen, api.Outcome)
	failures := lim.StoreFailures()
	t.Logf("paused: %d decisions refused, %d of them sent to Redis; %+v", failures-1, sent, s.Stats())

	require.NoError(t, srv.Resume())
	resumed = true
	login.DecideInto(ctx, &d, caller, "", http.Header{})
	assert.Equal(t, core.OutcomeFailedClosed, d.Outcome, "the back-off has not passed")
	require.Eventually(t, func() bool {
		clock.Advance(backoff)
		login.DecideInto(ctx, &d, caller, "", http.Header{})
		return d.Outcome == core.OutcomeAllowed
	}, 10*time.Second, 10*time.Millisecond, "counted again once Redis answers")
	// Redis ran the commands it had received while paused when it resumed:
	// the refused requests that reached it count against their caller.
	remaining := d.Limits()[0].Remaining
	late := limit - 3 - remaining
	t.Logf("after resuming: %d of %d left; %d of the %d refused calls sent to Redis were counted late", remaining, limit, late, sent)
	assert.GreaterOrEqual(t, late, int64(0))
	assert.LessOrEqual(t, late, sent, "nothing counted that was not sent")
	n := int64(0)
	for {
		login.DecideInto(ctx, &d, caller, "", http.Header{})
		if d.Outcome != core.OutcomeAllowed {
			break
		}
		n++
	}
	assert.Equal(t, core.OutcomeDenied, d.Outcome, "counted up to the limit")
	assert.Equal(t, remaining, n)

	login.DecideInto(ctx, &d, anon("192.0.2.21"), "", http.Header{})
	assert.Equal(t, core.OutcomeAllowed, d.Outcome)
	assert.Equal(t, int64(limit-1), d.Limits()[0].Remaining, "another caller is counted from its full limit")
}
