package box_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/autocomplete"
	"github.com/ratescope/ratescope/autocomplete/internal/box"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { store.Close() })
	lim, err := core.New(core.Config{
		Store:      store,
		Scopes:     append(core.DefaultScopes(), autocomplete.Scopes()...),
		NumProxies: new(0),
	})
	require.NoError(t, err)
	assert.NoError(t, box.Check(lim, "project"))
	err = box.Check(lim, "instrument")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `autocomplete.NewScope("instrument")`)
	assert.NoError(t, box.Check(nil, "project"), "the adapter reports a missing limiter")
}

func TestScope(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "autocomplete.project", box.Scope("project"))
}
