package autocomplete_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

func newLimiter(t *testing.T, rates map[string]string) *core.Limiter {
	t.Helper()
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
	return lim
}

func TestNineScopesWithStartingValues(t *testing.T) {
	t.Parallel()
	scopes := autocomplete.Scopes()
	require.Len(t, scopes, 9)
	var names []string
	for _, s := range scopes {
		names = append(names, s.Name)
		assert.Equal(t, []core.Rate{core.PerMinute(60), core.PerDay(2000)}, s.Anon)
		assert.Equal(t, []core.Rate{core.PerMinute(240), core.PerDay(10000)}, s.User)
	}
	assert.Equal(t, []string{
		"autocomplete.project", "autocomplete.dataset", "autocomplete.sample", "autocomplete.measurement", "autocomplete.person",
		"autocomplete.organization", "autocomplete.publication", "autocomplete.tag", "autocomplete.ror",
	}, names)
	assert.Equal(t, "autocomplete.instrument", autocomplete.NewScope("instrument").Name)
	// Scopes returns new scopes on every call.
	scopes[0].Name, scopes[0].Anon[0] = "x", core.PerMinute(1)
	assert.Equal(t, autocomplete.NewScope("project"), autocomplete.Scopes()[0])
}

func TestStartingValuesHoldWhenRatesAreReplaced(t *testing.T) {
	t.Parallel()
	// A portal that replaced the whole dictionary of rates without naming
	// the search boxes keeps limited search boxes.
	lim := newLimiter(t, map[string]string{"api.anon": "5/min,50/day", "api.user": "50/min,500/day"})
	for _, s := range lim.Config().Scopes {
		if s.Name == "api" {
			continue
		}
		assert.Equal(t, autocomplete.NewScope(strings.TrimPrefix(s.Name, "autocomplete.")), s)
	}

	// Naming one replaces just that one.
	lim = newLimiter(t, map[string]string{"autocomplete.tag.anon": "3/min,30/day"})
	for _, s := range lim.Config().Scopes {
		switch s.Name {
		case "autocomplete.tag":
			assert.Equal(t, []core.Rate{core.PerMinute(3), core.PerDay(30)}, s.Anon)
		case "autocomplete.ror":
			assert.Equal(t, []core.Rate{core.PerMinute(60), core.PerDay(2000)}, s.Anon)
		}
	}
}

func TestSearchBoxesAndAPICountedApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lim := newLimiter(t, map[string]string{"api.anon": "2/min,50/day", "autocomplete.project.anon": "3/min,30/day"})
	ip := core.NetworkCaller(netip.MustParsePrefix("203.0.113.1/32"))
	allowed := func(scope string) bool {
		d, err := lim.Allow(ctx, scope, ip)
		require.NoError(t, err)
		return d.Allowed
	}
	// Typing uses up the search box, not the API.
	for range 3 {
		require.True(t, allowed("autocomplete.project"))
	}
	assert.False(t, allowed("autocomplete.project"))
	assert.True(t, allowed("autocomplete.dataset"), "each search box has its own scope")
	assert.True(t, allowed("api"))
	assert.True(t, allowed("api"))
	assert.False(t, allowed("api"))
	// And the API's use leaves the other search boxes alone.
	assert.True(t, allowed("autocomplete.person"))
}

// TestResponse checks the shape of a search's body, and of a refused
// one: {"results": []}, never null.
func TestResponse(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(autocomplete.Response{Results: []autocomplete.Result{{ID: "p1", Label: "Coral reefs"}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"results":[{"id":"p1","label":"Coral reefs"}]}`, string(b))
	b, err = json.Marshal(autocomplete.Response{Results: []autocomplete.Result{}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"results":[]}`, string(b))
}
