//go:build !race

// Allocation counts are checked without the race detector (make allocs).

package liveview_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/liveview"
)

func TestObserveAllocatesNothing(t *testing.T) {
	s := newSetup(t, liveview.Config{Callers: 100}, nil)
	ctx := context.Background()
	callers := make([]core.Caller, 1000) // ten times what the view keeps
	for i := range callers {
		callers[i] = s.user("user-" + strconv.Itoa(i))
	}
	d := core.Decision{Scope: "api", Caller: callers[0], Outcome: core.OutcomeAllowed}
	s.view.Observe(ctx, core.Event{Scope: d.Scope, Caller: d.Caller, Outcome: d.Outcome, Decision: &d}) // the scope's first event makes its series
	for _, o := range []core.Outcome{core.OutcomeAllowed, core.OutcomeExempt, core.OutcomeFailedOpen, core.OutcomeDenied, core.OutcomeReset} {
		i := 0
		d.Outcome = o
		allocs := testing.AllocsPerRun(1000, func() {
			d.Caller = callers[i%len(callers)]
			i++
			s.view.Observe(ctx, core.Event{Scope: d.Scope, Caller: d.Caller, Outcome: d.Outcome, Decision: &d})
		})
		assert.Zero(t, allocs, "Observe of %s, callers coming and going", o)
	}
	assert.Len(t, s.view.Snapshot().Refused, 20)
}

// TestNoAllocationWhenMounted: a decision observed by the view allocates
// no more than one observed by a hook that does nothing (the limiter's
// copy of the decision for any hook, ADR 0010).
func TestNoAllocationWhenMounted(t *testing.T) {
	ctx := context.Background()
	rates := map[string]string{"api.anon": "1/min", "api.user": "2000000000/min"}
	for _, tt := range []struct {
		name   string
		caller func(*core.Limiter) core.Caller
	}{
		{name: "allowed", caller: func(lim *core.Limiter) core.Caller {
			return lim.Caller(httptest.NewRequest(http.MethodGet, "/", nil), core.UserCaller("alice"))
		}},
		{name: "refused", caller: func(lim *core.Limiter) core.Caller { return lim.AddrCaller(netip.MustParseAddr("192.0.2.1")) }},
	} {
		clock := storetest.NewClock(storetest.Start)
		allocs := func(hook func(context.Context, core.Event)) float64 {
			lim := newLimiter(t, clock, rates, hook)
			g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			require.NoError(t, err)
			var tk core.Ticket
			h := http.Header{}
			c := tt.caller(lim)
			g.Check(ctx, &tk, core.Call{Caller: c, Header: h})
			return testing.AllocsPerRun(1000, func() { g.Check(ctx, &tk, core.Call{Caller: c, Header: h}) })
		}
		view, err := liveview.New(liveview.Config{Now: clock.Now})
		require.NoError(t, err)
		nothing := allocs(func(context.Context, core.Event) {})
		mounted := allocs(view.Observe)
		both := allocs(core.Observers(func(context.Context, core.Event) {}, view.Observe))
		assert.Equal(t, nothing, mounted, "%s: Guard.Check observed by the view and by a hook that does nothing", tt.name)
		assert.Equal(t, nothing, both, "%s: with core.Observers", tt.name)
	}
}

// TestObserveOfLongIDCopiesNothing: a refusal of a caller whose user id is
// longer than the view keeps costs the view the id's digest, not a copy of
// the id.
func TestObserveOfLongIDCopiesNothing(t *testing.T) {
	s := newSetup(t, liveview.Config{}, nil)
	ctx := context.Background()
	d := core.Decision{Scope: "api", Caller: s.user(strings.Repeat("x", 1<<20)), Outcome: core.OutcomeDenied}
	s.view.Observe(ctx, core.Event{Scope: d.Scope, Caller: d.Caller, Cost: d.Cost, Outcome: d.Outcome, Decision: &d}) // the scope's series and the caller's entry
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		s.view.Observe(ctx, core.Event{Scope: d.Scope, Caller: d.Caller, Cost: d.Cost, Outcome: d.Outcome, Decision: &d})
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(runs*1024), "bytes allocated by %d refusals of an id of 1 MiB", runs)
}
