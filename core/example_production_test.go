package core_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// Roll a new limit out in shadow mode: every request is served, but counted,
// observed and reported as if the limit were enforced, and the refusals it
// would have made are logged at a limited rate.
func ExampleConfig_shadow() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	api := core.DefaultScopes()[0]
	api.Shadow = true // counted and reported, never refused
	lim, err := core.New(core.Config{
		Store:      store,
		Scopes:     []core.Scope{api},
		Rates:      map[string]string{"api.anon": "2/min,100/day"},
		NumProxies: new(0),
		Observe: func(_ context.Context, e core.Event) {
			d := e.Decision
			fmt.Println(d.Scope, d.Caller.Kind(), d.Outcome, "allowed:", d.Allowed)
		},
		Now:    storetest.NewClock(storetest.Start).Now,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	caller := core.NetworkCaller(netip.MustParsePrefix("192.0.2.1/32"))
	for range 3 {
		_, _ = lim.Allow(context.Background(), "api", caller)
	}
	// Output:
	// api anon allowed allowed: true
	// api anon allowed allowed: true
	// api anon shadow allowed: true
}

// Read the rates and the trusted proxies from flags (flag.TextVar), JSON
// or YAML strings, or the environment: each has one text form. The number
// of proxies is a plain number, nil until it is given.
func ExampleRateTable() {
	var cfg struct {
		Rates          core.RateTable `json:"rates"`
		NumProxies     *int           `json:"num_proxies"`
		TrustedProxies core.Networks  `json:"trusted_proxies"`
	}
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.TextVar(&cfg.Rates, "rates", cfg.Rates, "SCOPE.KIND=RATE[,RATE...] ...")
	fs.TextVar(&cfg.TrustedProxies, "trusted-proxies", cfg.TrustedProxies, "CIDR[,CIDR...] of the reverse proxies")
	err := fs.Parse([]string{"-rates", "api.anon=60/min,1000/day api.user=600/min", "-trusted-proxies", "10.0.0.0/8"})
	fmt.Println(cfg.Rates, cfg.TrustedProxies, err)

	err = json.Unmarshal([]byte(`{"rates": "api.anon=30/min", "num_proxies": 2, "trusted_proxies": "10.0.0.0/8"}`), &cfg)
	fmt.Println(cfg.Rates, *cfg.NumProxies, cfg.TrustedProxies, err)

	err = cfg.Rates.UnmarshalText([]byte("api.anon=60/minuets"))
	fmt.Println(err)

	store := memstore.New(memstore.Config{})
	defer store.Close()
	_, err = core.New(core.Config{Store: store, Rates: cfg.Rates, NumProxies: cfg.NumProxies, TrustedProxies: cfg.TrustedProxies})
	fmt.Println(err)
	// Output:
	// api.anon=60/min,1000/day api.user=600/min 10.0.0.0/8 <nil>
	// api.anon=30/min 2 10.0.0.0/8 <nil>
	// "api.anon=60/minuets": invalid rate "60/minuets": unknown unit "minuets"; want N/PERIOD with N a positive integer and PERIOD an optional positive multiplier and a unit: s, sec, secs, second, seconds; m, min, mins, minute, minutes; h, hr, hrs, hour, hours; d, day, days (e.g. "60/min", "100/15m", "1000/days")
	// <nil>
}

// Behind proxies at 10.0.0.0/8, read X-Forwarded-For only from them: a
// caller that reaches the application directly cannot choose its address.
func ExampleConfig_trustedProxies() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	trusted, err := core.ParseNetworks("10.0.0.0/8")
	if err != nil {
		panic(err)
	}
	lim, err := core.New(core.Config{Store: store, TrustedProxies: trusted})
	if err != nil {
		panic(err)
	}
	for _, peer := range []string{"10.0.0.1:443", "203.0.113.9:5000"} {
		r := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", "198.51.100.66, 192.0.2.7, 10.0.0.2")
		fmt.Println(peer, "->", lim.Caller(r, core.Caller{}))
	}
	// Output:
	// 10.0.0.1:443 -> 192.0.2.7
	// 203.0.113.9:5000 -> 203.0.113.9
}

// Every problem New rejects carries its id, as the startup checks report it.
func ExampleConfigError() {
	_, err := core.New(core.Config{Rates: map[string]string{"api.anno": "60/min"}})
	fmt.Println(err)
	// Output:
	// ratescope: invalid config: ratescope.E002: no Store: use memstore.New for one process or the Redis store for several
	// ratescope.E001: rate key "api.anno" names no known scope and kind: want SCOPE.anon or SCOPE.user with SCOPE one of api
}

// A route's cost above a limit, after the rate was lowered below it, is
// clamped to that limit rather than stopping the application: such a
// request is allowed only when the caller has used nothing of the window.
func ExampleLimiter_AllowN_clamped() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "3/min,100/day"}, // lowered below the export's cost of 5
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now,
	})
	if err != nil {
		panic(err)
	}
	caller := core.NetworkCaller(netip.MustParsePrefix("192.0.2.1/32"))
	for range 2 {
		d, err := lim.AllowN(context.Background(), "api", caller, 5)
		fmt.Println(d.Allowed, "cost", d.Cost, err)
	}
	// Output:
	// true cost 3 <nil>
	// false cost 3 <nil>
}
