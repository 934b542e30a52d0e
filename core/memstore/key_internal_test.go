package memstore

import (
	"testing"
	"time"

	"github.com/ratescope/ratescope/core"
)

// matches, which a table's Store runs on every request, answers what
// comparing keyOf with the table's key answers, for every pair of requests
// that differ in scope, kind, number of limits, periods or counter width.
func TestMatchesIsKeyOf(t *testing.T) {
	narrow, wide := int64(100), int64(100_000)
	var limits [][]core.Rate
	for _, n := range []int{0, 1, 2, 4, 5} {
		for _, w := range []bool{false, true} {
			for _, p := range []time.Duration{time.Minute, time.Hour} {
				var ls []core.Rate
				for i := range n {
					l := narrow
					if w && i == n-1 {
						l = wide
					}
					ls = append(ls, core.Rate{Limit: l, Period: p * time.Duration(i+1)})
				}
				limits = append(limits, ls)
			}
		}
	}
	type req struct {
		scope  string
		kind   core.Kind
		limits []core.Rate
	}
	var reqs []req
	for _, scope := range []string{"api", "search", ""} {
		for _, kind := range []core.Kind{core.Anonymous, core.User} {
			for _, ls := range limits {
				reqs = append(reqs, req{scope, kind, ls})
			}
		}
	}
	checked := 0
	for _, a := range reqs {
		key, ok := keyOf(a.scope, a.kind, a.limits)
		if !ok {
			continue
		}
		for _, b := range reqs {
			other, ok := keyOf(b.scope, b.kind, b.limits)
			want := ok && (other == key || other.widened() == key) // a wide table holds narrow requests too
			if got := key.matches(b.scope, b.kind, b.limits); got != want {
				t.Fatalf("table %+v, request %q %v %v: matches %v, keyOf says %v", key, b.scope, b.kind, b.limits, got, want)
			}
			checked++
		}
	}
	t.Logf("%d pairs of table and request checked", checked)
	if checked < 1000 {
		t.Fatalf("only %d pairs checked", checked)
	}
}
