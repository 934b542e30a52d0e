package echo5limit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/checks"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echo5limit"
)

// One middleware on the /api group decides every request once, at its
// route's cost: /api/export costs 5, every other route 1. Key counts
// callers by API key, apart from addresses and user ids.
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
	e := echo.New()
	limit, err := echo5limit.New(echo5limit.Config{
		Limiter:    lim,
		RouteCosts: map[string]int64{"/api/export": 5}, // keyed by c.Path()
		Key:        func(c *echo.Context) string { return c.Request().Header.Get("X-Api-Key") },
	})
	if err != nil {
		panic(err)
	}
	api := e.Group("/api", limit)
	api.GET("/records", func(c *echo.Context) error { return c.String(http.StatusOK, "records") })
	api.GET("/export", func(c *echo.Context) error { return c.String(http.StatusOK, "export") })

	for _, req := range []struct{ path, key string }{
		{"/api/export", ""}, {"/api/records", ""}, {"/api/export", "k-123"},
	} {
		w := httptest.NewRecorder()
		rq := httptest.NewRequest(http.MethodGet, req.path, nil)
		if req.key != "" {
			rq.Header.Set("X-Api-Key", req.key)
		}
		e.ServeHTTP(w, rq)
		fmt.Printf("%s %d [%s]\n", req.path, w.Code, w.Header().Get("RateLimit"))
	}
	// Output:
	// /api/export 200 ["api.anon.min";r=5, "api.anon.day";r=95]
	// /api/records 200 ["api.anon.min";r=4, "api.anon.day";r=94]
	// /api/export 200 ["api.user.min";r=15, "api.user.day";r=995]
}

// Tell Echo the same proxies as ratescope, so that c.RealIP() (in logs, in
// other middleware) is the caller ratescope counts; CheckClientIP returns
// W612 while they disagree.
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
	e := echo.New() // without an IPExtractor, Echo v5 takes the peer: behind a proxy, the proxy
	fmt.Println(len(echo5limit.CheckClientIP(e, lim)) > 0)

	e.IPExtractor = echo.ExtractIPFromXFFHeader(
		echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false),
		echo.TrustIPRange(&net.IPNet{IP: net.IPv4(10, 0, 0, 0), Mask: net.CIDRMask(8, 32)}),
	)
	checks.Log(context.Background(), slog.Default(), echo5limit.CheckClientIP(e, lim))
	fmt.Println(len(echo5limit.CheckClientIP(e, lim)))
	// Output:
	// true
	// 0
}
