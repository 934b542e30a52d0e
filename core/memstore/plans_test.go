package memstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// A scope whose plans mix narrow and wide limits keeps each caller in one
// entry of one table: the wide table the Limiter asks for decides the
// narrow requests, and Take finds it for them too; a narrow table made
// before keeps its own counts.
func TestPlansOneTable(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{SweepInterval: -1})
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	base := []core.Rate{core.PerMinute(5), core.PerDay(1000)}
	gold := []core.Rate{core.PerMinute(5), core.PerDay(100_000)} // wide
	st := s.ForScope("api", core.User, gold)
	alice := core.UserCaller("alice")
	take := func(st core.Store, scope string, limits []core.Rate) core.Result {
		t.Helper()
		res, err := st.Take(ctx, core.Request{Scope: scope, Caller: alice, Limits: limits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, int64(999), take(st, "api", base).Limits[1].Remaining)
	assert.Equal(t, int64(100_000-2), take(st, "api", gold).Limits[1].Remaining)
	assert.Equal(t, int64(1000-3), take(s, "api", base).Limits[1].Remaining, "Take finds the wide table for a narrow request")
	assert.Equal(t, 1, s.Len(), "one entry for alice, whatever the plan")

	// A narrow table that exists keeps its counts when a wide one of the
	// same periods appears.
	assert.Equal(t, int64(999), take(s, "other", base).Limits[1].Remaining)
	s.ForScope("other", core.User, gold)
	assert.Equal(t, int64(998), take(s, "other", base).Limits[1].Remaining)
}
