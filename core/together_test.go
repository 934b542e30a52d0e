package core_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// The features of issue 20 and 22 were built apart; these tests hold what
// each promises when the others are on too.

// TestPlanUnderEveryHeaderPolicy: a plan's limits follow Config.Headers as
// the scope's own do.
func TestPlanUnderEveryHeaderPolicy(t *testing.T) {
	ctx := context.Background()
	gold := core.UserCaller("alice")
	for _, tc := range []struct {
		mode               core.HeaderMode
		served, refused    bool // RateLimit on a served, a refused response
		retryAfterOnRefuse bool
	}{
		{core.HeadersAll, true, true, true},
		{core.HeadersRefused, false, true, true},
		{core.HeadersNone, false, false, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			lim := newLimiter(t, core.Config{Headers: tc.mode, Rates: map[string]string{
				"api.user":      "1/min,10/day",
				"api.user@gold": "2/min,20/day",
			}})
			g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			require.NoError(t, err)
			var d core.Decision
			for range 2 {
				h := http.Header{}
				g.ForPlan("gold").DecideInto(ctx, &d, gold, "", h)
				require.True(t, d.Allowed, "gold has 2 a minute")
				assert.Equal(t, tc.served, h.Get("Ratelimit") != "", "served")
				if tc.served {
					assert.Contains(t, h.Get("Ratelimit-Policy"), "q=2", "gold's policy")
				}
			}
			h := http.Header{}
			g.ForPlan("gold").DecideInto(ctx, &d, gold, "", h)
			require.False(t, d.Allowed)
			assert.Equal(t, tc.refused, h.Get("Ratelimit") != "", "refused")
			assert.Equal(t, tc.retryAfterOnRefuse, h.Get("Retry-After") != "", "Retry-After on a refusal")
		})
	}
}

// TestPlanFailsClosed: a plan of a scope that fails closed fails closed.
func TestPlanFailsClosed(t *testing.T) {
	lim := newLimiter(t, core.Config{
		Store:  errorStore{err: breakerOpen{wait: 0}},
		Scopes: failClosedAPI(),
		Rates:  map[string]string{"api.user@gold": "6000/min,200000/day"},
	})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	var d core.Decision
	h := http.Header{}
	g.ForPlan("gold").DecideInto(context.Background(), &d, core.UserCaller("alice"), "", h)
	assert.False(t, d.Allowed)
	assert.Equal(t, core.OutcomeFailedClosed, d.Outcome)
	assert.Equal(t, http.StatusServiceUnavailable, d.Status())
	assert.NotEmpty(t, h.Get("Retry-After"))
}

// TestPlanCallerExemptResetAndGivenBack: an exempt user on a plan is
// exempt; a reset clears the count a plan used; a give-back of a plan's
// request frees it on the one count.
func TestPlanCallerExemptResetAndGivenBack(t *testing.T) {
	ctx := context.Background()
	lim := newLimiter(t, core.Config{
		ExemptUsers: []string{"monitor"},
		Rates:       map[string]string{"api.user": "1/min,10/day", "api.user@gold": "3/min,30/day"},
	})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	gold := g.ForPlan("gold")
	var d core.Decision
	gold.DecideInto(ctx, &d, core.UserCaller("monitor"), "", http.Header{})
	assert.Equal(t, core.OutcomeExempt, d.Outcome)

	alice := core.UserCaller("alice")
	for range 2 {
		gold.DecideInto(ctx, &d, alice, "", http.Header{})
		require.True(t, d.Allowed)
	}
	var tk core.Ticket
	g.Check(ctx, &tk, core.Call{Caller: alice, Plan: "gold"})
	require.True(t, tk.Allowed())
	require.NoError(t, lim.GiveBack(ctx, tk.Decision()))
	gold.DecideInto(ctx, &d, alice, "", http.Header{})
	require.True(t, d.Allowed, "the unit given back is free again")
	gold.DecideInto(ctx, &d, alice, "", http.Header{})
	require.False(t, d.Allowed, "3 a minute used")
	require.NoError(t, lim.Reset(ctx, "api", alice))
	gold.DecideInto(ctx, &d, alice, "", http.Header{})
	require.True(t, d.Allowed, "reset")
	assert.Equal(t, int64(2), d.Limits()[0].Remaining)
}
