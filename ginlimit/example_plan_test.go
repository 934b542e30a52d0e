package ginlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
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
	limit, err := ginlimit.New(ginlimit.Config{
		Limiter: lim,
		User:    func(c *gin.Context) string { return c.GetString("user") },
		Plan:    func(c *gin.Context) string { return plans[c.GetString("user")] },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("plans:", lim.Plans("api")) // check your accounts' plans at startup

	signIn := func(c *gin.Context) { c.Set("user", c.GetHeader("X-Demo-User")) } // stands for a real session check
	r := gin.New()
	r.GET("/api/records", signIn, limit, func(c *gin.Context) { c.String(http.StatusOK, "records") })

	for _, user := range []string{"alice", "bob"} {
		req := httptest.NewRequest(http.MethodGet, "/api/records", nil)
		req.RemoteAddr = "203.0.113.7:41000"
		req.Header.Set("X-Demo-User", user)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(user, w.Code, w.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// plans: [gold]
	// alice 200 "api.user.min";q=600;w=60, "api.user.day";q=100000;w=86400
	// bob 200 "api.user.min";q=60;w=60, "api.user.day";q=1000;w=86400
}
