package core_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
)

func TestObservers(t *testing.T) {
	t.Parallel()
	assert.Nil(t, core.Observers(), "no hook")
	assert.Nil(t, core.Observers(nil, nil), "only nil hooks")

	var seen []string
	hook := func(name string) func(context.Context, core.Event) {
		return func(_ context.Context, e core.Event) { seen = append(seen, name+" "+e.Outcome.String()) }
	}
	lim := newLimiter(t, core.Config{
		Rates:   map[string]string{"api.user": "1/min"},
		Observe: core.Observers(hook("metrics"), nil, hook("live")),
	})
	ctx := context.Background()
	for range 2 {
		_, err := lim.Allow(ctx, "api", core.UserCaller("alice"))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"metrics allowed", "live allowed", "metrics denied", "live denied"}, seen)

	seen = nil
	only := hook("only")
	one := core.Observers(nil, only)
	require.NotNil(t, one)
	assert.Equal(t, reflect.ValueOf(only).Pointer(), reflect.ValueOf(one).Pointer(), "the one hook itself, not a loop around it")
	one(ctx, core.Event{Outcome: core.OutcomeExempt})
	assert.Equal(t, []string{"only exempt"}, seen)
}
