package core_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// BenchmarkDecidePlan measures a signed-in caller's decision on the scope's
// own rates and on a plan chosen with Call.Plan, one hot caller.
func BenchmarkDecidePlan(b *testing.B) {
	now := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	store := memstore.New(memstore.Config{SweepInterval: -1})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.user": "2000000000/min,2000000000/day", "api.user@gold": "2000000000/min,2000000000/day"},
		NumProxies: new(0),
		Now:        func() time.Time { return now },
	})
	if err != nil {
		b.Fatal(err)
	}
	guard, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, plan := range []string{"", "gold"} {
		b.Run("plan="+plan, func(b *testing.B) {
			ctx := context.Background()
			alice := core.UserCaller("alice")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				h := http.Header{}
				var t core.Ticket
				for pb.Next() {
					guard.Check(ctx, &t, core.Call{Caller: alice, Plan: plan, Header: h})
					if !t.Allowed() {
						b.Fatal("denied")
					}
				}
			})
		})
	}
}
