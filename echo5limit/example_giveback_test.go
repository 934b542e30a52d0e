package echo5limit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/echo5limit"
)

// Protect a sign-in form: count the failed attempts of an address, 5 per
// 15 minutes and 20 a day, and not the ones that succeed. Every attempt is
// counted before the handler runs, and given back when it succeeds (a
// status below 400), so that no number of concurrent attempts gets past
// the limit. A handler that returns an error is never given back.
func ExampleConfig_giveBack() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	clock := storetest.NewClock(storetest.Start) // a clock that stands still, for exact output
	lim, err := core.New(core.Config{
		Store: store,
		Scopes: []core.Scope{{
			Name: "login",
			Anon: []core.Rate{{Limit: 5, Period: 15 * time.Minute}, core.PerDay(20)},
			User: []core.Rate{core.PerMinute(5)}, // unused: no User function, every attempt is counted by address
		}},
		NumProxies: new(0), // callers connect directly
		Now:        clock.Now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	limitLogin, err := echo5limit.New(echo5limit.Config{
		Limiter: lim,
		Scope:   "login",
		GiveBack: func(c *echo.Context) bool { // a success does not count
			r, err := echo.UnwrapResponse(c.Response())
			return err == nil && r.Status < 400
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	e := echo.New()
	e.POST("/login", func(c *echo.Context) error {
		if c.FormValue("password") != "pw-"+c.FormValue("user") { // stands for a real password check
			return c.JSON(http.StatusUnauthorized, map[string]string{"error": "invalid credentials"})
		}
		return c.JSON(http.StatusOK, map[string]string{"user": c.FormValue("user")})
	}, limitLogin)

	for _, password := range []string{"pw-ann", "pw-ann", "1234", "1234", "1234", "1234", "1234", "pw-ann"} {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("user=ann&password="+password))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
		if retry := w.Header().Get("Retry-After"); retry != "" {
			fmt.Println("  Retry-After:", retry)
		}
	}
	// Output:
	// 200 {"user":"ann"}
	// 200 {"user":"ann"}
	// 401 {"error":"invalid credentials"}
	// 401 {"error":"invalid credentials"}
	// 401 {"error":"invalid credentials"}
	// 401 {"error":"invalid credentials"}
	// 401 {"error":"invalid credentials"}
	// 429 {"detail":"Request was throttled. Expected available in 900 seconds.","retry_after":900}
	//   Retry-After: 900
}
