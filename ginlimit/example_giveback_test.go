package ginlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
)

// Protect a sign-in form: count the failed attempts of an address, 5 per
// 15 minutes and 20 a day, and not the ones that succeed. Every attempt is
// counted before the handler runs, and given back when it succeeds (a
// status below 400), so that no number of concurrent attempts gets past
// the limit.
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
	limitLogin, err := ginlimit.New(ginlimit.Config{
		Limiter:  lim,
		Scope:    "login",
		GiveBack: func(c *gin.Context) bool { return c.Writer.Status() < 400 }, // a success does not count
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	r := gin.New()
	r.POST("/login", limitLogin, func(c *gin.Context) {
		if c.PostForm("password") != "pw-"+c.PostForm("user") { // stands for a real password check
			c.JSON(http.StatusUnauthorized, gin.H{"error": "invalid credentials"})
			return
		}
		c.JSON(http.StatusOK, gin.H{"user": c.PostForm("user")})
	})

	for _, password := range []string{"pw-ann", "pw-ann", "1234", "1234", "1234", "1234", "1234", "pw-ann"} {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("user=ann&password="+password))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Body)
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
