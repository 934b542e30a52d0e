package core_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// With the fields on refusals only, a served response carries none of
// them, and a refused one all of them with Retry-After.
func ExampleHeaderMode() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	var mode core.HeaderMode
	if err := mode.UnmarshalText([]byte("refused")); err != nil { // as -headers refused would
		panic(err)
	}
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "1/min,100/day"},
		NumProxies: new(0),
		Headers:    mode,
		Now:        storetest.NewClock(storetest.Start).Now,
	})
	if err != nil {
		panic(err)
	}
	guard, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: core.DefaultScope, Cost: 1})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	for range 2 {
		h := http.Header{}
		var t core.Ticket
		guard.Check(context.Background(), &t, core.Call{Caller: lim.Caller(r, core.Caller{}), Header: h})
		fmt.Println(t.Allowed(), slices.Sorted(maps.Keys(h)))
	}
	// Output:
	// true []
	// false [Ratelimit Ratelimit-Policy Ratescope-Warning Retry-After]
}
