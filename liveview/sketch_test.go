package liveview_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/storetest"
	"github.com/ratescope/ratescope/liveview"
)

// TestHeavyHitters refuses 1,000,000 callers once each and 50 heavy
// hitters 2,000 to 16,700 times each, in a random order, with a view that
// keeps 1000 callers: every heavy hitter is listed with a count within the
// error bound, and the view's memory is bounded as Config.Callers states.
// It does not run in parallel, so that the heap it measures is its own.
func TestHeavyHitters(t *testing.T) {
	const (
		callers = 1_000_000
		heavy   = 50
		kept    = 1000
	)
	// Its callers are built by a limiter without a hook, on its own clock.
	clock := storetest.NewClock(storetest.Start)
	lim := newLimiter(t, clock, nil, nil)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	// The stream: -1 - h for a refusal of heavy hitter h, i ≥ 0 for the
	// single refusal of caller i.
	var stream []int32
	want := map[string]int64{}
	for h := range heavy {
		n := 2000 + 300*h
		want["heavy-"+strconv.Itoa(h)] = int64(n)
		for range n {
			stream = append(stream, int32(-1-h))
		}
	}
	for i := range callers {
		stream = append(stream, int32(i))
	}
	rand.New(rand.NewPCG(1, 29)).Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })

	var before, made, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	view, err := liveview.New(liveview.Config{Callers: kept, Listed: kept, Now: clock.Now})
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&made)
	ctx := context.Background()
	for _, x := range stream {
		id := "heavy-" + strconv.Itoa(int(-1-x))
		if x >= 0 {
			id = "caller-" + strconv.Itoa(int(x))
		}
		view.Observe(ctx, core.Event{Scope: "api", Caller: lim.Caller(req, core.UserCaller(id)), Outcome: core.OutcomeDenied})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The stream and the limiter stay alive until after the last reading:
	// freed before it, they would hide what the refusals added to the heap.
	runtime.KeepAlive(stream)
	runtime.KeepAlive(lim)

	snap := view.Snapshot()
	n := int64(len(stream))
	require.Equal(t, n, snap.Refusals)
	assert.Equal(t, n/kept, snap.ErrorBound)
	assert.LessOrEqual(t, len(snap.Refused), kept)
	got := map[string]liveview.Refused{}
	for _, r := range snap.Refused {
		assert.LessOrEqual(t, r.Error, snap.ErrorBound, r.Caller)
		got[r.Caller] = r
	}
	for id, count := range want {
		require.Greater(t, count, snap.ErrorBound, "the test's heavy hitters are above the bound")
		r, ok := got[id]
		if assert.True(t, ok, "heavy hitter %s (%d refusals) listed", id, count) {
			assert.GreaterOrEqual(t, r.Refusals, count, id)
			assert.LessOrEqual(t, r.Refusals, count+r.Error, id)
		}
	}
	for _, r := range snap.Refused[:heavy] {
		_, ok := want[r.Caller]
		assert.True(t, ok, "the %d most refused are the heavy hitters, not %s", heavy, r.Caller)
	}

	// Memory: about 360 bytes per caller kept plus its id, twice
	// (Config.Callers), and one scope's series (2 kinds × 9 outcome values × 900
	// seconds × 8 bytes); what the refusals add is the ids kept and the
	// series, whatever the number of callers.
	id := len("caller-999999")
	series := uint64(2 * 9 * liveview.Seconds * 8)
	grown := func(from, to runtime.MemStats) uint64 { return to.HeapAlloc - min(to.HeapAlloc, from.HeapAlloc) }
	t.Logf("%d refusals of %d callers: the view took %d bytes when made, %d more when fed; error bound %d",
		n, callers+heavy, grown(before, made), grown(made, after), snap.ErrorBound)
	assert.LessOrEqual(t, grown(before, after), uint64(kept*(360+2*id))+series, "heap grown by the view")
	assert.LessOrEqual(t, grown(made, after), uint64(kept*2*id)+series+64<<10, "heap grown by the refusals")
}
