package core_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// Unblocking a caller: support is told an address, or a user id, and a
// scope; Reset clears that caller's counts in that scope, so that its next
// request finds the whole limit less its cost. The other callers, and the
// caller's counts in other scopes, are left as they are.
func ExampleLimiter_Reset() {
	clock := storetest.NewClock(time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "2/min,100/day"},
		NumProxies: new(0),
		Now:        clock.Now,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	r.RemoteAddr = "203.0.113.7:41000"
	request := func() {
		d, err := lim.Allow(ctx, "api", lim.Caller(r, core.Caller{}))
		if err != nil {
			panic(err)
		}
		w := httptest.NewRecorder()
		d.SetHeaders(w.Header())
		fmt.Println(d.Outcome, w.Header().Get("RateLimit"))
	}
	for range 3 {
		request()
	}

	// unblock is what an administrator's endpoint does with the scope and
	// the address it is given.
	unblock := func(scope, address string) error {
		addr, err := netip.ParseAddr(address)
		if err != nil {
			return err
		}
		return lim.Reset(ctx, scope, lim.AddrCaller(addr))
	}
	if err := unblock("api", "203.0.113.7"); err != nil {
		panic(err)
	}
	request()

	err = unblock("apii", "203.0.113.7")
	fmt.Println(errors.Is(err, core.ErrUnknownScope), err)
	// Output:
	// allowed "api.anon.min";r=1, "api.anon.day";r=99
	// allowed "api.anon.min";r=0, "api.anon.day";r=98
	// denied "api.anon.min";r=0;t=60, "api.anon.day";r=98
	// allowed "api.anon.min";r=1, "api.anon.day";r=99
	// true ratescope: unknown scope "apii": the limiter's scopes are api
}
