package ginsearch_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/autocomplete/ginsearch"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/ginlimit"
	"github.com/ratescope/ratescope/internal/testkit/searchtest"
)

func init() { gin.SetMode(gin.TestMode) }

func TestSuite(t *testing.T) {
	searchtest.Run(t, func(t *testing.T, lim *core.Limiter) searchtest.Portal {
		r := gin.New()
		api, err := ginlimit.New(ginlimit.Config{Limiter: lim})
		require.NoError(t, err)
		r.GET("/api/records", api, func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"records": []string{}}) })
		var mu sync.Mutex
		searches := map[string]int{}
		for _, name := range searchtest.Boxes() {
			guard, err := ginsearch.New(name, ginlimit.Config{Limiter: lim})
			require.NoError(t, err)
			r.GET("/autocomplete/"+name, guard, func(c *gin.Context) {
				mu.Lock()
				searches[name]++
				mu.Unlock()
				c.JSON(http.StatusOK, autocomplete.Response{Results: []autocomplete.Result{{ID: "1", Label: c.Query("q")}}})
			})
		}
		return searchtest.Portal{Handler: r, Searches: func(name string) int {
			mu.Lock()
			defer mu.Unlock()
			return searches[name]
		}}
	})
}

func TestUnknownSearchBox(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	defer store.Close()
	lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
	require.NoError(t, err)
	_, err = ginsearch.New("project", ginlimit.Config{Limiter: lim})
	assert.ErrorContains(t, err, "add autocomplete.Scopes()")
}
