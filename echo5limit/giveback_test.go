package echo5limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echo5limit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

// A handler that returns an error has its response written later, by
// Echo's error handler: GiveBack is not asked, and the request counts,
// whatever status the error carries.
func TestGiveBackNotAfterAnError(t *testing.T) {
	t.Parallel()
	lim := adaptertest.NewLimiter(t, storetest.NewClock(storetest.Start)) // 3/min for anonymous callers
	asked := 0
	e := echo.New()
	limit, err := echo5limit.New(echo5limit.Config{Limiter: lim, GiveBack: func(c *echo.Context) bool {
		asked++
		return true
	}})
	require.NoError(t, err)
	e.Use(limit)
	e.GET("/ok", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/error", func(c *echo.Context) error { return echo.NewHTTPError(http.StatusOK, "an error with a 2xx status") })
	serve := func(path string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w.Code
	}
	for range 5 {
		require.Equal(t, http.StatusOK, serve("/ok"), "given back")
	}
	assert.Equal(t, 5, asked)
	for range 3 {
		serve("/error")
	}
	assert.Equal(t, 5, asked, "not asked after an error")
	assert.Equal(t, http.StatusTooManyRequests, serve("/ok"), "the 3 errors counted")
}
