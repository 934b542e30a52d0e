package ginlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
)

// Limit anonymous callers of /api/records to 2 requests a minute and 100 a
// day. The third request is refused with 429, Retry-After and a JSON body.
func Example() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	clock := storetest.NewClock(storetest.Start) // a clock that stands still, for exact output
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "2/min,100/day"},
		NumProxies: new(0), // callers connect directly
		Now:        clock.Now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	if err != nil {
		fmt.Println(err)
		return
	}

	r := gin.New()
	r.GET("/api/records", limit, func(c *gin.Context) { c.String(http.StatusOK, "records") })

	for range 3 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/records", nil))
		fmt.Println(w.Code, w.Body)
		fmt.Println("  RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
		fmt.Println("  RateLimit:", w.Header().Get("RateLimit"))
		if retry := w.Header().Get("Retry-After"); retry != "" {
			fmt.Println("  Retry-After:", retry)
		}
	}
	// Output:
	// 200 records
	//   RateLimit-Policy: "api.anon.min";q=2;w=60, "api.anon.day";q=100;w=86400
	//   RateLimit: "api.anon.min";r=1, "api.anon.day";r=99
	// 200 records
	//   RateLimit-Policy: "api.anon.min";q=2;w=60, "api.anon.day";q=100;w=86400
	//   RateLimit: "api.anon.min";r=0, "api.anon.day";r=98
	// 429 {"detail":"Request was throttled. Expected available in 60 seconds.","retry_after":60}
	//   RateLimit-Policy: "api.anon.min";q=2;w=60, "api.anon.day";q=100;w=86400
	//   RateLimit: "api.anon.min";r=0;t=60, "api.anon.day";r=98
	//   Retry-After: 60
}

// Count signed-in users by id, with the limits of kind "user", and let
// administrators through uncounted. The user is whatever an earlier
// middleware (a session or a token check) left in the context.
func ExampleConfig_user() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := ginlimit.New(ginlimit.Config{
		Limiter:      lim,
		KeepDecision: true, // the handler reads the decision
		User:         func(c *gin.Context) string { return c.GetString("user") },
		Exempt:       func(_ *gin.Context, caller core.Caller) bool { return caller.User() == "root" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	signIn := func(c *gin.Context) { c.Set("user", c.GetHeader("X-Demo-User")) } // stands for a real session check
	r := gin.New()
	r.GET("/api/records", signIn, limit, func(c *gin.Context) {
		d, _ := ginlimit.Decision(c)
		c.String(http.StatusOK, "%s %s checked=%t", d.Caller.Kind(), d.Caller, d.Checked)
	})

	for _, user := range []string{"", "alice", "root"} {
		req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		req.Header.Set("X-Demo-User", user)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body)
	}
	// Output:
	// 200 anon 192.0.2.1 checked=true
	// 200 user alice checked=true
	// 200 user root checked=false
}

// Routes in two scopes: /api/records in "api", and /api/export in a scope
// of its own, "export", where each request costs 5 units. Requests in one
// scope never use up the other's allowance.
func ExampleConfig_cost() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store: store,
		Scopes: append(core.DefaultScopes(), core.Scope{
			Name: "export",
			Anon: []core.Rate{core.PerMinute(10), core.PerDay(100)},
			User: []core.Rate{core.PerMinute(50), core.PerDay(1000)},
		}),
		Rates:      map[string]string{"api.anon": "30/min,500/day"},
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now, // a clock that stands still, for exact output
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	records, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	if err != nil {
		fmt.Println(err)
		return
	}
	export, err := ginlimit.New(ginlimit.Config{Limiter: lim, Scope: "export", Cost: 5})
	if err != nil {
		fmt.Println(err)
		return
	}

	r := gin.New()
	r.GET("/api/records", records, func(c *gin.Context) { c.String(http.StatusOK, "records") })
	r.GET("/api/export", export, func(c *gin.Context) { c.String(http.StatusOK, "export") })

	for _, path := range []string{"/api/records", "/api/export", "/api/export", "/api/export"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// /api/records 200 "api.anon.min";r=29, "api.anon.day";r=499
	// /api/export 200 "export.anon.min";r=5, "export.anon.day";r=95
	// /api/export 200 "export.anon.min";r=0, "export.anon.day";r=90
	// /api/export 429 "export.anon.min";r=0;t=60, "export.anon.day";r=90
}

// Let administrators and internal services through uncounted. Who is an
// administrator comes from the signed-in user, never from a header a caller
// can write; an internal service is recognised by the network its requests
// come from, which the limiter works out as it does for counting.
func ExampleConfig_exempt() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	admins := map[string]bool{"root": true}
	internal := netip.MustParsePrefix("10.0.0.0/8")
	limit, err := ginlimit.New(ginlimit.Config{
		Limiter:      lim,
		KeepDecision: true, // the handler reads the decision
		User:         func(c *gin.Context) string { return c.GetString("user") },
		Exempt: func(_ *gin.Context, caller core.Caller) bool {
			return admins[caller.User()] || (caller.User() == "" && internal.Contains(caller.Network().Addr()))
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	signIn := func(c *gin.Context) { c.Set("user", c.GetHeader("X-Demo-User")) } // stands for a real session check
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") }) // no middleware: never counted
	api := r.Group("/api", signIn, limit)
	api.GET("/records", func(c *gin.Context) {
		d, _ := ginlimit.Decision(c)
		c.String(http.StatusOK, "%s checked=%t", d.Caller, d.Checked)
	})

	for _, tc := range []struct{ user, addr string }{
		{"", "203.0.113.7:41000"}, {"alice", "203.0.113.7:41000"}, {"root", "203.0.113.7:41000"}, {"", "10.1.2.3:41000"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		req.RemoteAddr = tc.addr
		req.Header.Set("X-Demo-User", tc.user)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body, w.Header().Get("RateLimit") != "")
	}
	// Output:
	// 200 203.0.113.7 checked=true true
	// 200 alice checked=true true
	// 200 root checked=false false
	// 200 10.1.2.3 checked=false false
}

// Test a limited handler without waiting for a window: the limiter reads a
// fake clock, and the test moves it. Retry-After says how long to move it.
func Example_fakeClock() {
	clock := storetest.NewClock(time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "1/min,100/day"},
		NumProxies: new(0),
		Now:        clock.Now, // the limiter reads the fake clock once per request
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := gin.New()
	r.GET("/api/records", limit, func(c *gin.Context) { c.String(http.StatusOK, "records") })
	get := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/records", nil))
		return w
	}

	fmt.Println(get().Code)
	w := get()
	fmt.Println(w.Code, "Retry-After:", w.Header().Get("Retry-After"))
	clock.Advance(59 * time.Second)
	fmt.Println(get().Code, "after 59s")
	clock.Advance(time.Second)
	fmt.Println(get().Code, "after 60s")
	// Output:
	// 200
	// 429 Retry-After: 60
	// 429 after 59s
	// 200 after 60s
}
