// Package searchtest is the suite that every search-box guard (ginsearch,
// echosearch) passes, so that both frameworks behave alike.
package searchtest

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// A Portal is an application built for the suite: GET /api/records in the
// "api" scope, and GET /autocomplete/NAME?q=TEXT for every name of
// [Boxes], guarded, whose handler answers
// {"results":[{"id":"1","label":TEXT}]} and counts its searches.
type Portal struct {
	Handler http.Handler
	// Searches returns how many searches the search box name really ran.
	Searches func(name string) int
}

// Boxes returns the names of the search boxes of autocomplete.Scopes(),
// in its order: the names of their scopes without "autocomplete.".
func Boxes() []string {
	var names []string
	for _, s := range autocomplete.Scopes() {
		names = append(names, strings.TrimPrefix(s.Name, "autocomplete."))
	}
	return names
}

// Run runs the suite; build makes a Portal on the limiter it is given, or
// fails the test.
func Run(t *testing.T, build func(t *testing.T, lim *core.Limiter) Portal) {
	newPortal := func(t *testing.T, rates map[string]string) *client {
		store := memstore.New(memstore.Config{SweepInterval: -1})
		t.Cleanup(func() { store.Close() })
		lim, err := core.New(core.Config{
			Store:      store,
			Scopes:     append(core.DefaultScopes(), autocomplete.Scopes()...),
			Rates:      rates,
			NumProxies: new(0),
			Now:        storetest.NewClock(storetest.Start).Now,
		})
		require.NoError(t, err)
		return &client{Portal: build(t, lim)}
	}

	t.Run("RefusedSearchReturnsEmptyListBeforeSearching", func(t *testing.T) {
		t.Parallel()
		p := newPortal(t, map[string]string{"autocomplete.project.anon": "3/min,100/day"})
		for range 3 {
			w := p.get("/autocomplete/project?q=abc")
			require.Equal(t, http.StatusOK, w.Code)
			assert.JSONEq(t, `{"results":[{"id":"1","label":"abc"}]}`, w.Body.String())
		}
		for range 5 {
			w := p.get("/autocomplete/project?q=abcd")
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			assert.Equal(t, "60", w.Header().Get("Retry-After"))
			assert.NotEmpty(t, w.Header().Get("RateLimit"))
			assert.JSONEq(t, `{"results":[]}`, w.Body.String())
		}
		assert.Equal(t, 3, p.Searches("project"), "refused requests searched nothing")
	})

	t.Run("SearchBoxesAndAPIAreIndependent", func(t *testing.T) {
		t.Parallel()
		p := newPortal(t, map[string]string{"api.anon": "2/min,100/day", "autocomplete.tag.anon": "2/min,100/day"})
		for range 2 {
			require.Equal(t, http.StatusOK, p.get("/autocomplete/tag?q=x").Code)
		}
		require.Equal(t, http.StatusTooManyRequests, p.get("/autocomplete/tag?q=x").Code)
		assert.Equal(t, http.StatusOK, p.get("/api/records").Code, "typing did not use up the API")
		assert.Equal(t, http.StatusOK, p.get("/api/records").Code)
		assert.Equal(t, http.StatusTooManyRequests, p.get("/api/records").Code)
		assert.Equal(t, http.StatusOK, p.get("/autocomplete/ror?q=x").Code, "the API did not use up another search box")
	})

	t.Run("StartingValuesHoldWhenRatesAreReplaced", func(t *testing.T) {
		t.Parallel()
		// The dictionary names only the API; every search box keeps its
		// starting 60/min.
		p := newPortal(t, map[string]string{"api.anon": "1/min,10/day", "api.user": "5/min,50/day"})
		for i := range 60 {
			require.Equal(t, http.StatusOK, p.get("/autocomplete/person?q=x").Code, "search %d", i+1)
		}
		w := p.get("/autocomplete/person?q=x")
		assert.Equal(t, http.StatusTooManyRequests, w.Code, "still limited")
		assert.Contains(t, w.Header().Get("RateLimit-Policy"), `"autocomplete.person.anon.min";q=60;w=60`)
		assert.Equal(t, 60, p.Searches("person"))
	})

	t.Run("FailClosedSearchBoxAnswers503WithEmptyList", func(t *testing.T) {
		t.Parallel()
		scopes := append(core.DefaultScopes(), autocomplete.Scopes()...)
		for i := range scopes {
			if scopes[i].Name == "autocomplete.project" {
				scopes[i].FailMode = core.FailClosed
			}
		}
		lim, err := core.New(core.Config{
			Store:      downStore{},
			Scopes:     scopes,
			NumProxies: new(0),
			Logger:     slog.New(slog.DiscardHandler),
		})
		require.NoError(t, err)
		p := &client{Portal: build(t, lim)}
		w := p.get("/autocomplete/project?q=abc")
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, "1", w.Header().Get("Retry-After"))
		assert.JSONEq(t, `{"results":[]}`, w.Body.String())
		assert.Zero(t, p.Searches("project"), "refused before searching")
		assert.Equal(t, http.StatusOK, p.get("/autocomplete/tag?q=abc").Code, "another search box fails open")
	})
}

// downStore is a store that cannot be reached.
type downStore struct{}

func (downStore) Bind(string, core.Kind, []core.Rate) (core.Counter, error) {
	return storecall.Down(errors.New("searchtest: store down")).Bind("", 0, nil)
}

type client struct {
	Portal
}

func (p *client) get(path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = "203.0.113.50:4000"
	p.Handler.ServeHTTP(w, r)
	return w
}
