//go:build !race

// Allocation counts are checked without the race detector, which makes
// sync.Pool drop items at random and so allocates more: make test runs
// these in a run of their own (the allocs target).

package ginlimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
)

// defaultMiddleware returns the middleware in its default settings, on
// memstore, with two limits that no test reaches: what the allocation
// bounds and the speed guard measure.
func defaultMiddleware(t *testing.T) gin.HandlerFunc {
	t.Helper()
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{
		Store:      ms,
		Rates:      map[string]string{"api.anon": "1000000000/min,1000000000/day"},
		NumProxies: new(0),
	})
	require.NoError(t, err)
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	require.NoError(t, err)
	return limit
}

// TestAllocations checks the issue 13 bound: the middleware adds at most 2
// allocations to a request through Gin, both headers included.
func TestAllocations(t *testing.T) {
	limit := defaultMiddleware(t)
	perRequest := func(ms ...gin.HandlerFunc) float64 {
		r := gin.New()
		r.GET("/api", append(ms, func(c *gin.Context) { c.Status(http.StatusNoContent) })...)
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		return testing.AllocsPerRun(200, func() {
			clear(w.Header())
			r.ServeHTTP(w, req)
		})
	}
	assert.LessOrEqual(t, perRequest(limit)-perRequest(), 2.0)
}

// TestAllocationsWithPlans checks that choosing a plan per request
// (Config.Plan) adds no allocation to the issue 13 bound.
func TestAllocationsWithPlans(t *testing.T) {
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{
		Store:      ms,
		Rates:      map[string]string{"api.user": "1000000000/min,1000000000/day", "api.user@gold": "2000000000/min,2000000000/day"},
		NumProxies: new(0),
	})
	require.NoError(t, err)
	limit, err := ginlimit.New(ginlimit.Config{
		Limiter: lim,
		User:    func(c *gin.Context) string { return c.GetHeader("X-User") },
		Plan:    func(c *gin.Context) string { return c.GetHeader("X-Plan") },
	})
	require.NoError(t, err)
	perRequest := func(ms ...gin.HandlerFunc) float64 {
		r := gin.New()
		r.GET("/api", append(ms, func(c *gin.Context) { c.Status(http.StatusNoContent) })...)
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("X-User", "alice")
		req.Header.Set("X-Plan", "gold")
		w := httptest.NewRecorder()
		return testing.AllocsPerRun(200, func() {
			clear(w.Header())
			r.ServeHTTP(w, req)
		})
	}
	assert.LessOrEqual(t, perRequest(limit)-perRequest(), 2.0)
}
