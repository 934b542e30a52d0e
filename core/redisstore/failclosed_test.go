package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
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
