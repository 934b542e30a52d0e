package core_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// BenchmarkCharge measures a balance decision on memstore, as
// BenchmarkDecide measures a window decision: find the caller, charge its
// balance, write the header. The thresholds are out of reach, so that
// every request is served.
func BenchmarkCharge(b *testing.B) {
	now := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name    string
		callers int
	}{{"hot", 1}, {"callers=10000", 10_000}} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New(memstore.Config{SweepInterval: -1})
			defer store.Close()
			lim, err := core.New(core.Config{
				Store:      store,
				NumProxies: core.Proxies(0),
				Now:        func() time.Time { return now },
				Balances:   []core.BalanceScope{{Name: "ws", BalancePolicy: core.BalancePolicy{Window: 32 * time.Second, Warn: core.MaxLimit, Drop: core.MaxLimit}}},
			})
			if err != nil {
				b.Fatal(err)
			}
			reqs := benchRequests(bc.callers, "/ws")
			bal, err := lim.BalanceGuard("ws")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				h := http.Header{}
				i := 0
				for pb.Next() {
					i++
					r := reqs[i%len(reqs)]
					if d := bal.Decide(ctx, lim.Caller(r, core.Caller{}), 0, h); !d.Allowed {
						b.Fatal("dropped")
					}
				}
			})
		})
	}
}
