package balance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// A JSON-RPC API on net/http limited as the XRP Ledger server limits its
// own: each call charged by its method, "warning":"load" inside result
// near the limit, 503 "Server is overloaded" beyond it. Here the drop
// threshold is low, so that the third heavy call is refused.
func Example() {
	// rippled's figures with low thresholds (a policy with any figure set
	// must set its window and thresholds, so start from the default one,
	// whose warning and drop costs scale with the thresholds).
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 100, 150
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		log.Fatal(err)
	}
	ledger, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ledger", Policy: policy})
	if err != nil {
		log.Fatal(err)
	}
	rpc := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		cost := balance.CostMalformed
		if json.NewDecoder(r.Body).Decode(&req) == nil && req.Method == "path_find" {
			cost = balance.CostHeavy
		}
		d := ledger.Charge(r.Context(), lim.Caller(r, core.Caller{}), cost)
		d.SetHeaders(w.Header())
		if !d.Allowed {
			balance.WriteOverloaded(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"result": balance.WarnJSON(d.Load, map[string]string{"status": "success"})})
	}

	for range 3 {
		w := httptest.NewRecorder()
		rpc(w, httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(`{"method":"path_find"}`)))
		fmt.Println(w.Code, w.Header().Get("Ratescope-Warning"), strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200  {"result":{"status":"success"}}
	// 200 load {"result":{"warning":"load","status":"success"}}
	// 503  Server is overloaded
}

// A caller sends heavy requests (3000 each), a hundred a second, under
// rippled's figures: warned at a balance of 5000, dropped at 15000, and
// served again once it has been quiet long enough.
func ExampleGuard_Charge() {
	clock := storetest.NewClock(storetest.Start)
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a deterministic output
			}
			return a
		},
	}))
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, Now: clock.Now, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	ledger, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ledger"})
	if err != nil {
		fmt.Println(err)
		return
	}
	caller := core.UserCaller("alice")
	heavy := balance.CostHeavy
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
	// level=INFO msg="ratescope: refused a request of a dropped caller" scope=ledger caller=alice balance=15017 suppressed_in_scope=0
	// request 163: dropped, balance 15111
	// 10 s later: allowed true, balance 11156
}

// A warning threshold above the drop threshold would drop callers that
// were never warned: New refuses it, naming both settings.
func ExampleConfig_Validate() {
	cfg := balance.DefaultConfig()
	cfg.Policy.Warn, cfg.Policy.Drop = 20000, 100
	cfg.Scope = "ledger"
	fmt.Println(cfg.Validate())
	// Output:
	// no Limiter: build one with core.New
	// no Store: use memstore or redisstore
	// Warn 20000 is above Drop 100: callers would be dropped without a warning; want Warn at or below Drop
}
