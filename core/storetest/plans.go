package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// testPlans checks that the requests of one signed-in caller on plans of
// different limits over the same periods share one count, whatever the
// width of their counters (a limit above 65,535 needs wide ones), as a
// Limiter sends them, once the store was bound to the widest limits. A caller moving from the base
// rates to a larger plan mid-window keeps what it used, and moving back
// finds it too; a refusal under the base rates says nothing of the plan's.
func testPlans(t *testing.T, s core.Store) {
	base := []core.Rate{core.PerMinute(5), core.PerDay(1000)}
	gold := []core.Rate{core.PerMinute(100_000), core.PerDay(1_000_000)} // wide counters
	silver := []core.Rate{core.PerMinute(8), core.PerDay(1000)}
	scope := uniqueScope(t)
	st := s
	_, err := st.Bind(scope, core.User, gold) // the widest of the three first, as a Limiter binds
	require.NoError(t, err)
	who := core.UserCaller("alice")
	now := Start
	take := func(limits []core.Rate, cost int64) core.Result {
		t.Helper()
		res, err := storecall.Take(context.Background(), st, storecall.Request{Scope: scope, Caller: who, Limits: limits, Cost: cost, Now: now})
		require.NoError(t, err)
		return res
	}

	for i := range 5 {
		require.True(t, take(base, 1).Allowed, "base request %d of 5", i+1)
	}
	res := take(base, 1)
	require.False(t, res.Allowed, "the 6th request of 5/min on the base rates")
	res = take(base, 1) // a second refusal, which a store may remember
	require.False(t, res.Allowed)

	now = now.Add(10 * time.Second)
	res = take(gold, 1)
	require.True(t, res.Allowed, "the caller moved to gold: its refusal under 5/min says nothing of 100000/min")
	assert.Equal(t, int64(100_000-6), res.Limits[0].Remaining, "gold's minute keeps the 5 requests made on the base rates")
	assert.Equal(t, int64(1_000_000-6), res.Limits[1].Remaining)
	assert.Equal(t, gold[0], res.Limits[0].Rate)

	res = take(silver, 2)
	require.True(t, res.Allowed)
	assert.Equal(t, int64(0), res.Limits[0].Remaining, "silver's 8/min: 5 + 1 + 2 used")
	require.False(t, take(silver, 1).Allowed)

	// Back on the base rates, the 8 requests of the minute are still
	// counted. (A store may answer this refusal as it answered the
	// caller's last one on these rates, with the figures of then: the
	// refusal is right, since counts only grew meanwhile.)
	require.False(t, take(base, 1).Allowed, "back on the base rates, the 8 requests of the minute are still counted")
	now = now.Add(time.Minute)
	res = take(base, 1)
	require.True(t, res.Allowed, "a minute later")
	assert.Equal(t, int64(4), res.Limits[0].Remaining)
	assert.Equal(t, int64(1000-9), res.Limits[1].Remaining, "one day count, whatever the plan")

	// Another caller is not touched by alice's plans.
	other, err := storecall.Take(context.Background(), st, storecall.Request{Scope: scope, Caller: core.UserCaller("bob"), Limits: base, Cost: 1, Now: now})
	require.NoError(t, err)
	assert.Equal(t, int64(4), other.Limits[0].Remaining)
	assert.Equal(t, int64(999), other.Limits[1].Remaining)
}
