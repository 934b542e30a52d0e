package benchmarks_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/didip/tollbooth/v7"
	tblimiter "github.com/didip/tollbooth/v7/limiter"
	"github.com/gin-gonic/gin"
	"github.com/go-chi/httprate"
	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"
	echo5 "github.com/labstack/echo/v5"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	throttledmem "github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulegin "github.com/ulule/limiter/v3/drivers/middleware/gin"
	ulestd "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulemem "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"
)

const day = 24 * time.Hour

// A contender is one way of limiting requests, mounted on Gin, on Echo or
// both. Each builder returns the middleware that enforces n requests a
// minute and n a day per peer address; a nil builder means the contender is
// not offered for that framework.
type contender struct {
	name string
	// stacked reports that the contender keeps one limit per instance and
	// runs two of them, one per limit.
	stacked bool
	gin     func(tb testing.TB, n int) []gin.HandlerFunc
	echo    func(tb testing.TB, n int) []echo.MiddlewareFunc
	echo5   func(tb testing.TB, n int) []echo5.MiddlewareFunc
}

// stdMiddleware is the net/http middleware shape most peers offer.
type stdMiddleware = func(http.Handler) http.Handler

// fromStd builds a contender from net/http middleware, mounted on both
// frameworks through the bridges of bridge_test.go.
func fromStd(name string, build func(tb testing.TB, n int) []stdMiddleware) contender {
	return contender{
		name:    name,
		stacked: true,
		gin: func(tb testing.TB, n int) []gin.HandlerFunc {
			var hs []gin.HandlerFunc
			for _, m := range build(tb, n) {
				hs = append(hs, ginBridge(m))
			}
			return hs
		},
		echo: func(tb testing.TB, n int) []echo.MiddlewareFunc {
			var ms []echo.MiddlewareFunc
			for _, m := range build(tb, n) {
				ms = append(ms, echoBridge(m))
			}
			return ms
		},
		echo5: func(tb testing.TB, n int) []echo5.MiddlewareFunc {
			var ms []echo5.MiddlewareFunc
			for _, m := range build(tb, n) {
				ms = append(ms, echo5Bridge(m))
			}
			return ms
		},
	}
}

// bothPeriods are the two limits every contender enforces; onePeriod is
// the minute limit alone, for the one-window variants of the peers.
var (
	bothPeriods = []time.Duration{time.Minute, day}
	onePeriod   = []time.Duration{time.Minute}
)

// contenders are the limiters of the HTTP benchmarks, baseline first: each
// peer with both limits (stacked) and, suffixed "-1w", with the minute
// limit alone, the work it does for one window.
var contenders = slices.Concat([]contender{
	{
		name:  "baseline",
		gin:   func(testing.TB, int) []gin.HandlerFunc { return nil },
		echo:  func(testing.TB, int) []echo.MiddlewareFunc { return nil },
		echo5: func(testing.TB, int) []echo5.MiddlewareFunc { return nil },
	},
	// nop is one native middleware that does nothing: what the framework
	// charges any middleware (Echo v4 builds the chain, a closure per
	// middleware, on every request).
	{
		name: "nop",
		gin:  func(testing.TB, int) []gin.HandlerFunc { return []gin.HandlerFunc{func(c *gin.Context) { c.Next() }} },
		echo: func(testing.TB, int) []echo.MiddlewareFunc {
			return []echo.MiddlewareFunc{func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c echo.Context) error { return next(c) }
			}}
		},
		echo5: func(testing.TB, int) []echo5.MiddlewareFunc {
			return []echo5.MiddlewareFunc{func(next echo5.HandlerFunc) echo5.HandlerFunc {
				return func(c *echo5.Context) error { return next(c) }
			}}
		},
	},
	// bridge is a net/http middleware that does nothing, mounted through
	// the bridges: what the peers without Gin or Echo glue pay before they
	// start (twice, since they are stacked).
	fromStd("bridge", func(testing.TB, int) []stdMiddleware {
		pass := func(next http.Handler) http.Handler { return next }
		return []stdMiddleware{pass, pass}
	}),
}, ratescopeContenders, peers("", bothPeriods), peers("-1w", onePeriod))

// peers returns the peer contenders enforcing n per period for each of
// periods, the name of each followed by suffix.
func peers(suffix string, periods []time.Duration) []contender {
	stacked := len(periods) > 1
	cs := []contender{
		{
			name: "ulule",
			gin: func(tb testing.TB, n int) []gin.HandlerFunc {
				var hs []gin.HandlerFunc
				for _, l := range ululeLimiters(n, periods) {
					hs = append(hs, ulegin.NewMiddleware(l))
				}
				return hs
			},
			echo: func(tb testing.TB, n int) []echo.MiddlewareFunc {
				var ms []echo.MiddlewareFunc
				for _, l := range ululeLimiters(n, periods) {
					ms = append(ms, echoBridge(ulestd.NewMiddleware(l).Handler))
				}
				return ms
			},
			echo5: func(tb testing.TB, n int) []echo5.MiddlewareFunc {
				var ms []echo5.MiddlewareFunc
				for _, l := range ululeLimiters(n, periods) {
					ms = append(ms, echo5Bridge(ulestd.NewMiddleware(l).Handler))
				}
				return ms
			},
		},
		fromStd("throttled", func(tb testing.TB, n int) []stdMiddleware {
			var ms []stdMiddleware
			for _, p := range periods {
				st, err := throttledmem.NewCtx(0)
				if err != nil {
					tb.Fatal(err)
				}
				r := throttled.PerMin(n)
				if p == day {
					r = throttled.PerDay(n)
				}
				rl, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: r, MaxBurst: n - 1})
				if err != nil {
					tb.Fatal(err)
				}
				h := &throttled.HTTPRateLimiterCtx{RateLimiter: rl, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
				ms = append(ms, h.RateLimit)
			}
			return ms
		}),
		fromStd("sethvargo", func(tb testing.TB, n int) []stdMiddleware {
			var ms []stdMiddleware
			for _, p := range periods {
				st, err := memorystore.New(&memorystore.Config{Tokens: uint64(n), Interval: p})
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(func() { st.Close(context.Background()) })
				m, err := httplimit.NewMiddleware(st, httplimit.IPKeyFunc())
				if err != nil {
					tb.Fatal(err)
				}
				ms = append(ms, m.Handle)
			}
			return ms
		}),
		fromStd("httprate", func(tb testing.TB, n int) []stdMiddleware {
			var ms []stdMiddleware
			for _, p := range periods {
				ms = append(ms, httprate.LimitBy(n, p, peerKey))
			}
			return ms
		}),
		fromStd("tollbooth", func(tb testing.TB, n int) []stdMiddleware {
			var ms []stdMiddleware
			for _, p := range periods {
				lmt := tollbooth.NewLimiter(float64(n)/p.Seconds(), &tblimiter.ExpirableOptions{DefaultExpirationTTL: 2 * p})
				lmt.SetBurst(n)
				lmt.SetIPLookups([]string{"RemoteAddr"})
				lmt.SetIgnoreURL(true)
				ms = append(ms, func(next http.Handler) http.Handler { return tollbooth.LimitHandler(lmt, next) })
			}
			return ms
		}),
		{
			name: "echo",
			echo: func(tb testing.TB, n int) []echo.MiddlewareFunc {
				var ms []echo.MiddlewareFunc
				for _, p := range periods {
					st := echomw.NewRateLimiterMemoryStoreWithConfig(echomw.RateLimiterMemoryStoreConfig{
						Rate: rate.Limit(float64(n) / p.Seconds()), Burst: n, ExpiresIn: 2 * p,
					})
					ms = append(ms, echomw.RateLimiterWithConfig(echomw.RateLimiterConfig{Store: st}))
				}
				return ms
			},
		},
		{
			name: "xrate",
			gin: func(tb testing.TB, n int) []gin.HandlerFunc {
				var hs []gin.HandlerFunc
				for _, p := range periods {
					hs = append(hs, newRateMap(n, p).gin)
				}
				return hs
			},
			echo: func(tb testing.TB, n int) []echo.MiddlewareFunc {
				var ms []echo.MiddlewareFunc
				for _, p := range periods {
					ms = append(ms, newRateMap(n, p).echo)
				}
				return ms
			},
			echo5: func(tb testing.TB, n int) []echo5.MiddlewareFunc {
				var ms []echo5.MiddlewareFunc
				for _, p := range periods {
					ms = append(ms, newRateMap(n, p).echo5)
				}
				return ms
			},
		},
	}
	for i := range cs {
		cs[i].name += suffix
		cs[i].stacked = stacked
	}
	return cs
}

// ululeLimiters returns ulule limiters of n per period, each with a memory
// store of its own (a store keeps one count per key, whatever the rate, so
// two limits cannot share one).
func ululeLimiters(n int, periods []time.Duration) []*ulule.Limiter {
	var ls []*ulule.Limiter
	for _, p := range periods {
		st := ulemem.NewStoreWithOptions(ulule.StoreOptions{Prefix: p.String(), CleanUpInterval: ulule.DefaultCleanUpInterval})
		ls = append(ls, ulule.New(st, ulule.Rate{Period: p, Limit: int64(n)}))
	}
	return ls
}

// peerKey keys a request by its peer address, as httprate's documentation
// shows for a server with no proxy in front.
func peerKey(r *http.Request) (string, error) {
	return httprate.CanonicalizeIP(peerHost(r)), nil
}

// peerHost returns the host part of r.RemoteAddr.
func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateMap is the hand-rolled limiter: a token bucket of x/time/rate per
// peer address, in a map under a mutex. It sets no headers and never
// forgets a caller.
type rateMap struct {
	mu    sync.Mutex
	m     map[string]*rate.Limiter
	limit rate.Limit
	burst int
}

func newRateMap(n int, period time.Duration) *rateMap {
	return &rateMap{m: make(map[string]*rate.Limiter), limit: rate.Limit(float64(n) / period.Seconds()), burst: n}
}

func (rm *rateMap) allow(key string) bool {
	rm.mu.Lock()
	l := rm.m[key]
	if l == nil {
		l = rate.NewLimiter(rm.limit, rm.burst)
		rm.m[key] = l
	}
	rm.mu.Unlock()
	return l.Allow()
}

func (rm *rateMap) gin(c *gin.Context) {
	if !rm.allow(peerHost(c.Request)) {
		c.AbortWithStatus(http.StatusTooManyRequests)
		return
	}
	c.Next()
}

func (rm *rateMap) echo(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !rm.allow(peerHost(c.Request())) {
			return echo.ErrTooManyRequests
		}
		return next(c)
	}
}

func (rm *rateMap) echo5(next echo5.HandlerFunc) echo5.HandlerFunc {
	return func(c *echo5.Context) error {
		if !rm.allow(peerHost(c.Request())) {
			return echo5.ErrTooManyRequests
		}
		return next(c)
	}
}
