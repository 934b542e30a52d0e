package echolimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echolimit"
)

// Answer refusals as RFC 9457 problem details, as a JSON API that answers
// its other errors so does: application/problem+json with the type, title,
// status, detail and the wait in seconds.
func ExampleDenyProblem() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store:      store,
		Rates:      map[string]string{"api.anon": "1/min,100/day"},
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := echolimit.New(echolimit.Config{Limiter: lim, DenyHandler: echolimit.DenyProblem})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := echo.New()
	e.GET("/api/records", func(c echo.Context) error { return c.String(http.StatusOK, "records") }, limit)

	for range 2 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/records", nil))
		fmt.Println(w.Code, w.Header().Get("Content-Type"))
		fmt.Println(w.Body)
	}
	// Output:
	// 200 text/plain; charset=UTF-8
	// records
	// 429 application/problem+json
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Request was throttled. Expected available in 60 seconds.","retry_after":60,"violated-policies":["api.anon.min"]}
}

// Let a script in a browser on another origin read the rate limit
// headers: Echo's CORS middleware exposes the names of core.ExposedHeaders.
// Put it before the limiter, so that a refusal carries the CORS headers
// too.
func Example_cors() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := echolimit.New(echolimit.Config{Limiter: lim})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := echo.New()
	e.Use(middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOrigins:  []string{"https://app.example.com"},
		ExposeHeaders: core.ExposedHeaders(),
	}))
	e.GET("/api/records", func(c echo.Context) error { return c.String(http.StatusOK, "records") }, limit)

	req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
	req.Header.Set("Origin", "https://app.example.com")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	fmt.Println(w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	fmt.Println(w.Header().Get("Access-Control-Expose-Headers"))
	// Output:
	// 200 https://app.example.com
	// RateLimit,RateLimit-Policy,Retry-After,Ratescope-Warning,X-RateLimit-Limit,X-RateLimit-Remaining,X-RateLimit-Reset
}
