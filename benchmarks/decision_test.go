package benchmarks_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	echomw "github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/ratescope/ratescope/benchmarks"
	"github.com/ratescope/ratescope/core"
)

// BenchmarkDecision measures the limiters alone, with no framework: what
// is left of a request's cost once the framework's and the headers' are
// taken away. ratescope: the caller from the request and a decision on
// two windows (core.Guard.Check, refusals-only headers, so nothing is
// written for a served request); xrate: the peer's host and the map's
// x/time/rate bucket, one window or two; echo: the host and Echo's
// memory store, one window or two. It is not part of run.sh's tables: it
// is the floor the README's like-for-like section explains.
func BenchmarkDecision(b *testing.B) {
	type decider func(r *http.Request) bool
	cases := []struct {
		name  string
		build func(tb testing.TB) decider
	}{
		{"ratescope-refused", func(tb testing.TB) decider {
			lim := newRatescopeHeaders(tb, benchmarks.Limit, core.HeadersRefused)
			g, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			if err != nil {
				tb.Fatal(err)
			}
			ctx := context.Background()
			return func(r *http.Request) bool {
				var t core.Ticket
				g.Check(ctx, &t, core.Call{Caller: lim.Caller(r, core.Caller{})})
				return t.Allowed()
			}
		}},
		{"xrate-1w", func(testing.TB) decider {
			m := newRateMap(benchmarks.Limit, time.Minute)
			return func(r *http.Request) bool { return m.allow(peerHost(r)) }
		}},
		{"xrate", func(testing.TB) decider {
			m, d := newRateMap(benchmarks.Limit, time.Minute), newRateMap(benchmarks.Limit, day)
			return func(r *http.Request) bool { h := peerHost(r); return m.allow(h) && d.allow(h) }
		}},
		{"echo-1w", func(testing.TB) decider {
			st := echoStore(time.Minute)
			return func(r *http.Request) bool { ok, _ := st.Allow(peerHost(r)); return ok }
		}},
		{"echo", func(testing.TB) decider {
			m, d := echoStore(time.Minute), echoStore(day)
			return func(r *http.Request) bool {
				h := peerHost(r)
				ok, _ := m.Allow(h)
				if !ok {
					return false
				}
				ok, _ = d.Allow(h)
				return ok
			}
		}},
	}
	for _, c := range cases {
		for _, cc := range callerCases {
			b.Run("limiter="+c.name+"/"+cc.name, func(b *testing.B) {
				decide := c.build(b)
				reqs := make([]*http.Request, cc.n)
				for i := range reqs {
					reqs[i] = request(benchmarks.RemoteAddr(i))
				}
				var start, bad atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := int(start.Add(1)) * 7919
					for pb.Next() {
						if !decide(reqs[i%len(reqs)]) {
							bad.Add(1)
						}
						i++
					}
				})
				if n := bad.Load(); n > 0 {
					b.Fatalf("%d of %d decisions refused", n, b.N)
				}
			})
		}
	}
}

// echoStore is the memory store of Echo's RateLimiter, as the echo
// contender builds it.
func echoStore(p time.Duration) *echomw.RateLimiterMemoryStore {
	return echomw.NewRateLimiterMemoryStoreWithConfig(echomw.RateLimiterMemoryStoreConfig{
		Rate: rate.Limit(float64(benchmarks.Limit) / p.Seconds()), Burst: benchmarks.Limit, ExpiresIn: 2 * p,
	})
}
