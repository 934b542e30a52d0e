//go:build !race

// Allocation counts are checked without the race detector (make allocs).

package liveview_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/liveview"
)

func TestObserveAllocatesNothing(t *testing.T) {
	s := newSetup(t, liveview.Config{Callers: 100}, nil)
	ctx := context.Background()
	callers := make([]core.Caller, 1000) // ten times what the view keeps
	for i := range callers {
		callers[i] = s.user("user-" + strconv.Itoa(i))
	}
	d := core.Decision{Scope: "api", Caller: callers[0]}
	s.view.Observe(ctx, core.Event{Decision: &d}) // the scope's first event makes its series
	for _, o := range []core.Outcome{core.OutcomeAllowed, core.OutcomeExempt, core.OutcomeFailedOpen, core.OutcomeDenied, core.OutcomeReset} {
		i := 0
		d.Outcome = o
		allocs := testing.AllocsPerRun(1000, func() {
			d.Caller = callers[i%len(callers)]
			i++
			s.view.Observe(ctx, core.Event{Decision: &d})
		})
		assert.Zero(t, allocs, "Observe of %s, callers coming and going", o)
	}
	assert.Len(t, s.view.Snapshot().Refused, 20)
}

// TestNoAllocationWhenMounted: a decision observed by the view allocates
// no more than one observed by a hook that does nothing (the limiter's
// copy of the decision for any hook, ADR 0030).
func TestNoAllocationWhenMounted(t *testing.T) {
	ctx := context.Background()
	allocs := func(hook func(context.Context, core.Event), caller func(setup) core.Caller) float64 {
		s := newSetup(t, liveview.Config{}, map[string]string{"api.anon": "1/min", "api.user": "2000000000/min"})
		store := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = store.Close() })
		lim, err := core.New(core.Config{Rates: map[string]string{"api.anon": "1/min", "api.user": "2000000000/min"}, Store: store, Now: s.clock.Now, NumProxies: core.Proxies(0), Observe: hook})
		require.NoError(t, err)
		g, err := lim.Guard("api", 1)
		require.NoError(t, err)
		var tk core.Ticket
		h := http.Header{}
		c := caller(s)
		g.Check(ctx, &tk, core.Call{Caller: c, Header: h})
		return testing.AllocsPerRun(1000, func() { g.Check(ctx, &tk, core.Call{Caller: c, Header: h}) })
	}
	for _, tt := range []struct {
		name   string
		caller func(setup) core.Caller
	}{
		{name: "allowed", caller: func(s setup) core.Caller { return s.user("alice") }},
		{name: "refused", caller: func(s setup) core.Caller { return s.addr("192.0.2.1") }},
	} {
		view, err := liveview.New(liveview.Config{})
		require.NoError(t, err)
		nothing := allocs(func(context.Context, core.Event) {}, tt.caller)
		mounted := allocs(view.Observe, tt.caller)
		both := allocs(core.Observers(func(context.Context, core.Event) {}, view.Observe), tt.caller)
		assert.Equal(t, nothing, mounted, "%s: Guard.Check observed by the view and by a hook that does nothing", tt.name)
		assert.Equal(t, nothing, both, "%s: with core.Observers", tt.name)
	}
}
