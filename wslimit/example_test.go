package wslimit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/wslimit"
)

// Each message costs 3000; with a warning at 100 and a drop at 150, the
// second reply carries "warning":"load" and the third message closes the
// connection with 1008, "threshold exceeded".
func Example() {
	// rippled's figures with low thresholds (a policy with any figure set
	// must set its window and thresholds, so start from the default one,
	// whose warning and drop costs scale with the thresholds).
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := ws.Accept(w, r, lim.Caller(r, core.Caller{}), false)
		if err != nil {
			return
		}
		defer conn.WS().CloseNow()
		for {
			if _, err := conn.Read(r.Context()); err != nil {
				return
			}
			d, err := conn.Charge(r.Context(), balance.CostHeavy)
			if err != nil {
				return // dropped, and closed with 1008
			}
			if err := conn.WriteJSON(r.Context(), balance.WarnJSON(d.Load, map[string]string{"type": "response"})); err != nil {
				return
			}
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseNow()
	for range 3 {
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"command":"path_find"}`))
		_, reply, err := c.Read(ctx)
		var closed websocket.CloseError
		if errors.As(err, &closed) {
			fmt.Println("closed:", closed.Code, closed.Reason)
			break
		}
		fmt.Println(string(reply))
	}
	// Output:
	// {"type":"response"}
	// {"warning":"load","type":"response"}
	// closed: StatusPolicyViolation threshold exceeded
}

// A message above the read limit (here 1 KiB; 32 KiB by default) is
// charged as the scope's heaviest message, and the connection is closed
// with 1009.
func ExampleConfig_readLimit() {
	store := memstore.New(memstore.Config{})
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		log.Fatal(err)
	}
	ledger, err := balance.New(balance.Config{Limiter: lim, Store: store, Scope: "ledger"})
	if err != nil {
		log.Fatal(err)
	}
	ws, err := wslimit.New(wslimit.Config{Guard: ledger, ReadLimit: 1024})
	if err != nil {
		log.Fatal(err)
	}
	charged := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := lim.Caller(r, core.Caller{})
		conn, err := ws.Accept(w, r, caller, false)
		if err != nil {
			return
		}
		defer conn.WS().CloseNow()
		_, err = conn.Read(r.Context())
		if errors.Is(err, wslimit.ErrTooBig) {
			charged <- ledger.Charge(r.Context(), caller, 0).Balance
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseNow()
	_ = c.Write(ctx, websocket.MessageText, []byte(strings.Repeat(" ", 2000)))
	_, _, err = c.Read(ctx)
	var closed websocket.CloseError
	if errors.As(err, &closed) {
		fmt.Println("closed:", closed.Code, closed.Reason)
	}
	fmt.Println("balance:", <-charged, "(3000 over the 32 s window)")
	// Output:
	// closed: StatusMessageTooBig message larger than 1024 bytes
	// balance: 93 (3000 over the 32 s window)
}
