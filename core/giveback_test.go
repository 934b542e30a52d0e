package core_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// flakyGiver is a memstore whose GiveBack fails while fail is set.
type flakyGiver struct {
	*memstore.Store
	fail  bool
	calls int
}

func (f *flakyGiver) GiveBack(ctx context.Context, req core.Request, at int64) error {
	f.calls++
	if f.fail {
		return errors.New("connection refused")
	}
	return f.Store.GiveBack(ctx, req, at)
}

// failingGiver fails every Take; its GiveBack must not be called.
type failingGiver struct{ failingStore }

func (failingGiver) GiveBack(context.Context, core.Request, int64) error {
	panic("GiveBack of a decision that failed open")
}

func TestGiveBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "3/min,10/day"}})

	d, err := lim.AllowN(ctx, "api", ip, 2)
	require.NoError(t, err)
	require.Equal(t, core.OutcomeAllowed, d.Outcome)
	require.NoError(t, lim.GiveBack(ctx, &d))
	assert.True(t, d.GivenBack())
	require.NoError(t, lim.GiveBack(ctx, &d), "a second give-back of one decision")

	for i := range 3 {
		d, err := lim.Allow(ctx, "api", ip)
		require.NoError(t, err)
		require.True(t, d.Allowed, "request %d: the 2 units given back are free, once", i+1)
	}
	refused, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.Equal(t, core.OutcomeDenied, refused.Outcome, "the second give-back freed nothing")
	require.NoError(t, lim.GiveBack(ctx, &refused))
	assert.False(t, refused.GivenBack(), "a refused request has nothing to give back")
	again, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.False(t, again.Allowed)
	var zero core.Decision
	require.NoError(t, lim.GiveBack(ctx, &zero))
}

func TestGiveBackDoesNothingUncounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	for _, tc := range []struct {
		name    string
		cfg     core.Config
		outcome core.Outcome
	}{
		{name: "failed open", cfg: core.Config{Store: failingGiver{}}, outcome: core.OutcomeFailedOpen},
		{name: "shadow", cfg: core.Config{Shadow: true}, outcome: core.OutcomeShadow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Logger = slog.New(slog.DiscardHandler)
			tc.cfg.Rates = map[string]string{"api.anon": "1/min"}
			lim := newLimiter(t, tc.cfg)
			if tc.outcome == core.OutcomeShadow {
				_, err := lim.Allow(ctx, "api", ip)
				require.NoError(t, err)
			}
			d, err := lim.Allow(ctx, "api", ip)
			require.NoError(t, err)
			require.Equal(t, tc.outcome, d.Outcome)
			require.NoError(t, lim.GiveBack(ctx, &d))
			assert.False(t, d.GivenBack())
		})
	}
}

func TestGiveBackStoreFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	store := &flakyGiver{Store: memstore.New(memstore.Config{SweepInterval: -1}), fail: true}
	lim := newLimiter(t, core.Config{Store: store, Logger: slog.New(slog.DiscardHandler), Rates: map[string]string{"api.anon": "1/min"}})
	d, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Error(t, lim.GiveBack(ctx, &d))
	next, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	assert.False(t, next.Allowed, "units the store failed to give back stay counted")
	assert.Equal(t, 1, store.calls)
}

func TestCheckGiveBack(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, core.Config{})
	assert.NoError(t, lim.CheckGiveBack())
	lim = newLimiter(t, core.Config{Store: storeFunc(func(context.Context, core.Request) (core.Result, error) {
		return core.Result{Allowed: true}, nil
	})})
	assert.ErrorIs(t, lim.CheckGiveBack(), core.ErrNoGiveBack)
}

// ctxGiver is a memory store whose give-back fails once its context has
// ended, as a store that sends it over the network does.
type ctxGiver struct{ *memstore.Store }

func (s ctxGiver) GiveBack(ctx context.Context, req core.Request, at int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Store.GiveBack(ctx, req, at)
}

// TestGiveBackOutlivesTheRequest: a client that hung up once its request
// was handled made the attempt; its give-back is not cut short, so that no
// adapter has to detach the request's context itself.
func TestGiveBackOutlivesTheRequest(t *testing.T) {
	t.Parallel()
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim := newLimiter(t, core.Config{Store: ctxGiver{ms}, Rates: map[string]string{"api.anon": "1/min,10/day"}})
	ip := anonCaller("192.0.2.1")
	ctx, cancel := context.WithCancel(context.Background())
	d, err := lim.Allow(ctx, "api", ip)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	cancel()
	require.NoError(t, lim.GiveBack(ctx, &d), "a give-back after the client hung up")
	again, err := lim.Allow(context.Background(), "api", ip)
	require.NoError(t, err)
	assert.True(t, again.Allowed, "the unit was given back")
}
