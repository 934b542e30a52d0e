//go:build !race

package core_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

// TestHeaderModeAllocations counts what Guard.DecideInto allocates for a
// served and for a refused request under each header policy: refusals
// only and none allocate nothing for a served request.
func TestHeaderModeAllocations(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		mode            core.HeaderMode
		served, refused float64
	}{
		{name: "all", mode: core.HeadersAll, served: 2, refused: 2},
		{name: "refused", mode: core.HeadersRefused, served: 0, refused: 2},
		{name: "none", mode: core.HeadersNone, served: 0, refused: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "2000000000/min,2000000000/day"}, Headers: tc.mode})
			g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			require.NoError(t, err)
			h := http.Header{}
			var d core.Decision
			ip := anonCaller("192.0.2.1")
			allocs := testing.AllocsPerRun(100, func() { g.DecideInto(ctx, &d, ip, "", h) })
			require.True(t, d.Allowed)
			assert.Equal(t, tc.served, allocs, "served")

			tight := newLimiter(t, core.Config{Rates: map[string]string{"api.anon": "1/min,1000/day"}, Headers: tc.mode})
			g, err = core.NewGuard(core.GuardConfig{Limiter: tight, Scope: "api", Cost: 1})
			require.NoError(t, err)
			g.DecideInto(ctx, &d, ip, "", h)
			allocs = testing.AllocsPerRun(100, func() { g.DecideInto(ctx, &d, ip, "", h) })
			require.False(t, d.Allowed)
			assert.Equal(t, tc.refused, allocs, "refused")
		})
	}
}
