package benchmarks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/didip/tollbooth/v7"
	tblimiter "github.com/didip/tollbooth/v7/limiter"
	"github.com/go-chi/httprate"
	echomw "github.com/labstack/echo/v4/middleware"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	throttledmem "github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulemem "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"

	"github.com/ratescope/ratescope/benchmarks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// memWindow is the length of both windows of the peers in BenchmarkMemory.
// Their expiry runs on the wall clock, so the benchmark waits for it: short
// windows keep that wait short. The memory a caller costs does not depend
// on the window's length. Recording MemoryCallers callers must take less
// than memWindow, or the peak is measured after some callers expired.
const memWindow = 8 * time.Second

// memSubject is a limiter under BenchmarkMemory.
type memSubject struct {
	// take decides one request from caller i, as the limiter's middleware
	// would, key included.
	take func(i int)
	// idle makes every caller, the last of which came at last, quiet
	// past the windows and runs the limiter's own expiry; nil if it has
	// none.
	idle func(start time.Time)
}

var memContenders = []struct {
	name  string
	build func(tb testing.TB) memSubject
}{
	{"ratescope", func(tb testing.TB) memSubject {
		// The memory store's sweep runs on its own clock; the benchmark
		// calls Sweep with a fake time instead, so nothing waits.
		clock := storetest.NewClock(storetest.Start)
		st := memstore.New(memstore.Config{SweepInterval: -1})
		cfg := ratescopeConfig(st, core.PerMinute(benchmarks.Limit), core.PerDay(benchmarks.Limit))
		cfg.Now = clock.Now
		lim := newRatescopeFrom(tb, cfg)
		ctx := context.Background()
		return memSubject{
			take: func(i int) {
				caller := core.NetworkCaller(netip.PrefixFrom(benchmarks.CallerAddr(i), 32))
				if _, err := lim.AllowN(ctx, "api", caller, 1); err != nil {
					tb.Fatal(err)
				}
			},
			idle: func(time.Time) {
				clock.Advance(49 * time.Hour)
				st.Sweep(clock.Now())
			},
		}
	}},
	{"ulule", func(tb testing.TB) memSubject {
		opts := ulule.StoreOptions{Prefix: "limiter", CleanUpInterval: memWindow / 8}
		r := ulule.Rate{Period: memWindow, Limit: benchmarks.Limit}
		min, day := ulule.New(ulemem.NewStoreWithOptions(opts), r), ulule.New(ulemem.NewStoreWithOptions(opts), r)
		ctx := context.Background()
		return memSubject{
			take: func(i int) {
				key := benchmarks.CallerAddr(i).String()
				min.Get(ctx, key)
				day.Get(ctx, key)
			},
			idle: func(last time.Time) { sleepUntil(last.Add(memWindow + memWindow/4)) },
		}
	}},
	{"throttled", func(tb testing.TB) memSubject {
		var rls []*throttled.GCRARateLimiterCtx
		for range 2 {
			st, err := throttledmem.NewCtx(0)
			if err != nil {
				tb.Fatal(err)
			}
			rl, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{
				MaxRate: throttled.PerDuration(benchmarks.Limit, memWindow), MaxBurst: benchmarks.Limit - 1,
			})
			if err != nil {
				tb.Fatal(err)
			}
			rls = append(rls, rl)
		}
		ctx := context.Background()
		return memSubject{take: func(i int) {
			key := benchmarks.CallerAddr(i).String()
			for _, rl := range rls {
				rl.RateLimitCtx(ctx, key, 1)
			}
		}}
	}},
	{"sethvargo", func(tb testing.TB) memSubject {
		cfg := &memorystore.Config{Tokens: benchmarks.Limit, Interval: memWindow, SweepInterval: memWindow / 8, SweepMinTTL: memWindow}
		min, err := memorystore.New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		day, err := memorystore.New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		ctx := context.Background()
		tb.Cleanup(func() { min.Close(ctx); day.Close(ctx) })
		return memSubject{
			take: func(i int) {
				key := benchmarks.CallerAddr(i).String()
				min.Take(ctx, key)
				day.Take(ctx, key)
			},
			idle: func(last time.Time) { sleepUntil(last.Add(memWindow + memWindow/2)) },
		}
	}},
	{"httprate", func(tb testing.TB) memSubject {
		min, day := httprate.NewRateLimiter(benchmarks.Limit, memWindow), httprate.NewRateLimiter(benchmarks.Limit, memWindow)
		w := &discardWriter{h: make(http.Header)}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		take := func(key string) {
			clear(w.h)
			min.OnLimit(w, r, key)
			day.OnLimit(w, r, key)
		}
		return memSubject{
			take: func(i int) { take(benchmarks.CallerAddr(i).String()) },
			// Counters of past windows are dropped by the next request
			// once two windows have passed.
			idle: func(last time.Time) {
				sleepUntil(last.Add(2*memWindow + memWindow/4))
				take("192.0.2.1")
			},
		}
	}},
	{"tollbooth", func(tb testing.TB) memSubject {
		var lmts []*tblimiter.Limiter
		for range 2 {
			lmt := tollbooth.NewLimiter(benchmarks.Limit/memWindow.Seconds(), &tblimiter.ExpirableOptions{DefaultExpirationTTL: memWindow})
			lmt.SetBurst(benchmarks.Limit)
			lmts = append(lmts, lmt)
		}
		return memSubject{
			take: func(i int) {
				key := benchmarks.CallerAddr(i).String()
				for _, l := range lmts {
					l.LimitReached(key)
				}
			},
			idle: func(last time.Time) {
				sleepUntil(last.Add(memWindow + memWindow/4))
				for _, l := range lmts {
					l.DeleteExpiredTokenBuckets()
				}
			},
		}
	}},
	{"echo", func(tb testing.TB) memSubject {
		cfg := echomw.RateLimiterMemoryStoreConfig{Rate: rate.Limit(benchmarks.Limit / memWindow.Seconds()), Burst: benchmarks.Limit, ExpiresIn: memWindow}
		min, day := echomw.NewRateLimiterMemoryStoreWithConfig(cfg), echomw.NewRateLimiterMemoryStoreWithConfig(cfg)
		take := func(key string) {
			min.Allow(key)
			day.Allow(key)
		}
		return memSubject{
			take: func(i int) { take(benchmarks.CallerAddr(i).String()) },
			// A store drops quiet callers during a request, at most once
			// per ExpiresIn.
			idle: func(last time.Time) {
				sleepUntil(last.Add(memWindow + memWindow/4))
				take("192.0.2.1")
			},
		}
	}},
	{"xrate", func(tb testing.TB) memSubject {
		min, day := newRateMap(benchmarks.Limit, memWindow), newRateMap(benchmarks.Limit, memWindow)
		return memSubject{take: func(i int) {
			key := benchmarks.CallerAddr(i).String()
			min.allow(key)
			day.allow(key)
		}}
	}},
}

// sleepUntil waits for the wall clock to reach t, the only way to let
// expiry that reads the wall clock run.
func sleepUntil(t time.Time) {
	time.Sleep(time.Until(t))
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// heap returns the live heap after a full collection.
func heap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkMemory reports, for each limiter enforcing two limits (stacked
// where it keeps one per instance), the heap bytes per tracked caller once
// MemoryCallers callers have sent one request each (B/caller), and the heap
// still held per caller after they all went quiet past the windows and the
// limiter's expiry ran (B/caller-idle, and %held-idle of the peak). A
// limiter with no expiry holds everything. It does its work once, whatever
// b.N: run it with -benchtime=1x.
func BenchmarkMemory(b *testing.B) {
	for _, c := range memContenders {
		b.Run("limiter="+c.name, func(b *testing.B) {
			before := heap()
			s := c.build(b)
			start := time.Now()
			for i := range benchmarks.MemoryCallers {
				s.take(i)
			}
			took := time.Since(start)
			peak := heap() - before
			if c.name != "ratescope" && took >= memWindow {
				b.Logf("recording the callers took %s, past the %s window: the peak may be low", took, memWindow)
			}
			held := peak
			if s.idle != nil {
				s.idle(start.Add(took))
				held = heap() - before
			}
			runtime.KeepAlive(s)
			n := float64(benchmarks.MemoryCallers)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(peak)/n, "B/caller")
			b.ReportMetric(max(float64(held), 0)/n, "B/caller-idle")
			b.ReportMetric(100*max(float64(held), 0)/float64(peak), "%held-idle")
			b.ReportMetric(took.Seconds()*1e9/n, "ns/new-caller")
		})
	}
}
