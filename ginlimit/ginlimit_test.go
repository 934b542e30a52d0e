package ginlimit_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
)

func init() { gin.SetMode(gin.TestMode) }

// newLimiter returns a limiter over a fresh memory store, with 3/min and
// 100/day for anonymous callers and 5/min and 1000/day for users, one proxy,
// and the fake clock.
func newLimiter(t *testing.T, store core.Store, clock *storetest.Clock) *core.Limiter {
	t.Helper()
	if store == nil {
		ms := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { _ = ms.Close() })
		store = ms
	}
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "3/min,100/day", "api.user": "5/min,1000/day"},
		NumProxies: core.Proxies(1),
		Now:        clock.Now,
		Logger:     slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	return lim
}

// newRouter serves GET /api with the middleware of cfg, the user taken from
// the X-User request header, and a handler that writes "ok" along with the
// decision it reads from the context.
func newRouter(t *testing.T, cfg ginlimit.Config) *gin.Engine {
	t.Helper()
	if cfg.User == nil {
		cfg.User = func(c *gin.Context) string { return c.GetHeader("X-User") }
	}
	limit, err := ginlimit.New(cfg)
	require.NoError(t, err)
	r := gin.New()
	r.GET("/api", limit, func(c *gin.Context) {
		d, ok := ginlimit.Decision(c)
		if !ok {
			c.String(http.StatusInternalServerError, "no decision")
			return
		}
		c.Header("X-Counted", strconv.FormatBool(d.Counted))
		c.Header("X-Caller", d.Caller.String())
		c.String(http.StatusOK, "ok")
	})
	return r
}

// get sends GET /api from remoteAddr with the given headers.
func get(r http.Handler, remoteAddr string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.RemoteAddr = remoteAddr
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestLimit(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	r := newRouter(t, ginlimit.Config{Limiter: newLimiter(t, nil, clock)})

	for i := range 3 {
		w := get(r, "192.0.2.1:1234", nil)
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, "ok", w.Body.String())
		assert.Equal(t, `"api.anon.min";q=3;w=60, "api.anon.day";q=100;w=86400`, w.Header().Get("RateLimit-Policy"))
		assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=`+strconv.Itoa(2-i)+";t=")
		assert.Empty(t, w.Header().Get("Retry-After"))
		assert.Equal(t, "true", w.Header().Get("X-Counted"))
		assert.Equal(t, "192.0.2.1", w.Header().Get("X-Caller"))
	}

	w := get(r, "192.0.2.1:1234", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	retry := w.Header().Get("Retry-After")
	require.NotEmpty(t, retry)
	secs, err := strconv.Atoi(retry)
	require.NoError(t, err)
	assert.Positive(t, secs)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=0;t=`)
	assert.NotEmpty(t, w.Header().Get("RateLimit-Policy"))
	assert.JSONEq(t, `{"detail":"Request was throttled. Expected available in `+retry+` seconds.","retry_after":`+retry+`}`, w.Body.String())
	assert.Equal(t, "application/json; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Empty(t, w.Header().Get("X-Counted"), "the handler must not run")

	clock.Advance(time.Duration(secs) * time.Second)
	assert.Equal(t, http.StatusOK, get(r, "192.0.2.1:1234", nil).Code, "allowed again after Retry-After")
}

func TestCallersApart(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	r := newRouter(t, ginlimit.Config{Limiter: newLimiter(t, nil, clock)})

	for range 3 {
		require.Equal(t, http.StatusOK, get(r, "192.0.2.1:1234", nil).Code)
	}
	require.Equal(t, http.StatusTooManyRequests, get(r, "192.0.2.1:1234", nil).Code)

	// A user signed in from the same address has a count of its own, by
	// id, with the user limits.
	w := get(r, "192.0.2.1:1234", map[string]string{"X-User": "alice"})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "alice", w.Header().Get("X-Caller"))
	assert.Contains(t, w.Header().Get("RateLimit-Policy"), `"api.user.min";q=5;w=60`)
	for range 4 {
		require.Equal(t, http.StatusOK, get(r, "198.51.100.9:1", map[string]string{"X-User": "alice"}).Code)
	}
	assert.Equal(t, http.StatusTooManyRequests, get(r, "203.0.113.5:1", map[string]string{"X-User": "alice"}).Code,
		"a user is counted by id whatever its address")
	assert.Equal(t, http.StatusOK, get(r, "192.0.2.1:1234", map[string]string{"X-User": "bob"}).Code)
	assert.Equal(t, http.StatusOK, get(r, "192.0.2.2:1234", nil).Code, "another address has its own count")
}

func TestForwardedForSpoofing(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	r := newRouter(t, ginlimit.Config{Limiter: newLimiter(t, nil, clock)})

	// Behind one proxy (10.0.0.1), the caller at 203.0.113.7 writes a new
	// left-hand entry each time; the proxy appends the real address.
	spoof := func(i int) map[string]string {
		return map[string]string{
			"X-Forwarded-For": "198.51.100." + strconv.Itoa(i) + ", 203.0.113.7",
			"X-Real-IP":       "198.51.100." + strconv.Itoa(i),
		}
	}
	for i := range 3 {
		w := get(r, "10.0.0.1:5555", spoof(i))
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "203.0.113.7", w.Header().Get("X-Caller"))
	}
	assert.Equal(t, http.StatusTooManyRequests, get(r, "10.0.0.1:5555", spoof(9)).Code)
	assert.Equal(t, http.StatusTooManyRequests, get(r, "10.0.0.1:5555", map[string]string{"X-Forwarded-For": "203.0.113.7"}).Code)
	assert.Equal(t, http.StatusOK, get(r, "10.0.0.1:5555", map[string]string{"X-Forwarded-For": "203.0.113.8"}).Code)
}

func TestExempt(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	r := newRouter(t, ginlimit.Config{
		Limiter: newLimiter(t, nil, clock),
		Exempt:  func(_ *gin.Context, c core.Caller) bool { return c.User == "admin" },
	})
	for range 10 {
		w := get(r, "192.0.2.1:1234", map[string]string{"X-User": "admin"})
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "false", w.Header().Get("X-Counted"))
		assert.Equal(t, "admin", w.Header().Get("X-Caller"))
		assert.Empty(t, w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("RateLimit-Policy"))
	}
	w := get(r, "192.0.2.1:1234", map[string]string{"X-User": "alice"})
	assert.Equal(t, "true", w.Header().Get("X-Counted"))
}

func TestCost(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	r := newRouter(t, ginlimit.Config{Limiter: newLimiter(t, nil, clock), Cost: 2})

	w := get(r, "192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=1;t=`)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.day";r=98;t=`)
	assert.Equal(t, http.StatusTooManyRequests, get(r, "192.0.2.1:1234", nil).Code, "2 units left of 3 is not enough")
}

func TestDenyHandler(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	r := newRouter(t, ginlimit.Config{
		Limiter: newLimiter(t, nil, clock),
		DenyHandler: func(c *gin.Context, d *core.Decision) {
			c.String(http.StatusServiceUnavailable, "slow down, %s", d.Caller)
		},
	})
	for range 3 {
		require.Equal(t, http.StatusOK, get(r, "192.0.2.1:1234", nil).Code)
	}
	w := get(r, "192.0.2.1:1234", nil)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "slow down, 192.0.2.1", w.Body.String(), "the handler must not run, even if the deny handler does not abort")
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
}

// failingStore is a core.Store that cannot be reached.
type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Take(context.Context, core.Request) (core.Result, error) {
	return core.Result{}, errDown
}

func TestStoreFailure(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	lim := newLimiter(t, failingStore{}, clock)

	t.Run("fail open", func(t *testing.T) {
		t.Parallel()
		r := newRouter(t, ginlimit.Config{Limiter: lim})
		for range 5 {
			w := get(r, "192.0.2.1:1234", nil)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "false", w.Header().Get("X-Counted"))
			assert.Empty(t, w.Header().Get("RateLimit"))
		}
	})
	t.Run("error handler refuses", func(t *testing.T) {
		t.Parallel()
		var got error
		r := newRouter(t, ginlimit.Config{
			Limiter: lim,
			ErrorHandler: func(c *gin.Context, err error) {
				got = err
				c.AbortWithStatus(http.StatusServiceUnavailable)
			},
		})
		w := get(r, "192.0.2.1:1234", nil)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.ErrorIs(t, got, errDown)
	})
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, nil, storetest.NewClock(storetest.Start))
	tests := []struct {
		name string
		cfg  ginlimit.Config
		want string
	}{
		{name: "no limiter", cfg: ginlimit.Config{}, want: "no Limiter"},
		{name: "unknown scope", cfg: ginlimit.Config{Limiter: lim, Scope: "nope"}, want: `unknown scope "nope"`},
		{name: "negative cost", cfg: ginlimit.Config{Limiter: lim, Cost: -1}, want: "cost -1"},
		{name: "cost above the smallest limit", cfg: ginlimit.Config{Limiter: lim, Cost: 4}, want: "cost 4"},
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
		NumProxies: core.Proxies(0),
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
