package ginlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
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
	limit, err := ginlimit.New(ginlimit.Config{Limiter: lim, DenyHandler: ginlimit.DenyProblem})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := gin.New()
	r.GET("/api/records", limit, func(c *gin.Context) { c.String(http.StatusOK, "records") })

	for range 2 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/records", nil))
		fmt.Println(w.Code, w.Header().Get("Content-Type"))
		fmt.Println(w.Body)
	}
	// Output:
	// 200 text/plain; charset=utf-8
	// records
	// 429 application/problem+json
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Request was throttled. Expected available in 60 seconds.","retry_after":60,"violated-policies":["api.anon.min"]}
}
