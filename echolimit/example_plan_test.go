package echolimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v4"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echolimit"
)

// Give paying customers more: the users on plan gold get 600 requests a
// minute and 100000 a day instead of api.user's 60 and 1000, counted on
// their one count, so that changing plan keeps what they used.
func ExampleConfig_plan() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	lim, err := core.New(core.Config{
		Store: store,
		Rates: map[string]string{
			"api.user":      "60/min,1000/day",
			"api.user@gold": "600/min,100000/day", // the periods of api.user
		},
		NumProxies: new(0),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	plans := map[string]string{"alice": "gold"} // stands for the accounts' plans
	user := func(c echo.Context) string {
		u, _ := c.Get("user").(string)
		return u
	}
	limit, err := echolimit.New(echolimit.Config{
		Limiter: lim,
		User:    user,
		Plan:    func(c echo.Context) string { return plans[user(c)] },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc { // stands for a real session check
		return func(c echo.Context) error {
			c.Set("user", c.Request().Header.Get("X-Demo-User"))
			return next(c)
		}
	}, limit)
	e.GET("/api/records", func(c echo.Context) error { return c.String(http.StatusOK, "records") })

	for _, u := range []string{"alice", "bob"} {
		req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		req.RemoteAddr = "203.0.113.7:41000"
		req.Header.Set("X-Demo-User", u)
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		fmt.Println(u, w.Code, w.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// alice 200 "api.user.min";q=600;w=60, "api.user.day";q=100000;w=86400
	// bob 200 "api.user.min";q=60;w=60, "api.user.day";q=1000;w=86400
}
