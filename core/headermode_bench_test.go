package core_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// BenchmarkDecideHeaders measures what a middleware does per served
// request under each header policy: find the caller, decide against a
// minute and a day limit ([core.Guard.Check]) and write the fields
// the policy asks for, into a header map that is cleared each time as a
// new response's is empty.
func BenchmarkDecideHeaders(b *testing.B) {
	now := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	for _, mode := range []core.HeaderMode{core.HeadersAll, core.HeadersRefused, core.HeadersNone} {
		for _, bc := range []struct {
			name    string
			callers int
		}{{"hot", 1}, {"callers=10000", 10_000}} {
			b.Run("headers="+mode.String()+"/"+bc.name, func(b *testing.B) {
				store := memstore.New(memstore.Config{SweepInterval: -1})
				defer store.Close()
				lim, err := core.New(core.Config{
					Store:      store,
					Rates:      map[string]string{"api.anon": "2000000000/min,2000000000/day"},
					NumProxies: new(0),
					Now:        func() time.Time { return now },
					Headers:    mode,
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
						clear(h)
						r := reqs[i%len(reqs)]
						guard.Check(ctx, &t, core.Call{Caller: lim.Caller(r, core.Caller{}), Header: h})
						if !t.Allowed() {
							b.Fatal("denied")
						}
					}
				})
			})
		}
	}
}
