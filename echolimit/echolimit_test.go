package echolimit_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echolimit"
)

// newLimiter returns a limiter over store (a fresh memory store if nil),
// with 3/min and 100/day for anonymous callers and 5/min and 1000/day for
// users, one proxy, and the fake clock.
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

// newServer serves GET /api with the middleware of cfg, the user taken from
// the X-User request header, and a handler that writes "ok" along with the
// decision it reads from the context.
func newServer(t *testing.T, cfg echolimit.Config) *echo.Echo {
	t.Helper()
	if cfg.User == nil {
		cfg.User = func(c echo.Context) string { return c.Request().Header.Get("X-User") }
	}
	limit, err := echolimit.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	e.GET("/api", func(c echo.Context) error {
		d, ok := echolimit.Decision(c)
		if ok {
			c.Response().Header().Set("X-Counted", strconv.FormatBool(d.Counted))
			c.Response().Header().Set("X-Caller", d.Caller.String())
		}
		return c.String(http.StatusOK, "ok")
	}, limit)
	return e
}

// get sends GET /api from remoteAddr with the given headers.
func get(h http.Handler, remoteAddr string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.RemoteAddr = remoteAddr
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestLimit(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{Limiter: newLimiter(t, nil, clock)})

	for i := range 3 {
		w := get(e, "192.0.2.1:1234", nil)
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, "ok", w.Body.String())
		assert.Equal(t, `"api.anon.min";q=3;w=60, "api.anon.day";q=100;w=86400`, w.Header().Get("RateLimit-Policy"))
		assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=`+strconv.Itoa(2-i)+";t=")
		assert.Empty(t, w.Header().Get("Retry-After"))
		assert.Equal(t, "true", w.Header().Get("X-Counted"))
		assert.Equal(t, "192.0.2.1", w.Header().Get("X-Caller"))
	}

	w := get(e, "192.0.2.1:1234", nil)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	retry := w.Header().Get("Retry-After")
	require.NotEmpty(t, retry)
	secs, err := strconv.Atoi(retry)
	require.NoError(t, err)
	assert.Positive(t, secs)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=0;t=`)
	assert.NotEmpty(t, w.Header().Get("RateLimit-Policy"))
	assert.JSONEq(t, `{"detail":"Request was throttled. Expected available in `+retry+` seconds.","retry_after":`+retry+`}`, w.Body.String())
	assert.Empty(t, w.Header().Get("X-Counted"), "the handler must not run")

	clock.Advance(time.Duration(secs) * time.Second)
	assert.Equal(t, http.StatusOK, get(e, "192.0.2.1:1234", nil).Code, "allowed again after Retry-After")
}

func TestDenyError(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	limit, err := echolimit.New(echolimit.Config{Limiter: newLimiter(t, nil, clock)})
	require.NoError(t, err)
	e := echo.New()
	var got error
	h := limit(func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	for i := range 4 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		c := e.NewContext(req, httptest.NewRecorder())
		got = h(c)
		if i < 3 {
			require.NoError(t, got)
		}
	}
	require.ErrorIs(t, got, echolimit.ErrLimited)
	var he *echo.HTTPError
	require.ErrorAs(t, got, &he)
	assert.Equal(t, http.StatusTooManyRequests, he.Code)
	assert.IsType(t, core.DenyBody{}, he.Message)
}

func TestCallersApart(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{Limiter: newLimiter(t, nil, clock)})

	for range 3 {
		require.Equal(t, http.StatusOK, get(e, "192.0.2.1:1234", nil).Code)
	}
	require.Equal(t, http.StatusTooManyRequests, get(e, "192.0.2.1:1234", nil).Code)

	// A user signed in from the same address has a count of its own, by
	// id, with the user limits.
	w := get(e, "192.0.2.1:1234", map[string]string{"X-User": "alice"})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "alice", w.Header().Get("X-Caller"))
	assert.Contains(t, w.Header().Get("RateLimit-Policy"), `"api.user.min";q=5;w=60`)
	for range 4 {
		require.Equal(t, http.StatusOK, get(e, "198.51.100.9:1", map[string]string{"X-User": "alice"}).Code)
	}
	assert.Equal(t, http.StatusTooManyRequests, get(e, "203.0.113.5:1", map[string]string{"X-User": "alice"}).Code,
		"a user is counted by id whatever its address")
	assert.Equal(t, http.StatusOK, get(e, "192.0.2.1:1234", map[string]string{"X-User": "bob"}).Code)
	assert.Equal(t, http.StatusOK, get(e, "192.0.2.2:1234", nil).Code, "another address has its own count")
}

func TestForwardedForSpoofing(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{Limiter: newLimiter(t, nil, clock)})

	// Behind one proxy (10.0.0.1), the caller at 203.0.113.7 writes a new
	// left-hand entry each time; the proxy appends the real address.
	spoof := func(i int) map[string]string {
		return map[string]string{
			"X-Forwarded-For": "198.51.100." + strconv.Itoa(i) + ", 203.0.113.7",
			"X-Real-IP":       "198.51.100." + strconv.Itoa(i),
		}
	}
	for i := range 3 {
		w := get(e, "10.0.0.1:5555", spoof(i))
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "203.0.113.7", w.Header().Get("X-Caller"))
	}
	assert.Equal(t, http.StatusTooManyRequests, get(e, "10.0.0.1:5555", spoof(9)).Code)
	assert.Equal(t, http.StatusTooManyRequests, get(e, "10.0.0.1:5555", map[string]string{"X-Forwarded-For": "203.0.113.7"}).Code)
	assert.Equal(t, http.StatusOK, get(e, "10.0.0.1:5555", map[string]string{"X-Forwarded-For": "203.0.113.8"}).Code)
}

func TestSkipper(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{
		Limiter: newLimiter(t, nil, clock),
		Skipper: func(c echo.Context) bool { return c.Request().Header.Get("X-Skip") == "yes" },
	})
	for range 10 {
		w := get(e, "192.0.2.1:1234", map[string]string{"X-Skip": "yes"})
		require.Equal(t, http.StatusOK, w.Code)
		assert.Empty(t, w.Header().Get("X-Counted"), "a skipped request has no decision")
		assert.Empty(t, w.Header().Get("RateLimit"))
	}
	w := get(e, "192.0.2.1:1234", nil)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=2;t=`, "skipped requests are not counted")
}

func TestExempt(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{
		Limiter: newLimiter(t, nil, clock),
		Exempt:  func(_ echo.Context, c core.Caller) bool { return c.User == "admin" },
	})
	for range 10 {
		w := get(e, "192.0.2.1:1234", map[string]string{"X-User": "admin"})
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "false", w.Header().Get("X-Counted"))
		assert.Equal(t, "admin", w.Header().Get("X-Caller"))
		assert.Empty(t, w.Header().Get("RateLimit"))
		assert.Empty(t, w.Header().Get("RateLimit-Policy"))
	}
	w := get(e, "192.0.2.1:1234", map[string]string{"X-User": "alice"})
	assert.Equal(t, "true", w.Header().Get("X-Counted"))
}

func TestCost(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{Limiter: newLimiter(t, nil, clock), Cost: 2})

	w := get(e, "192.0.2.1:1234", nil)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.min";r=1;t=`)
	assert.Contains(t, w.Header().Get("RateLimit"), `"api.anon.day";r=98;t=`)
	assert.Equal(t, http.StatusTooManyRequests, get(e, "192.0.2.1:1234", nil).Code, "2 units left of 3 is not enough")
}

func TestDenyHandler(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(storetest.Start)
	e := newServer(t, echolimit.Config{
		Limiter: newLimiter(t, nil, clock),
		DenyHandler: func(c echo.Context, d *core.Decision) error {
			return c.String(http.StatusServiceUnavailable, "slow down, "+d.Caller.String())
		},
	})
	for range 3 {
		require.Equal(t, http.StatusOK, get(e, "192.0.2.1:1234", nil).Code)
	}
	w := get(e, "192.0.2.1:1234", nil)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "slow down, 192.0.2.1", w.Body.String(), "the handler must not run")
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
		e := newServer(t, echolimit.Config{Limiter: lim})
		for range 5 {
			w := get(e, "192.0.2.1:1234", nil)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "false", w.Header().Get("X-Counted"))
			assert.Empty(t, w.Header().Get("RateLimit"))
		}
	})
	t.Run("error handler refuses", func(t *testing.T) {
		t.Parallel()
		var got error
		e := newServer(t, echolimit.Config{
			Limiter: lim,
			ErrorHandler: func(_ echo.Context, err error) error {
				got = err
				return echo.NewHTTPError(http.StatusServiceUnavailable)
			},
		})
		w := get(e, "192.0.2.1:1234", nil)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.ErrorIs(t, got, errDown)
	})
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	lim := newLimiter(t, nil, storetest.NewClock(storetest.Start))
	tests := []struct {
		name string
		cfg  echolimit.Config
		want string
	}{
		{name: "no limiter", cfg: echolimit.Config{}, want: "no Limiter"},
		{name: "unknown scope", cfg: echolimit.Config{Limiter: lim, Scope: "nope"}, want: `unknown scope "nope"`},
		{name: "negative cost", cfg: echolimit.Config{Limiter: lim, Cost: -1}, want: "cost -1"},
		{name: "cost above the smallest limit", cfg: echolimit.Config{Limiter: lim, Cost: 4}, want: "cost 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := echolimit.New(tt.cfg)
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, err, tt.cfg.Validate())
		})
	}
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
	limit, err := echolimit.New(echolimit.Config{Limiter: lim})
	require.NoError(b, err)
	e := echo.New()
	e.GET("/api", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, limit)
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
