package ginsearch_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/autocomplete/ginsearch"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/ginlimit"
)

// Guard the project search box: 2 searches a minute here, so that the third
// is refused with 429 and an empty list, and never reaches the search.
func ExampleNew() {
	lim, err := core.New(core.Config{
		Store:      memstore.New(memstore.Config{}),
		Scopes:     append(core.DefaultScopes(), autocomplete.Scopes()...),
		Rates:      map[string]string{"autocomplete.project.anon": "2/min,100/day"},
		NumProxies: new(0),
		Now:        storetest.NewClock(storetest.Start).Now, // a clock that stands still, for exact output
	})
	if err != nil {
		panic(err)
	}
	guard, err := ginsearch.New("project", ginlimit.Config{Limiter: lim})
	if err != nil {
		panic(err)
	}
	searches := 0
	r := gin.New()
	r.GET("/autocomplete/project", guard, func(c *gin.Context) {
		searches++
		c.JSON(http.StatusOK, autocomplete.Response{Results: []autocomplete.Result{{ID: "p1", Label: "Coral reefs"}}})
	})

	for range 3 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/autocomplete/project?q=cor", nil))
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()+" "+w.Header().Get("Retry-After")))
	}
	fmt.Println("searches run:", searches)
	// Output:
	// 200 {"results":[{"id":"p1","label":"Coral reefs"}]}
	// 200 {"results":[{"id":"p1","label":"Coral reefs"}]}
	// 429 {"results":[]} 60
	// searches run: 2
}
