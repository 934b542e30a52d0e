package memstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// A scope whose plans mix narrow and wide limits keeps each caller in one
// entry of one table: the wide table the Limiter binds first decides the
// narrow limits too; a narrow table made before keeps its own counts.
func TestPlansOneTable(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	base := []core.Rate{core.PerMinute(5), core.PerDay(1000)}
	gold := []core.Rate{core.PerMinute(5), core.PerDay(100_000)} // wide
	_, err := s.Bind("api", core.User, gold)
	require.NoError(t, err)
	alice := core.UserCaller("alice")
	take := func(scope string, limits []core.Rate) core.Result {
		t.Helper()
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: scope, Caller: alice, Limits: limits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, int64(999), take("api", base).Limits[1].Remaining)
	assert.Equal(t, int64(100_000-2), take("api", gold).Limits[1].Remaining)
	assert.Equal(t, int64(1000-3), take("api", base).Limits[1].Remaining, "a narrow binding finds the wide table")
	assert.Equal(t, 1, s.Len(), "one entry for alice, whatever the plan")

	// A narrow table that exists keeps its counts when a wide one of the
	// same periods appears.
	assert.Equal(t, int64(999), take("other", base).Limits[1].Remaining)
	_, err = s.Bind("other", core.User, gold)
	require.NoError(t, err)
	assert.Equal(t, int64(998), take("other", base).Limits[1].Remaining)
}
