package liveview

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratescope/ratescope/core"
	"github.com/ratescope/ratescope/core/memstore"
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
			lim, err := core.New(core.Config{Store: store, NumProxies: core.Proxies(0)})
			require.NoError(t, err)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			rng := rand.New(rand.NewPCG(uint64(k), 29))
			truth := map[string]int64{}
			for i := range 5000 {
				n := rng.IntN(3 * k)
				// Callers as the limiter builds them: users and addresses.
				c := lim.Caller(r, "", "u"+strconv.Itoa(n))
				if n%2 == 1 {
					c = lim.AddrCaller(netip.AddrFrom4([4]byte{192, 0, 2, byte(n)}))
				}
				scope := []string{"api", "search"}[n%3/2]
				s.add(scope, c, int64(i+1))
				truth[scope+" "+c.String()]++
				checkSummary(t, &s.sums[s.cur])
			}
			entries, total := s.snapshot(5000)
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
