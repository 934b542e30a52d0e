package core_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// A caller sends heavy requests (3000 each), a hundred a second, under
// rippled's figures: warned at a balance of 5000, dropped at 15000, and
// served again once it has been quiet long enough.
func ExampleLimiter_BalanceGuard() {
	clock := storetest.NewClock(storetest.Start)
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a deterministic output
			}
			return a
		},
	}))
	lim, err := core.New(core.Config{
		Store:    memstore.New(memstore.Config{}),
		Now:      clock.Now,
		Logger:   logger,
		Balances: []core.BalanceScope{{Name: "ledger"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ledger, err := lim.BalanceGuard("ledger")
	if err != nil {
		fmt.Println(err)
		return
	}
	caller := core.UserCaller("alice")
	heavy := ledger.Scope().Costs.Heavy
	warned := false
	for i := 1; ; i++ {
		clock.Advance(10 * time.Millisecond)
		d := ledger.Charge(context.Background(), caller, heavy)
		if d.Load && !warned {
			warned = true
			fmt.Printf("request %d: warned, balance %d\n", i, d.Balance)
		}
		if !d.Allowed {
			fmt.Printf("request %d: dropped, balance %d\n", i, d.Balance)
			break
		}
	}
	clock.Advance(10 * time.Second)
	d := ledger.Charge(context.Background(), caller, heavy)
	fmt.Printf("10 s later: allowed %v, balance %d\n", d.Allowed, d.Balance)
	// Output:
	// request 54: warned, balance 5125
	// level=WARN msg="Consumer entry alice dropped with balance 15017 at or above drop threshold 15000" caller=alice balance=15017 threshold=15000 scope=ledger
	// level=INFO msg="ratescope: refused a request of a dropped caller" scope=ledger caller=alice balance=15017 suppressed=0
	// request 163: dropped, balance 15111
	// 10 s later: allowed true, balance 11156
}
