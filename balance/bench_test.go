package balance_test

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// BenchmarkCharge measures a balance decision on memstore, as core's
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
				NumProxies: new(0),
				Now:        func() time.Time { return now },
			})
			if err != nil {
				b.Fatal(err)
			}
			bal, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ws", Policy: balance.Policy{Window: 32 * time.Second, Warn: core.MaxLimit, Drop: core.MaxLimit}})
			if err != nil {
				b.Fatal(err)
			}
			reqs := benchRequests(bc.callers, "/ws")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				h := http.Header{}
				i := 0
				for pb.Next() {
					i++
					r := reqs[i%len(reqs)]
					d := bal.Charge(ctx, lim.Caller(r, core.Caller{}), 0)
					d.SetHeaders(h)
					if !d.Allowed {
						b.Fatal("dropped")
					}
				}
			})
		})
	}
}

// benchRequests returns n requests for path from n addresses.
func benchRequests(n int, path string) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r, _ := http.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = a.String() + ":" + strconv.Itoa(1024+i%1000)
		reqs[i] = r
	}
	return reqs
}
