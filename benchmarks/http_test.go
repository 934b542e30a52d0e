package benchmarks_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/labstack/echo/v4"
	echo5 "github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/benchmarks"
)

func init() {
	gin.SetMode(gin.ReleaseMode)
}

// newGin returns a Gin engine that trusts no proxy (ClientIP is the peer
// address) with the middleware ms in front of one handler.
func newGin(tb testing.TB, ms []gin.HandlerFunc) http.Handler {
	e := gin.New()
	if err := e.SetTrustedProxies(nil); err != nil {
		tb.Fatal(err)
	}
	e.Use(ms...)
	e.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	return e
}

// newEcho returns an Echo instance that takes the caller's address from the
// peer (RealIP ignores proxy headers) with the middleware ms in front of one
// handler.
func newEcho(tb testing.TB, ms []echo.MiddlewareFunc) http.Handler {
	e := echo.New()
	e.IPExtractor = echo.ExtractIPDirect()
	e.Use(ms...)
	e.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	return e
}

// newEcho5 returns an Echo v5 instance that takes the caller's address
// from the peer with the middleware ms in front of one handler.
func newEcho5(ms []echo5.MiddlewareFunc) http.Handler {
	e := echo5.New()
	e.IPExtractor = echo5.ExtractIPDirect()
	e.Use(ms...)
	e.GET("/", func(c *echo5.Context) error { return c.String(http.StatusOK, "ok") })
	return e
}

// framework mounts a contender on one framework: nil if the contender is
// not offered there.
type framework struct {
	name  string
	mount func(tb testing.TB, c contender, n int) http.Handler
}

var frameworks = []framework{
	{"gin", func(tb testing.TB, c contender, n int) http.Handler {
		if c.gin == nil {
			return nil
		}
		return newGin(tb, c.gin(tb, n))
	}},
	{"echo", func(tb testing.TB, c contender, n int) http.Handler {
		if c.echo == nil {
			return nil
		}
		return newEcho(tb, c.echo(tb, n))
	}},
	{"echo5", func(tb testing.TB, c contender, n int) http.Handler {
		if c.echo5 == nil {
			return nil
		}
		return newEcho5(c.echo5(tb, n))
	}},
}

func request(remoteAddr string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remoteAddr
	return r
}

// TestSamePolicy checks that every contender enforces the policy the
// benchmarks assume: counted by peer address, with X-Forwarded-For ignored,
// so that they are compared doing the same work.
func TestSamePolicy(t *testing.T) {
	t.Parallel()
	for _, fw := range frameworks {
		for _, c := range contenders {
			if c.name == "baseline" || c.name == "bridge" || c.name == "nop" {
				continue
			}
			t.Run(fw.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				h := fw.mount(t, c, 2)
				if h == nil {
					t.Skip("not offered for " + fw.name)
				}
				for i, want := range []int{200, 200, 429} {
					r := request("192.0.2.1:1234")
					r.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != want {
						t.Errorf("request %d from one peer with a new X-Forwarded-For: status %d, want %d", i+1, w.Code, want)
					}
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, request("192.0.2.2:1234"))
				if w.Code != 200 {
					t.Errorf("first request from another peer: status %d, want 200", w.Code)
				}
			})
		}
	}
}

// recorder is a ResponseRecorder reset between requests, so that the
// harness allocates nothing per request of its own (the recorder's header
// snapshot at WriteHeader still does: that cost is in the baseline and
// grows a little with each header a limiter sets).
type recorder struct {
	w    *httptest.ResponseRecorder
	h    http.Header
	body *bytes.Buffer
}

func newRecorder() *recorder {
	r := &recorder{w: new(httptest.ResponseRecorder), h: make(http.Header), body: new(bytes.Buffer)}
	r.reset()
	return r
}

func (r *recorder) reset() {
	clear(r.h)
	r.body.Reset()
	*r.w = httptest.ResponseRecorder{HeaderMap: r.h, Body: r.body, Code: http.StatusOK}
}

// callerCases are the traffic patterns: one hot caller, and many callers in
// turn.
var callerCases = []struct {
	name string
	n    int
}{
	{"callers=1", 1},
	{"callers=10k", benchmarks.Callers},
}

func BenchmarkGin(b *testing.B)  { benchmarkHTTP(b, frameworks[0]) }
func BenchmarkEcho(b *testing.B) { benchmarkHTTP(b, frameworks[1]) }

// BenchmarkEcho5 is BenchmarkEcho on Echo v5: the peers through the same
// net/http bridge, ratescope through echo5limit (Echo's own RateLimiter is
// not mounted: the v4 row stands for it).
func BenchmarkEcho5(b *testing.B) { benchmarkHTTP(b, frameworks[2]) }

func benchmarkHTTP(b *testing.B, fw framework) {
	for _, c := range contenders {
		for _, cc := range callerCases {
			b.Run("limiter="+c.name+"/"+cc.name, func(b *testing.B) {
				h := fw.mount(b, c, benchmarks.Limit)
				if h == nil {
					b.Skip("not offered for " + fw.name)
				}
				reqs := make([]*http.Request, cc.n)
				for i := range reqs {
					reqs[i] = request(benchmarks.RemoteAddr(i))
				}
				serve(b, h, reqs)
			})
		}
	}
}

// serve sends the requests in turn through h from b.RunParallel's
// goroutines, each starting at a different place, and fails if any is not
// answered 200.
func serve(b *testing.B, h http.Handler, reqs []*http.Request) {
	var start, bad atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rec := newRecorder()
		i := int(start.Add(1)) * 7919
		for pb.Next() {
			rec.reset()
			h.ServeHTTP(rec.w, reqs[i%len(reqs)])
			if rec.w.Code != http.StatusOK {
				bad.Add(1)
			}
			i++
		}
	})
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d of %d requests not answered 200", n, b.N)
	}
}
