package liveview

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
	"github.com/ratescope/ratescope/core/storetest"
)

// checkSummary checks a summary's invariants: every entry is found in the
// table at its hash, the table holds nothing else, the heap is ordered and
// knows each entry's place, and the counts add up to the total at most.
func checkSummary(t *testing.T, m *summary) {
	t.Helper()
	used := 0
	for _, x := range m.table {
		if x != 0 {
			used++
		}
	}
	require.Equal(t, len(m.entries), used, "table slots in use")
	require.Len(t, m.heap, len(m.entries))
	var sum int64
	for i := range m.entries {
		e := &m.entries[i]
		slot, ok := m.find(e.hash, e.scope, e.who())
		require.True(t, ok, "entry %d (%s) not found", i, e.caller)
		require.Equal(t, int32(i+1), m.table[slot])
		require.Equal(t, int32(i), m.heap[e.at], "entry %d's place in the heap", i)
		require.LessOrEqual(t, e.err, e.count-1)
		sum += e.count - e.err
	}
	for i := 1; i < len(m.heap); i++ {
		require.False(t, m.less(i, (i-1)/2), "heap order at %d", i)
	}
	require.LessOrEqual(t, sum, m.total)
}

// TestSummaryInvariants counts random refusals of callers coming and
// going, users and addresses in two scopes, in a small table where probe
// chains are long, and checks the summary after each.
func TestSummaryInvariants(t *testing.T) {
	t.Parallel()
	for _, k := range []int{1, 2, 7, 64} {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			t.Parallel()
			s := newSketch(k)
			store := memstore.New(memstore.Config{SweepInterval: -1})
			t.Cleanup(func() { _ = store.Close() })
			lim, err := core.New(core.Config{Store: store, NumProxies: new(0)})
			require.NoError(t, err)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			rng := rand.New(rand.NewPCG(uint64(k), 29))
			truth := map[string]int64{}
			for i := range 5000 {
				n := rng.IntN(3 * k)
				// Callers as the limiter builds them: users and addresses.
				c := lim.Caller(r, core.UserCaller("u"+strconv.Itoa(n)))
				if n%2 == 1 {
					c = lim.AddrCaller(netip.AddrFrom4([4]byte{192, 0, 2, byte(n)}))
				}
				scope := []string{"api", "search"}[n%3/2]
				s.add(scope, c, int64(i+1), core.Rate{}, 0)
				truth[scope+" "+c.String()]++
				checkSummary(t, &s.sums[s.cur])
			}
			entries, total := s.snapshot(5000, 0, 3*k)
			require.Equal(t, int64(5000), total)
			for _, e := range entries {
				real := truth[e.scope+" "+e.caller.String()]
				assert.GreaterOrEqual(t, e.count, real, e.caller.String())
				assert.LessOrEqual(t, e.count-e.err, real, e.caller.String())
				assert.LessOrEqual(t, e.err, total/int64(k), e.caller.String())
			}
		})
	}
}

// TestLongIDHead: the page shows the first bytes of a long id, never a
// rune cut in two, and a key caller as core.Caller.String writes it.
func TestLongIDHead(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxID)
	tests := []struct {
		name   string
		caller core.Caller
		head   string
	}{
		{name: "ASCII", caller: core.UserCaller(strings.Repeat("a", 40) + long), head: strings.Repeat("a", headLen)},
		{name: "a rune across the cut", caller: core.UserCaller(strings.Repeat("a", headLen-1) + "é" + long), head: strings.Repeat("a", headLen-1)},
		{name: "a rune that ends at the cut", caller: core.UserCaller(strings.Repeat("a", headLen-2) + "é" + long), head: strings.Repeat("a", headLen-2) + "é"},
		{name: "a key", caller: core.KeyCaller(long), head: "key:" + long[:headLen-4]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := whoOf(tt.caller)
			require.Len(t, w.user, len("sha256:")+64)
			l := newLongID(tt.caller, w.user)
			assert.Equal(t, tt.head, l.head)
			assert.Equal(t, len(tt.caller.User()), l.size)
		})
	}
}

// merged returns what a snapshot lists, read at once under the lock: every
// caller of both summaries, merged, last refused after since, ranked, the
// first n.
func merged(s *sketch, since int64, n int) []entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, prev := &s.sums[s.cur], &s.sums[1-s.cur]
	var out []entry
	for _, e := range cur.entries {
		if p := prev.get(e.hash, e.scope, e.who()); p != nil {
			e.count, e.err, e.first, e.reset = e.count+p.count, e.err+p.err, min(e.first, p.first), max(e.reset, p.reset)
		} else {
			e.count, e.err = e.count+prev.floor(), e.err+prev.floor()
		}
		out = append(out, e)
	}
	for _, e := range prev.entries {
		if cur.get(e.hash, e.scope, e.who()) == nil {
			e.count, e.err = e.count+cur.floor(), e.err+cur.floor()
			out = append(out, e)
		}
	}
	out = slices.DeleteFunc(out, func(e entry) bool { return e.last <= since })
	slices.SortFunc(out, func(a, b entry) int { return rank(&a, &b) })
	return out[:min(n, len(out))]
}

// rows writes entries as the page lists them, for a comparison.
func rows(entries []entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%s %s %d±%d %d %d %d", e.scope, e.callerString(), e.count, e.err, e.first, e.last, e.reset)
	}
	return out
}

// kept returns the entry of w in the current summary of s.
func kept(t *testing.T, s *sketch, w who) entry {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.sums[s.cur].entries, func(e entry) bool { return e.who() == w })
	require.GreaterOrEqual(t, i, 0, "kept")
	return s.sums[s.cur].entries[i]
}

// TestSnapshotInChunks: a snapshot of summaries of several chunks lists
// what a snapshot read at once does (all of them), and lets refusals in between its
// chunks: the lock is free there, and an Observe of a refusal is counted.
func TestSnapshotInChunks(t *testing.T) {
	t.Parallel()
	const k = 3*chunk + 7
	clock := storetest.NewClock(storetest.Start)
	v, err := New(Config{Callers: k, Listed: 50, Now: clock.Now})
	require.NoError(t, err)
	ctx := context.Background()
	refuse := func(c core.Caller) {
		v.Observe(ctx, core.Event{Scope: "api", Caller: c, Outcome: core.OutcomeDenied})
	}
	rng := rand.New(rand.NewPCG(7, 29))
	// Two periods, each filling its summary and more, the first at its
	// end, so that its callers are listed too.
	refuse(core.UserCaller("first"))
	clock.Advance(14 * time.Minute)
	for p := range 2 {
		if p == 1 {
			clock.Set(storetest.Start.Add(time.Duration(period) + time.Second))
		}
		for range 3 * k {
			n := rng.IntN(2 * k)
			c := core.UserCaller("u" + strconv.Itoa(n))
			if n%3 == 0 {
				c = core.NetworkCaller(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}), 32))
			}
			for range 1 + n%7 {
				refuse(c)
			}
			clock.Advance(time.Millisecond)
		}
	}
	now := clock.Now()
	since := now.Add(-seconds * time.Second).UnixNano()
	require.Len(t, v.top.sums[v.top.cur].entries, k, "the current summary is full")
	require.Len(t, v.top.sums[1-v.top.cur].entries, k, "and the previous one")
	want := merged(v.top, since, 2*k)

	// A caller the current summary keeps, so that its refusals evict none.
	heavy := v.top.sums[v.top.cur].entries[0].caller
	before := kept(t, v.top, whoOf(heavy))
	var chunks int
	v.top.between = func() {
		chunks++
		if !v.top.mu.TryLock() {
			t.Error("the lock is held between chunks")
			return
		}
		v.top.mu.Unlock()
		refuse(heavy)
	}
	got, _ := v.top.snapshot(now.UnixNano(), since, 2*k)
	assert.Equal(t, 2*4, chunks, "four chunks of each summary")
	// The refusals of heavy during the snapshot were counted, but heavy's
	// place in the summary may have been read before some: compare
	// without it.
	isHeavy := func(e entry) bool { return e.who() == whoOf(heavy) }
	got, want = slices.DeleteFunc(got, isHeavy), slices.DeleteFunc(want, isHeavy)
	require.NotEmpty(t, got)
	if assert.Equal(t, len(want), len(got)) {
		assert.Equal(t, rows(want), rows(got))
	}
	second := storetest.Start.Add(time.Duration(period)).UnixNano()
	assert.True(t, slices.ContainsFunc(got, func(e entry) bool { return e.last < second }), "callers of the previous period only are listed")

	after := kept(t, v.top, whoOf(heavy))
	assert.Equal(t, before.count+2*4, after.count, "refused once between each two chunks, and counted")
}
