//go:build !race

// Allocation counts are checked without the race detector, which makes
// sync.Pool drop items at random and so allocates more: make test runs
// these in a run of their own (the allocs target).

package core_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// decisionSink keeps a decision alive, as an adapter that keeps it does.
var decisionSink *core.Decision

func TestNoAllocationForTheHookWhenUnset(t *testing.T) {
	ctx := context.Background()
	ip := anonCaller("192.0.2.1")
	lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "2000000000/min"}})
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := lim.Allow(ctx, "api", ip); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "AllowN without a hook")

	g, err := lim.Guard("api", 1)
	require.NoError(t, err)
	h := http.Header{}
	allocs = testing.AllocsPerRun(100, func() { decisionSink = g.Decide(ctx, ip, h) })
	assert.Equal(t, 3.0, allocs, "Guard.Decide: the decision, the header values and the RateLimit value")
	var d core.Decision
	allocs = testing.AllocsPerRun(100, func() { g.DecideInto(ctx, &d, ip, "", h) })
	assert.Equal(t, 2.0, allocs, "Guard.DecideInto: the header values and the RateLimit value")
	allocs = testing.AllocsPerRun(100, func() { decisionSink = g.Exempt(ctx, ip) })
	assert.Equal(t, 1.0, allocs, "Guard.Exempt: the decision")
	allocs = testing.AllocsPerRun(100, func() { g.ExemptInto(ctx, &d, ip, "") })
	assert.Zero(t, allocs, "Guard.ExemptInto")
}

func TestNoAllocationForAnExemptCaller(t *testing.T) {
	ctx := context.Background()
	lim := newLimiter(t, core.Config{ExemptUsers: core.UserIDs{"monitor"}})
	g, err := lim.Guard("api", 1)
	require.NoError(t, err)
	h := http.Header{}
	var d core.Decision
	allocs := testing.AllocsPerRun(100, func() { g.DecideInto(ctx, &d, core.UserCaller("monitor"), "", h) })
	assert.Zero(t, allocs, "Guard.DecideInto of a caller on an allowlist")
	assert.Equal(t, core.OutcomeExempt, d.Outcome)

	office := newLimiter(t, core.Config{NumProxies: core.Proxies(1), ExemptNetworks: core.Networks{netip.MustParsePrefix("198.51.100.0/24")}})
	g, err = office.Guard("api", 1)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	r.RemoteAddr = "10.0.0.1:443"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	for _, user := range []string{"", "alice"} {
		allocs = testing.AllocsPerRun(100, func() { g.DecideInto(ctx, &d, office.Caller(r, "", user), "", h) })
		assert.Zero(t, allocs, "Limiter.Caller and Guard.DecideInto of a caller in an exempt network (user %q)", user)
		assert.Equal(t, core.OutcomeExempt, d.Outcome)
	}
}

func TestNoAllocationForPlans(t *testing.T) {
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{
		"api.user":      "2000000000/min",
		"api.user@gold": "2000000000/min",
	}})
	g, err := lim.Guard("api", 1)
	require.NoError(t, err)
	h := http.Header{}
	var d core.Decision
	alice := core.UserCaller("alice")
	allocs := testing.AllocsPerRun(100, func() { g.ForPlan("gold").DecideInto(ctx, &d, alice, "", h) })
	assert.Equal(t, 2.0, allocs, "ForPlan, then DecideInto: the header values and the RateLimit value")
	assert.Equal(t, "gold", d.Plan())
}

// TestDecisionSizes holds the size classes of what a decision may put on
// the heap: a Decision copied for the deny handler or kept for the
// handlers (320 B), and the BalanceDecision every balance charge returns
// (112 B). A field that takes either to the next class costs every
// request that allocates it, whether its feature is used or not.
func TestDecisionSizes(t *testing.T) {
	assert.LessOrEqual(t, reflect.TypeFor[core.Decision]().Size(), uintptr(320), "core.Decision")
	assert.LessOrEqual(t, reflect.TypeFor[core.BalanceDecision]().Size(), uintptr(112), "core.BalanceDecision")
}
