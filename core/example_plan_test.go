package core_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

// A caller moving to a plan keeps its count: alice used api.user's 3 a
// minute and was refused, then moved to gold's 10 a minute: her request
// is allowed, and leaves her 6 of them.
func ExampleCall_plan() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	rates := core.RateTable{"api.user": "3/min,1000/day", "api.user@gold": "10/min,100000/day"}
	lim, err := core.New(core.Config{Store: store, Rates: rates, NumProxies: new(0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	guard, err := core.NewGuard(core.GuardConfig{Limiter: lim, Scope: "api", Cost: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	alice := core.UserCaller("alice")
	for _, plan := range []string{"", "", "", "", "gold"} {
		var t core.Ticket
		h := http.Header{}
		guard.Check(context.Background(), &t, core.Call{Caller: alice, Plan: plan, Header: h})
		fmt.Printf("%q allowed=%t %s\n", t.Decision().Plan(), t.Allowed(), h.Get("Ratelimit"))
	}
	// Output:
	// "" allowed=true "api.user.min";r=2, "api.user.day";r=999
	// "" allowed=true "api.user.min";r=1, "api.user.day";r=998
	// "" allowed=true "api.user.min";r=0, "api.user.day";r=997
	// "" allowed=false "api.user.min";r=0;t=60, "api.user.day";r=997
	// "gold" allowed=true "api.user.min";r=6, "api.user.day";r=99996
}
