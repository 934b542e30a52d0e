package ginlimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
)

// One middleware on the /api group decides every request once, at its
// route's cost: /api/export costs 5, every other route 1. Key counts
// callers by API key, apart from addresses and user ids; Skipper lets
// health checks through.
func Example_routeCosts() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "10/min,100/day", "api.user": "20/min,1000/day"},
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now,
	})
	if err != nil {
		panic(err)
	}
	r := gin.New()
	limit, err := ginlimit.New(ginlimit.Config{
		Limiter:    lim,
		RouteCosts: map[string]int64{"/api/export": 5}, // keyed by c.FullPath()
		Key:        func(c *gin.Context) string { return c.GetHeader("X-Api-Key") },
		Skipper:    func(c *gin.Context) bool { return c.FullPath() == "/api/health" },
	})
	if err != nil {
		panic(err)
	}
	api := r.Group("/api", limit)
	api.GET("/records", func(c *gin.Context) { c.String(http.StatusOK, "records") })
	api.GET("/export", func(c *gin.Context) { c.String(http.StatusOK, "export") })
	api.GET("/health", func(c *gin.Context) { c.String(http.StatusOK, "ok") })

	for _, req := range []struct{ path, key string }{
		{"/api/export", ""}, {"/api/records", ""}, {"/api/health", ""}, {"/api/export", "k-123"},
	} {
		w := httptest.NewRecorder()
		rq := httptest.NewRequest(http.MethodGet, req.path, nil)
		if req.key != "" {
			rq.Header.Set("X-Api-Key", req.key)
		}
		r.ServeHTTP(w, rq)
		fmt.Printf("%s %d [%s]\n", req.path, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// /api/export 200 ["api.anon.min";r=5, "api.anon.day";r=95]
	// /api/records 200 ["api.anon.min";r=4, "api.anon.day";r=94]
	// /api/health 200 []
	// /api/export 200 ["api.user.min";r=15, "api.user.day";r=995]
}

// Roll a new, tighter limit out on one scope in shadow mode: the "export"
// scope's callers are counted and told r=0 as if it were enforced, but
// served; the hook sees the outcome "shadow", and the check W610 reminds
// you that the scope is not enforced yet.
func ExampleConfig_shadowScope() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	shadowed := 0
	lim, err := core.New(core.Config{
		Store: store,
		Scopes: append(core.DefaultScopes(), core.Scope{
			Name:   "export",
			Anon:   []core.Rate{core.PerMinute(2), core.PerDay(20)},
			User:   []core.Rate{core.PerMinute(10), core.PerDay(200)},
			Shadow: true, // counted and reported, never refused
		}),
		Observe: func(_ context.Context, e core.Event) {
			if e.Outcome == core.OutcomeShadow { // Event.Outcome: window and balance decisions alike
				shadowed++ // or feed metrics: package ratescope/prometheus
			}
		},
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now,
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	for _, m := range checks.Run(context.Background(), lim.Config()) {
		if m.ID == "ratescope.W610" {
			fmt.Println(m.ID, m.Text)
		}
	}
	r := gin.New()
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim, Scope: "export"})
	if err != nil {
		panic(err)
	}
	r.GET("/api/export", limit, func(c *gin.Context) { c.String(http.StatusOK, "export") })

	for range 3 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/export", nil))
		fmt.Println(w.Code, w.Header().Get("RateLimit"))
	}
	fmt.Println("would have been refused:", shadowed)
	// Output:
	// ratescope.W610 scope export is in shadow mode: callers over a limit are counted and logged but served.
	// 200 "export.anon.min";r=1, "export.anon.day";r=19
	// 200 "export.anon.min";r=0, "export.anon.day";r=18
	// 200 "export.anon.min";r=0;t=60, "export.anon.day";r=18
	// would have been refused: 1
}

// Tell Gin the same proxies as ratescope, so that c.ClientIP() (in logs,
// in other middleware) is the caller ratescope counts; CheckClientIP
// returns W612 while they disagree.
func ExampleCheckClientIP() {
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
	r := gin.New() // Gin trusts every proxy by default
	fmt.Println(len(ginlimit.CheckClientIP(r, lim)) > 0)

	if err := r.SetTrustedProxies([]string{"10.0.0.0/8"}); err != nil {
		panic(err)
	}
	checks.Log(context.Background(), slog.Default(), ginlimit.CheckClientIP(r, lim))
	fmt.Println(len(ginlimit.CheckClientIP(r, lim)))
	// Output:
	// true
	// 0
}
