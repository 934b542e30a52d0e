package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// breakerOpen is a store error that says how long the store will fail, as
// the Redis store's does while its circuit breaker is open.
type breakerOpen struct{ wait time.Duration }

func (e breakerOpen) Error() string             { return "breaker open" }
func (e breakerOpen) RetryAfter() time.Duration { return e.wait }

// errorStore fails every call with err.
type errorStore struct{ err error }

func (s errorStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(s.err).Bind("", 0, nil)
}

func TestFailClosed(t *testing.T) {
	t.Parallel()
	scopes := []core.Scope{
		{Name: "api", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}},
		{Name: "login", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}, FailMode: core.FailClosed},
		{Name: "pay", Anon: []core.Rate{core.PerMinute(5)}, User: []core.Rate{core.PerMinute(5)}, FailMode: core.FailClosed},
	}
	tests := []struct {
		name      string
		err       error
		wantRetry time.Duration
		wantAfter string
	}{
		{name: "an error that does not say", err: errors.New("connection refused"), wantRetry: time.Second, wantAfter: "1"},
		{name: "the breaker's back-off, rounded up", err: fmt.Errorf("wrapped: %w", breakerOpen{wait: 2500 * time.Millisecond}), wantRetry: 2500 * time.Millisecond, wantAfter: "3"},
		{name: "under a second is one", err: breakerOpen{wait: 10 * time.Millisecond}, wantRetry: 10 * time.Millisecond, wantAfter: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			var obs seen
			clock := storetest.NewClock(storetest.Start)
			lim := newLimiter(t, core.Config{
				Store: errorStore{err: tt.err}, Scopes: scopes,
				Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Observe: obs.observe,
			})
			for _, scope := range []string{"login", "pay"} {
				for range 10 {
					g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: scope, Cost: 1})
					require.NoError(t, err)
					h := http.Header{}
					d := g.Decide(context.Background(), anonCaller("192.0.2.1"), h)
					assert.False(t, d.Allowed, scope)
					assert.False(t, d.Checked)
					assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
					assert.Equal(t, "failed_closed", d.Outcome.String())
					assert.ErrorIs(t, d.StoreErr, tt.err)
					assert.Equal(t, tt.wantRetry, d.RetryAfter)
					assert.Equal(t, http.StatusServiceUnavailable, d.Status())
					assert.Equal(t, http.Header{"Retry-After": {tt.wantAfter}}, h, "Retry-After alone: nothing was counted")
					assert.Contains(t, d.DenyBody().Detail, "rate limits cannot be checked")
				}
			}
			d, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.1"))
			require.NoError(t, err)
			assert.True(t, d.Allowed, "the other scopes fail open")
			assert.Equal(t, core.OutcomeFailedOpen, d.Outcome)
			assert.Equal(t, http.StatusOK, d.Status())

			assert.Equal(t, int64(21), lim.StoreFailures(), "failing closed is a store failure too")
			assert.Equal(t, 1, strings.Count(logs.String(), "request refused (the scope fails closed)"), "one line per interval")
			assert.Equal(t, 1, strings.Count(logs.String(), "fail open"))
			assert.Len(t, obs.outcomes, 21)
			assert.Equal(t, core.OutcomeFailedClosed, obs.outcomes[0])

			clock.Advance(10 * time.Second)
			_, err = lim.Allow(context.Background(), "login", anonCaller("192.0.2.1"))
			require.NoError(t, err)
			assert.Contains(t, logs.String(), "suppressed=19", "the next line says how many were left out")
		})
	}
}

func TestFailClosedDefaultIsOpen(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Store: errorStore{err: errors.New("down")}, Logger: slog.New(slog.DiscardHandler)})
	d, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.1"))
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, core.OutcomeFailedOpen, d.Outcome)
}

func TestFailClosedClientHungUp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lim := newLimiter(t, core.Config{Store: errorStore{err: context.Canceled}, Scopes: failClosedAPI()})
	d, err := lim.Allow(ctx, "api", anonCaller("192.0.2.1"))
	require.NoError(t, err)
	assert.False(t, d.Allowed, "still refused")
	assert.Zero(t, lim.StoreFailures(), "a caller that hung up is no failure of the store")
}

func TestProblem(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "1/min,10/day"}})
	_, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.1"))
	require.NoError(t, err)
	d, err := lim.Allow(context.Background(), "api", anonCaller("192.0.2.1"))
	require.NoError(t, err)
	b, err := json.Marshal(d.Problem())
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,
		"detail":"Request was throttled. Expected available in 60 seconds.","retry_after":60,"violated-policies":["api.anon.min"]}`, string(b))

	closed := newLimiter(t, core.Config{Store: errorStore{err: breakerOpen{wait: 2 * time.Second}}, Scopes: failClosedAPI(), Logger: slog.New(slog.DiscardHandler)})
	d, err = closed.Allow(context.Background(), "api", anonCaller("192.0.2.1"))
	require.NoError(t, err)
	b, err = json.Marshal(d.Problem())
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"about:blank","title":"Service Unavailable","status":503,
		"detail":"Service unavailable: the rate limits cannot be checked. Expected available in 2 seconds.","retry_after":2}`, string(b))
}

func TestExposedHeaders(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "1/min,10/day"}, LegacyHeaders: true, LoadRatio: 0.01})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	h := http.Header{}
	g.Decide(context.Background(), anonCaller("192.0.2.1"), h)
	g.Decide(context.Background(), anonCaller("192.0.2.1"), h)
	exposed := map[string]bool{}
	for _, name := range core.ExposedHeaders() {
		exposed[http.CanonicalHeaderKey(name)] = true
	}
	require.Len(t, h, 7, "every header the limiter sets: %v", h)
	for name := range h {
		assert.True(t, exposed[name], "%s is set but not exposed", name)
	}
	core.ExposedHeaders()[0] = "changed"
	assert.Equal(t, "RateLimit", core.ExposedHeaders()[0], "a new slice on each call")
}
