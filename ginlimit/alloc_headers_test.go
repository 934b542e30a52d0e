//go:build !race

package ginlimit_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

// TestAllocationsByHeaderMode checks issue 22's bound under each header
// policy: a served request costs at most 2 allocations and 200 bytes
// beyond a middleware that does nothing, and no more under refusals only
// or none than under every response.
func TestAllocationsByHeaderMode(t *testing.T) {
	serve := func(m gin.HandlerFunc) (float64, float64) {
		r := gin.New()
		r.GET(adaptertest.Path, m, func(c *gin.Context) { c.Status(http.StatusNoContent) })
		return adaptertest.PerRequest(r)
	}
	nopAllocs, nopBytes := serve(func(*gin.Context) {})
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
		limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
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
