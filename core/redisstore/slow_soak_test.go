//go:build soak

package redisstore_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestSoakSlowProcess measures the curve of ADR 0007: a burst of 10,000
// decisions for one caller on a healthy Redis server, with the default
// Timeout, while busy goroutines slow the process down; it prints, per
// number of busy goroutines, the slowdown of a fixed CPU task and the share
// of the burst that failed open. Run it with GOMAXPROCS=1 and with and
// without -race for the conditions of the ADR.
func TestSoakSlowProcess(t *testing.T) {
	t.Logf("GOMAXPROCS %d", runtime.GOMAXPROCS(0))
	for _, busy := range []int{0, 1, 2, 4, 8, 16, 32, 64} {
		t.Run(fmt.Sprint(busy), func(t *testing.T) {
			factor := slowdown(busy)
			s := loadStore(t, redisstore.Config{Client: newClient(t, server.Addr), CacheSize: -1})
			warmUp(t, s)
			req := storecall.Request{Scope: fmt.Sprintf("slow-%d", busy), Caller: core.UserCaller("hot"), Limits: []core.Rate{core.PerMinute(100)}, Cost: 1, Now: storetest.Start}
			stop := spin(busy)
			o := all(s, func(int) storecall.Request { return req }, 10000)
			stop()
			fmt.Printf("CURVE busy=%d slowdown=%.1f failed_open=%.2f%% allowed=%d slowest=%s\n", busy, factor, float64(o.failed.Load())/100, o.allowed.Load(), o)
		})
	}
}
