//go:build !race

package echolimit_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

// TestAllocationsByHeaderMode checks issue 22's bound under each header
// policy: a served request costs at most 2 allocations and 200 bytes
// beyond a middleware that does nothing, and no more under refusals only
// or none than under every response.
func TestAllocationsByHeaderMode(t *testing.T) {
	serve := func(m echo.MiddlewareFunc) (float64, float64) {
		e := echo.New()
		e.GET(adaptertest.Path, func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, m)
		return adaptertest.PerRequest(e)
	}
	nopAllocs, nopBytes := serve(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return next(c) }
	})
	var allAllocs float64
	for _, mode := range []core.HeaderMode{core.HeadersAll, core.HeadersRefused, core.HeadersNone} {
		ms := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = ms.Close() })
		lim, err := core.New(core.Config{
			Store:      ms,
			Rates:      map[string]string{"api.anon": "1000000000/min,1000000000/day"},
			NumProxies: new(0),
			Headers:    mode,
		})
		require.NoError(t, err)
		limit, err := echolimit.New(echolimit.Config{Limiter: lim})
		require.NoError(t, err)
		allocs, bytes := serve(limit)
		t.Logf("headers=%s: +%.0f allocations, +%.0f B", mode, allocs-nopAllocs, bytes-nopBytes)
		assert.LessOrEqual(t, allocs-nopAllocs, 2.0, "headers=%s", mode)
		assert.LessOrEqual(t, bytes-nopBytes, 200.0, "headers=%s", mode)
		if mode == core.HeadersAll {
			allAllocs = allocs
		} else {
			assert.Less(t, allocs, allAllocs, "headers=%s allocates less than all", mode)
		}
	}
}
