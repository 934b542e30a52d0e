package ginlimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
	"github.com/ratescope/ratescope/internal/testkit/adaptertest"
)

func init() { gin.SetMode(gin.TestMode) }

// userKey is the gin.Context key where the session middleware of the suite's
// UserFromContext leaves the user id.
type userKey struct{}

func TestSuite(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, o adaptertest.Options) http.Handler {
		r := gin.New()
		cfg := ginlimit.Config{Limiter: o.Limiter, Cost: o.Cost, RouteCosts: o.RouteCosts, KeepDecision: !o.DropDecision}
		if o.Key {
			cfg.Key = func(c *gin.Context) string { return c.GetHeader(adaptertest.KeyHeader) }
		}
		if o.Plan {
			cfg.Plan = func(c *gin.Context) string { return c.GetHeader(adaptertest.PlanHeader) }
		}
		if o.Skip != nil {
			cfg.Skipper = func(c *gin.Context) bool { return o.Skip(c.Request) }
		}
		switch o.User {
		case adaptertest.UserFromHeader:
			cfg.User = func(c *gin.Context) string { return c.GetHeader(adaptertest.UserHeader) }
		case adaptertest.UserFromContext:
			r.Use(func(c *gin.Context) { c.Set(userKey{}, c.GetHeader(adaptertest.UserHeader)) })
			cfg.User = func(c *gin.Context) string { return c.GetString(userKey{}) }
		}
		if o.Exempt != nil {
			cfg.Exempt = func(_ *gin.Context, caller core.Caller) bool { return o.Exempt(caller) }
		}
		if o.Problem {
			cfg.DenyHandler = ginlimit.DenyProblem
		}
		if o.Deny != nil {
			cfg.DenyHandler = func(c *gin.Context, d *core.Decision) {
				c.String(http.StatusServiceUnavailable, o.Deny(d))
			}
		}
		if o.StoreError != nil {
			cfg.ErrorHandler = func(c *gin.Context, err error) {
				o.StoreError(err)
				c.AbortWithStatus(http.StatusServiceUnavailable)
			}
		}
		if o.Login != nil {
			cfg.GiveBack = func(c *gin.Context) bool { return c.Writer.Status() < 400 }
		}
		limit, err := ginlimit.New(cfg)
		require.NoError(t, err)
		handle := func(c *gin.Context) {
			d, ok := ginlimit.Decision(c)
			o.Handler(c.Writer, d, ok)
		}
		api := r.Group(adaptertest.Path, limit)
		api.GET("", handle)
		api.GET(strings.TrimPrefix(adaptertest.ExportPath, adaptertest.Path), handle)
		if o.Login != nil {
			api.POST(strings.TrimPrefix(adaptertest.LoginPath, adaptertest.Path), func(c *gin.Context) { d, _ := ginlimit.Decision(c); o.Login(c.Writer, c.Request, d) })
		}
		return r
	})
}

func TestDenyJSON(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	ginlimit.DenyJSON(c, &core.Decision{RetryAfter: 1500 * time.Millisecond})
	assert.True(t, c.IsAborted())
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "application/json; charset=utf-8", w.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"detail":"Request was throttled. Expected available in 2 seconds.","retry_after":2}`, w.Body.String())
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	lim := adaptertest.NewLimiter(t, storetest.NewClock(storetest.Start))
	tests := []struct {
		name string
		cfg  ginlimit.Config
		want string
	}{
		{name: "no limiter", cfg: ginlimit.Config{}, want: "no Limiter"},
		{name: "unknown scope", cfg: ginlimit.Config{Limiter: lim, Scope: "nope"}, want: `unknown scope "nope"`},
		{name: "negative cost", cfg: ginlimit.Config{Limiter: lim, Cost: -1}, want: "cost -1"},
		{name: "route cost below 1", cfg: ginlimit.Config{Limiter: lim, RouteCosts: map[string]int64{"/api/export": 0}}, want: `cost 0 of route "/api/export"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := ginlimit.New(tt.cfg)
			require.Error(t, err)
			assert.Nil(t, h)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, err, tt.cfg.Validate())
		})
	}
}

func TestDecisionWithoutMiddleware(t *testing.T) {
	t.Parallel()
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	d, ok := ginlimit.Decision(c)
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
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	require.NoError(b, err)
	r := gin.New()
	r.GET("/api", limit, func(c *gin.Context) { c.Status(http.StatusNoContent) })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/api", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		for pb.Next() {
			clear(w.Header())
			r.ServeHTTP(w, req)
		}
	})
}
