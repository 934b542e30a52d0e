package echo5limit_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echo5limit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

// userKey is the *echo.Context key where the session middleware of the
// suite's UserFromContext leaves the user id.
const userKey = "user"

func TestSuite(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, o adaptertest.Options) http.Handler {
		e := echo.New()
		cfg := echo5limit.Config{Limiter: o.Limiter, Cost: o.Cost, RouteCosts: o.RouteCosts, KeepDecision: !o.DropDecision}
		if o.Key {
			cfg.Key = func(c *echo.Context) string { return c.Request().Header.Get(adaptertest.KeyHeader) }
		}
		if o.Plan {
			cfg.Plan = func(c *echo.Context) string { return c.Request().Header.Get(adaptertest.PlanHeader) }
		}
		if o.Skip != nil {
			cfg.Skipper = func(c *echo.Context) bool { return o.Skip(c.Request()) }
		}
		switch o.User {
		case adaptertest.UserFromHeader:
			cfg.User = func(c *echo.Context) string { return c.Request().Header.Get(adaptertest.UserHeader) }
		case adaptertest.UserFromContext:
			e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c *echo.Context) error {
					c.Set(userKey, c.Request().Header.Get(adaptertest.UserHeader))
					return next(c)
				}
			})
			cfg.User = func(c *echo.Context) string {
				id, _ := c.Get(userKey).(string)
				return id
			}
		}
		if o.Exempt != nil {
			cfg.Exempt = func(_ *echo.Context, caller core.Caller) bool { return o.Exempt(caller) }
		}
		if o.Problem {
			cfg.DenyHandler = echo5limit.DenyProblem
		}
		if o.Deny != nil {
			cfg.DenyHandler = func(c *echo.Context, d *core.Decision) error {
				return c.String(http.StatusServiceUnavailable, o.Deny(d))
			}
		}
		if o.StoreError != nil {
			cfg.ErrorHandler = func(_ *echo.Context, err error) error {
				o.StoreError(err)
				return echo.ErrServiceUnavailable
			}
		}
		if o.Login != nil {
			cfg.GiveBack = func(c *echo.Context) bool {
				r, err := echo.UnwrapResponse(c.Response())
				return err == nil && r.Status < 400
			}
		}
		limit, err := echo5limit.New(cfg)
		require.NoError(t, err)
		handle := func(c *echo.Context) error {
			d, ok := echo5limit.Decision(c)
			o.Handler(c.Response(), d, ok)
			return nil
		}
		api := e.Group(adaptertest.Path, limit)
		api.GET("", handle)
		api.GET(strings.TrimPrefix(adaptertest.ExportPath, adaptertest.Path), handle)
		if o.Login != nil {
			api.POST(strings.TrimPrefix(adaptertest.LoginPath, adaptertest.Path), func(c *echo.Context) error {
				d, _ := echo5limit.Decision(c)
				o.Login(c.Response(), c.Request(), d)
				return nil
			})
		}
		return e
	})
}

func TestDenyError(t *testing.T) {
	t.Parallel()
	limit, err := echo5limit.New(echo5limit.Config{Limiter: adaptertest.NewLimiter(t, storetest.NewClock(storetest.Start))})
	require.NoError(t, err)
	e := echo.New()
	var got error
	h := limit(func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) })
	for i := range 4 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		c := e.NewContext(req, httptest.NewRecorder())
		got = h(c)
		if i < 3 {
			require.NoError(t, got)
		}
	}
	require.ErrorIs(t, got, echo5limit.ErrLimited)
	assert.Equal(t, http.StatusTooManyRequests, echo.StatusCode(got))
	body, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, `{"detail":"Request was throttled. Expected available in 60 seconds.","retry_after":60}`, string(body))
	assert.Equal(t, "echo5limit: rate limit exceeded", got.Error())
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	lim := adaptertest.NewLimiter(t, storetest.NewClock(storetest.Start))
	tests := []struct {
		name string
		cfg  echo5limit.Config
		want string
	}{
		{name: "no limiter", cfg: echo5limit.Config{}, want: "no Limiter"},
		{name: "unknown scope", cfg: echo5limit.Config{Limiter: lim, Scope: "nope"}, want: `unknown scope "nope"`},
		{name: "negative cost", cfg: echo5limit.Config{Limiter: lim, Cost: -1}, want: "cost -1"},
		{name: "route cost below 1", cfg: echo5limit.Config{Limiter: lim, RouteCosts: map[string]int64{"/api/export": 0}}, want: `cost 0 of route "/api/export"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := echo5limit.New(tt.cfg)
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, err, tt.cfg.Validate())
		})
	}
}

func TestDecisionWithoutMiddleware(t *testing.T) {
	t.Parallel()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder())
	d, ok := echo5limit.Decision(c)
	assert.False(t, ok)
	assert.Nil(t, d)
}

func BenchmarkMiddleware(b *testing.B) {
	ms := memstore.New(memstore.Config{SweepInterval: -1})
	b.Cleanup(func() { _ = ms.Close() })
	now := storetest.Start
	lim, err := core.New(core.Config{
		Store:      ms,
		Rates:      map[string]string{"api.anon": "1000000000/day"},
		NumProxies: new(0),
		Now:        func() time.Time { return now },
	})
	require.NoError(b, err)
	limit, err := echo5limit.New(echo5limit.Config{Limiter: lim})
	require.NoError(b, err)
	e := echo.New()
	e.GET("/api", func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) }, limit)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		for pb.Next() {
			clear(w.Header())
			e.ServeHTTP(w, req)
		}
	})
}
