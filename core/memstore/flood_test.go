package memstore_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/internal/testkit/storecall"
)

// TestOneBoundForTheStore fills ten scopes with IPv4, IPv6 and signed-in
// callers: the store holds MaxEntries entries in all, not MaxEntries per
// scope, kind and address family. (Before, the example portal's ten scopes
// held 3,000,960 entries with the bound at 100,000.)
func TestOneBoundForTheStore(t *testing.T) {
	t.Parallel()
	const bound = 1000
	s := memstore.New(memstore.Config{MaxEntries: bound, SweepInterval: -1})
	defer s.Close()
	ctx := context.Background()
	for i := range 30_000 {
		var c core.Caller
		switch i % 3 {
		case 0:
			c = nthCaller(i)
		case 1:
			c = core.NetworkCaller(netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 16), byte(i >> 8), byte(i)}), 64))
		default:
			c = core.UserCaller(fmt.Sprintf("user-%d", i))
		}
		_, err := storecall.Take(ctx, s, storecall.Request{Scope: fmt.Sprintf("scope-%d", i%10), Caller: c, Limits: twoLimits, Cost: 1, Now: storetest.Start})
		require.NoError(t, err)
		if i%997 == 0 {
			require.LessOrEqual(t, s.Len(), bound, "after %d callers", i+1)
		}
	}
	assert.Equal(t, bound, s.Len())
	assert.Equal(t, int64(30_000-bound), s.Evictions())
}

// floodResult is what flood measured.
type floodResult struct {
	blocked, servedEarly int
	evictions            int64
	entries              int
	heapGrowth           uint64 // bytes of heap in use, after the flood, above before it
}

// flood blocks `blocked` callers (each spends its minute limit and is
// refused once), then sends `callers` new callers, one request each, spread
// over the next minute from `workers` goroutines, through a store bounded
// at bound entries. Every tenth of the way, and at the end, each blocked
// caller asks again: the callers served before their Retry-After are
// counted in servedEarly.
func flood(t testing.TB, bound, blocked, callers, workers int) floodResult {
	ctx := context.Background()
	before := heapInUse()
	s := memstore.New(memstore.Config{MaxEntries: bound, SweepInterval: -1})
	defer s.Close()
	limits := []core.Rate{core.PerMinute(60), core.PerDay(1000)}
	ask := func(c core.Caller, at time.Time) core.Result {
		res, err := storecall.Take(ctx, s, storecall.Request{Scope: "api", Caller: c, Limits: limits, Cost: 1, Now: at})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Blocked callers and the flood are IPv4 addresses: one table.
	blockedCaller := nthCaller
	retryAt := make([]time.Time, blocked)
	for i := range blocked {
		c := blockedCaller(i)
		for range 60 {
			if !ask(c, storetest.Start).Allowed {
				t.Fatal("a blocked caller's first 60 requests are allowed")
			}
		}
		res := ask(c, storetest.Start)
		if res.Allowed {
			t.Fatal("the 61st request is refused")
		}
		retryAt[i] = storetest.Start.Add(res.Limits[0].RetryAfter)
	}

	early := make([]bool, blocked)
	check := func(at time.Time) {
		for i := range blocked {
			if at.Before(retryAt[i]) && ask(blockedCaller(i), at).Allowed {
				early[i] = true
			}
		}
	}
	const steps = 10
	span := 59 * time.Second
	per := callers / steps
	for step := range steps {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := step*per + w; i < (step+1)*per; i += workers {
					ask(nthCaller(blocked+i), storetest.Start.Add(time.Duration(i)*span/time.Duration(callers)))
				}
			})
		}
		wg.Wait()
		check(storetest.Start.Add(time.Duration((step+1)*per) * span / time.Duration(callers)))
	}
	r := floodResult{blocked: blocked, evictions: s.Evictions(), entries: s.Len()}
	for _, e := range early {
		if e {
			r.servedEarly++
		}
	}
	if h := heapInUse(); h > before {
		r.heapGrowth = h - before
	}
	return r
}

// TestFloodKeepsBlockedCallers sends 200,000 new callers within a minute
// through a store bounded at 5,000 entries, with 1,000 callers over their
// limit: none of them is served before its Retry-After. (Before, an
// arbitrary entry was evicted: after 2,000,000 new callers, 803 of 1,000
// blocked callers were served again.) The runs with 2,000,000 and
// 10,000,000 callers at the default bound are TestSoakFlood, behind make
// soak.
func TestFloodKeepsBlockedCallers(t *testing.T) {
	t.Parallel()
	const bound = 5000
	r := flood(t, bound, 1000, 200_000, 4)
	t.Logf("200,000 new callers in a minute, bound %d: %d of %d blocked callers served early, %d evictions, %d entries, heap +%d KiB",
		bound, r.servedEarly, r.blocked, r.evictions, r.entries, r.heapGrowth>>10)
	assert.Zero(t, r.servedEarly, "no blocked caller is served before its Retry-After")
	assert.LessOrEqual(t, r.entries, bound)
	assert.Positive(t, r.evictions, "the flood filled the store")
}

// TestFloodOfBlockedCallers fills the store with blocked callers only: then,
// and only then, marked entries are evicted, and the bound still holds.
func TestFloodOfBlockedCallers(t *testing.T) {
	t.Parallel()
	const bound = 100
	s := memstore.New(memstore.Config{MaxEntries: bound, SweepInterval: -1})
	defer s.Close()
	limits := []core.Rate{core.PerMinute(1)}
	for i := range 1000 {
		for j := range 2 {
			res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: "api", Caller: nthCaller(i), Limits: limits, Cost: 1, Now: storetest.Start})
			require.NoError(t, err)
			require.Equal(t, j == 0, res.Allowed)
		}
	}
	assert.Equal(t, bound, s.Len())
}

// TestLongUserIDsInMemory counts user ids of 64 KiB: each costs an entry of
// a 71-byte digest, not of its id, and ids that differ in their last byte
// keep their counts apart. (Before, a 64 KiB id cost 65.7 KB.)
func TestLongUserIDsInMemory(t *testing.T) {
	const n = 200
	before := heapInUse()
	s := memstore.New(memstore.Config{SweepInterval: -1})
	defer s.Close()
	base := strings.Repeat("x", 64<<10)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%08d", base, i)
	}
	limits := []core.Rate{core.PerMinute(1)}
	for round, want := range []bool{true, false} {
		for _, id := range ids {
			res, err := storecall.Take(context.Background(), s, storecall.Request{Scope: "api", Caller: core.UserCaller(id), Limits: limits, Cost: 1, Now: storetest.Start})
			require.NoError(t, err)
			require.Equal(t, want, res.Allowed, "round %d", round)
		}
	}
	ids = nil
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d ids of 64 KiB: heap +%d bytes, %d a caller", n, grown, grown/n)
	assert.Equal(t, n, s.Len())
	assert.Less(t, grown, int64(n*1024), "far below the ids' 12.8 MB")
}
