//go:build !race

// Allocation counts are checked without the race detector, which makes
// sync.Pool drop items at random and so allocates more: make test runs
// these in a run of their own (the allocs target).

package echo5limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echo5limit"
)

// TestAllocations checks the issue 13 bound: the middleware adds at most 2
// allocations to a request through Echo, both headers included, beyond
// what a middleware that does nothing costs there.
func TestAllocations(t *testing.T) {
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = ms.Close() })
	lim, err := core.New(core.Config{
		Store:      ms,
		Rates:      map[string]string{"api.anon": "1000000000/min,1000000000/day"},
		NumProxies: new(0),
	})
	require.NoError(t, err)
	limit, err := echo5limit.New(echo5limit.Config{Limiter: lim})
	require.NoError(t, err)
	nothing := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error { return next(c) }
	}
	perRequest := func(m echo.MiddlewareFunc) float64 {
		e := echo.New()
		e.GET("/api", func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) }, m)
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		return testing.AllocsPerRun(200, func() {
			clear(w.Header())
			e.ServeHTTP(w, req)
		})
	}
	assert.LessOrEqual(t, perRequest(limit)-perRequest(nothing), 2.0)
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
	limit, err := echo5limit.New(echo5limit.Config{
		Limiter: lim,
		User:    func(c *echo.Context) string { return c.Request().Header.Get("X-User") },
		Plan:    func(c *echo.Context) string { return c.Request().Header.Get("X-Plan") },
	})
	require.NoError(t, err)
	nothing := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error { return next(c) }
	}
	perRequest := func(m echo.MiddlewareFunc) float64 {
		e := echo.New()
		e.GET("/api", func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) }, m)
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("X-User", "alice")
		req.Header.Set("X-Plan", "gold")
		w := httptest.NewRecorder()
		return testing.AllocsPerRun(200, func() {
			clear(w.Header())
			e.ServeHTTP(w, req)
		})
	}
	assert.LessOrEqual(t, perRequest(limit)-perRequest(nothing), 2.0)
}
