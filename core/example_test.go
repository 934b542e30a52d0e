package core_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

func ExampleRate_UnmarshalText() {
	for _, s := range []string{"60/min", "100/15m", "1000/day", "60/fortnight"} {
		var r core.Rate
		if err := r.UnmarshalText([]byte(s)); err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(r.Limit, r.Period)
	}
	// Output:
	// 60 1m0s
	// 100 15m0s
	// 1000 24h0m0s
	// error: invalid rate "60/fortnight": unknown unit "fortnight"; want N/PERIOD with N a positive integer and PERIOD an optional positive multiplier and a unit: s, sec, secs, second, seconds; m, min, mins, minute, minutes; h, hr, hrs, hour, hours; d, day, days (e.g. "60/min", "100/15m", "1000/days")
}

// Scopes carry starting values; the Rates dictionary replaces them kind by
// kind, and a key naming no known scope is an error.
func ExampleConfig() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	cfg := core.Config{
		Store: store,
		Scopes: append(core.DefaultScopes(), core.Scope{
			Name: "export",
			Anon: []core.Rate{core.PerMinute(2), core.PerDay(20)},
			User: []core.Rate{core.PerMinute(10), core.PerDay(200)},
		}),
		Rates: map[string]string{
			"api.anon": "30/min,500/day",
		},
		NumProxies: new(1),
	}
	lim, err := core.New(cfg)
	if err != nil {
		panic(err)
	}
	for _, s := range lim.Config().Scopes {
		fmt.Println(s.Name, "anon", s.Anon, "user", s.User)
	}

	cfg.Rates["exprot.user"] = "1/min"
	_, err = core.New(cfg)
	fmt.Println(err)
	// Output:
	// api anon [30/min 500/day] user [600/min 20000/day]
	// export anon [2/min 20/day] user [10/min 200/day]
	// ratescope: invalid config: ratescope.E001: rate key "exprot.user" names no known scope and kind: want SCOPE.anon or SCOPE.user with SCOPE one of api, export
}

// Checking a request: find the caller, decide, write the headers, and refuse
// with 429 when the decision says so.
func ExampleLimiter_Allow() {
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
	r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	r.RemoteAddr = "203.0.113.7:41000"
	for range 3 {
		d, err := lim.Allow(context.Background(), "api", lim.Caller(r, core.Caller{}))
		if err != nil {
			panic(err)
		}
		w := httptest.NewRecorder()
		d.SetHeaders(w.Header())
		if d.Allowed {
			fmt.Println(d.Caller, "allowed:", w.Header().Get("RateLimit"))
		} else {
			fmt.Println(d.Caller, "refused, Retry-After:", w.Header().Get("Retry-After"), d.DenyBody().Detail)
		}
	}
	// Output:
	// 203.0.113.7 allowed: "api.anon.min";r=1, "api.anon.day";r=99
	// 203.0.113.7 allowed: "api.anon.min";r=0, "api.anon.day";r=98
	// 203.0.113.7 refused, Retry-After: 60 Request was throttled. Expected available in 60 seconds.
}

// Which X-Forwarded-For entry is the caller's, in the deployments of
// docs/howto/count-callers-behind-a-proxy.md. Each proxy appends the address
// it received the request from; whatever the caller wrote stands to the left
// and is ignored.
func ExampleLimiter_Caller() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	// counted returns whom a limiter behind the given number of proxies
	// counts a request from peer with the given X-Forwarded-For.
	counted := func(proxies *int, peer, forwarded string) string {
		lim, err := core.New(core.Config{Store: store, NumProxies: proxies})
		if err != nil {
			panic(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", forwarded)
		return lim.Caller(r, core.Caller{}).String()
	}
	// No proxy: the caller connects directly and the header is ignored.
	fmt.Println(counted(new(0), "203.0.113.7:41000", "198.51.100.1"))
	// One nginx: it appended the caller's address to what the caller wrote.
	fmt.Println(counted(new(1), "10.0.0.2:41000", "198.51.100.1, 203.0.113.7"))
	// A cloud load balancer, then nginx: the load balancer appended the
	// caller's address, nginx the load balancer's.
	fmt.Println(counted(new(2), "10.0.0.2:41000", "198.51.100.1, 203.0.113.7, 10.0.1.9"))
	// Fewer entries than proxies: the request did not come through both
	// proxies, so it is counted as the peer, never as somebody new.
	fmt.Println(counted(new(2), "10.0.0.2:41000", "203.0.113.7"))
	// Not set: the peer address, and the check W601 warns.
	fmt.Println(counted(nil, "10.0.0.2:41000", "203.0.113.7"))
	// Output:
	// 203.0.113.7
	// 203.0.113.7
	// 203.0.113.7
	// 10.0.0.2
	// 10.0.0.2
}
