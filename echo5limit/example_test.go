package echo5limit_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echo5limit"
)

// Limit anonymous callers of /api/records to 2 requests a minute and 100 a
// day. The third request is refused with 429, Retry-After and a JSON body,
// written by Echo's error handler.
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
	limit, err := echo5limit.New(echo5limit.Config{Limiter: lim})
	if err != nil {
		fmt.Println(err)
		return
	}

	e := echo.New()
	e.GET("/api/records", func(c *echo.Context) error { return c.String(http.StatusOK, "records") }, limit)

	for range 3 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/records", nil))
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String())) // Echo ends JSON with a newline
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
	limit, err := echo5limit.New(echo5limit.Config{
		Limiter:      lim,
		KeepDecision: true, // the handler reads the decision
		User: func(c *echo.Context) string {
			user, _ := c.Get("user").(string)
			return user
		},
		Exempt: func(_ *echo.Context, caller core.Caller) bool { return caller.User() == "root" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	signIn := func(next echo.HandlerFunc) echo.HandlerFunc { // stands for a real session check
		return func(c *echo.Context) error {
			c.Set("user", c.Request().Header.Get("X-Demo-User"))
			return next(c)
		}
	}
	e := echo.New()
	e.Use(signIn)
	e.GET("/api/records", func(c *echo.Context) error {
		d, _ := echo5limit.Decision(c)
		return c.String(http.StatusOK, fmt.Sprintf("%s %s checked=%t", d.Caller.Kind(), d.Caller, d.Checked))
	}, limit)

	for _, user := range []string{"", "alice", "root"} {
		req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		req.Header.Set("X-Demo-User", user)
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body)
	}
	// Output:
	// 200 anon 192.0.2.1 checked=true
	// 200 user alice checked=true
	// 200 user root checked=false
}

// An application's own error handler tells refusals apart with
// [echo5limit.ErrLimited], here to answer them in plain text.
func ExampleErrLimited() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "1/min,100/day"},
		NumProxies: new(0),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := echo5limit.New(echo5limit.Config{Limiter: lim, KeepDecision: true})
	if err != nil {
		fmt.Println(err)
		return
	}

	e := echo.New()
	e.HTTPErrorHandler = func(c *echo.Context, err error) {
		if errors.Is(err, echo5limit.ErrLimited) {
			d, _ := echo5limit.Decision(c)
			_ = c.String(http.StatusTooManyRequests, fmt.Sprintf("slow down, %s\n", d.Caller))
			return
		}
		echo.DefaultHTTPErrorHandler(false)(c, err)
	}
	e.GET("/api/records", func(c *echo.Context) error { return c.String(http.StatusOK, "records\n") }, limit)

	for range 2 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/records", nil))
		fmt.Print(w.Code, " ", w.Body)
	}
	// Output:
	// 200 records
	// 429 slow down, 192.0.2.1
}

// Routes in two scopes: /api/records in "api", and /api/export in a scope
// of its own, "export", where each request costs 5 units.
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
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now, // a clock that stands still, for exact output
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	records, err := echo5limit.New(echo5limit.Config{Limiter: lim})
	if err != nil {
		fmt.Println(err)
		return
	}
	export, err := echo5limit.New(echo5limit.Config{Limiter: lim, Scope: "export", Cost: 5})
	if err != nil {
		fmt.Println(err)
		return
	}

	e := echo.New()
	e.GET("/api/records", func(c *echo.Context) error { return c.String(http.StatusOK, "records") }, records)
	e.GET("/api/export", func(c *echo.Context) error { return c.String(http.StatusOK, "export") }, export)

	for _, path := range []string{"/api/records", "/api/export", "/api/export", "/api/export"} {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// /api/records 200 "api.anon.min";r=59, "api.anon.day";r=999
	// /api/export 200 "export.anon.min";r=5, "export.anon.day";r=95
	// /api/export 200 "export.anon.min";r=0, "export.anon.day";r=90
	// /api/export 429 "export.anon.min";r=0;t=60, "export.anon.day";r=90
}

// Let administrators and internal services through uncounted, and skip the
// health check with a Skipper. Who is an administrator comes from the
// signed-in user, never from a header a caller can write.
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
	limit, err := echo5limit.New(echo5limit.Config{
		Skipper:      func(c *echo.Context) bool { return c.Path() == "/healthz" },
		Limiter:      lim,
		KeepDecision: true, // the handler reads the decision
		User: func(c *echo.Context) string {
			user, _ := c.Get("user").(string)
			return user
		},
		Exempt: func(_ *echo.Context, caller core.Caller) bool {
			return admins[caller.User()] || (caller.User() == "" && internal.Contains(caller.Network().Addr()))
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc { // stands for a real session check
		return func(c *echo.Context) error {
			c.Set("user", c.Request().Header.Get("X-Demo-User"))
			return next(c)
		}
	}, limit)
	e.GET("/healthz", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/api/records", func(c *echo.Context) error {
		d, _ := echo5limit.Decision(c)
		return c.String(http.StatusOK, fmt.Sprintf("%s checked=%t", d.Caller, d.Checked))
	})

	for _, tc := range []struct{ path, user, addr string }{
		{"/api/records", "", "203.0.113.7:41000"}, {"/api/records", "root", "203.0.113.7:41000"},
		{"/api/records", "", "10.1.2.3:41000"}, {"/healthz", "", "203.0.113.7:41000"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.RemoteAddr = tc.addr
		req.Header.Set("X-Demo-User", tc.user)
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body, w.Header().Get("RateLimit") != "")
	}
	// Output:
	// 200 203.0.113.7 checked=true true
	// 200 root checked=false false
	// 200 10.1.2.3 checked=false false
	// 200 ok false
}
