package echosearch_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/autocomplete/echosearch"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/echolimit"
	"github.com/ratescope/ratescope/internal/testkit/searchtest"
)

func TestSuite(t *testing.T) {
	searchtest.Run(t, func(t *testing.T, lim *core.Limiter) searchtest.Portal {
		e := echo.New()
		api, err := echolimit.New(echolimit.Config{Limiter: lim})
		require.NoError(t, err)
		e.GET("/api/records", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{"records": []string{}}) }, api)
		var mu sync.Mutex
		searches := map[string]int{}
		for _, name := range searchtest.Boxes() {
			guard, err := echosearch.New(name, echolimit.Config{Limiter: lim})
			require.NoError(t, err)
			e.GET("/autocomplete/"+name, func(c echo.Context) error {
				mu.Lock()
				searches[name]++
				mu.Unlock()
				return c.JSON(http.StatusOK, autocomplete.Response{Results: []autocomplete.Result{{ID: "1", Label: c.QueryParam("q")}}})
			}, guard)
		}
		return searchtest.Portal{Handler: e, Searches: func(name string) int {
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
	_, err = echosearch.New("project", echolimit.Config{Limiter: lim})
	assert.ErrorContains(t, err, "add autocomplete.Scopes()")
}
