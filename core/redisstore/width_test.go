package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/redisstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// TestRollingDeployAcrossWidths runs two limiters on one Redis, as two
// versions of a service during a rolling deploy, whose limits differ in
// the counter width they need (2 bytes up to 65,535, 4 above): the
// requests of one caller, alternating between them, share one count,
// whichever limits wrote it last.
func TestRollingDeployAcrossWidths(t *testing.T) {
	t.Parallel()
	hour := func(n int64) core.Rate { return core.Rate{Limit: n, Period: time.Hour} }
	for _, tc := range []struct {
		name         string
		first, other []core.Rate
		cost         int64
		allowed      int // of 40 requests in one minute
	}{
		{name: "same limits", first: []core.Rate{core.PerMinute(10), core.PerDay(60000)}, other: []core.Rate{core.PerMinute(10), core.PerDay(60000)}, allowed: 10},
		{name: "day limit across 65,535", first: []core.Rate{core.PerMinute(10), core.PerDay(60000)}, other: []core.Rate{core.PerMinute(10), core.PerDay(70000)}, allowed: 10},
		{name: "day limit back below 65,535", first: []core.Rate{core.PerMinute(10), core.PerDay(70000)}, other: []core.Rate{core.PerMinute(10), core.PerDay(60000)}, allowed: 10},
		// The same number of wide limits, in other places: values of one
		// size, laid out differently, which the widths byte tells apart.
		// (Within one minute no bucket expires, so the old code, which
		// read them with the wrong layout, passed this case too.)
		// (12 requests of cost 5,000 fill 60,000).
		{name: "widths swapped", first: []core.Rate{hour(70000), core.PerDay(60000)}, other: []core.Rate{hour(60000), core.PerDay(70000)}, cost: 5000, allowed: 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			prefix := uniquePrefix()
			clock := storetest.NewClock(storetest.Start)
			limiter := func(rates []core.Rate) *core.Limiter {
				store := newStore(t, redisstore.Config{Client: newClient(t, server.Addr), Prefix: prefix})
				l, err := core.New(core.Config{
					Store:      store,
					Scopes:     []core.Scope{{Name: "api", Anon: rates, User: rates}},
					NumProxies: new(0),
					Now:        clock.Now,
					Logger:     quiet,
				})
				require.NoError(t, err)
				return l
			}
			versions := []*core.Limiter{limiter(tc.first), limiter(tc.other)}
			cost := max(tc.cost, 1)
			allowed := 0
			for i := range 40 {
				d, err := versions[i%2].AllowN(ctx, "api", core.UserCaller("alice"), cost)
				require.NoError(t, err)
				if d.Allowed {
					allowed++
				}
				clock.Advance(time.Second)
			}
			assert.Equal(t, tc.allowed, allowed)
		})
	}
}
