package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/balance"
	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

func charge(t testing.TB, s *memstore.Store, c core.Caller, now time.Time) balance.Result {
	res, err := s.Charge(context.Background(), balance.Request{Scope: "ws", Caller: c, Policy: balance.DefaultConfig().Policy, Cost: 20, Now: now})
	require.NoError(t, err)
	return res
}

func TestBalancesSwept(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{SweepInterval: -1})
	defer s.Close()
	for i := range 1000 {
		charge(t, s, nthCaller(i), storetest.Start)
	}
	charge(t, s, core.UserCaller("alice"), storetest.Start)
	require.Equal(t, 1001, s.Len())
	assert.Zero(t, s.Sweep(storetest.Start.Add(128*time.Second)), "kept while the balance may be above zero")
	assert.Equal(t, 1001, s.Sweep(storetest.Start.Add(129*time.Second)), "dropped once it reads zero")
	assert.Zero(t, s.Len())
}

func TestBalancesBounded(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{MaxEntries: 640, SweepInterval: -1})
	defer s.Close()
	for i := range 10_000 {
		charge(t, s, nthCaller(i), storetest.Start)
	}
	assert.LessOrEqual(t, s.Len(), 640)
	assert.Positive(t, s.Evictions())

	// Later, a new caller at a full shard makes room by dropping
	// forgotten balances, not by evicting a live one.
	evicted, full := s.Evictions(), s.Len()
	charge(t, s, nthCaller(100_000), storetest.Start.Add(200*time.Second))
	assert.Equal(t, evicted, s.Evictions())
	assert.Less(t, s.Len(), full)
}

// TestBalancesFloodKeepsDropped checks that a flood of new callers through
// a full store evicts callers with little at stake first: dropped callers
// stay dropped.
func TestBalancesFloodKeepsDropped(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Config{MaxEntries: 640, SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	p := balance.DefaultConfig().Policy
	heavy := func(c core.Caller) balance.Result {
		res, err := s.Charge(ctx, balance.Request{Scope: "ws", Caller: c, Policy: p, Cost: 32 * p.Drop, Now: storetest.Start})
		require.NoError(t, err)
		return res
	}
	blocked := make([]core.Caller, 50)
	for i := range blocked {
		blocked[i] = nthCaller(1_000_000 + i)
		heavy(blocked[i])
		require.True(t, heavy(blocked[i]).Dropped, "dropped before the flood")
	}
	for i := range 20_000 {
		charge(t, s, nthCaller(i), storetest.Start)
	}
	assert.LessOrEqual(t, s.Len(), 640)
	for _, c := range blocked {
		assert.True(t, heavy(c).Dropped, "%s is still dropped after the flood", c)
	}
}
