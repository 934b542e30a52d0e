package core_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// BenchmarkDecide measures what a middleware does per request: find the
// caller, decide against a minute and a day limit, write the headers
// ([core.Guard]).
func BenchmarkDecide(b *testing.B) {
	now := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name    string
		callers int
		shared  bool
	}{{"hot", 1, false}, {"callers=10000", 10_000, false}, {"shared/hot", 1, true}, {"shared/callers=10000", 10_000, true}} {
		b.Run(bc.name, func(b *testing.B) {
			ms := memstore.New(memstore.Config{SweepInterval: -1})
			defer ms.Close()
			var store core.Store = ms
			if bc.shared {
				store = sharedStore{ms}
			}
			lim, err := core.New(core.Config{
				Store:      store,
				Rates:      map[string]string{"api.anon": "2000000000/min,2000000000/day"},
				NumProxies: new(0),
				Now:        func() time.Time { return now },
			})
			if err != nil {
				b.Fatal(err)
			}
			reqs := benchRequests(bc.callers, "/api/records")
			guard, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				h := http.Header{}
				var t core.Ticket
				i := 0
				for pb.Next() {
					i++
					r := reqs[i%len(reqs)]
					if guard.Check(ctx, &t, core.Call{Caller: lim.Caller(r, core.Caller{}), Header: h}); !t.Allowed() {
						b.Fatal("denied")
					}
				}
			})
		})
	}
}

// sharedStore is a memory store that reports itself shared, as the Redis
// store does: the limiter then keeps its view of the callers, fed by every
// answer, to decide in memory when the store is late (ADR 0007). It
// measures what that view costs on the healthy path, without Redis's.
type sharedStore struct{ *memstore.Store }

// Shared reports true.
func (sharedStore) Shared() bool { return true }

// benchRequests returns n requests for path from n callers, 10.0.0.0 on.
func benchRequests(n int, path string) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, path, nil)
		reqs[i].RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":1234"
	}
	return reqs
}

// BenchmarkDecideModes measures what the observation hook and shadow mode
// cost when used: a decision with no hook, with a hook that does nothing,
// and over the limit, enforced and in shadow mode.
func BenchmarkDecideModes(b *testing.B) {
	now := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name    string
		rates   string
		observe bool
		shadow  bool
	}{
		{name: "allowed", rates: "2000000000/min"},
		{name: "allowed/observed", rates: "2000000000/min", observe: true},
		{name: "over/denied", rates: "1/day"},
		{name: "over/shadow", rates: "1/day", shadow: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New(memstore.Config{SweepInterval: -1})
			defer store.Close()
			cfg := core.Config{
				Store:      store,
				Rates:      map[string]string{"api.anon": bc.rates},
				NumProxies: new(0),
				Now:        func() time.Time { return now },
				Logger:     slog.New(slog.DiscardHandler),
			}
			if bc.shadow {
				cfg.Scopes = shadowAPI()
			}
			if bc.observe {
				cfg.Observe = func(context.Context, core.Event) {}
			}
			lim, err := core.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			guard, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
			r.RemoteAddr = "10.0.0.1:1234"
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				h := http.Header{}
				var t core.Ticket
				for pb.Next() {
					guard.Check(ctx, &t, core.Call{Caller: lim.Caller(r, core.Caller{}), Header: h})
				}
			})
		})
	}
}

// BenchmarkSetHeaders measures writing the RateLimit-Policy and RateLimit
// fields of a decision with a minute and a day limit.
func BenchmarkSetHeaders(b *testing.B) {
	store := memstore.New(memstore.Config{SweepInterval: -1})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "1000000000/min,1000000000/day"},
		NumProxies: new(0),
	})
	if err != nil {
		b.Fatal(err)
	}
	d, err := lim.Allow(context.Background(), "api", core.Caller{})
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		clear(h)
		d.SetHeaders(h)
	}
}
