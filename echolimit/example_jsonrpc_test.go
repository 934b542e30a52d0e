package echolimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/wslimit"
)

// A JSON-RPC API and a WebSocket API limited as the XRP Ledger server
// limits its own, with package balance: one decaying balance per caller,
// "warning":"load" near the limit, 503 "Server is overloaded" or a close
// with code 1008 beyond it. Here the drop threshold is low, so that the
// third heavy call is refused.
func Example_jsonRPC() {
	// rippled's figures with low thresholds (a policy with any figure set
	// is taken as written, so start from the default one).
	policy := balance.DefaultConfig().Policy
	policy.Warn, policy.Drop = 100, 150
	store := memstore.New(memstore.Config{})
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		log.Fatal(err)
	}
	ledger, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ledger", Policy: policy})
	if err != nil {
		log.Fatal(err)
	}
	ws, err := wslimit.New(wslimit.Config{Guard: ledger})
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	e.POST("/rpc", func(c echo.Context) error {
		d := ledger.Charge(c.Request().Context(), lim.Caller(c.Request(), core.Caller{}), balance.CostHeavy)
		d.SetHeaders(c.Response().Header())
		if !d.Allowed {
			balance.WriteOverloaded(c.Response())
			return nil
		}
		return c.JSON(http.StatusOK, map[string]any{"result": balance.WarnJSON(d.Load, map[string]any{"status": "success"})})
	})
	e.GET("/ws", func(c echo.Context) error {
		conn, err := ws.Accept(c.Response(), c.Request(), lim.Caller(c.Request(), core.Caller{}), false)
		if err != nil {
			return nil
		}
		ctx := c.Request().Context()
		for {
			if _, err := conn.Read(ctx); err != nil {
				return nil
			}
			d, err := conn.Charge(ctx, 20) // a dropped caller is closed with 1008
			if err != nil || conn.WriteJSON(ctx, balance.WarnJSON(d.Load, map[string]any{"type": "response"})) != nil {
				return nil
			}
		}
	})

	for range 3 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(`{"method":"path_find"}`)))
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200 {"result":{"status":"success"}}
	// 200 {"result":{"warning":"load","status":"success"}}
	// 503 Server is overloaded
}

// A JSON-RPC route limited by windows rather than a balance, answering a
// caller over the limit as the XRP Ledger server does: 503 and the text
// "Server is overloaded" ([balance.WriteOverloaded]) instead of 429 and
// JSON.
func ExampleConfig_denyOverloaded() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "1/min,100/day"},
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now,
	})
	if err != nil {
		log.Fatal(err)
	}
	overloaded := func(c echo.Context, _ *core.Decision) error { balance.WriteOverloaded(c.Response()); return nil }
	limit, err := echolimit.New(echolimit.Config{Limiter: lim, DenyHandler: overloaded})
	if err != nil {
		log.Fatal(err)
	}
	e := echo.New()
	e.POST("/rpc", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]any{"result": map[string]any{"status": "success"}})
	}, limit)

	for range 2 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(`{"method":"ping"}`)))
		fmt.Printf("%d %s [Retry-After: %s]\n", w.Code, strings.TrimSpace(w.Body.String()), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 {"result":{"status":"success"}} [Retry-After: ]
	// 503 Server is overloaded [Retry-After: 60]
}
