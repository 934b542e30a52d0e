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

	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	h := http.Header{}
	allocs = testing.AllocsPerRun(100, func() { decisionSink = g.Decide(ctx, ip, h) })
	assert.Equal(t, 3.0, allocs, "Guard.Decide: the decision, the header values and the RateLimit value")
	var tk core.Ticket
	allocs = testing.AllocsPerRun(100, func() { g.Check(ctx, &tk, core.Call{Caller: ip, Header: h}) })
	assert.Equal(t, 2.0, allocs, "Guard.Check: the header values and the RateLimit value")
	allocs = testing.AllocsPerRun(100, func() { g.Check(ctx, &tk, core.Call{Caller: ip}) })
	assert.Zero(t, allocs, "Guard.Check without headers")
	allocs = testing.AllocsPerRun(100, func() { decisionSink = g.Exempt(ctx, ip) })
	assert.Equal(t, 1.0, allocs, "Guard.Exempt: the decision")
	allocs = testing.AllocsPerRun(100, func() { g.Check(ctx, &tk, core.Call{Caller: ip, Exempt: true}) })
	assert.Zero(t, allocs, "Guard.Check of an exempt caller")

	gb, err := core.NewGuard(core.GuardConfig{Limiter: lim})
	require.NoError(t, err)
	giveBack := testing.AllocsPerRun(100, func() {
		gb.Check(ctx, &tk, core.Call{Caller: ip})
		if err := tk.GiveBack(ctx); err != nil {
			t.Fatal(err)
		}
	})
	allocs = testing.AllocsPerRun(100, func() {
		gb.Check(ctx, &tk, core.Call{Caller: ip})
		decisionSink = tk.Decision()
		if err := lim.GiveBack(ctx, decisionSink); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, giveBack+1, allocs, "the kept decision and the give-back it shares with the ticket: one allocation more than Ticket.GiveBack")
}

func TestNoAllocationForAnExemptCaller(t *testing.T) {
	ctx := context.Background()
	lim := newLimiter(t, core.Config{ExemptUsers: []string{"monitor"}})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	h := http.Header{}
	var tk core.Ticket
	allocs := testing.AllocsPerRun(100, func() { g.Check(ctx, &tk, core.Call{Caller: core.UserCaller("monitor"), Header: h}) })
	assert.Zero(t, allocs, "Guard.Check of a caller on an allowlist")
	assert.Equal(t, core.OutcomeExempt, tk.Decision().Outcome)

	office := newLimiter(t, core.Config{NumProxies: new(1), ExemptNetworks: core.Networks{netip.MustParsePrefix("198.51.100.0/24")}})
	g, err = core.NewGuard(core.GuardConfig{Limiter: office, Scope: "api", Cost: 1})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	r.RemoteAddr = "10.0.0.1:443"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	for _, user := range []string{"", "alice"} {
		allocs = testing.AllocsPerRun(100, func() { g.Check(ctx, &tk, core.Call{Caller: office.Caller(r, core.UserCaller(user)), Header: h}) })
		assert.Zero(t, allocs, "Limiter.Caller and Guard.Check of a caller in an exempt network (user %q)", user)
		assert.Equal(t, core.OutcomeExempt, tk.Decision().Outcome)
	}
}

func TestNoAllocationForPlans(t *testing.T) {
	ctx := context.Background()
	lim := newLimiter(t, core.Config{Rates: map[string]string{
		"api.user":      "2000000000/min",
		"api.user@gold": "2000000000/min",
	}})
	g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	require.NoError(t, err)
	h := http.Header{}
	var tk core.Ticket
	alice := core.UserCaller("alice")
	allocs := testing.AllocsPerRun(100, func() { g.Check(ctx, &tk, core.Call{Caller: alice, Plan: "gold", Header: h}) })
	assert.Equal(t, 2.0, allocs, "Guard.Check on a plan: the header values and the RateLimit value")
	assert.Equal(t, "gold", tk.Decision().Plan())
}

// TestDecisionSizes holds the size class of what a decision may put on
// the heap: a Decision copied for the deny handler or kept for the
// handlers (320 B, with the give-back it shares in one allocation). A
// field that takes it to the next class costs every request that
// allocates it, whether its feature is used or not.
func TestDecisionSizes(t *testing.T) {
	assert.LessOrEqual(t, reflect.TypeFor[core.Decision]().Size(), uintptr(320), "core.Decision")
}
