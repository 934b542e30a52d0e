package echolimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

func TestBalanceSuite(t *testing.T) {
	adaptertest.RunBalance(t, func(t *testing.T, o adaptertest.BalanceOptions) http.Handler {
		cfg := echolimit.BalanceConfig{Limiter: o.Limiter, Scope: o.Scope, User: func(c echo.Context) string { return c.Request().Header.Get(adaptertest.UserHeader) }}
		if o.Key != nil {
			cfg.Key = func(c echo.Context) string { return o.Key(c.Request()) }
		}
		if o.Skip != nil {
			cfg.Skipper = func(c echo.Context) bool { return o.Skip(c.Request()) }
		}
		if o.Cost != nil {
			cfg.Cost = func(c echo.Context) int64 { return o.Cost(c.Request()) }
		}
		if o.Exempt != nil {
			cfg.Exempt = func(_ echo.Context, caller core.Caller) bool { return o.Exempt(caller) }
		}
		limit, err := echolimit.NewBalance(cfg)
		require.NoError(t, err)
		e := echo.New()
		e.POST(adaptertest.Path, func(c echo.Context) error {
			d, ok := echolimit.BalanceDecision(c)
			o.Handler(c.Response(), d, ok)
			return nil
		}, limit)
		return e
	})
}

func TestDenyOverloaded(t *testing.T) {
	t.Parallel()
	e := echo.New()
	w := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodPost, "/rpc", nil), w)
	require.NoError(t, echolimit.DenyOverloaded(c, &core.Decision{}))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "text/plain; charset=UTF-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "Server is overloaded", w.Body.String())
	_, err := echolimit.NewBalance(echolimit.BalanceConfig{})
	assert.ErrorContains(t, err, "no Limiter")
}
